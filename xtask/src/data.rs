//! A bundle's data section in few segments: runs of constants that
//! `wasm-opt` cut apart at zeros joined again.
//!
//! `wasm-opt -Oz`'s memory packing splits a data segment wherever a run of
//! zero bytes is longer than a segment's header (a flag, `i32.const`, the
//! offset and `end`, the length: 6 to 9 bytes), which saves raw bytes. But
//! the page is sent compressed: a run of zeros costs gzip a few bits, while
//! every header's offset is a number the compressor has not seen. The first
//! load's rodata came out as 1,570 segments, most of one to four bytes (the
//! tables of `&'static str`s and small constants) between runs of zeros;
//! joined where the gap is at most [`MAX_GAP`] bytes it is 4.2 kB less gzip
//! (docs/measurements.md, "The data section in few segments").
//!
//! Only active segments of memory 0 at constant offsets are joined (what
//! rustc and `wasm-opt` write for the page); a passive segment or a
//! `DataCount` section (their indices are named by `memory.init` and
//! `data.drop`), overlapping segments or a section this does not read are
//! an error, and `dist` ships the bundle's data as it was.

use anyhow::{Context, bail};

use crate::wasm::{self, Reader, push_leb};

/// The longest run of zeros between two segments that are joined. Measured
/// on the four bundles (gzip -9): from 96 to 256 bytes the first load is
/// within 14 B of its smallest, the others within 12 B; under 32 bytes the
/// headers left cost up to 500 B, from 512 bytes the zeros written up to 126 B.
pub(crate) const MAX_GAP: u32 = 128;

/// The data section's id, and the `DataCount` section's.
const DATA: u8 = 11;
const DATA_COUNT: u8 = 12;

/// One active segment of memory 0: where it starts and its bytes.
struct Segment<'a> {
    offset: u32,
    bytes: &'a [u8],
}

/// A signed LEB128 `i32` (`i32.const`'s immediate), read as the unsigned
/// address it is.
fn read_i32_const(r: &mut Reader) -> anyhow::Result<u32> {
    let mut value: i64 = 0;
    for shift in (0..35).step_by(7) {
        let b = r.byte()?;
        value |= i64::from(b & 0x7f) << shift;
        if b < 0x80 {
            if b & 0x40 != 0 {
                value |= -1i64 << (shift + 7);
            }
            return Ok(value as i32 as u32);
        }
    }
    bail!("an i32 constant longer than five bytes")
}

