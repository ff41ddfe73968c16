//! Feedback: the one place that turns outcomes into words, for a model or a person.
//!
//! Everything a model reads about its edits is written here: per edit, what
//! happened; for a failure, the nearest lines of the file with line numbers
//! and similarity, and what to change; which other edits would have applied;
//! and whether anything was written. Every message kind is snapshot-tested,
//! so a change of wording is reviewed as a diff.
//!
//! Messages are plain text (no colour, no Markdown beyond backticks), one
//! short line per edit plus detail for failures, with 1-based line numbers.
//! Words that depend on the sort of edit (a hunk, a block, an anchor edit)
//! come from one table, `kind_words`, one entry per [`EditKind`].
//! [`json_report`] puts the same words into the `--json` shape.
//!
//! Owns: wording. Does not own: what happened (the [`report`](crate::report)
//! types, which it reads and never changes) or how it is shown (colour is the
//! CLI's). It reads only data — reports, the text model, the matcher's tiers
//! and candidates — and no format, so `apply` can word its report and the
//! formats stay free of prose.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::ops::Range;

use crate::matcher::{Candidate, Tier};
use crate::report::{
    ApplyReport, EditError, EditKind, EditReport, EditStatus, FileReport, FileStatus, ParseError,
    PathProblem, ReportJson, SyntaxIssue, Warning,
};
use crate::text::{DecodeError, Document, line_hash};
use crate::workspace::{FileKind, JournalProblem, WorkspaceError, clip_path};

/// How many lines of a candidate region to quote.
const QUOTE_LINES: usize = 12;

/// The words that depend on the sort of edit: one entry per [`EditKind`],
/// looked up in [`kind_words`] — the only place feedback tells kinds apart.
struct KindWords {
    /// What one edit is called in its line of the message (`hunk 2`, `edit 2`).
    noun: &'static str,
    /// What the closing summary calls the input's edits when all are of this kind.
    summary_noun: &'static str,
    /// What the file already has when the edit is already applied.
    already_has: &'static str,
    /// What a no-op edit says after `{noun} {n}: `.
    noop: &'static str,
    /// How to create a file that does not exist (empty: the edit cannot).
    create: &'static str,
    /// Not found: the words before and after the path.
    not_found: (&'static str, &'static str),
    /// Not found, with similar text shown: how to fix the edit.
    not_found_fix: &'static str,
    /// Ambiguous: the words before the number of places, and after the places.
    ambiguous: (&'static str, &'static str),
    /// The edit names no file: what it is, and how to name one.
    no_path: &'static str,
}

/// Search/replace wording, which the kinds that quote old text share.
const BLOCK_WORDS: KindWords = KindWords {
    noun: "edit",
    summary_noun: "edit",
    already_has: "its REPLACE text",
    noop: "SEARCH and REPLACE are identical, so it changes nothing",
    create: "To create it, send its content with an empty SEARCH section.",
    not_found: ("SEARCH text not found in ", "."),
    not_found_fix: "Copy the lines to change exactly as they are in the file and send the edit again.",
    ambiguous: (
        "SEARCH matches",
        ". Nothing was guessed. Add lines above or below so the text is unique (in a SEARCH/REPLACE block, `:start_line: N` after the SEARCH marker also picks one).",
    ),
    no_path: "the edit names no file. Put the file's path on the line before the block.",
};

fn kind_words(kind: EditKind) -> &'static KindWords {
    const HUNK: KindWords = KindWords {
        noun: "hunk",
        summary_noun: "hunk",
        already_has: "the hunk's new lines",
        noop: "changes nothing",
        create: "To create it, send a diff from `--- /dev/null`.",
        not_found: (
            "the hunk's old lines (context and `-` lines) were not found in ",
            ".",
        ),
        not_found_fix: "Make the context and `-` lines match the file exactly and send the patch again.",
        ambiguous: (
            "the hunk's old lines match",
            ", and its line number does not single one out. Nothing was guessed. Add context lines so they are unique, or correct the hunk header's line numbers.",
        ),
        no_path: "the hunk names no file. Put `--- a/PATH` and `+++ b/PATH` lines before it.",
    };
    const ANCHOR: KindWords = KindWords {
        already_has: "its new lines",
        noop: "changes nothing",
        create: "To create it, use `@@ set file` with its content.",
        no_path: "the edit names no file. Put `@@ file PATH` before the edits.",
        ..BLOCK_WORDS
    };
    const CHUNK: KindWords = KindWords {
        already_has: "its new lines",
        noop: "changes nothing",
        create: "To create it, use `*** Add File:`; to delete a file, it must exist.",
        not_found: (
            "the chunk's context and `-` lines were not found in ",
            " (after its `@@` line, if it has one).",
        ),
        not_found_fix: HUNK.not_found_fix,
        ambiguous: (
            "the chunk (or its `@@` line) matches",
            ". Nothing was guessed. Add an `@@` line naming the class or function it is in, or more context lines.",
        ),
        ..BLOCK_WORDS
    };
    const WHOLE: KindWords = KindWords {
        noun: "file",
        already_has: "this content",
        noop: "changes nothing",
        create: "",
        ..BLOCK_WORDS
    };
    const REMOVE: KindWords = KindWords {
        noun: "delete",
        already_has: "nothing",
        noop: "changes nothing",
        create: "",
        ..BLOCK_WORDS
    };
    match kind {
        EditKind::Block => &BLOCK_WORDS,
        EditKind::Hunk => &HUNK,
        EditKind::Anchor => &ANCHOR,
        EditKind::Chunk => &CHUNK,
        EditKind::Whole => &WHOLE,
        EditKind::Remove => &REMOVE,
    }
}

