#![no_main]
//! `fuzz::gguf` under libFuzzer (`cargo xtask fuzz gguf`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz::gguf(data));