fn push_i32_const(out: &mut Vec<u8>, value: u32) {
    let mut v = i64::from(value as i32);
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        if (v == 0 && low & 0x40 == 0) || (v == -1 && low & 0x40 != 0) {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

fn segments(body: &[u8]) -> anyhow::Result<Vec<Segment<'_>>> {
    let mut r = Reader::new(body);
    let count = r.leb()?;
    let mut out = Vec::new();
    for _ in 0..count {
        match r.byte()? {
            0 => {}
            1 => bail!("a passive segment (named by `memory.init`)"),
            flag => bail!("a segment of flag {flag} (another memory or a computed offset)"),
        }
        if r.byte()? != 0x41 {
            bail!("a segment whose offset is not an `i32.const`");
        }
        let offset = read_i32_const(&mut r)?;
        if r.byte()? != 0x0b {
            bail!("a segment whose offset is more than one `i32.const`");
        }
        let len = r.leb()? as usize;
        out.push(Segment { offset, bytes: r.take(len)? });
    }
    if !r.done() {
        bail!("bytes after the last segment");
    }
    Ok(out)
}

/// `wasm` with its data segments joined across gaps of at most `max_gap`
/// zero bytes, and how many segments there were before and after. The
/// memory the module starts with is the same byte for byte.
pub(crate) fn join_segments(wasm: &[u8], max_gap: u32) -> anyhow::Result<(Vec<u8>, usize, usize)> {
    let (mut before, mut after) = (0, 0);
    let out = wasm::rewrite_sections(wasm, |id, body| {
        if id == DATA_COUNT {
            bail!("a `DataCount` section (segments named by index)");
        }
        if id != DATA {
            return Ok(None);
        }
        let mut segs = segments(body).context("reading the data section")?;
        before = segs.len();
        segs.sort_by_key(|s| s.offset);
        let mut joined: Vec<(u32, Vec<u8>)> = Vec::new();
        for s in segs {
            if let Some((start, bytes)) = joined.last_mut() {
                let end = start.checked_add(u32::try_from(bytes.len())?).context("a segment past 4 GiB")?;
                if s.offset < end {
                    bail!("segments at {start} and {} overlap", s.offset);
                }
                if s.offset - end <= max_gap {
                    bytes.resize((s.offset - *start) as usize, 0);
                    bytes.extend_from_slice(s.bytes);
                    continue;
                }
            }
            joined.push((s.offset, s.bytes.to_vec()));
        }
        after = joined.len();
        let mut section = Vec::new();
        push_leb(&mut section, u32::try_from(after)?);
        for (offset, bytes) in joined {
            section.extend_from_slice(&[0, 0x41]);
            push_i32_const(&mut section, offset);
            section.push(0x0b);
            push_leb(&mut section, u32::try_from(bytes.len())?);
            section.extend_from_slice(&bytes);
        }
        Ok(Some(section))
    })?;
    Ok((out, before, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(sections: &[(u8, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"\0asm\x01\0\0\0".to_vec();
        for (id, body) in sections {
            out.push(*id);
            push_leb(&mut out, body.len() as u32);
            out.extend_from_slice(body);
        }
        out
    }

    fn data(segs: &[(u32, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        push_leb(&mut out, segs.len() as u32);
        for (offset, bytes) in segs {
            out.extend_from_slice(&[0, 0x41]);
            push_i32_const(&mut out, *offset);
            out.push(0x0b);
            push_leb(&mut out, bytes.len() as u32);
            out.extend_from_slice(bytes);
        }
        out
    }

    /// A module's data segments, as (offset, bytes).
    fn read(wasm: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut r = Reader::new(&wasm[8..]);
        let mut out = Vec::new();
        while !r.done() {
            let id = r.byte().unwrap();
            let len = r.leb().unwrap() as usize;
            let body = r.take(len).unwrap();
            if id == DATA {
                out.extend(segments(body).unwrap().into_iter().map(|s| (s.offset, s.bytes.to_vec())));
            }
        }
        out
    }

    /// The memory a module's data section writes, from 0 to its last byte.
    fn image(wasm: &[u8]) -> Vec<u8> {
        let mut memory = Vec::new();
        for (offset, bytes) in read(wasm) {
            let end = offset as usize + bytes.len();
            memory.resize(memory.len().max(end), 0);
            memory[offset as usize..end].copy_from_slice(&bytes);
        }
        memory
    }

    #[test]
    fn short_gaps_are_joined_with_zeros_and_long_ones_kept() {
        let types = (1, vec![0]);
        let wasm = module(&[
            types.clone(),
            (DATA, data(&[(1_048_600, b"cd"), (1_048_576, b"ab"), (1_048_700, b"ef"), (2_000_000, b"g")])),
            (0, b"\x04name".to_vec()),
        ]);
        let (out, before, after) = join_segments(&wasm, 100).expect("a module");
        assert_eq!((before, after), (4, 2));
        let mut first = b"ab".to_vec();
        first.resize(24, 0);
        first.extend_from_slice(b"cd");
        first.resize(124, 0);
        first.extend_from_slice(b"ef");
        let want = module(&[types, (DATA, data(&[(1_048_576, &first), (2_000_000, b"g")])), (0, b"\x04name".to_vec())]);
        assert_eq!(out, want);
        assert_eq!(image(&out), image(&wasm));
        // A gap one byte over the limit stays.
        let (_, _, apart) = join_segments(&wasm, 97).expect("a module");
        assert_eq!(apart, 3);
    }

    #[test]
    fn offsets_past_two_gib_keep_their_address() {
        let high = 0x8000_0000u32;
        let wasm = module(&[(DATA, data(&[(high, b"x"), (high + 3, b"y")]))]);
        let (out, _, after) = join_segments(&wasm, MAX_GAP).expect("a module");
        assert_eq!(after, 1);
        assert_eq!(read(&out), [(high, b"x\0\0y".to_vec())]);
    }

    #[test]
    fn what_it_does_not_read_is_an_error() {
        let passive = module(&[(DATA, vec![1, 1, 0, 1, b'x'])]);
        assert!(join_segments(&passive, MAX_GAP).is_err());
        let counted = module(&[(DATA_COUNT, vec![1]), (DATA, data(&[(8, b"x")]))]);
        assert!(join_segments(&counted, MAX_GAP).is_err());
        let overlapping = module(&[(DATA, data(&[(8, b"xyz"), (9, b"w")]))]);
        assert!(join_segments(&overlapping, MAX_GAP).is_err());
        assert!(join_segments(b"\0asm\x01\0\0\0\x0b\x05\x01", MAX_GAP).is_err());
        assert!(join_segments(b"nope", MAX_GAP).is_err());
    }
}
