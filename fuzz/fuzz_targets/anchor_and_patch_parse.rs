//! Fuzzes the hashline and apply_patch parsers and the resolution of what they
//! parse; the check itself is `lancet::invariants::anchor_and_patch_parse`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lancet::invariants::anchor_and_patch_parse(data));
