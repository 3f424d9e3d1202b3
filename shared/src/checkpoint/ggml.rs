//! Every tensor type a GGUF file can hold, with its exact storage: `size`
//! bytes for every block of `block` values.
//!
//! Source: llama.cpp as vendored in the `llama-cpp-python` 0.3.36 sdist —
//! the enum numbers from `ggml/include/ggml.h` (`enum ggml_type`), the block
//! sizes from `ggml/src/ggml.c` (`type_traits[]`: `blck_size`, `type_size`)
//! and the block layouts from `ggml/src/ggml-common.h` (each `block_*` has a
//! `static_assert` on its size; the sums are written out below). Numbers 4, 5
//! and 36–38 are removed types that no loader accepts any more.
//!
//! ik_llama.cpp's own types ([`IK_TYPES`]) are read too: ids 31–33 and 133
//! and up, from ikawrakow/ik_llama.cpp at 8337e4cd (2026-08-15):
//! `ggml/include/ggml.h` `enum ggml_type`, `ggml/src/ggml.c` `type_traits[]`
//! (`blck_size`, `type_size` and ik's `row_meta_size`: a header of a few
//! bytes at the start of every row, a float scale for the `_ks` and `_kt`
//! types, which `ggml_row_size` adds to each row). Only mainline llama.cpp
//! and Ollama refuse them; ik_llama.cpp loads them.

use serde::Serialize;

/// A ggml tensor type as GGUF stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
    Iq2Xxs,
    Iq2Xs,
    Iq3Xxs,
    Iq1S,
    Iq4Nl,
    Iq3S,
    Iq2S,
    Iq4Xs,
    I8,
    I16,
    I32,
    I64,
    F64,
    Iq1M,
    Bf16,
    Tq1_0,
    Tq2_0,
    Mxfp4,
    Nvfp4,
    Q1_0,
    Q2_0,
    /// A type only ik_llama.cpp defines.
    Ik(&'static IkType),
}

/// A tensor type only ik_llama.cpp defines (its numbers are 31–33 and 133
/// and up; none collides with mainline's since ik's PR #44, 2024-09-09).
#[derive(Debug, PartialEq, Eq, Hash, Serialize)]
pub struct IkType {
    pub id: u32,
    /// The name ik prints (`ggml_type_name`), upper-cased as GGUF dumps do.
    pub name: &'static str,
    pub block: u64,
    pub block_bytes: u64,
    /// `row_meta_size`: bytes at the start of every row.
    pub row_meta: u64,
}

const fn ik(id: u32, name: &'static str, block: u64, block_bytes: u64, row_meta: u64) -> IkType {
    IkType { id, name, block, block_bytes, row_meta }
}

/// ik_llama.cpp's types a GGUF file can hold (`llama-quantize`'s list and
/// the repacked variants), at 8337e4cd: (id, name, blck_size, type_size,
/// row_meta_size). The `_R4`/`_R8` variants interleave rows and keep each
/// row's bytes. IQ4_KT's row header was 8 bytes in its first month
/// (2025-05-22 to 2025-06-18, #441 → #529); those files are not read by
/// ik either.
pub static IK_TYPES: &[IkType] = &[
    ik(31, "Q4_0_4X4", 32, 18, 0),
    ik(32, "Q4_0_4X8", 32, 18, 0),
    ik(33, "Q4_0_8X8", 32, 18, 0),
    ik(133, "Q6_0", 32, 26, 0),
    ik(134, "IQ1_BN", 64, 13, 2),
    ik(135, "IQ2_BN", 64, 16, 4),
    ik(137, "IQ2_K", 256, 76, 0),
    ik(138, "IQ3_K", 256, 110, 0),
    ik(139, "IQ4_K", 256, 144, 0),
    ik(140, "IQ5_K", 256, 176, 0),
    ik(141, "IQ6_K", 256, 212, 0),
    ik(144, "IQ4_KS", 256, 136, 4),
    ik(145, "IQ2_KS", 256, 70, 2),
    ik(146, "IQ4_KSS", 256, 128, 4),
    ik(151, "Q8_KV", 32, 32, 8),
    ik(152, "IQ5_KS", 256, 168, 4),
    ik(153, "IQ2_KT", 256, 68, 4),
    ik(154, "IQ3_KT", 256, 100, 4),
    ik(155, "IQ4_KT", 256, 128, 4),
    ik(156, "IQ3_KS", 256, 102, 2),
    ik(157, "IQ2_KL", 256, 86, 2),
    ik(158, "IQ1_KT", 256, 56, 4),
    ik(202, "Q4_0_R8", 32, 18, 0),
    ik(206, "Q5_0_R4", 32, 22, 0),
    ik(208, "Q8_0_R8", 32, 34, 0),
    ik(210, "Q2_K_R4", 256, 84, 0),
    ik(211, "Q3_K_R4", 256, 110, 0),
    ik(212, "Q4_K_R4", 256, 144, 0),
    ik(213, "Q5_K_R4", 256, 176, 0),
    ik(214, "Q6_K_R4", 256, 210, 0),
    ik(216, "IQ2_XXS_R4", 256, 66, 0),
    ik(217, "IQ2_XS_R4", 256, 74, 0),
    ik(218, "IQ3_XXS_R4", 256, 98, 0),
    ik(219, "IQ1_S_R4", 32, 6, 2),
    ik(220, "IQ4_NL_R4", 32, 18, 0),
    ik(221, "IQ3_S_R4", 256, 110, 0),
    ik(222, "IQ2_S_R4", 256, 82, 0),
    ik(223, "IQ4_XS_R8", 256, 136, 0),
    ik(229, "IQ1_M_R4", 32, 7, 2),
    ik(230, "BF16_R16", 1, 2, 0),
    ik(233, "Q6_0_R4", 32, 26, 0),
    ik(335, "IQ2_BN_R4", 64, 16, 4),
    ik(337, "IQ2_K_R4", 256, 76, 0),
    ik(338, "IQ3_K_R4", 256, 110, 0),
    ik(339, "IQ4_K_R4", 256, 144, 0),
    ik(340, "IQ5_K_R4", 256, 176, 0),
    ik(344, "IQ4_KS_R4", 256, 136, 4),
    ik(352, "IQ5_KS_R4", 256, 168, 4),
    ik(353, "MXFP4_R8", 32, 17, 0),
    ik(398, "Q8_KV_R8", 32, 32, 4),
    ik(399, "Q8_K_R8", 256, 258, 0),
];