/// 1-based, human line range: `line 4` or `lines 4-9`.
pub fn lines(r: &Range<usize>) -> String {
    if r.end <= r.start + 1 {
        format!("line {}", r.start + 1)
    } else {
        format!("lines {}-{}", r.start + 1, r.end)
    }
}

fn bare_lines(r: &Range<usize>) -> String {
    if r.end <= r.start + 1 {
        format!("{}", r.start + 1)
    } else {
        format!("{}-{}", r.start + 1, r.end)
    }
}

fn percent(sim: f64) -> String {
    format!("{:.0}%", (sim * 100.0).floor())
}

/// The file's lines 2 above to 2 below each of `lines` (1-based), in view
/// form (`LINE:HASH|content`): anchors the model can use at once. Overlapping
/// windows are merged, gaps shown as `...`.
fn fresh_anchors(out: &mut String, doc: Option<&Document>, lines: &[usize]) {
    let Some(doc) = doc else {
        out.push_str(" view the file again.");
        return;
    };
    let mut shown = std::collections::BTreeSet::new();
    for &line in lines {
        let lo = line.saturating_sub(3);
        let hi = (line + 2).min(doc.line_count());
        shown.extend(lo..hi);
    }
    let mut prev: Option<usize> = None;
    for i in shown {
        if prev.is_some_and(|p| p + 1 != i) {
            out.push_str("\n    ...");
        }
        let l = doc.line(i);
        let _ = write!(out, "\n    {}:{}|{}", i + 1, line_hash(l), l);
        prev = Some(i);
    }
}

fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {}", init.join(", "), last),
    }
}

fn list_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// `line 12, column 5` for each issue (1-based), at most five.
fn syntax_places(issues: &[SyntaxIssue]) -> String {
    let mut places: Vec<String> = issues
        .iter()
        .take(5)
        .map(|i| format!("line {}, column {}", i.line + 1, i.column + 1))
        .collect();
    if issues.len() > 5 {
        places.push(format!("{} more", issues.len() - 5));
    }
    list(&places)
}

/// `ERROR` → "not valid here"; `MISSING )` → "missing `)`".
fn describe_node(kind: &str) -> String {
    if let Some(what) = kind.strip_prefix("MISSING ") {
        return format!("missing `{what}`");
    }
    if kind.starts_with("IndentationError") {
        return kind.to_owned();
    }
    "the parser cannot make sense of the code from here".to_owned()
}

fn tier_note(tier: Tier, similarity: Option<f64>) -> Option<String> {
    Some(match tier {
        Tier::Exact | Tier::Anchor => return None,
        Tier::Whitespace => "matched ignoring whitespace and blank-line differences".to_owned(),
        Tier::Indent => {
            "matched at a different indentation; the new lines were re-indented to fit".to_owned()
        }
        Tier::Unicode => "matched ignoring quote, dash and space variants".to_owned(),
        Tier::Fuzzy => format!(
            "matched approximately ({} similar); check the result",
            percent(similarity.unwrap_or(0.0))
        ),
    })
}

/// The words for a warning.
pub fn warning(w: &Warning) -> String {
    match w {
        Warning::IdenticalBlock => "SEARCH and REPLACE are identical".to_owned(),
        Warning::StrippedLineNumbers => {
            "line-number prefixes copied from a numbered view were removed before matching"
                .to_owned()
        }
        Warning::PartialLineMatch { lines: l } => format!(
            "SEARCH starts or ends mid-line, so it was matched as text within {}; the rest of those lines was kept",
            lines(l)
        ),
        Warning::ChosenByHint { hint } => {
            format!("several places matched; the one nearest :start_line: {hint} was used")
        }
        Warning::Elided { pieces } => format!("applied in {pieces} pieces around the `...` lines"),
        Warning::DividerInContent { line } => format!(
            "the block has several `=======` lines; the one at input line {line} is the divider, the others are content"
        ),
        Warning::Sequential => {
            "matched against the file as changed by the edits before it".to_owned()
        }
        Warning::Offset { lines: off } => {
            let n = off.unsigned_abs();
            format!(
                "found {n} line{} {} where the hunk header put it",
                if n == 1 { "" } else { "s" },
                if *off > 0 { "below" } else { "above" }
            )
        }
        Warning::LenientEnvelope { what } => format!("the patch was read despite {what}"),
        Warning::PlaceholderWritten { text } => format!(
            "the new content contains the placeholder `{text}`, which was written as is; if it stands for code, send the code"
        ),
        Warning::SyntaxBroken { issues } => format!(
            "the result has syntax errors it did not have before, at {}; it was written anyway (--syntax warn)",
            syntax_places(issues)
        ),
        Warning::SyntaxSkipped => "the file is too large for the syntax check, which was skipped".to_owned(),
        Warning::HeldBack => "not written: its file was refused as a whole, see below".to_owned(),
        Warning::Relocated { from, to } => format!(
            "the anchor for line {} had moved to line {} (lines were added or removed above it); it was found by its content",
            from + 1,
            to + 1
        ),
        Warning::StrippedAnchors => {
            "`LINE:HASH|` prefixes copied into the new lines were removed".to_owned()
        }
        Warning::BoundaryEcho => {
            "new lines that repeated the lines around the edit were dropped, so they are not doubled".to_owned()
        }
        Warning::Fuzz { dropped } => {
            if *dropped == 1 {
                "applied with 1 outer context line ignored, because it no longer matches the file".to_owned()
            } else {
                format!("applied with {dropped} outer context lines ignored, because they no longer match the file")
            }
        }
        Warning::AnchorIgnored { anchor } => format!(
            "the `@@ {}` line is not in the file, so the chunk was placed by its own lines; copy `@@` lines exactly",
            anchor.trim()
        ),
        Warning::BareNameSkipped { name, line } => format!(
            "the block at line {line}, under `{name}`, was not written: the project root has no file `{name}`, so it was taken for an example. If it is a file to create, send that block again with `./{name}` alone on the line above the fence"
        ),
    }
}

