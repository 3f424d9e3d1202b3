#![no_main]
//! `fuzz::protocol` under libFuzzer (`cargo xtask fuzz protocol`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::protocol(data));
