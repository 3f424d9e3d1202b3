#![no_main]
//! `fuzz::config` under libFuzzer (`cargo xtask fuzz config`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::config(data));
