//! Checks the fuzz targets and property tests call: each runs one part of the
//! engine on arbitrary input and panics if an invariant does not hold.
//!
//! Kept in the library (hidden from the docs) so the `fuzz/` targets stay
//! one-liners and the same checks run under proptest in `cargo test`.

use crate::apply::resolve_file;
use crate::format::{DiffOptions, ResolveContext, render_unified};
use crate::matcher::{Tier, locate};
use crate::{Document, MatchOptions};

/// Parsing search/replace text never panics, and every parsed block resolves
/// against an arbitrary document without panicking.
pub fn search_replace_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (input, file) = text.split_once('\u{0}').unwrap_or((text, "a\nb\n"));
    // The text parser itself: `Format::parse` would take a JSON object for a tool call.
    if let Ok(patch) = (crate::format::search_replace::DEF.parse)(input, DiffOptions::default()) {
        let doc = Document::from_text(file);
        let opts = MatchOptions::default();
        let ctx = ResolveContext::new(&opts);
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

/// Parsing a unified diff never panics, forwards or reversed, and every hunk
/// it yields resolves against an arbitrary document without panicking; a hunk
/// that applies leaves a document that round-trips its bytes.
pub fn udiff_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (input, file) = text
        .split_once('\u{0}')
        .unwrap_or((text, "a\nb\nctx\nold\n"));
    let doc = Document::from_text(file);
    let opts = MatchOptions::default();
    let ctx = ResolveContext::new(&opts);
    for reverse in [false, true] {
        let diff = DiffOptions {
            strip: None,
            reverse,
        };
        if let Ok(patch) = crate::Format::UnifiedDiff.parse_with(input, diff) {
            let ops = patch.ops();
            let mut reports: Vec<crate::EditReport> = (0..ops.len())
                .map(|i| crate::EditReport::new(i, 0))
                .collect();
            let out = resolve_file(&doc, &ops, &ctx, false, &mut reports);
            assert_eq!(Document::from_text(out.text()).to_bytes(), out.to_bytes());
        }
    }
}

/// Diff-then-apply: the unified diff of two texts (split at the first NUL),
/// parsed and applied to the first, gives the second, byte for byte.
pub fn udiff_round_trip(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Some((before, after)) = text.split_once('\u{0}') else {
        return;
    };
    // A lone `\r` is content the line model keeps inside a line, but a diff
    // line ending in one is read as a CRLF line: out of this check's scope.
    if before == after
        || [before, after]
            .iter()
            .any(|t| t.contains('\r') || t.contains('\u{feff}'))
    {
        return;
    }
    let diff = render_unified(Some("f"), Some("f"), before, after, 3);
    let patch = match crate::Format::UnifiedDiff.parse(&diff) {
        Ok(p) => p,
        Err(e) => panic!("rendered diff does not parse ({e}):\n{diff}"),
    };
    let ops = patch.ops();
    let mut reports: Vec<crate::EditReport> = (0..ops.len())
        .map(|i| crate::EditReport::new(i, 0))
        .collect();
    let opts = MatchOptions::default();
    let ctx = ResolveContext::new(&opts);
    let out = resolve_file(
        &Document::from_text(before),
        &ops,
        &ctx,
        false,
        &mut reports,
    );
    assert!(
        reports.iter().all(|r| r.status.is_ok()),
        "{reports:?}\n{diff}"
    );
    assert_eq!(out.text(), after, "{diff}");
}

/// Parsing hashline directives and apply_patch envelopes never panics, and
/// what they parse resolves against an arbitrary document without panicking.
pub fn anchor_and_patch_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (input, file) = text
        .split_once('\u{0}')
        .unwrap_or((text, "def f():\n    x = 1\nctx\nold\n"));
    let doc = Document::from_text(file);
    let opts = MatchOptions::default();
    let ctx = ResolveContext::new(&opts);
    for format in [crate::Format::Hashline, crate::Format::ApplyPatch] {
        if let Ok(patch) = format.parse(input) {
            for op in patch.ops() {
                let _ = op.resolve(&doc, &ctx);
            }
        }
    }
}
