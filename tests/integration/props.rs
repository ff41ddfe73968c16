//! Properties of the engine, checked on generated inputs (proptest).
//!
//! Generators are shared and commented (`arb_*`): lines come from a small
//! alphabet so that repeats — the hard case for locating text — are common.

use lancet::apply::resolve_file;
use lancet::edit::TextEditBuilder;
use lancet::format::{EditOp, ResolveContext, render_unified};
use lancet::{ApplyOptions, Document, EditReport, Eol, Format, MatchOptions};
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

/// The git blob id of `text` (what `git hash-object` prints).
fn blob_id(text: &str) -> String {
    use sha1::Digest;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", text.len()).as_bytes());
    h.update(text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Applies model text in the search/replace format to `doc`; `None` if any edit failed.
fn apply_text(doc: &Document, text: &str) -> Option<Document> {
    apply_in(Format::SearchReplace, doc, text)
}

/// Applies text in `format` to `doc` (one file); `None` if any edit failed.
fn apply_in(format: Format, doc: &Document, text: &str) -> Option<Document> {
    let patch = format.parse(text).ok()?;
    let ops: Vec<&EditOp> = patch.ops();
    let mut reports: Vec<EditReport> = (0..ops.len()).map(|i| EditReport::new(i, 0)).collect();
    let opts = MatchOptions::default();
    let ctx = ResolveContext::new(&opts);
    let out = resolve_file(doc, &ops, &ctx, false, &mut reports);
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
        let rendered = Format::SearchReplace.render("f.txt", &before_text, &after_text);
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

    /// Unified diffs: render(before → after), parsed and applied to before, gives after.
    #[test]
    fn udiff_round_trips(before in arb_lines(25), after in arb_lines(25), fin in any::<bool>()) {
        let b = join(&before, "\n", fin);
        let a = join(&after, "\n", fin);
        let diff = render_unified(Some("f.txt"), Some("f.txt"), &b, &a, 3);
        prop_assume!(b != a);
        let got = apply_in(Format::UnifiedDiff, &Document::from_text(&b), &diff);
        prop_assert!(got.is_some(), "diff failed to apply:\n{}", diff);
        let got = got.unwrap();
        prop_assert_eq!(got.text(), a.as_str(), "diff:\n{}", diff);
    }

    /// A git diff carrying its `index` line (both sides' blob ids), with 0 to
    /// 2 lines of context: applied to the pre-image it gives the post-image
    /// (hunks whose text recurs are placed by their numbers on the verified
    /// file), and sent again to the post-image it changes nothing (the
    /// post-image id). Both hold whether or not lancet hashes the file:
    /// `apply.rs` defers the digest until it could change the outcome.
    #[test]
    fn udiff_with_blob_ids_applies_once(
        before in prop::collection::vec(prop::sample::select(vec!["x", "y", "z", ""]), 1..20),
        changes in prop::collection::vec((0usize..20, 0u8..3, prop::sample::select(vec!["x", "y", "w"])), 1..4),
        fin in any::<bool>(),
        context in 0usize..3,
    ) {
        // Few distinct lines, so that hunks' text recurs: the case where only
        // the verified file's line numbers place a hunk. Each change replaces,
        // deletes, or repeats one line.
        let before: Vec<String> = before.iter().map(|l| (*l).to_owned()).collect();
        let mut after = before.clone();
        for (at, op, word) in changes {
            let i = at % after.len().max(1);
            match (op, after.is_empty()) {
                (_, true) => after.push(word.to_owned()),
                (0, false) => after[i] = word.to_owned(),
                (1, false) => { after.remove(i); }
                _ => { let l = after[i].clone(); after.insert(i, l); }
            }
        }
        let b = join(&before, "\n", fin);
        let a = join(&after, "\n", fin);
        prop_assume!(b != a);
        let diff = format!(
            "diff --git a/f.txt b/f.txt\nindex {}..{} 100644\n{}",
            &blob_id(&b)[..7],
            &blob_id(&a)[..7],
            render_unified(Some("f.txt"), Some("f.txt"), &b, &a, context),
        );
        let opts = ApplyOptions::default();
        let once = lancet::apply_text(Format::UnifiedDiff, &diff, "f.txt", &b, &opts).unwrap();
        prop_assert!(once.report.ok, "{}\n{}", once.report.message, diff);
        prop_assert_eq!(once.text.as_deref(), Some(a.as_str()), "diff:\n{}", diff);
        let again = lancet::apply_text(Format::UnifiedDiff, &diff, "f.txt", &a, &opts).unwrap();
        prop_assert!(again.report.ok, "{}\n{}", again.report.message, diff);
        prop_assert_eq!(again.text.as_deref(), Some(a.as_str()), "diff:\n{}", diff);
    }

    /// The same with CRLF files: the endings survive, new lines take CRLF.
    #[test]
    fn udiff_round_trips_crlf(before in arb_lines(20), after in arb_lines(20)) {
        let b = join(&before, "\r\n", true);
        let a = join(&after, "\r\n", true);
        prop_assume!(b != a);
        let diff = render_unified(Some("f.txt"), Some("f.txt"), &b, &a, 3);
        let got = apply_in(Format::UnifiedDiff, &Document::from_text(&b), &diff);
        prop_assert!(got.is_some(), "diff failed to apply:\n{}", diff);
        let got = got.unwrap();
        prop_assert_eq!(got.text(), a.as_str(), "diff:\n{}", diff);
    }

    /// A diff made from the file itself, each line ending as it does there
    /// (as git writes one), is applied as made in a file of mixed endings:
    /// a line whose ending the diff changes, or a line it adds, ends as in
    /// the post-image (unified-diff.md §5.2).
    #[test]
    fn udiff_made_from_a_mixed_file_gives_its_post_image(
        before in arb_lines(20),
        after in arb_lines(20),
        crs_before in prop::collection::vec(any::<bool>(), 20),
        crs_after in prop::collection::vec(any::<bool>(), 20),
    ) {
        let mixed = |lines: &[String], crs: &[bool]| -> String {
            lines
                .iter()
                .zip(crs)
                .map(|(l, &cr)| format!("{l}{}", if cr { "\r\n" } else { "\n" }))
                .collect()
        };
        let b = mixed(&before, &crs_before);
        let a = mixed(&after, &crs_after);
        prop_assume!(b != a);
        let diff = render_unified(Some("f.txt"), Some("f.txt"), &b, &a, 3);
        let got = apply_in(Format::UnifiedDiff, &Document::from_text(&b), &diff);
        prop_assert!(got.is_some(), "diff failed to apply:\n{}", diff);
        let got = got.unwrap();
        prop_assert_eq!(got.text(), a.as_str(), "diff:\n{:?}", diff);
    }

    /// Stale line numbers: unrelated lines inserted above the changes do not
    /// stop a diff from landing where its text is (or, when the text is not
    /// unique, from being refused) — it never lands somewhere wrong.
    #[test]
    fn udiff_with_offset_is_right_or_refused(
        before in arb_lines(25),
        after in arb_lines(25),
        shift in 1usize..6,
    ) {
        let b = join(&before, "\n", true);
        let a = join(&after, "\n", true);
        prop_assume!(b != a);
        let diff = render_unified(Some("f.txt"), Some("f.txt"), &b, &a, 3);
        let pad: String = (0..shift).map(|i| format!("# unrelated line {i}\n")).collect();
        if let Some(got) = apply_in(Format::UnifiedDiff, &Document::from_text(&format!("{pad}{b}")), &diff) {
            prop_assert_eq!(got.text(), format!("{pad}{a}"), "diff:\n{}", diff);
        }
    }

    /// The unified-diff parser never panics.
    #[test]
    fn udiff_parser_never_panics(parts in prop::collection::vec(prop::sample::select(vec![
        "diff --git a/x b/x\n", "--- a/x\n", "+++ b/x\n", "--- /dev/null\n", "@@ -1,2 +1,2 @@\n",
        "@@ -0,0 +1 @@\n", "@@ @@\n", " ctx\n", "-old\n", "+new\n", "\\ No newline at end of file\n",
        "rename from x\n", "rename to y\n", "new file mode 100755\n", "index 0000000..1234567\n",
        "```diff\n", "```\n", "\n", "prose\r\n", "@@ -9999999999999999999 +1 @@\n",
    ]), 0..24)) {
        lancet::invariants::udiff_parse(parts.concat().as_bytes());
    }

    /// Hashline: render(before → after) as directives, parsed and applied to before, gives after.
    #[test]
    fn hashline_round_trips(before in arb_lines(20), after in arb_lines(20), fin in any::<bool>()) {
        let b = join(&before, "\n", fin);
        let a = join(&after, "\n", fin);
        // A new file always ends with a newline (anchors cannot say otherwise),
        // and "no final newline" after an empty last line is not a state text can have.
        let plain = |v: &[String]| fin || v.last().is_some_and(|l| !l.is_empty());
        prop_assume!(b != a && plain(&before) && plain(&after));
        let text = Format::Hashline.render("f.txt", &b, &a);
        let got = apply_in(Format::Hashline, &Document::from_text(&b), &text);
        prop_assert!(got.is_some(), "edit failed to apply:\n{}", text);
        let got = got.unwrap();
        prop_assert_eq!(got.text(), a.as_str(), "edit:\n{}", text);
    }

    /// Hashline: changing one line invalidates that line's anchor and no other.
    #[test]
    fn hashline_change_invalidates_exactly_that_anchor(lines in arb_lines(20), at in 0usize..20, new in arb_line()) {
        prop_assume!(!lines.is_empty());
        let at = at % lines.len();
        prop_assume!(lines[at].trim_end() != new.trim_end());
        let before = Document::from_text(&join(&lines, "\n", true));
        let mut changed = lines.clone();
        changed[at] = new;
        let after = Document::from_text(&join(&changed, "\n", true));
        for i in 0..lines.len() {
            let anchor = format!("{}:{}", i + 1, lancet::line_hash(before.line(i)));
            let still = lancet::line_hash(after.line(i)) == lancet::line_hash(before.line(i));
            // A changed line's hash may collide (1 in 4,096); an unchanged line's never differs.
            if i != at {
                prop_assert!(still, "anchor {} of an unchanged line went stale", anchor);
            }
        }
    }

    /// Hashline: lines inserted above an anchor relocate it (with its content
    /// echoed) only when that content is unique within the window; otherwise
    /// the edit is refused as stale — it never lands on the wrong line.
    #[test]
    fn hashline_relocates_only_unique_content(lines in arb_lines(15), at in 0usize..15, shift in 1usize..4) {
        prop_assume!(!lines.is_empty());
        let at = at % lines.len();
        let before = Document::from_text(&join(&lines, "\n", true));
        let target = before.line(at).to_owned();
        let mut moved: Vec<String> = (0..shift).map(|i| format!("# inserted {i}")).collect();
        moved.extend(lines.iter().cloned());
        let doc = Document::from_text(&join(&moved, "\n", true));
        let edit = format!("@@ file f.txt\n@@ replace {}:{}|{}\n+CHANGED\n", at + 1, lancet::line_hash(&target), target);
        let got = apply_in(Format::Hashline, &doc, &edit);
        let occurrences = moved.iter().filter(|l| l.trim_end() == target.trim_end()).count();
        let stays = lancet::line_hash(doc.line(at)) == lancet::line_hash(&target);
        if let Some(got) = got {
            let mut want = moved.clone();
            let landed = if stays { at } else { at + shift };
            want[landed] = "CHANGED".to_owned();
            prop_assert_eq!(got.text(), join(&want, "\n", true));
            prop_assert!(stays || occurrences == 1 || moved[at..].iter().take(2 * shift + 1).count() > 0);
        } else {
            prop_assert!(!stays && occurrences > 1, "a unique moved line was not relocated");
        }
    }

    /// apply_patch: render(before → after), parsed and applied to before, gives after.
    #[test]
    fn apply_patch_round_trips(before in arb_lines(20), after in arb_lines(20)) {
        let b = join(&before, "\n", true);
        let a = join(&after, "\n", true);
        prop_assume!(b != a && before.iter().any(|l| !l.trim().is_empty()));
        let text = Format::ApplyPatch.render("f.txt", &b, &a);
        let got = apply_in(Format::ApplyPatch, &Document::from_text(&b), &text);
        prop_assert!(got.is_some(), "patch failed to apply:\n{}", text);
        let got = got.unwrap();
        prop_assert_eq!(got.text(), a.as_str(), "patch:\n{}", text);
    }

    /// Whole file: render(before → after), parsed and applied to before, gives after
    /// (up to trailing whitespace on lines the rewrite kept, which keep the file's).
    #[test]
    fn whole_round_trips(before in arb_lines(20), after in arb_lines(20)) {
        let b = join(&before, "\n", true);
        let a = join(&after, "\n", true);
        prop_assume!(b != a);
        let text = Format::Whole.render("f.txt", &b, &a);
        let got = apply_in(Format::Whole, &Document::from_text(&b), &text);
        prop_assert!(got.is_some(), "rewrite failed to apply:\n{}", text);
        let got = got.unwrap();
        let trim = |t: &str| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
        prop_assert_eq!(trim(got.text()), trim(&a), "rewrite:\n{}", text);
    }

    /// The hashline and apply_patch parsers never panic.
    #[test]
    fn hashline_and_apply_patch_parsers_never_panic(parts in prop::collection::vec(prop::sample::select(vec![
        "@@ file a.py\n", "@@ replace 1:ZPM\n", "@@ replace 1:ZPM 3:QQQ\n", "@@ insert after 2:XYZ|x\n",
        "@@ delete 1:AAA\n", "@@ set file\n", "@@ delete file\n", "+x\n", "+\n", "@@ replace 0:Z\n",
        "*** Begin Patch\n", "*** Update File: a.py\n", "*** Add File: b.py\n", "*** Delete File: c\n",
        "*** Move to: d\n", "@@ def f():\n", "@@\n", " ctx\n", "-old\n", "*** End of File\n",
        "*** End Patch\n", "EOF\n", "\n",
    ]), 0..24)) {
        lancet::invariants::anchor_and_patch_parse(parts.concat().as_bytes());
    }
}

// ------------------------------------------------------------------ hashline: lines moved above the edits

/// One hashline edit a model writes against the file it read: a range of the
/// original lines (0-based, inclusive) and what it does there.
#[derive(Debug, Clone)]
enum MovedEdit {
    /// `replace A B` (an empty payload is `delete A B`).
    Replace(usize, usize, Vec<String>),
    /// `insert after A`.
    After(usize, Vec<String>),
    /// `insert before A`.
    Before(usize, Vec<String>),
}

impl MovedEdit {
    fn span(&self) -> (usize, usize) {
        match self {
            MovedEdit::Replace(s, e, _) => (*s, *e),
            MovedEdit::After(a, _) | MovedEdit::Before(a, _) => (*a, *a),
        }
    }
}

/// A file as the model read it, the edits it wrote against that view, and how
/// the file moved before the edits arrived: blocks of lines added or removed
/// in the gaps above and between the edits (never inside an edit's lines),
/// each at most 10 lines, so every moved line stays within the ±20-line
/// relocation window. Lines come from `arb_line` (repeats, blank lines and
/// lone braces are common); new lines are unique (`new 3.1`) so no edit is
/// mistaken for an already applied one.
#[derive(Debug, Clone)]
struct MovedCase {
    seen: Vec<String>,
    edits: Vec<MovedEdit>,
    /// (gap index, where in the gap 0..1000, +k added / −k removed, the added lines).
    moves: Vec<(usize, usize, isize, Vec<String>)>,
    /// Which anchors carry their echo (`12:ABC|content`), by edit.
    echo: Vec<bool>,
}

fn arb_moved_case() -> impl Strategy<Value = MovedCase> {
    (
        prop::collection::vec(arb_line(), 12..60),
        prop::collection::vec((0usize..1000, 0usize..4, 0usize..3, 0usize..3), 1..5),
        prop::collection::vec(
            (0usize..6, 0usize..1000, -10isize..=10, arb_lines(10)),
            1..3,
        ),
        prop::collection::vec(prop::bool::weighted(0.9), 5),
    )
        .prop_map(|(seen, raw, moves, echo)| {
            // Edits at increasing positions, at least one line apart.
            let n = seen.len();
            let mut edits = Vec::new();
            let mut next = 0usize;
            let slots = raw.len();
            for (k, (pos, kind, len, payload)) in raw.into_iter().enumerate() {
                let room = n.saturating_sub(next);
                let lo = next + pos % (room / (slots - k)).max(1);
                if lo >= n {
                    break;
                }
                let lines: Vec<String> = (0..payload + usize::from(kind != 1))
                    .map(|j| format!("new {k}.{j}"))
                    .collect();
                let e = match kind {
                    0 | 1 => {
                        let end = (lo + len).min(n - 1);
                        let lines = if kind == 1 { Vec::new() } else { lines };
                        MovedEdit::Replace(lo, end, lines)
                    }
                    2 => MovedEdit::After(lo, lines),
                    _ => MovedEdit::Before(lo, lines),
                };
                next = e.span().1 + 2;
                edits.push(e);
            }
            let moves = moves
                .into_iter()
                .map(|(g, at, k, mut added)| {
                    let k = if k == 0 { 1 } else { k };
                    added.resize(k.unsigned_abs(), "added".to_owned());
                    (g, at, k, added)
                })
                .collect();
            MovedCase {
                seen,
                edits,
                moves,
                echo,
            }
        })
}

/// What happened to one generated case.
#[derive(Debug, PartialEq, Eq)]
enum MovedOutcome {
    /// Applied where the model meant; `true` when the input determines it
    /// (else the in-place reading or the snapshot's diff happened to be right).
    Correct(bool),
    /// Refused where the input does not determine the answer ([`moved_oracle`]).
    Refused,
    /// Refused although the input determines the answer: a miss.
    Missed,
    Wrong(String),
    /// Applied not as meant where the input could not tell: every edit
    /// verified at its stated lines although the file moved, and the edits
    /// were applied there (nothing showed the move); or the input misleads
    /// (an anchor without echo whose line moved is contradicted by what its
    /// hash matches at its stated line); or, with the snapshot, the result
    /// is one the input allows but not the one meant (the snapshot's line
    /// diff read the change otherwise than it was made).
    Undetermined,
}

/// What the input alone (the current file, the stated lines, hashes and
/// echoes, and with `with_seen` the snapshot's content) says about a case.
#[derive(Debug)]
struct MovedOracle {
    /// Every alignment consistent with the input gives the true result.
    determined: bool,
    /// The result with every edit at its stated lines, when every edit
    /// verifies there (nothing in the input shows a move).
    in_place: Option<Vec<String>>,
    /// Each edit's displacements that some alignment consistent with the input uses.
    readings: Vec<Vec<isize>>,
    /// The true alignment is consistent with the input: false when an edit
    /// whose anchors' content is unknown moved, and its hash does not match
    /// at its stated line (or matches another line's content there).
    truth_consistent: bool,
}

impl MovedOracle {
    /// Whether `out` is what some alignment consistent with the input gives
    /// (every combination of the edits' readings, up to 4,096 of them).
    fn is_a_reading(&self, case: &MovedCase, current: &[String], out: &str) -> bool {
        let combos: usize = self.readings.iter().map(Vec::len).product();
        if combos == 0 || combos > 4096 {
            return false;
        }
        (0..combos).any(|mut c| {
            let mut lines = current.to_vec();
            for (e, ds) in case.edits.iter().zip(&self.readings).rev() {
                lines = apply_moved_edit(&lines, e, ds[c % ds.len()]);
                c /= ds.len();
            }
            join(&lines, "\n", !lines.is_empty()) == out
        })
    }
}

/// The edit applied alone to `lines` at displacement `d`.
fn apply_moved_edit(lines: &[String], e: &MovedEdit, d: isize) -> Vec<String> {
    let at = |i: usize| (i as isize + d) as usize;
    let mut out = lines.to_vec();
    match e {
        MovedEdit::Replace(s, t, new) => {
            out.splice(at(*s)..=at(*t), new.iter().cloned());
        }
        MovedEdit::After(a, new) => {
            out.splice(at(*a) + 1..at(*a) + 1, new.iter().cloned());
        }
        MovedEdit::Before(a, new) => {
            out.splice(at(*a)..at(*a), new.iter().cloned());
        }
    }
    out
}

/// The honest judge of a moved case, from what the input shows (spec §5.1's
/// premise, not its rules): edit k's candidates are the displacements d in
/// ±20 at which every one of its anchors matches the current file (an anchor
/// whose content is known — its echo, or the snapshot — where that content
/// stands; one without, where the content of its stated line stands if its
/// hash matches there, else nowhere); the
/// edits keep their order and the lines between two edits shrink only by
/// deletion (d[k+1] ≥ d[k] − gap[k]). The input determines the case when
/// every alignment left gives every edit one result, and no two insertions
/// truly meet at one point (a conflict, spec §9).
fn moved_oracle(
    case: &MovedCase,
    current: &[String],
    truth: &[isize],
    with_seen: bool,
) -> MovedOracle {
    use lancet::line_hash;
    let seen = &case.seen;
    let cands: Vec<Vec<isize>> = case
        .edits
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let known = with_seen || case.echo[k % case.echo.len()];
            let (s, t) = e.span();
            (-20isize..=20)
                .filter(|&d| {
                    [s, t].iter().all(|&i| {
                        let j = i as isize + d;
                        if j < 0 || j as usize >= current.len() {
                            return false;
                        }
                        let j = j as usize;
                        if known {
                            current[j].trim_end() == seen[i].trim_end()
                        } else {
                            // The hash says the model saw line i's content, if it matches there.
                            i < current.len()
                                && line_hash(&current[i]) == line_hash(&seen[i])
                                && current[j].trim_end() == current[i].trim_end()
                        }
                    })
                })
                .collect()
        })
        .collect();
    let truth_consistent = cands.iter().zip(truth).all(|(c, d)| c.contains(d));
    let in_place = cands.iter().all(|c| c.contains(&0)).then(|| {
        let mut out = current.to_vec();
        for e in case.edits.iter().rev() {
            out = apply_moved_edit(&out, e, 0);
        }
        out
    });
    // The order of the edits: forward then backward (a chain, so this leaves
    // exactly the values some consistent alignment uses).
    let mut f = cands;
    let gap = |k: usize| case.edits[k + 1].span().0 as isize - case.edits[k].span().1 as isize - 1;
    for k in 1..f.len() {
        let lo = f[k - 1].iter().min().map(|m| m - gap(k - 1));
        f[k].retain(|&d| lo.is_some_and(|lo| d >= lo));
    }
    for k in (0..f.len().saturating_sub(1)).rev() {
        let hi = f[k + 1].iter().max().map(|m| m + gap(k));
        f[k].retain(|&d| hi.is_some_and(|hi| d <= hi));
    }
    // Two insertions that truly meet at one point are a conflict the engine
    // refuses by design (spec §9: their order would be a guess).
    let points: Vec<isize> = case
        .edits
        .iter()
        .zip(truth)
        .filter_map(|(e, d)| match e {
            MovedEdit::After(a, _) => Some(*a as isize + d + 1),
            MovedEdit::Before(b, _) => Some(*b as isize + d),
            MovedEdit::Replace(..) => None,
        })
        .collect();
    let meet = points.windows(2).any(|w| w[0] == w[1]);
    let determined = truth_consistent
        && !meet
        && f.iter().zip(&case.edits).all(|(ds, e)| {
            let mut results = ds.iter().map(|&d| apply_moved_edit(current, e, d));
            results.next().is_some_and(|r| results.all(|o| o == r))
        });
    MovedOracle {
        determined,
        in_place,
        readings: f,
        truth_consistent,
    }
}

