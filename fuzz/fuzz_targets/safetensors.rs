#![no_main]
//! `fuzz::safetensors` under libFuzzer (`cargo xtask fuzz safetensors`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::safetensors(data));
