//! Properties of the engine, checked on generated inputs (proptest).
//!
//! Generators are shared and commented (`arb_*`): lines come from a small
//! alphabet so that repeats — the hard case for locating text — are common.

use lancet::{
    Document, EditFormat, EditOp, EditReport, Eol, Format, MatchOptions, ResolveContext,
    SearchReplace, TextEditBuilder,
};
use proptest::prelude::*;

/// A source-like line: indentation, a few tokens, sometimes trailing spaces;
/// never a marker, an elision (`...`) or a placeholder, which have meanings of their own.
fn arb_line() -> impl Strategy<Value = String> {
    let indent = prop::sample::select(vec!["", "", "    ", "        ", "\t"]);
    let body = prop::sample::select(vec![
        "",
        "x = 1",
        "y = 2",
        "return x",
        "}",
        "{",
        "foo(a, b)",
        "if x:",
        "else:",
        "// note",
        "let v = vec![];",
        "print(\"hi\")",
        "z",
        "end",
    ]);
    let trail = prop::sample::select(vec!["", "", "", "  "]);
    (indent, body, trail).prop_map(|(i, b, t)| {
        if b.is_empty() {
            String::new()
        } else {
            format!("{i}{b}{t}")
        }
    })
}

/// A document's lines (possibly empty).
fn arb_lines(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(arb_line(), 0..max)
}

/// Applies model text in the search/replace format to `doc`; `None` if any edit failed.
fn apply_text(doc: &Document, text: &str) -> Option<Document> {
    let patch = Format::SearchReplace.parse(text).ok()?;
    let ops: Vec<&EditOp> = patch.ops();
    let mut reports: Vec<EditReport> = (0..ops.len()).map(|i| EditReport::new(i, 0)).collect();
    let opts = MatchOptions::default();
    let ctx = ResolveContext::new(&opts);
    let out = lancet::resolve_file(doc, &ops, &ctx, false, &mut reports);
    reports.iter().all(|r| r.status.is_ok()).then_some(out)
}

fn block(search: &[String], replace: &[String]) -> String {
    format!(
        "f.txt\n<<<<<<< SEARCH\n{}=======\n{}>>>>>>> REPLACE\n",
        search.iter().map(|l| format!("{l}\n")).collect::<String>(),
        replace.iter().map(|l| format!("{l}\n")).collect::<String>()
    )
}

