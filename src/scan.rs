//! Byte searches for the engine's hot paths (decoding a file, the syntax
//! guard's lexical scan) that never ask the CPU what it supports.
//!
//! `memchr::memchr` picks AVX2 or SSE2 at its first call by running CPUID,
//! nine of them; in a virtual machine each one traps to the hypervisor
//! (15–40 µs measured here, `benches/process_cpuid.sh`), so the first search
//! of a `lancet apply` process cost about 0.15 ms: a tenth of GNU patch's
//! whole run. SSE2 is part of x86-64 itself, so its searchers need no
//! detection; the lines they search are short, where AVX2's wider vectors
//! gain nothing. Elsewhere memchr's own choice is used.
//!
//! Owns: the engine's byte searches. Does not own: the agent's (a session
//! pays the detection once). Invariant: each function returns exactly what
//! its `memchr` namesake returns (tested against it).

#[cfg(target_arch = "x86_64")]
use memchr::arch::x86_64::sse2::memchr::{One, Three, Two};

/// The first `needle` in `haystack`.
#[cfg(target_arch = "x86_64")]
pub(crate) fn find(needle: u8, haystack: &[u8]) -> Option<usize> {
    match One::new(needle) {
        Some(s) => s.find(haystack),
        None => memchr::memchr(needle, haystack),
    }
}

/// How many `needle`s `haystack` holds.
#[cfg(target_arch = "x86_64")]
pub(crate) fn count(needle: u8, haystack: &[u8]) -> usize {
    match One::new(needle) {
        Some(s) => s.count(haystack),
        None => memchr::memchr_iter(needle, haystack).count(),
    }
}

/// The first of `a` or `b` in `haystack` (the syntax guard's lexer).
#[cfg(target_arch = "x86_64")]
#[cfg_attr(not(feature = "syntax"), allow(dead_code))]
pub(crate) fn find2(a: u8, b: u8, haystack: &[u8]) -> Option<usize> {
    match Two::new(a, b) {
        Some(s) => s.find(haystack),
        None => memchr::memchr2(a, b, haystack),
    }
}

/// The first of `a`, `b` or `c` in `haystack` (the syntax guard's lexer).
#[cfg(target_arch = "x86_64")]
#[cfg_attr(not(feature = "syntax"), allow(dead_code))]
pub(crate) fn find3(a: u8, b: u8, c: u8, haystack: &[u8]) -> Option<usize> {
    match Three::new(a, b, c) {
        Some(s) => s.find(haystack),
        None => memchr::memchr3(a, b, c, haystack),
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[cfg_attr(not(feature = "syntax"), allow(unused_imports))]
pub(crate) use memchr::{memchr as find, memchr2 as find2, memchr3 as find3};

/// How many `needle`s `haystack` holds.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn count(needle: u8, haystack: &[u8]) -> usize {
    memchr::memchr_iter(needle, haystack).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_searches_are_memchrs(
            hay in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'"'), Just(0u8), any::<u8>()], 0..300),
            a in any::<u8>(), b in any::<u8>(), c in any::<u8>(),
        ) {
            prop_assert_eq!(find(a, &hay), memchr::memchr(a, &hay));
            prop_assert_eq!(count(a, &hay), memchr::memchr_iter(a, &hay).count());
            prop_assert_eq!(find2(a, b, &hay), memchr::memchr2(a, b, &hay));
            prop_assert_eq!(find3(a, b, c, &hay), memchr::memchr3(a, b, c, &hay));
        }
    }
}
