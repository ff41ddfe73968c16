//! Fuzzes diff-then-apply: a diff rendered from two arbitrary texts, parsed
//! and applied to the first, gives the second; the check itself is
//! `lancet::invariants::udiff_round_trip`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lancet::invariants::udiff_round_trip(data));
