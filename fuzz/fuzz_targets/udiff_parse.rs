//! Fuzzes the unified-diff parser (forwards and reversed) and the resolution
//! of what it parses; the check itself is `lancet::invariants::udiff_parse`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lancet::invariants::udiff_parse(data));
