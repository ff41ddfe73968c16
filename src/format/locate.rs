//! The one locate policy of the text-quoting formats (search/replace,
//! unified diff, apply_patch): the rules by which a block of quoted old lines
//! is taken to stand for a place in the file, or its new lines to show the
//! edit is already there. The spec is `edit-formats/locate.md`.
//!
//! Each format feeds the same things in: its old side (SEARCH lines; a diff's
//! or a chunk's context and `-` lines, in order), its new side, and what it
//! has for a position (a `:start_line:` hint, a hunk's stated line) — a hint
//! that breaks ties, never a place of its own. Formats differ in how they
//! read their text and in what they do with the place; they do not differ
//! here: the same tiers, the same thresholds and margin, every quoted line
//! (kept or removed) matched the same way.
//!
//! Owns: the fuzzy step ([`approximate`]) and the already-applied evidence
//! rules ([`proves_applied`], [`applied_here`]). Does not own: the cascade
//! itself ([`matcher`]), splitting, parsing, splicing, or words.
//!
//! Invariant: a located place is the one the matcher found with the caller's
//! [`MatchOptions`] unchanged; no format relaxes or tightens it.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::matcher::{self, Candidate, Match, MatchError, MatchOptions};
use crate::splice::{self, Op};
use crate::text::Document;

/// The last resort, the same for every format: the whole cascade, fuzzy tier
/// included, over the old side with the caller's options, then
/// [`settle`]. `kept[i]`: whether the edit keeps old line `i`; `new`: the
/// edit's new side.
pub(crate) fn approximate<S: AsRef<str>, N: AsRef<str>>(
    doc: &Document,
    old: &[S],
    new: &[N],
    kept: &[bool],
    hint: Option<usize>,
    opts: &MatchOptions,
) -> Result<Match, MatchError> {
    matcher::locate(doc, old, hint, opts).and_then(|m| settle(doc, old, new, kept, m))
}

/// A place the cascade found, accepted when its removed lines hold
/// ([`removed_lines_hold`]); otherwise not found, with that place as the
/// nearest text.
pub(crate) fn settle<S: AsRef<str>, N: AsRef<str>>(
    doc: &Document,
    old: &[S],
    new: &[N],
    kept: &[bool],
    m: Match,
) -> Result<Match, MatchError> {
    if removed_lines_hold(doc, old, new, kept, &m) {
        Ok(m)
    } else {
        Err(MatchError::NotFound {
            nearest: vec![Candidate::from(&m)],
            bounded: false,
        })
    }
}

/// For each old line, whether the edit keeps it, from the edit's ops.
pub(crate) fn kept_of(old_len: usize, ops: &[Op]) -> Vec<bool> {
    let mut kept = vec![false; old_len];
    for op in ops {
        if let Op::Keep(i) = op
            && let Some(k) = kept.get_mut(*i)
        {
            *k = true;
        }
    }
    kept
}

/// Most character edits (insertions, deletions, substitutions, swaps of
/// neighbours) a quoted line the edit removes may differ from the file's line
/// by.
pub(crate) const REMOVED_LINE_TYPOS: usize = 2;

/// Whether every old line the edit does not keep (`kept[i]` false: a `-`
/// line, or a SEARCH line REPLACE rewrites or drops) stands for the file
/// line `m` aligns it with: equal up to whitespace and Unicode folding, or
/// off by a typo — at most [`REMOVED_LINE_TYPOS`] character edits, none
/// turning one number into another (`WORKERS = 6` is not `WORKERS = 4`;
/// `# line v` may be `# line 7` mistyped). A line that says another word or another value is the model's
/// stale idea of the file, and the edit was meant for other text: refused,
/// whatever the format. Kept lines may differ more (the margin decides).
///
/// A removed line the new side restates as the file has it is a kept line
/// the model misquoted ([`restated`]): it holds, number rule or not.
pub(crate) fn removed_lines_hold<S: AsRef<str>, N: AsRef<str>>(
    doc: &Document,
    old: &[S],
    new: &[N],
    kept: &[bool],
    m: &Match,
) -> bool {
    old.iter().enumerate().all(|(i, l)| {
        if kept.get(i).copied().unwrap_or(true) {
            return true;
        }
        match m.alignment.get(i).copied().flatten() {
            Some(d) => {
                is_typo_of(l.as_ref(), doc.line(d)) || restated(l.as_ref(), doc.line(d), new)
            }
            // A blank line the file does not have there removes nothing.
            None => l.as_ref().trim().is_empty(),
        }
    })
}