fn quote(doc: &Document, r: &Range<usize>, out: &mut String) {
    let end = r.end.min(doc.line_count());
    let start = r.start.min(end);
    let width = end.to_string().len();
    let shown: Vec<usize> = if end - start <= QUOTE_LINES {
        (start..end).collect()
    } else {
        (start..start + QUOTE_LINES / 2)
            .chain(end - QUOTE_LINES / 2..end)
            .collect()
    };
    let mut prev = None;
    for i in shown {
        if prev.is_some_and(|p: usize| p + 1 != i) {
            let _ = writeln!(out, "    {:>width$} | ...", "");
        }
        let _ = writeln!(out, "    {:>width$} | {}", i + 1, doc.line(i));
        prev = Some(i);
    }
}

fn decode_error(path: &str, e: &DecodeError) -> String {
    match e {
        DecodeError::Binary { offset } => format!(
            "{path} is a binary file (NUL byte at offset {offset}); lancet edits text files only."
        ),
        DecodeError::NotUtf8 { offset, line } => format!(
            "{path} is not UTF-8 (invalid byte on line {line}, offset {offset}); lancet will not rewrite it lossily. Convert it to UTF-8 first (for example `iconv -f latin1 -t utf-8`)."
        ),
        DecodeError::Utf16 { .. } => format!(
            "{path} is UTF-16 text; lancet edits UTF-8 only. Convert it to UTF-8 first (for example `iconv -f utf-16 -t utf-8`)."
        ),
    }
}

fn candidate_ranges(cands: &[Candidate]) -> Vec<String> {
    cands.iter().map(|c| bare_lines(&c.range)).collect()
}

/// How many places an ambiguity lists before it only counts the rest.
const PLACES_SHOWN: usize = 5;

/// The places of an ambiguity: all of them up to [`PLACES_SHOWN`], else the
/// first few and how many more (a SEARCH of identical lines can match
/// thousands of places; the count is the news, not the list).
fn places(cands: &[Candidate]) -> String {
    if cands.len() <= PLACES_SHOWN {
        return list(&candidate_ranges(cands));
    }
    let first = candidate_ranges(&cands[..PLACES_SHOWN]);
    format!(
        "{}, and {} more",
        first.join(", "),
        cands.len() - PLACES_SHOWN
    )
}

