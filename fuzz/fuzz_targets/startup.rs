#![no_main]
//! `fuzz::startup` under libFuzzer (`cargo xtask fuzz startup`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::startup(data));