/// Most character edits a misquoted line may differ from the file's line by
/// when the new side restates the file's line ([`restated`]): two typos of
/// two edits each (`if mult ` for `if multi {`).
pub(crate) const RESTATED_LINE_EDITS: usize = 2 * REMOVED_LINE_TYPOS;

/// Whether the quoted old line `quoted`, aligned with the file's `line`, is
/// a line the edit keeps, misquoted: the new side holds `line` as the file
/// has it (up to whitespace and Unicode folding), and `quoted` is within
/// [`RESTATED_LINE_EDITS`] of it. The line diff of old and new sides paired
/// the misquote with nothing, so it counted as removed; but the model wrote
/// the file's own text back, which says it read this very line (a typo that
/// changed a digit included: `u6` quoted, `u64` in the file and in the new
/// side). A blank `line` restates nothing: blank lines stand everywhere.
pub(crate) fn restated<N: AsRef<str>>(quoted: &str, line: &str, new: &[N]) -> bool {
    if line.trim().is_empty() {
        return false;
    }
    let (a, b) = (matcher::normal_body(quoted), matcher::normal_body(line));
    strsim::osa_distance(&a, &b) <= RESTATED_LINE_EDITS
        && new
            .iter()
            .any(|n| matcher::same_up_to_unicode(n.as_ref(), line))
}

/// Whether `quoted` is `line` up to whitespace, Unicode folding and a typo.
pub(crate) fn is_typo_of(quoted: &str, line: &str) -> bool {
    if matcher::same_up_to_unicode(quoted, line) {
        return true;
    }
    let (a, b) = (matcher::normal_body(quoted), matcher::normal_body(line));
    let numbers = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (na, nb) = (numbers(&a), numbers(&b));
    // The same count of numbers, one of them different: another value.
    let other_value = na.len() == nb.len() && na != nb;
    !other_value && typo_distance(quoted, line, &a, &b) <= REMOVED_LINE_TYPOS
}

/// Character edits between two lines, indentation aside: on their bodies
/// with whitespace runs collapsed (`a`, `b`), or as written, whichever is
/// fewer. Collapsing alone counts a character deleted between two spaces
/// twice (`deny  read-only` for `deny > read-only`: the `>` and a space),
/// and the text as written alone counts a drifted run of spaces as edits.
fn typo_distance(quoted: &str, line: &str, a: &str, b: &str) -> usize {
    let collapsed = strsim::osa_distance(a, b);
    if collapsed <= 1 {
        return collapsed;
    }
    let body = |l: &'_ str| -> String { matcher::split_indent(l).1.trim_end().to_owned() };
    collapsed.min(strsim::osa_distance(&body(quoted), &body(line)))
}

