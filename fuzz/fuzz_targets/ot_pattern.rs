#![no_main]
//! `fuzz::ot_pattern` under libFuzzer (`cargo xtask fuzz ot_pattern`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::ot_pattern(data));