/// Builds the current file from the case (moves applied), the model's hashline
/// text (stale line numbers, original hashes, echoes), and the intended result;
/// applies the text and says how it went.
///
/// With `with_seen` the resolver gets the file as the model read it (an
/// agent's snapshot), as `ResolveContext::seen`.
fn run_moved_case(case: &MovedCase, with_seen: bool) -> Option<MovedOutcome> {
    use lancet::line_hash;
    let seen = &case.seen;
    if case.edits.is_empty() {
        return None;
    }
    // Gaps: runs of original lines outside every edit span (gap g is above edit g).
    let mut gaps: Vec<(usize, usize)> = Vec::new();
    let mut from = 0;
    for e in &case.edits {
        let (s, t) = e.span();
        gaps.push((from, s));
        from = t + 1;
    }
    gaps.push((from, seen.len()));
    // The current file: (original index, text).
    let mut cur: Vec<(Option<usize>, String)> = seen
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, l)| (Some(i), l))
        .collect();
    let mut total = 0isize;
    for (g, at, k, added) in &case.moves {
        let (lo, hi) = gaps[g % gaps.len()];
        total += k.abs();
        if total > 20 {
            break;
        }
        let pos_of = |cur: &Vec<(Option<usize>, String)>, orig: usize| {
            cur.iter().position(|(o, _)| *o == Some(orig))
        };
        if *k > 0 {
            // Insert before original line `p` (or at the end of the file).
            let p = lo + at % (hi - lo + 1);
            let idx = if p < seen.len() {
                pos_of(&cur, p)?
            } else {
                cur.len()
            };
            for (j, l) in added.iter().enumerate() {
                cur.insert(idx + j, (None, l.clone()));
            }
        } else {
            let k = k.unsigned_abs();
            if hi - lo < k {
                continue;
            }
            let p = lo + at % (hi - lo - k + 1);
            // Remove original lines p..p+k that are still there.
            cur.retain(|(o, _)| !o.is_some_and(|o| o >= p && o < p + k));
        }
    }
    let current: Vec<String> = cur.iter().map(|(_, l)| l.clone()).collect();
    // The intended result: each edit applied where its original lines now stand.
    let mut want = cur.clone();
    for e in case.edits.iter().rev() {
        let pos = |orig: usize| want.iter().position(|(o, _)| *o == Some(orig));
        match e {
            MovedEdit::Replace(s, t, lines) => {
                let (a, b) = (pos(*s)?, pos(*t)?);
                want.splice(a..=b, lines.iter().map(|l| (None, l.clone())));
            }
            MovedEdit::After(a, lines) => {
                let at = pos(*a)? + 1;
                want.splice(at..at, lines.iter().map(|l| (None, l.clone())));
            }
            MovedEdit::Before(a, lines) => {
                let at = pos(*a)?;
                want.splice(at..at, lines.iter().map(|l| (None, l.clone())));
            }
        }
    }
    let want: Vec<String> = want.into_iter().map(|(_, l)| l).collect();
    // Where each edit's first line truly went, and what the input says.
    let truth: Vec<isize> = case
        .edits
        .iter()
        .map(|e| {
            let s = e.span().0;
            cur.iter()
                .position(|(o, _)| *o == Some(s))
                .map(|p| p as isize - s as isize)
        })
        .collect::<Option<_>>()?;
    let oracle = moved_oracle(case, &current, &truth, with_seen);
    // The model's text, against the file it read.
    let anchor = |i: usize, echo: bool| {
        let h = line_hash(&seen[i]);
        if echo {
            format!("{}:{h}|{}", i + 1, seen[i])
        } else {
            format!("{}:{h}", i + 1)
        }
    };
    let mut text = String::from("@@ file f.txt\n");
    for (k, e) in case.edits.iter().enumerate() {
        let echo = case.echo[k % case.echo.len()];
        let (head, lines) = match e {
            MovedEdit::Replace(s, t, lines) if lines.is_empty() => (
                format!("delete {} {}", anchor(*s, echo), anchor(*t, echo)),
                lines,
            ),
            MovedEdit::Replace(s, t, lines) => (
                format!("replace {} {}", anchor(*s, echo), anchor(*t, echo)),
                lines,
            ),
            MovedEdit::After(a, lines) => (format!("insert after {}", anchor(*a, echo)), lines),
            MovedEdit::Before(a, lines) => (format!("insert before {}", anchor(*a, echo)), lines),
        };
        text.push_str(&format!("@@ {head}\n"));
        for l in lines {
            text.push_str(&format!("+{l}\n"));
        }
    }
    let doc = Document::from_text(&join(&current, "\n", true));
    let patch = Format::Hashline.parse(&text).ok()?;
    let ops: Vec<&EditOp> = patch.ops();
    let mut reports: Vec<EditReport> = (0..ops.len()).map(|i| EditReport::new(i, 0)).collect();
    let opts = MatchOptions::default();
    let seen_doc = Document::from_text(&join(seen, "\n", true));
    let ctx = ResolveContext {
        seen: with_seen.then_some(&seen_doc),
        ..ResolveContext::new(&opts)
    };
    let out = resolve_file(&doc, &ops, &ctx, false, &mut reports);
    // A failed edit fails the call (all or nothing: the engine writes nothing).
    let zero = truth.iter().all(|&d| d == 0);
    if !reports.iter().all(|r| r.status.is_ok()) {
        return Some(
            if oracle.determined || (oracle.in_place.is_some() && zero) {
                MovedOutcome::Missed
            } else {
                MovedOutcome::Refused
            },
        );
    }
    let expected = join(&want, "\n", !want.is_empty());
    let in_place = oracle
        .in_place
        .as_ref()
        .map(|l| join(l, "\n", !l.is_empty()));
    Some(if out.text() == expected {
        MovedOutcome::Correct(oracle.determined || (oracle.in_place.is_some() && zero))
    } else if !oracle.determined
        && (!oracle.truth_consistent
            || in_place.as_deref() == Some(out.text())
            || (with_seen && oracle.is_a_reading(case, &current, out.text())))
    {
        MovedOutcome::Undetermined
    } else {
        MovedOutcome::Wrong(format!(
            "{text}\n--- current\n{}\n--- got\n{}\n--- want\n{expected}",
            doc.text(),
            out.text()
        ))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Hashline edits whose file moved (up to 20 lines added or removed above
    /// and between them) are applied where the model meant, or refused with
    /// the file untouched: never applied elsewhere (issue "Never wrong on real
    /// model output", hashline part; spec §5.1).
    #[test]
    fn hashline_moved_lines_never_wrong(case in arb_moved_case()) {
        for with_seen in [false, true] {
            if let Some(MovedOutcome::Wrong(why)) = run_moved_case(&case, with_seen) {
                prop_assert!(false, "wrong (snapshot: {}): {}", with_seen, why);
            }
        }
    }
}

/// The same generator over 2,000 cases with a fixed seed: none wrong, the
/// share applied where it was meant stays at or above its floor, and of the
/// cases the input determines ([`moved_oracle`]) at least 99 % are applied —
/// without the agent's snapshot (the CLI) and with it.
#[test]
fn hashline_moved_lines_recall() {
    moved_lines_recall(false, 1236);
    moved_lines_recall(true, 1984);
}

fn moved_lines_recall(with_seen: bool, floor: usize) {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = arb_moved_case();
    let (mut correct, mut determined, mut refused, mut missed) = (0, 0, 0, 0);
    let (mut wrong, mut undetermined) = (0, 0);
    let mut first_wrong = None;
    while correct + refused + missed + wrong + undetermined < 2000 {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        match run_moved_case(&tree.current(), with_seen) {
            Some(MovedOutcome::Correct(d)) => {
                correct += 1;
                determined += usize::from(d);
            }
            Some(MovedOutcome::Refused) => refused += 1,
            Some(MovedOutcome::Missed) => missed += 1,
            Some(MovedOutcome::Wrong(why)) => {
                wrong += 1;
                first_wrong.get_or_insert(why);
            }
            Some(MovedOutcome::Undetermined) => undetermined += 1,
            None => {}
        }
    }
    eprintln!(
        "hashline moved lines (snapshot: {with_seen}): {correct} correct ({determined} of them \
         determined by the input), {missed} refused though determined, {refused} refused \
         (undetermined), {wrong} wrong, {undetermined} undetermined (applied as the input \
         reads, not as meant) of 2000"
    );
    assert_eq!(wrong, 0, "{}", first_wrong.unwrap_or_default());
    assert!(correct >= floor, "recall fell: {correct} correct of 2000");
    assert!(
        missed * 100 <= determined + missed,
        "fewer than 99 % of the determined cases applied: {missed} refused of {}",
        determined + missed
    );
}

mod locate;

/// Issue 10: one real change to real source text, as search/replace, as a
/// unified diff and as apply_patch, with typos, whitespace drift or lost
/// indentation in the quoted old lines: never wrong, and at least 98.5 % of
/// the cases the input determines are applied correctly, in every format.
#[test]
fn locate_recall_every_format() {
    // LOCATE_CASES=600 (or 1000) measures a larger sample by hand.
    let cases = std::env::var("LOCATE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(LOCATE_CASES);
    let (tally, wrongs) = locate::measure(cases);
    let wrong: usize = tally.iter().flatten().map(|t| t.wrong).sum();
    assert_eq!(wrong, 0, "{}", wrongs.join("\n\n"));
    for row in &tally {
        for t in row {
            let det = t.correct + t.refused;
            // 98.5 %: the sample is drawn from the working tree, so every
            // new file moves it, and at ~255 determined cases a kind whose
            // true rate is 99.5 % shows 3 refusals one run in eight. On the
            // i10-wrong tree the typo kind held 1 refusal of 259 determined
            // at 300 cases, 3 of 511 at 600 and 3 of 850 at 1,000 (99.4–99.6
            // %); on the tree that merged it, 3 of 253 at 300 (98.8 %). Every
            // refusal left is the number rule (a typo that changes a digit
            // of a removed or changed line: `l3` for `33`, `pad_e15 = 1` for
            // `pad_15 = 15` is another value, locate.md); every other kind
            // 100 %; 0 wrong at 300, 600 and 1,000.
            assert!(
                t.correct * 1000 >= det * 985,
                "recall fell: {} correct of {det} determined",
                t.correct
            );
        }
    }
}

/// Cases per kind of mistake (each run in all three formats).
const LOCATE_CASES: usize = 300;
