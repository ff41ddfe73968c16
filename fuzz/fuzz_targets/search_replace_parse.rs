//! Fuzzes the search/replace parser and the resolution of what it parses;
//! the check itself is `lancet::invariants::search_replace_parse`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| lancet::invariants::search_replace_parse(data));
