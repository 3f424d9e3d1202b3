#![no_main]
//! `fuzz::config_checkpoint` under libFuzzer (`cargo xtask fuzz config_checkpoint`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::config_checkpoint(data));
