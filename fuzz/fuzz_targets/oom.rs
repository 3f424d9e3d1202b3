#![no_main]
//! `fuzz::oom` under libFuzzer (`cargo xtask fuzz oom`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::oom(data));