/// The words for one failed edit (several lines, each indented by two spaces after the first).
pub fn edit_error(path: &str, e: &EditError, doc: Option<&Document>, kind: EditKind) -> String {
    let path = &*clip_path(path);
    let words = kind_words(kind);
    let mut out = String::new();
    match e {
        EditError::FileMissing => {
            let _ = write!(out, "{path} does not exist.");
            if !words.create.is_empty() {
                let _ = write!(out, " {}", words.create);
            }
        }
        EditError::Undecodable(d) => out.push_str(&decode_error(path, d)),
        EditError::Unreadable { kind } => {
            let _ = write!(out, "{path} could not be read ({kind}).");
        }
        EditError::PathRefused { why } => match file_refusal(path, *why) {
            Some(words) => out.push_str(&words),
            None => {
                let why = match why {
                    PathProblem::Outside => "it leads outside the workspace root",
                    PathProblem::Absolute => "it is absolute",
                    PathProblem::Invalid => "it is not a file path",
                    PathProblem::Reserved => {
                        "it is inside .lancet/ or .git/, which lancet never edits"
                    }
                    PathProblem::Directory => "it is a directory",
                    _ => "it cannot be edited",
                };
                let _ = write!(
                    out,
                    "{path} is refused: {why}. Give a path relative to the workspace root, inside it."
                );
            }
        },
        EditError::DestinationRefused { to, why } => {
            out.push_str(&destination_refusal(path, to, *why));
        }
        EditError::ParentNotDirectory { parent } => {
            out.push_str(&under_a_file(path, parent));
        }
        EditError::NotFound {
            nearest,
            bounded,
            after_edit,
        } => {
            let (before, after) = words.not_found;
            let _ = write!(out, "{before}{path}{after}");
            if let Some(j) = after_edit {
                let _ = write!(
                    out,
                    "\n  It only appears once edit {} is applied: every edit is matched against the file as it was. Fold the two edits into one, or send this one again after the other has been applied.",
                    j + 1
                );
                return out;
            }
            match nearest.first() {
                Some(best) => {
                    let _ = write!(
                        out,
                        "\n  The most similar text is at {} ({} similar)",
                        lines(&best.range),
                        percent(best.similarity)
                    );
                    match doc {
                        Some(doc) => {
                            out.push_str(":\n");
                            quote(doc, &best.range, &mut out);
                        }
                        None => out.push_str(".\n"),
                    }
                    let others: Vec<String> = nearest[1..]
                        .iter()
                        .map(|c| format!("{} ({})", lines(&c.range), percent(c.similarity)))
                        .collect();
                    if !others.is_empty() {
                        let _ = writeln!(out, "  Also similar: {}.", list(&others));
                    }
                    let _ = write!(out, "  {}", words.not_found_fix);
                }
                None => out.push_str(
                    "\n  No similar text was found. Read the file again and copy the lines to change exactly.",
                ),
            }
            if *bounded {
                out.push_str("\n  (The file is large, so the approximate search looked only at likely places; include at least one line exactly as it is in the file.)");
            }
        }
        EditError::Ambiguous { tier, candidates } => {
            let how = if *tier == Tier::Exact {
                String::new()
            } else {
                format!(" ({} tier)", tier.name())
            };
            let at = places(candidates);
            let n = candidates.len();
            let (what, advice) = words.ambiguous;
            let _ = write!(out, "{what} {n} places in {path}{how}: lines {at}{advice}");
        }
        EditError::AmbiguousDivider { lines: dividers } => {
            let at: Vec<String> = dividers.iter().map(ToString::to_string).collect();
            let _ = write!(
                out,
                "the block has several `=======` lines, and splitting it at input line {} gives text found in {path} each time. Write the `=======` lines that are file content as `\\=======`.",
                list_or(&at)
            );
        }
        EditError::CountMismatch {
            expected,
            found,
            candidates,
        } => {
            let _ = write!(
                out,
                "expected {expected} replacement{} in {path}, but the text matches {found} place{}",
                if *expected == 1 { "" } else { "s" },
                if *found == 1 { "" } else { "s" }
            );
            if candidates.is_empty() {
                out.push('.');
            } else {
                let _ = write!(out, ": lines {}.", places(candidates));
            }
        }
        EditError::Conflict { other, lines: l } => {
            let _ = write!(
                out,
                "changes {} of {path}, which edit {} also changes. Combine the two into one edit.",
                lines(l),
                other + 1
            );
        }
        EditError::Stale => {
            let _ = write!(
                out,
                "{path} changed on disk since it was read. Read it again and redo the edit against its current content."
            );
        }
        EditError::LazyPlaceholder { text } => {
            let _ = write!(
                out,
                "REPLACE contains the placeholder `{text}` instead of code; writing it would delete the code it stands for. Write the code out in full, or put a `...` line in both SEARCH and REPLACE to skip unchanged lines."
            );
        }
        EditError::EmptySearchOnExistingFile => {
            let _ = write!(
                out,
                "SEARCH is empty but {path} already has content. Put the lines to change in SEARCH."
            );
        }
        EditError::BlankSearch => {
            out.push_str("SEARCH holds only whitespace. Put the lines to change in SEARCH.")
        }
        EditError::ElisionMismatch { search, replace } => {
            let _ = write!(
                out,
                "SEARCH has {search} `...` line(s) but REPLACE has {replace}; they must have the same number, one per skipped stretch."
            );
        }
        EditError::ElidedPiece { piece, inner } => {
            let _ = write!(
                out,
                "piece {} of the SEARCH (counting between `...` lines): {}",
                piece + 1,
                edit_error(path, inner, doc, kind)
            );
        }
        EditError::StaleAnchors { anchors } => {
            let _ = write!(
                out,
                "{path} changed since it was read: anchor{} {} no longer match{} the line{}. Nothing was written. Use these fresh anchors:",
                if anchors.len() == 1 { "" } else { "s" },
                list(anchors),
                if anchors.len() == 1 { "es" } else { "" },
                if anchors.len() == 1 { "" } else { "s" },
            );
            let lines: Vec<usize> = anchors
                .iter()
                .map(|a| {
                    a.split(':')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(1)
                })
                .collect();
            fresh_anchors(&mut out, doc, &lines);
        }
        EditError::AmbiguousAnchors { anchors, lines } => {
            let at: Vec<String> = lines.iter().map(ToString::to_string).collect();
            let _ = write!(
                out,
                "{path} moved since it was read (lines were added or removed above the edit), and the edit's anchor{} {} fit{} the file at {} places: its first line would be line {}. Nothing in the edits tells which one is meant. Nothing was written. Use these fresh anchors:",
                if anchors.len() == 1 { "" } else { "s" },
                list(anchors),
                if anchors.len() == 1 { "s" } else { "" },
                lines.len(),
                list_or(&at),
            );
            fresh_anchors(&mut out, doc, lines);
        }
        EditError::Truncated {
            removed,
            total,
            placeholder,
        } => {
            let _ = write!(
                out,
                "the new content of {path} drops {removed} of its {total} lines and contains the placeholder `{placeholder}`: it looks like code was left out, not deleted. Nothing was written. Send the complete file, with every line it should keep."
            );
        }
        EditError::Syntax { issues } => {
            let _ = write!(
                out,
                "the edit would break the syntax of {path}: the result has errors it did not have before, at {}; {path} was not written. The lines as the edit would leave them:",
                syntax_places(issues)
            );
            for i in issues.iter().take(6) {
                let _ = write!(out, "\n    {:>4} | {}", i.line + 1, i.text);
                let _ = write!(
                    out,
                    "\n         | {}^ {}",
                    " ".repeat(i.text[..i.column.min(i.text.len())].chars().count()),
                    describe_node(&i.kind)
                );
            }
            out.push_str("\n  Fix the edit so the code stays valid (a bracket or quote closed, a block indented), or pass --syntax warn to write it anyway.");
        }
        EditError::AnchorNotFound { anchor } => {
            let _ = write!(
                out,
                "the `@@ {anchor}` line is not in {path} (or not inside the block the `@@` line before it opens). Copy an existing line such as a class or function header exactly."
            );
        }
        EditError::AnchorOrder { start, end } => {
            let _ = write!(
                out,
                "the range {start} to {end} ends before it starts. Give the first line, then the last."
            );
        }
        EditError::Unplaceable => {
            let _ = write!(
                out,
                "the hunk has no context lines and removes nothing, so only its line number says where it goes, and a line number is trusted only when the blob id on an `index` line shows {path} is exactly the file the diff was made from: the diff has no `index` line, or {path} no longer matches its id. Add a few unchanged lines around the insertion (a diff with context) and send it again."
            );
        }
        EditError::NoPath => out.push_str(words.no_path),
        EditError::AlreadyExists { path: existing } => {
            let _ = write!(
                out,
                "{existing} already exists with other content, so it cannot be created (or moved to). Edit it instead, or delete it first."
            );
        }
        EditError::DeleteLeavesContent { lines } => {
            let _ = write!(
                out,
                "the patch deletes {path}, but the file holds {lines} line(s) more than the patch removes; it was not deleted. Make the deletion match the file's current content."
            );
        }
        EditError::PathTwice { path: twice } => {
            let _ = write!(
                out,
                "the input changes {twice} more than once (created, deleted, moved or edited in separate parts). Put all changes to one file in one place."
            );
        }
    }
    out
}