/// `QK_K` in ggml-common.h: the super-block of the K-quants and IQ types.
const QK_K: u64 = 256;
/// `sizeof(ggml_half)`.
const HALF: u64 = 2;

impl GgmlType {
    /// Every type, in `enum ggml_type` order.
    pub const ALL: &[GgmlType] = &[
        Self::F32,
        Self::F16,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q5_0,
        Self::Q5_1,
        Self::Q8_0,
        Self::Q8_1,
        Self::Q2K,
        Self::Q3K,
        Self::Q4K,
        Self::Q5K,
        Self::Q6K,
        Self::Q8K,
        Self::Iq2Xxs,
        Self::Iq2Xs,
        Self::Iq3Xxs,
        Self::Iq1S,
        Self::Iq4Nl,
        Self::Iq3S,
        Self::Iq2S,
        Self::Iq4Xs,
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::F64,
        Self::Iq1M,
        Self::Bf16,
        Self::Tq1_0,
        Self::Tq2_0,
        Self::Mxfp4,
        Self::Nvfp4,
        Self::Q1_0,
        Self::Q2_0,
    ];

    /// The number `enum ggml_type` gives the type (what GGUF stores).
    pub fn id(self) -> u32 {
        use GgmlType::*;
        match self {
            F32 => 0,
            F16 => 1,
            Q4_0 => 2,
            Q4_1 => 3,
            Q5_0 => 6,
            Q5_1 => 7,
            Q8_0 => 8,
            Q8_1 => 9,
            Q2K => 10,
            Q3K => 11,
            Q4K => 12,
            Q5K => 13,
            Q6K => 14,
            Q8K => 15,
            Iq2Xxs => 16,
            Iq2Xs => 17,
            Iq3Xxs => 18,
            Iq1S => 19,
            Iq4Nl => 20,
            Iq3S => 21,
            Iq2S => 22,
            Iq4Xs => 23,
            I8 => 24,
            I16 => 25,
            I32 => 26,
            I64 => 27,
            F64 => 28,
            Iq1M => 29,
            Bf16 => 30,
            Tq1_0 => 34,
            Tq2_0 => 35,
            Mxfp4 => 39,
            Nvfp4 => 40,
            Q1_0 => 41,
            Q2_0 => 42,
            Ik(t) => t.id,
        }
    }