/// A line with its whitespace runs collapsed to one space and trimmed.
fn collapsed(l: &str) -> String {
    l.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `new` holds a non-blank line `old` lacks, so that finding `new`
/// in the file proves the edit was made. A new side that only drops lines (a
/// deletion: its lines are all old lines) proves nothing by being there.
pub(crate) fn proves_applied<A: AsRef<str>, B: AsRef<str>>(old: &[A], new: &[B]) -> bool {
    // Lines compare with their whitespace collapsed: a quoted line whose
    // spacing drifted (`fn b() { ` for `fn b() {`) is the old line, and
    // REPLACE restating it adds nothing (a whole-file deletion whose SEARCH
    // drifted was taken for done).
    let old: Vec<String> = old.iter().map(|l| collapsed(l.as_ref())).collect();
    let new: Vec<String> = new.iter().map(|l| collapsed(l.as_ref())).collect();
    // A non-blank line the new side has more often than the old is an
    // addition whatever the alignment: counted in linear time, which also
    // spares the line diff (quadratic when the two sides share nothing) on
    // huge blocks.
    let mut counts: HashMap<&str, isize> = HashMap::new();
    for l in &old {
        *counts.entry(l.as_str()).or_default() += 1;
    }
    for l in new.iter().map(String::as_str).filter(|l| !l.is_empty()) {
        let c = counts.entry(l).or_default();
        *c -= 1;
        if *c < 0 {
            return true;
        }
    }
    // Only reordering can add a line now; past this size the diff could cost
    // seconds, and "no" only means the edit is not taken as already applied.
    if old.len().saturating_mul(new.len()) > 1 << 24 {
        return false;
    }
    splice::ops_from_diff(&old, &new)
        .iter()
        .any(|op| matches!(op, Op::Add(l) if !l.trim().is_empty()))
}

/// Whether `new`, found in the file only at a tolerant tier (whitespace,
/// blank lines or indentation forgiven), proves the edit made: besides
/// [`proves_applied`], some line it adds is no typo of a line `old` drops.
/// When every line the edit adds could be the file's own line misquoted on
/// the old side (`witout` quoted, `without` restated), what surely changes
/// is whitespace or blank lines, which is what the tolerant tier forgave:
/// the file may as well still hold the old state (a trailing space the edit
/// drops, a blank line it adds after the file's last line).
pub(crate) fn proves_applied_tolerantly<A: AsRef<str>, B: AsRef<str>>(
    old: &[A],
    new: &[B],
) -> bool {
    if !proves_applied(old, new) {
        return false;
    }
    let old_norm: HashSet<String> = old.iter().map(|l| collapsed(l.as_ref())).collect();
    let new_norm: HashSet<String> = new.iter().map(|l| collapsed(l.as_ref())).collect();
    let dropped: Vec<&str> = old
        .iter()
        .map(AsRef::as_ref)
        .filter(|l| !l.trim().is_empty() && !new_norm.contains(&collapsed(l)))
        .collect();
    let added: Vec<&str> = new
        .iter()
        .map(AsRef::as_ref)
        .filter(|l| !l.trim().is_empty() && !old_norm.contains(&collapsed(l)))
        .collect();
    // Large rewrites add real lines; the pairs are not all compared.
    if added.len().saturating_mul(dropped.len()) > 1 << 16 {
        return true;
    }
    let len = |l: &str| l.split_whitespace().map(str::len).sum::<usize>();
    added.iter().any(|a| {
        // A typo changes the length by at most its edits: lines further
        // apart are not compared.
        !dropped
            .iter()
            .any(|d| len(d).abs_diff(len(a)) <= REMOVED_LINE_TYPOS && is_typo_of(d, a))
    })
}

/// Whether a new side that proves nothing by itself (a deletion) shows the
/// edit made when it stands in the file: every run of removed old lines has
/// a kept non-blank line before it and after it, so the kept lines standing
/// together are lines the deletion joined. `kept[i]`: whether old line `i`
/// stays. A deletion at the edge of its block (`def c():` then `-    pass`)
/// leaves nothing that shows it, and a kept blank line shows nothing either:
/// blank lines stand everywhere.
pub(crate) fn deletion_shows<S: AsRef<str>>(old: &[S], kept: &[bool]) -> bool {
    let mut anchored = false;
    let mut open_run = false;
    for (line, &k) in old.iter().zip(kept) {
        let blank = line.as_ref().trim().is_empty();
        if k && !blank {
            anchored = true;
            open_run = false;
        } else if !k {
            if !anchored {
                return false;
            }
            open_run = true;
        }
    }
    !open_run
}

/// Whether an old side too short for the approximate step (fewer than
/// `fuzzy_min_chars` non-space characters: the fuzzy tier never looks for
/// it) stands somewhere in the file up to [`REMOVED_LINE_TYPOS`] character
/// edits in all (indentation and whitespace runs ignored, blank lines
/// skipped). A deletion is taken as made only when its old side is nowhere,
/// not even approximately; for a short old side the approximate step did not
/// look, so this does (`    }` / `    oux` / `}` is the file's `    }` /
/// `    out` / `}` mistyped, and `    }` / `}` standing at the file's end
/// shows nothing). A long old side's approximate search was the judge: false.
pub(crate) fn short_quote_near<S: AsRef<str>>(
    doc: &Document,
    old: &[S],
    opts: &MatchOptions,
) -> bool {
    let quoted: Vec<String> = old
        .iter()
        .map(|l| matcher::normal_body(l.as_ref()))
        .filter(|l| !l.is_empty())
        .collect();
    let chars: usize = quoted
        .iter()
        .map(|l| l.chars().filter(|c| !c.is_whitespace()).count())
        .sum();
    if quoted.is_empty() || chars >= opts.fuzzy_min_chars {
        return false;
    }
    let lines: Vec<String> = doc
        .lines()
        .map(matcher::normal_body)
        .filter(|l| !l.is_empty())
        .collect();
    lines.windows(quoted.len()).any(|w| {
        let mut edits = 0;
        for (a, b) in quoted.iter().zip(w) {
            if a != b {
                edits += strsim::osa_distance(a, b);
                if edits > REMOVED_LINE_TYPOS {
                    return false;
                }
            }
        }
        true
    })
}

/// Whether new lines found at `region` are this edit's result: the place the
/// old side would have matched is there — the caller's position says so
/// (`at_hint`), or the old side's most similar place in the file overlaps
/// `region` (no window elsewhere beats it by the fuzzy margin, see
/// [`matcher::best_place_is`]). New text found elsewhere is another place
/// that merely looks done.
pub(crate) fn applied_here<S: AsRef<str>>(
    doc: &Document,
    old: &[S],
    region: Range<usize>,
    at_hint: bool,
    opts: &MatchOptions,
) -> bool {
    at_hint || matcher::best_place_is(doc, old, region, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_lines_may_carry_typos_but_not_other_words_or_values() {
        assert!(is_typo_of("    B().runn()", "    B().run()"));
        assert!(is_typo_of("return  sefl.x", "return self.x"));
        // A character deleted between two spaces is one edit, not two.
        assert!(is_typo_of("deny  read-ony > ask", "deny > read-only > ask"));
        assert!(!is_typo_of("WORKERS = 6", "WORKERS = 4"));
        assert!(!is_typo_of(
            "log(\"parse %d chars\")",
            "log(\"parse %d bytes\")"
        ));
        assert!(!is_typo_of("cfg[\"count\"] += 1", "cfg[\"runs\"] += 1"));
    }

    #[test]
    fn a_misquoted_line_the_new_side_restates_is_kept() {
        let new = ["    pub work_budget: u64,", "    pub nearest: bool,"];
        assert!(restated(
            "    pub work_budget: u6,",
            "    pub work_budget: u64,",
            &new
        ));
        assert!(restated(
            "        if mult ",
            "        if multi {",
            &["        if multi {"]
        ));
        // The new side writes another value: the quote is the model's stale idea.
        assert!(!restated("WORKERS = 6", "WORKERS = 4", &["WORKERS = 8"]));
        // Restated, but the quote says something else entirely.
        assert!(!restated("let total = sum(values);", "x = 4", &["x = 4"]));
        // A blank line restates nothing.
        assert!(!restated("  ", "", &[""]));
    }

    #[test]
    fn a_deletion_shows_only_between_kept_lines() {
        assert!(deletion_shows(&["a", "x", "b"], &[true, false, true]));
        assert!(deletion_shows(
            &["a", "x", "y", "b", "z", "c"],
            &[true, false, false, true, false, true]
        ));
        assert!(!deletion_shows(&["a", "x"], &[true, false]));
        assert!(!deletion_shows(&["x", "a"], &[false, true]));
        // A kept blank line after the run shows nothing.
        assert!(!deletion_shows(&["a", "x", ""], &[true, false, true]));
        assert!(deletion_shows(
            &["a", "x", "", "b"],
            &[true, false, true, true]
        ));
    }

    #[test]
    fn a_short_quote_with_a_typo_is_near_its_line() {
        let doc =
            Document::from_text("fn f() {\n    if x {\n        y(first);\n    }\n    out\n}\n");
        let opts = MatchOptions::default();
        assert!(short_quote_near(&doc, &["    }", "    oux", "}"], &opts));
        assert!(!short_quote_near(&doc, &["    }", "    zzzz", "}"], &opts));
        // Long enough for the approximate step: it was the judge.
        assert!(!short_quote_near(
            &doc,
            &["        y(first);", "    }", "    oux", "}"],
            &opts
        ));
    }

    #[test]
    fn a_deletion_proves_nothing() {
        assert!(!proves_applied(&["a", "b", "c"], &["a", "c"]));
        assert!(proves_applied(&["a", "b"], &["a", "x", "b"]));
        assert!(!proves_applied(&["a", "b"], &["a", "", "b"]));
        // Reordered lines are an addition the counts miss.
        assert!(proves_applied(&["a", "b"], &["b", "a"]));
    }

    #[test]
    fn a_tolerant_find_proves_only_an_addition_no_misquote_explains() {
        // Every added line a typo of a dropped one: only whitespace or blank
        // lines surely change (flask's `witout`, a trailing space dropped).
        let old = ["(Run it without the `sudo`). ", "", "The End"];
        let typo = ["(Run it witout the `sudo`). ", "", "The End"];
        let new = ["(Run it without the `sudo`).", "", "The End"];
        assert!(!proves_applied(&old, &new));
        assert!(proves_applied(&typo, &new));
        assert!(!proves_applied_tolerantly(&typo, &new));
        assert!(!proves_applied_tolerantly(
            &["    x = 1", "    retuHn x", "    "],
            &["    x = 1", "    return x", ""]
        ));
        // A line no dropped line explains proves it; so does a changed value.
        assert!(proves_applied_tolerantly(
            &["    retuHn x"],
            &["    return x", "    log(x)"]
        ));
        assert!(proves_applied_tolerantly(
            &["WORKERS = 4"],
            &["WORKERS = 6"]
        ));
    }
}