fn edit_line(path: &str, e: &EditReport, doc: Option<&Document>) -> String {
    let shown = clip_path(path);
    let path = &*shown;
    let n = e.index + 1;
    let words = kind_words(e.kind);
    let (noun, what) = (words.noun, words.already_has);
    let mut line = match e.status {
        EditStatus::Applied if e.kind == EditKind::Remove => format!("{noun} {n}: {path} deleted"),
        EditStatus::Applied => {
            let mut s = match &e.lines {
                Some(r) if r.is_empty() && e.tier.is_none() => {
                    format!("{noun} {n}: applied to {path} (new content)")
                }
                Some(r) => format!("{noun} {n}: applied to {path} at {}", lines(r)),
                None => format!("{noun} {n}: applied to {path}"),
            };
            if let Some(note) = e.tier.and_then(|t| tier_note(t, e.similarity)) {
                let _ = write!(s, "; {note}");
            }
            s
        }
        EditStatus::AlreadyApplied => {
            let at = e
                .lines
                .as_ref()
                .map(|r| format!(" (at {})", lines(r)))
                .unwrap_or_default();
            format!(
                "{noun} {n}: already applied: {path} already has {what}{at}. Nothing to do; do not send it again"
            )
        }
        EditStatus::Noop => format!("{noun} {n}: {}", words.noop),
        _ => match &e.error {
            Some(err) => format!("{noun} {n} failed: {}", edit_error(path, err, doc, e.kind)),
            None => format!("{noun} {n} failed"),
        },
    };
    let notes: Vec<String> = e
        .warnings
        .iter()
        .filter(|w| !matches!(w, Warning::IdenticalBlock | Warning::Sequential))
        .map(warning)
        .collect();
    if !notes.is_empty() {
        let _ = write!(line, " (note: {})", notes.join("; "));
    }
    line
}

/// The words for what happens to a file as a whole, when edits do not say it.
fn file_line(f: &FileReport, writes: bool) -> Option<String> {
    let mode = f.mode.map(|m| format!(" (mode {m:o})")).unwrap_or_default();
    let (moved, deleted) = if writes {
        ("moved to", "deleted")
    } else {
        ("would move to", "would be deleted")
    };
    match (f.status, &f.new_path) {
        (FileStatus::Renamed, Some(to)) => Some(format!("{}: {moved} {to}{mode}", f.path)),
        (FileStatus::Deleted, _) if !f.edits.iter().any(|e| e.kind == EditKind::Remove) => {
            Some(format!("{}: {deleted}", f.path))
        }
        (FileStatus::Created, _) if f.edits.is_empty() => {
            Some(format!("{}: created (empty){mode}", f.path))
        }
        (FileStatus::Modified, _) if f.mode.is_some() => {
            Some(format!("{}: mode set to {:o}", f.path, f.mode.unwrap_or(0)))
        }
        (FileStatus::Failed, _) if f.edits.is_empty() => f.error.as_ref().map(|e| {
            format!(
                "{} failed: {}",
                f.path,
                edit_error(&f.path, e, None, EditKind::Hunk)
            )
        }),
        _ => None,
    }
}

fn numbers(v: &[usize]) -> String {
    list(&v.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>())
}

/// What one line of an apply's message speaks for, so a terminal can tint
/// the line by the outcome it reports (the status in the report), never by
/// its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Subject {
    /// A note on the input as a whole ([`ApplyReport::notes`]).
    Note,
    /// The file at this position of [`ApplyReport::files`].
    File(usize),
    /// The edit with this [`EditReport::index`].
    Edit(usize),
    /// The closing sentence: what was, or was not, written.
    Summary,
}

/// The subjects of a message's lines, marked as the message is written.
struct Outline {
    subjects: Vec<Subject>,
    /// How much of the message the subjects cover (bytes).
    seen: usize,
}

impl Outline {
    /// The lines `out` gained since the last mark speak for `subject`.
    fn mark(&mut self, out: &str, subject: Subject) {
        let lines = out[self.seen..].matches('\n').count();
        self.subjects.extend(std::iter::repeat_n(subject, lines));
        self.seen = out.len();
    }

    /// The rest of `text` (no final newline) is the summary; the outline has
    /// one subject per line of `text`.
    fn finish(mut self, text: &str) -> Vec<Subject> {
        let rest = text.get(self.seen..).map_or(0, |r| r.lines().count());
        self.subjects
            .extend(std::iter::repeat_n(Subject::Summary, rest));
        self.subjects.truncate(text.lines().count());
        self.subjects
    }
}

/// The message for a whole apply: one line per edit, then what was (not) written.
pub fn apply_message(
    report: &ApplyReport,
    originals: &HashMap<&str, &Document>,
    partial: bool,
) -> String {
    apply_message_outlined(report, originals, partial).0
}

