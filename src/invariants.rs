//! Checks the fuzz targets and property tests call: each runs one part of the
//! engine on arbitrary input and panics if an invariant does not hold.
//!
//! Kept in the library (hidden from the docs) so the `fuzz/` targets stay
//! one-liners and the same checks run under proptest in `cargo test`.

use crate::format::{EditFormat, SearchReplace};
use crate::matcher::{Tier, locate};
use crate::{Document, MatchOptions};

/// Parsing search/replace text never panics, and every parsed block resolves
/// against an arbitrary document without panicking.
pub fn search_replace_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (input, file) = text.split_once('\u{0}').unwrap_or((text, "a\nb\n"));
    if let Ok(patch) = SearchReplace.parse(input) {
        let doc = Document::from_text(file);
        let opts = MatchOptions::default();
        let ctx = crate::ResolveContext::new(&opts);
        for op in patch.ops() {
            let _ = op.resolve(&doc, &ctx);
        }
    }
}

/// The cascade on an arbitrary document and needle: no panic, and a claimed
/// match satisfies its invariants (range inside the document, alignment
/// monotone and inside the range, exact matches equal, similarity in 0–1).
pub fn cascade(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (hay, rest) = text.split_once('\u{0}').unwrap_or((text, ""));
    let (needle, hint) = rest.split_once('\u{0}').unwrap_or((rest, ""));
    let doc = Document::from_text(hay);
    let needle: Vec<&str> = needle.lines().collect();
    let hint = hint.trim().parse::<usize>().ok();
    if let Ok(m) = locate(&doc, &needle, hint, &MatchOptions::default()) {
        assert!(
            m.range.start <= m.range.end && m.range.end <= doc.line_count(),
            "range {m:?}"
        );
        assert!((0.0..=1.0).contains(&m.similarity), "similarity {m:?}");
        assert_eq!(m.alignment.len(), needle.len());
        let mut last = None;
        for d in m.alignment.iter().flatten() {
            assert!(m.range.contains(d), "aligned line outside range: {m:?}");
            assert!(last.is_none_or(|l| l < *d), "alignment not monotone: {m:?}");
            last = Some(*d);
        }
        if m.tier == Tier::Exact {
            for (i, d) in m.alignment.iter().enumerate() {
                assert_eq!(Some(needle[i]), d.map(|d| doc.line(d)));
            }
        }
    }
}
