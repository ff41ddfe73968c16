//! Fuzzes the matcher cascade on arbitrary documents, needles and hints; the
//! check itself is `lancet::invariants::cascade`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lancet::invariants::cascade(data));