/// [`apply_message`] and, for each of its lines, the [`Subject`] it speaks for.
pub fn apply_message_outlined(
    report: &ApplyReport,
    originals: &HashMap<&str, &Document>,
    partial: bool,
) -> (String, Vec<Subject>) {
    let mut outline = Outline {
        subjects: Vec::new(),
        seen: 0,
    };
    let mut out = String::new();
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    let mut edits: Vec<(&str, &EditReport)> = report
        .files
        .iter()
        .flat_map(|f| f.edits.iter().map(move |e| (f.path.as_str(), e)))
        .collect();
    edits.sort_by_key(|(_, e)| e.index);
    for n in &report.notes {
        let _ = writeln!(out, "note: {}", warning(n));
        outline.mark(&out, Subject::Note);
    }
    let writes = report.ok || partial;
    for (i, f) in report.files.iter().enumerate() {
        if let Some(line) = file_line(f, writes) {
            let _ = writeln!(out, "{line}");
            outline.mark(&out, Subject::File(i));
        }
    }
    // Under --partial a file refused as a whole (the syntax guard) is not
    // written, so its edits that did apply are not in it either.
    let mut held = Vec::new();
    for (path, e) in &edits {
        let path = if path.is_empty() { "(no file)" } else { path };
        let line = edit_line(path, e, originals.get(path).copied());
        if partial && e.warnings.contains(&Warning::HeldBack) {
            held.push(e.index);
        } else if e.status.is_ok() {
            ok.push(e.index);
        } else {
            failed.push(e.index);
        }
        let _ = writeln!(out, "{line}");
        outline.mark(&out, Subject::Edit(e.index));
    }
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            one.to_owned()
        } else {
            format!("{n} {many}")
        }
    };
    // Files that failed as a whole (a delete of a missing file) count as failures too.
    let file_failed = report
        .files
        .iter()
        .any(|f| f.edits.is_empty() && f.error.is_some());
    if failed.is_empty() && !file_failed {
        let text = out.trim_end().to_owned();
        let subjects = outline.finish(&text);
        return (text, subjects);
    }
    // "hunks 1 and 2" when every edit is a diff hunk, "edits" otherwise.
    let nouns = edits.iter().map(|(_, e)| kind_words(e.kind).summary_noun);
    let noun = match nouns.clone().next() {
        Some(first) if nouns.clone().all(|n| n == first) => first,
        _ => BLOCK_WORDS.summary_noun,
    };
    let capital: String = noun
        .chars()
        .take(1)
        .flat_map(char::to_uppercase)
        .chain(noun.chars().skip(1))
        .collect();
    let s = |n: usize| if n == 1 { "" } else { "s" };
    if partial {
        if ok.is_empty() {
            let _ = write!(out, "No {noun} applied.");
        } else if !held.is_empty() {
            let _ = write!(
                out,
                "{capital}{} {} applied; {} not.",
                s(ok.len()),
                numbers(&ok),
                plural(failed.len() + held.len(), "one was", "were"),
            );
        } else {
            let _ = write!(
                out,
                "{capital}{} {} applied; {} not. Send only the fixed failed {noun}{} again.",
                s(ok.len()),
                numbers(&ok),
                plural(failed.len(), "one did", "did"),
                s(failed.len()),
            );
        }
        if !held.is_empty() {
            let _ = write!(
                out,
                " {capital}{} {} would apply but {} held back with the failed {noun}{} in the same file: send {} again with the fixed one{}.",
                s(held.len()),
                numbers(&held),
                if held.len() == 1 { "is" } else { "are" },
                s(failed.len()),
                if held.len() == 1 { "it" } else { "them" },
                s(failed.len()),
            );
        }
    } else {
        out.push_str("Nothing was written");
        if ok.is_empty() || failed.is_empty() {
            out.push('.');
        } else {
            let _ = write!(
                out,
                ": {noun}{} {} would apply, but changes are all-or-nothing. Fix {noun}{} {} and send all {} {noun}s again.",
                s(ok.len()),
                numbers(&ok),
                s(failed.len()),
                numbers(&failed),
                edits.len()
            );
        }
    }
    let subjects = outline.finish(&out);
    (out, subjects)
}