    pub fn from_id(id: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.id() == id).or_else(|| IK_TYPES.iter().find(|t| t.id == id).map(Self::Ik))
    }

    /// Whether only ik_llama.cpp loads the type.
    pub fn ik_only(self) -> bool {
        matches!(self, Self::Ik(_))
    }

    /// The name llama.cpp prints (`ggml_type_name`, upper-cased as in GGUF dumps).
    pub fn name(self) -> &'static str {
        use GgmlType::*;
        match self {
            F32 => "F32",
            F16 => "F16",
            Q4_0 => "Q4_0",
            Q4_1 => "Q4_1",
            Q5_0 => "Q5_0",
            Q5_1 => "Q5_1",
            Q8_0 => "Q8_0",
            Q8_1 => "Q8_1",
            Q2K => "Q2_K",
            Q3K => "Q3_K",
            Q4K => "Q4_K",
            Q5K => "Q5_K",
            Q6K => "Q6_K",
            Q8K => "Q8_K",
            Iq2Xxs => "IQ2_XXS",
            Iq2Xs => "IQ2_XS",
            Iq3Xxs => "IQ3_XXS",
            Iq1S => "IQ1_S",
            Iq4Nl => "IQ4_NL",
            Iq3S => "IQ3_S",
            Iq2S => "IQ2_S",
            Iq4Xs => "IQ4_XS",
            I8 => "I8",
            I16 => "I16",
            I32 => "I32",
            I64 => "I64",
            F64 => "F64",
            Iq1M => "IQ1_M",
            Bf16 => "BF16",
            Tq1_0 => "TQ1_0",
            Tq2_0 => "TQ2_0",
            Mxfp4 => "MXFP4",
            Nvfp4 => "NVFP4",
            Q1_0 => "Q1_0",
            Q2_0 => "Q2_0",
            Ik(t) => t.name,
        }
    }

    /// Values per block (`blck_size`).
    pub fn block(self) -> u64 {
        use GgmlType::*;
        match self {
            F32 | F16 | Bf16 | I8 | I16 | I32 | I64 | F64 => 1,
            Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 | Q8_1 | Iq4Nl | Mxfp4 => 32,
            Nvfp4 | Q2_0 => 64,
            Q1_0 => 128,
            Q2K | Q3K | Q4K | Q5K | Q6K | Q8K | Iq2Xxs | Iq2Xs | Iq3Xxs | Iq1S | Iq3S | Iq2S | Iq4Xs | Iq1M | Tq1_0
            | Tq2_0 => QK_K,
            Ik(t) => t.block,
        }
    }

    /// Bytes per block (`type_size`, the `sizeof(block_*)` in ggml-common.h).
    pub fn block_bytes(self) -> u64 {
        use GgmlType::*;
        // K_SCALE_SIZE = 12 (ggml-common.h).
        const K_SCALE: u64 = 12;
        match self {
            I8 => 1,
            F16 | Bf16 | I16 => 2,
            F32 | I32 => 4,
            I64 | F64 => 8,
            Q4_0 => HALF + 32 / 2,                                  // 18
            Q4_1 => 2 * HALF + 32 / 2,                              // 20
            Q5_0 => HALF + 4 + 32 / 2,                              // 22
            Q5_1 => 2 * HALF + 4 + 32 / 2,                          // 24
            Q8_0 => HALF + 32,                                      // 34
            Q8_1 => 2 * HALF + 32,                                  // 36
            Iq4Nl => HALF + 32 / 2,                                 // 18
            Mxfp4 => 1 + 32 / 2,                                    // 17: an E8M0 scale + 32 e2m1 nibbles
            Nvfp4 => 64 / 16 + 64 / 2,                              // 36: 4 E4M3 sub-block scales + 64 nibbles
            Q1_0 => HALF + 128 / 8,                                 // 18
            Q2_0 => HALF + 64 / 4,                                  // 18
            Q2K => 2 * HALF + QK_K / 16 + QK_K / 4,                 // 84
            Q3K => HALF + QK_K / 4 + QK_K / 8 + 12,                 // 110
            Q4K => 2 * HALF + K_SCALE + QK_K / 2,                   // 144
            Q5K => 2 * HALF + K_SCALE + QK_K / 2 + QK_K / 8,        // 176
            Q6K => HALF + QK_K / 16 + 3 * QK_K / 4,                 // 210
            Q8K => 4 + QK_K + QK_K / 16 * 2,                        // 292
            Iq2Xxs => HALF + QK_K / 8 * 2,                          // 66
            Iq2Xs => HALF + QK_K / 8 * 2 + QK_K / 32,               // 74
            Iq2S => HALF + QK_K / 4 + QK_K / 16,                    // 82
            Iq3Xxs => HALF + 3 * (QK_K / 8),                        // 98
            Iq3S => HALF + 13 * (QK_K / 32) + QK_K / 64,            // 110 (IQ3S_N_SCALE = QK_K/64)
            Iq1S => HALF + QK_K / 8 + QK_K / 16,                    // 50
            Iq1M => QK_K / 8 + QK_K / 16 + QK_K / 32,               // 56
            Iq4Xs => HALF + 2 + QK_K / 64 + QK_K / 2,               // 136
            Tq1_0 => HALF + QK_K / 64 + (QK_K - 4 * QK_K / 64) / 5, // 54
            Tq2_0 => HALF + QK_K / 4,                               // 66
            Ik(t) => t.block_bytes,
        }
    }

    /// Bytes of a row of `n` values (with ik's row header), or `None` when
    /// `n` is not a whole number of blocks (ggml refuses such tensors).
    pub fn row_bytes(self, n: u64) -> Option<u64> {
        let meta = if let Self::Ik(t) = self { t.row_meta } else { 0 };
        n.is_multiple_of(self.block())
            .then(|| n / self.block())
            .and_then(|b| b.checked_mul(self.block_bytes()))
            .and_then(|b| b.checked_add(meta))
    }

    /// Whether the type packs several values per block with scales.
    pub fn is_quantized(self) -> bool {
        self.block() > 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_match_ggml_type_traits() {
        // (type, blck_size, type_size) as `type_traits[]` in ggml.c gives them.
        let expected: &[(GgmlType, u64, u64)] = &[
            (GgmlType::Q4_0, 32, 18),
            (GgmlType::Q4_1, 32, 20),
            (GgmlType::Q5_0, 32, 22),
            (GgmlType::Q5_1, 32, 24),
            (GgmlType::Q8_0, 32, 34),
            (GgmlType::Q8_1, 32, 36),
            (GgmlType::Q2K, 256, 84),
            (GgmlType::Q3K, 256, 110),
            (GgmlType::Q4K, 256, 144),
            (GgmlType::Q5K, 256, 176),
            (GgmlType::Q6K, 256, 210),
            (GgmlType::Q8K, 256, 292),
            (GgmlType::Iq2Xxs, 256, 66),
            (GgmlType::Iq2Xs, 256, 74),
            (GgmlType::Iq3Xxs, 256, 98),
            (GgmlType::Iq1S, 256, 50),
            (GgmlType::Iq4Nl, 32, 18),
            (GgmlType::Iq3S, 256, 110),
            (GgmlType::Iq2S, 256, 82),
            (GgmlType::Iq4Xs, 256, 136),
            (GgmlType::Iq1M, 256, 56),
            (GgmlType::Tq1_0, 256, 54),
            (GgmlType::Tq2_0, 256, 66),
            (GgmlType::Mxfp4, 32, 17),
            (GgmlType::Nvfp4, 64, 36),
            (GgmlType::Q1_0, 128, 18),
            (GgmlType::Q2_0, 64, 18),
            (GgmlType::Bf16, 1, 2),
        ];
        for &(t, block, size) in expected {
            assert_eq!((t.block(), t.block_bytes()), (block, size), "{}", t.name());
        }
        for t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()), Some(*t));
        }
        for removed in [4, 5, 36, 37, 38, 43, 136, 400, u32::MAX] {
            assert_eq!(GgmlType::from_id(removed), None);
        }
        assert_eq!(GgmlType::Q4K.row_bytes(4096), Some(16 * 144));
        assert_eq!(GgmlType::Q4K.row_bytes(100), None);
    }

    /// ik_llama.cpp's types: the ids and sizes of its `type_traits[]`
    /// (8337e4cd), the row header counted once per row. The DeepSeek-R1
    /// ik log (`llamacpp-ik-18b0375-…`) prints a CPU buffer 124.5 MiB short
    /// of its tensors without the headers.
    #[test]
    fn ik_types_read_with_their_row_headers() {
        let t = |id| GgmlType::from_id(id).unwrap_or_else(|| panic!("ik type {id}"));
        assert_eq!(t(144).name(), "IQ4_KS");
        assert!(t(144).ik_only() && !GgmlType::Q4K.ik_only());
        // IQ4_KS: a float scale, then 16 blocks of 136 bytes for 4096 values.
        assert_eq!(t(144).row_bytes(4096), Some(4 + 16 * 136));
        assert_eq!(t(137).row_bytes(4096), Some(16 * 76));
        assert_eq!(t(219).row_bytes(64), Some(2 + 2 * 6));
        assert_eq!(t(145).row_bytes(100), None);
        for ik in IK_TYPES {
            assert!(GgmlType::ALL.iter().all(|m| m.id() != ik.id), "{} collides with mainline", ik.name);
            assert_eq!(GgmlType::from_id(ik.id).map(GgmlType::name), Some(ik.name));
        }
    }
}