fn join(lines: &[String], eol: &str, final_newline: bool) -> String {
    let mut s = lines.join(eol);
    if final_newline && !lines.is_empty() {
        s.push_str(eol);
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// A SEARCH block that occurs exactly once (as whole lines) gives the same
    /// result as plain string replacement.
    #[test]
    fn unique_block_equals_string_replacement(
        lines in arb_lines(30),
        start in 0usize..30,
        len in 1usize..5,
        replace in arb_lines(5),
    ) {
        prop_assume!(!lines.is_empty());
        let start = start % lines.len();
        let end = (start + len).min(lines.len());
        let search = &lines[start..end];
        prop_assume!(search.iter().any(|l| !l.trim().is_empty()));
        let occurrences = lines.windows(search.len()).filter(|w| *w == search).count();
        prop_assume!(occurrences == 1);
        let doc = Document::from_text(&join(&lines, "\n", true));
        let mut want: Vec<String> = lines[..start].to_vec();
        want.extend(replace.iter().cloned());
        want.extend(lines[end..].iter().cloned());
        let got = apply_text(&doc, &block(search, &replace));
        prop_assert!(got.is_some(), "edit failed");
        let got = got.unwrap();
        prop_assert_eq!(got.text(), join(&want, "\n", !want.is_empty()));
    }

    /// CRLF endings and the final-newline state survive any applied edit.
    #[test]
    fn crlf_and_final_newline_survive(
        lines in arb_lines(20),
        start in 0usize..20,
        len in 1usize..4,
        replace in arb_lines(4),
        final_newline in any::<bool>(),
    ) {
        prop_assume!(!lines.is_empty());
        let start = start % lines.len();
        let end = (start + len).min(lines.len());
        let search = &lines[start..end];
        prop_assume!(search.iter().any(|l| !l.trim().is_empty()));
        // "No final newline" cannot be told apart from a final empty line: skip that case.
        let last_after = if end == lines.len() { replace.last() } else { lines.last() };
        prop_assume!(final_newline || last_after.is_some_and(|l| !l.is_empty()));
        // A file with no line ending at all gives new lines no ending to copy (they get `\n`).
        prop_assume!(final_newline || lines.len() > 1);
        let doc = Document::from_text(&join(&lines, "\r\n", final_newline));
        // An empty last line means the text ends with a line ending after all.
        let final_newline = doc.has_final_newline();
        if let Some(out) = apply_text(&doc, &block(search, &replace)) {
            if out.line_count() > 0 {
                prop_assert_eq!(out.has_final_newline(), final_newline);
            }
            for i in 0..out.line_count() {
                let want = if i + 1 == out.line_count() && !final_newline { Eol::None } else { Eol::CrLf };
                prop_assert_eq!(out.eol(i), want, "line {} of {:?}", i, out.text());
            }
        }
    }

    /// `TextEdit` accepts exactly the sets of replacements that are disjoint
    /// (an insertion may touch a range's edge; two insertions may not share a point).
    #[test]
    fn text_edit_accepts_exactly_disjoint_sets(ranges in prop::collection::vec((0usize..20, 0usize..4), 0..6)) {
        let ranges: Vec<std::ops::Range<usize>> = ranges.iter().map(|&(s, l)| s..s + l).collect();
        let mut b = TextEditBuilder::new();
        for (i, r) in ranges.iter().enumerate() {
            b.replace(r.clone(), vec!["x".to_owned()], i);
        }
        let clash = |a: &std::ops::Range<usize>, b: &std::ops::Range<usize>| {
            if a.is_empty() && b.is_empty() {
                a.start == b.start
            } else if a.is_empty() {
                b.start < a.start && a.start < b.end
            } else if b.is_empty() {
                a.start < b.start && b.start < a.end
            } else {
                a.start < b.end && b.start < a.end
            }
        };
        let disjoint = ranges.iter().enumerate().all(|(i, a)| ranges[i + 1..].iter().all(|b| !clash(a, b)));
        prop_assert_eq!(b.finish().is_ok(), disjoint);
    }

    /// The search/replace parser never panics, whatever it is fed (and
    /// resolving what it parses never panics either).
    #[test]
    fn parser_never_panics(parts in prop::collection::vec(prop::sample::select(vec![
        "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n", "```\n", "```python\n", "a.py\n",
        ":start_line: 3\n", "-------\n", "x = 1\n", "...\n", "# ... existing code ...\n", "\\=======\n",
        "\n", "12 | x\n", "<<<<< ORIGINAL\n", ">>>>> UPDATED\n", "é\r\n",
    ]), 0..24)) {
        lancet::invariants::search_replace_parse(parts.concat().as_bytes());
    }

    /// render(before → after), parsed and applied to before, gives after.
    #[test]
    fn render_parse_apply_round_trips(before in arb_lines(25), after in arb_lines(25)) {
        let before_text = join(&before, "\n", true);
        let after_text = join(&after, "\n", true);
        let rendered = SearchReplace.render("f.txt", &before_text, &after_text);
        let doc = Document::from_text(&before_text);
        // SEARCH needs some non-blank text: a file of only blank lines cannot be addressed.
        if before_text == after_text || before.iter().all(|l| l.trim().is_empty()) {
            return Ok(());
        }
        let got = apply_text(&doc, &rendered);
        prop_assert!(got.is_some(), "rendered edit failed to apply:\n{}", rendered);
        let got = got.unwrap();
        prop_assert_eq!(got.text(), after_text.as_str(), "rendered:\n{}", rendered);
    }

    /// The cascade's claimed matches satisfy their invariants on arbitrary documents.
    #[test]
    fn cascade_invariants(hay in arb_lines(30), needle in arb_lines(4), hint in prop::option::of(0usize..30)) {
        let data = format!("{}\u{0}{}\u{0}{}", hay.join("\n"), needle.join("\n"), hint.map(|h| h.to_string()).unwrap_or_default());
        lancet::invariants::cascade(data.as_bytes());
    }
}