/// The words for input that could not be parsed.
pub fn parse_error(e: &ParseError, format: Option<&str>) -> String {
    match e {
        ParseError::Unterminated { line } => format!(
            "The block opened at line {line} is never closed: every `<<<<<<< SEARCH` needs a `=======` line and a `>>>>>>> REPLACE` line. Nothing was applied."
        ),
        ParseError::MissingDivider { line } => format!(
            "The block opened at line {line} has no `=======` line between its SEARCH and REPLACE parts. Nothing was applied."
        ),
        ParseError::StrayMarker { line } => format!(
            "Line {line} has a `=======` or `>>>>>>> REPLACE` marker outside any block (a block starts with `<<<<<<< SEARCH`). Nothing was applied."
        ),
        ParseError::NoEdits => match format {
            Some(f) => format!("The input holds no {f} edits. Nothing was applied."),
            None => "The input holds no edits. Nothing was applied.".to_owned(),
        },
        ParseError::BadArguments { field, expected } => {
            format!("The tool arguments are malformed: `{field}` must be {expected}. Nothing was applied.")
        }
        ParseError::BadDirective { line } => format!(
            "Line {line} is a hashline directive whose anchors cannot be read: anchors look like `12:ZPM` (line number, colon, the 3 letters from the view). Nothing was applied."
        ),
        ParseError::BadPatchLine { line } => format!(
            "Line {line} is not a patch line: inside `*** Update File:` every line starts with ` ` (context), `-`, `+`, `@@` or `***`; inside `*** Add File:` every line starts with `+`. Nothing was applied."
        ),
        ParseError::BadHunkLine { line } => format!(
            "Line {line} interrupts a hunk: every line of a hunk starts with ` ` (context, an empty line too), `-` or `+`, and the hunk's header counts more lines after it. Nothing was applied."
        ),
        ParseError::BadPayloadLine { line } => format!(
            "Line {line} is inside a hashline edit but does not start with `+`: every new line is written `+` followed by its text (a lone `+` is an empty line). Nothing was applied."
        ),
        ParseError::UnclosedFence { line } => format!(
            "The ``` fence opened at line {line} is never closed: the output looks cut off. Send the whole file again. Nothing was applied."
        ),
        ParseError::FenceClosedEarly {
            open,
            closed_by,
            fence,
            needed,
        } => format!(
            "The {} fence opened at line {open} was closed early by line {closed_by}, a line of the file's own content with as many backticks or more; the fence meant to close the file then opens a block that never closes. A fence is closed by the first line of at least as many backticks, so fence the file with more backticks than its longest such line: {} ({needed}). Send the whole file again. Nothing was applied.",
            "`".repeat(*fence),
            "`".repeat(*needed)
        ),
        ParseError::BadHunkHeader { line } => format!(
            "Line {line} starts a hunk but its header cannot be read: write `@@ -OLD_START,OLD_COUNT +NEW_START,NEW_COUNT @@` (or `@@ @@` without numbers). Nothing was applied."
        ),
        ParseError::TruncatedHunk {
            line,
            stated_old,
            stated_new,
            read_old,
            read_new,
        } => format!(
            "The hunk at line {line} counts {stated_old} old and {stated_new} new lines in its header, but the input ends after {read_old} old and {read_new} new lines of it: the diff looks cut off. Send the whole diff again. Nothing was applied."
        ),
        ParseError::TruncatedChunk { line } => format!(
            "The patch has no `*** End Patch` line and ends inside the chunk at line {line}, which stops before its change is complete (it changes nothing, or ends on a removed line): the patch looks cut off. Send the whole patch again. Nothing was applied."
        ),
        ParseError::EmptyHunk { line } => format!(
            "The hunk at line {line} has no lines: each hunk needs its context (` `), removed (`-`) and added (`+`) lines. Nothing was applied."
        ),
        ParseError::BinaryPatch { line } => format!(
            "Line {line} starts a binary patch; lancet edits text files only. Nothing was applied."
        ),
        ParseError::Unsupported { line, what } => format!(
            "Line {line}: {what} are not supported. Nothing was applied."
        ),
        ParseError::BadMode { line, mode } => format!(
            "Line {line} gives the file mode {mode}; lancet sets only the modes git records for a regular file: 100644 (not executable) or 100755 (executable). Nothing was applied."
        ),
        ParseError::Unrecognised => "The input is not in any edit format lancet knows. Expected one of: SEARCH/REPLACE blocks (`<<<<<<< SEARCH` … `=======` … `>>>>>>> REPLACE`); a unified diff (`--- a/file`, `+++ b/file`, `@@ … @@` hunks); hashline directives (`@@ file PATH`, `@@ replace 12:ZPM`); an apply_patch envelope (`*** Begin Patch` … `*** End Patch`); a whole file (its path, then its content in a ``` fence); or a tool call's JSON arguments. Use --format to name the format.".to_owned(),
    }
}

/// The report as `lancet apply --json` prints it (DESIGN.md's contract): the
/// data of `report`, with every warning and error in the words above.
pub fn json_report(report: &ApplyReport) -> ReportJson {
    ReportJson::new(report, |path, e| {
        let warnings = e.warnings.iter().map(warning).collect();
        let error = e
            .error
            .as_ref()
            .map(|err| edit_error(path, err, None, e.kind));
        (warnings, error)
    })
}

// ---------------------------------------------------------------- the disk

/// Words for a file the workspace refuses to read or write, for the refusals
/// that are about the file itself rather than its path (`None` for those).
fn file_refusal(path: &str, why: PathProblem) -> Option<String> {
    let path = clip_path(path);
    Some(match why {
        PathProblem::Config => format!(
            "{path} is refused: it is lancet's own configuration, which edits never change. Nothing was written; if it must change, a person changes it."
        ),
        PathProblem::NotRegular {
            found: FileKind::Symlink,
        } => format!(
            "{path} is refused: it is a symlink, and lancet does not replace a symlink with a file (the link would be lost, and undo could not bring it back). Edit the file it points to instead."
        ),
        PathProblem::NotRegular { found } => format!(
            "{path} is refused: it is {}, not a regular file; lancet reads and writes regular files only.",
            found.describe()
        ),
        PathProblem::TooLarge { bytes, limit } => format!(
            "{path} is refused: it is {bytes} bytes, more than the {limit} bytes lancet reads."
        ),
        PathProblem::ReadOnly => format!(
            "{path} is refused: it is read-only (its owner has no write permission), so someone meant it not to change. Nothing was written. Make it writable first, or pass --force to `lancet apply`."
        ),
        PathProblem::TooLong { bytes } => format!(
            "{path} is refused: the path is {bytes} bytes long; lancet takes paths up to {} bytes, with names up to 255.",
            crate::workspace::MAX_PATH_BYTES
        ),
        PathProblem::Changed => format!(
            "{path} is refused: a directory on the way to it was replaced while lancet was reading it. Nothing was written; check the directory and try again."
        ),
        PathProblem::Outside
        | PathProblem::Absolute
        | PathProblem::Invalid
        | PathProblem::Reserved
        | PathProblem::Directory => return None,
    })
}

