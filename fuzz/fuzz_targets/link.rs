#![no_main]
//! `fuzz::link` under libFuzzer (`cargo xtask fuzz link`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::link(data));