/// Words for a move or rename whose destination is refused: they name the destination.
pub fn destination_refusal(from: &str, to: &str, why: PathProblem) -> String {
    let (from, to) = (clip_path(from), clip_path(to));
    let why = match why {
        PathProblem::Outside => "it leads outside the workspace root".to_owned(),
        PathProblem::Absolute => "it is absolute".to_owned(),
        PathProblem::Invalid => "it is not a file path".to_owned(),
        PathProblem::Reserved => {
            "it is inside .lancet/ or .git/, which lancet never edits".to_owned()
        }
        PathProblem::Directory => "it is a directory".to_owned(),
        PathProblem::Config => {
            "it is lancet's own configuration, which edits never change".to_owned()
        }
        PathProblem::NotRegular { found } => format!("it is {}", found.describe()),
        PathProblem::TooLarge { bytes, .. } => format!("it is a file of {bytes} bytes"),
        PathProblem::ReadOnly => "it is read-only".to_owned(),
        PathProblem::TooLong { bytes } => format!("the path is {bytes} bytes long"),
        PathProblem::Changed => "a directory on the way to it was replaced meanwhile".to_owned(),
    };
    format!(
        "{from} cannot be moved to {to}: the destination {to} is refused: {why}. Nothing was written; choose another destination."
    )
}

/// Words for a file that would be created under something that is not a directory.
pub fn under_a_file(path: &str, parent: &str) -> String {
    let (path, parent) = (clip_path(path), clip_path(parent));
    format!(
        "{path} cannot be created: {parent} is a file, not a directory. Nothing was written; choose another path, or move {parent} first."
    )
}

/// What is wrong with an undo journal entry, in words.
pub fn journal_problem(problem: &JournalProblem) -> String {
    match problem {
        JournalProblem::Syntax { line, column } => format!(
            "its manifest.json is not the JSON lancet writes (error at line {line}, column {column})"
        ),
        JournalProblem::TooLarge { bytes } => {
            format!("its manifest.json is {bytes} bytes, far more than lancet ever writes")
        }
        JournalProblem::SavedName { saved } => format!(
            "it names the saved copy {:?}, which is not a file of the entry (lancet names them 0, 1, 2, …)",
            clip_path(saved)
        ),
        JournalProblem::SavedMissing { path } => format!(
            "it records {} as existing before the apply but names no saved copy of it (or names a copy of a file that did not exist)",
            clip_path(path)
        ),
        JournalProblem::HashMissing { path } => format!(
            "it names a saved copy of {} without the hash to check the copy against",
            clip_path(path)
        ),
        JournalProblem::Duplicate { path } => {
            format!("it lists {} twice", clip_path(path))
        }
        JournalProblem::NotRegular { name, found } => {
            format!(
                "its {name} is {}, not a file lancet wrote",
                found.describe()
            )
        }
        JournalProblem::CopyMissing { saved } => {
            format!("its saved copy files/{saved} is missing")
        }
    }
}

/// The words for a workspace failure as a person reads it (`lancet apply`,
/// `lancet undo`): what happened, that nothing was changed, what to do.
pub fn workspace_error(e: &WorkspaceError) -> String {
    use WorkspaceError as W;
    match e {
        W::StateEntry {
            path,
            found,
            expected,
        } => format!(
            "{path} is {}, but lancet keeps {} there; it is neither followed nor replaced, and nothing was written. Remove it (`rm {}{path}`) and run lancet again: lancet makes it anew.",
            found.describe(),
            expected.describe(),
            if *found == FileKind::Directory {
                "-r "
            } else {
                ""
            },
        ),
        W::JournalCorrupt { entry, problem } => format!(
            "the undo journal entry .lancet/undo/{entry} is not as lancet writes it: {}. Nothing was changed. Look at that directory, then delete it to undo the apply before it.",
            journal_problem(problem)
        ),
        W::JournalDamaged { path } => format!(
            "the undo journal's copy of {} does not hold what was saved (the machine may have stopped before it reached the disk). Nothing was changed.",
            clip_path(path)
        ),
        W::Busy { waited } => format!(
            "another lancet is applying in this directory (waited {:.1} s for it); nothing was written. Try again when it has finished.",
            waited.as_secs_f64()
        ),
        W::Stale { path } => format!(
            "{} changed on disk while lancet was applying; nothing was written. Apply again against its current content.",
            clip_path(path)
        ),
        W::PathChanged { path } => format!(
            "a directory on the way to {} was replaced while lancet was writing; nothing was written.",
            clip_path(path)
        ),
        W::ParentNotDirectory { path, parent } => under_a_file(path, parent),
        W::ReadOnly { path } => file_refusal(path, PathProblem::ReadOnly).unwrap_or_default(),
        W::ConfigFile { path } => file_refusal(path, PathProblem::Config).unwrap_or_default(),
        W::NotRegular { path, found } => {
            file_refusal(path, PathProblem::NotRegular { found: *found }).unwrap_or_default()
        }
        W::TooLarge { path, bytes, limit } => file_refusal(
            path,
            PathProblem::TooLarge {
                bytes: *bytes,
                limit: *limit,
            },
        )
        .unwrap_or_default(),
        W::IsDirectory { path } => format!("{} is a directory, not a file.", clip_path(path)),
        W::Io { path, source } => format!(
            "{}: {source}. Nothing was written.",
            clip_path(&path.to_string_lossy())
        ),
        other => format!("{other}; nothing was written."),
    }
}
