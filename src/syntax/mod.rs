//! The syntax guard: an edit that turns valid code into broken code is caught
//! before it reaches disk (feature `syntax`).
//!
//! Only errors the edit **introduced** count. The usual case is cheap: each
//! change (a run of the guard's own line diff, diff.rs) is settled on its
//! own by the smallest region around it that parses on its own, and if all
//! are clean the edit broke nothing. A region is a run of Rust statements in
//! a block or of items in an `impl`/`trait`/`mod`/`extern` block, parsed in
//! a one-line synthetic wrapper of that kind, a run of whole top-level Rust
//! items, parsed as they are, a run of Python statements at one
//! indentation, parsed in `def __lancet_probe():`, which no `else`/`elif`/
//! `except` can continue, or a run of Python top-level statements, parsed
//! as they are (slice.rs chooses it, innermost first); its
//! boundaries are lines a lexical scan of both whole files (lex.rs) finds
//! outside strings and comments, at the same bracket depth before and
//! after. A Rust region's boundaries are proven so, and only its new text
//! is parsed; a Python region is parsed before and after, and taken only
//! when both are clean. A Rust change of lines that hold only comments
//! and blanks moves no token and needs no region. A change no region settles is settled by the
//! top-level items around it, before and after (they go first for every
//! change when they are tiny against the files, as parsing them then costs
//! less than that scan);
//! when a region is broken after, or nothing is clean before, both
//! whole files are parsed (the new one incrementally, from the old tree moved through the
//! edit with tree-sitter's `InputEdit`) and their innermost ERROR/MISSING
//! nodes compared: the old errors' positions are mapped through the shortest
//! line diff, so an error that merely moved is matched to itself. A file that was
//! already broken can still be edited; in one, only errors on the edited
//! lines can be new, and only net of the errors the lines they replaced had.
//!
//! The guard must not refuse what the compiler accepts. ERROR nodes the
//! grammar reports on valid code (per language: Rust 2015 `try!(…)`, whole
//! tokens it cannot read inside a macro's token trees, a `pub type` in an
//! `extern` block, a unit struct with a `where` clause, `str![…]`, `x @ (…)`,
//! `(): Trait` in a `where` clause) are not errors at
//! all, before or after; in a Rust file with errors, the attributes in the
//! broken part of the tree are blanked and it is parsed again, since the
//! grammar cannot read some where rustc can (on a struct pattern's field). An ERROR over the same code (with a word in it) as
//! one the unedited file had is that error, wherever the edit moved it or
//! whatever it changed around it. benches/syntax_replay.sh replays real
//! history to keep refusals of real upstream files at zero.
//!
//! Languages come from a small registry keyed by file extension (`.py`,
//! `.pyi`, `.rs`); grammars are built once per process. Unknown extensions
//! and files over [`MAX_BYTES`] are not checked (the report says so). No
//! tree-sitter type leaves this module.

mod diff;
mod lex;
mod slice;

use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

use tree_sitter::{InputEdit, Language, Node, Parser, Point, Tree};

use crate::report::SyntaxIssue;
use crate::splice;
use crate::text::Document;

/// Files larger than this are not checked: parsing stays well under the time
/// an apply may take.
pub(crate) const MAX_BYTES: usize = 2_000_000;

/// Top-level slices are parsed before nested ones when their bytes, times
/// this, are at most both files' (parsing costs about 200 ns a byte old and
/// new together, the lexical scan about 1 ns a byte of each file).
const TOP_FIRST: usize = 256;

/// Above this many changed runs in a file the nested slices are not tried.
const MAX_NESTED_CHANGES: usize = 64;

/// One language: its extensions, grammar, and any check the grammar cannot
/// make (tree-sitter's Python grammar accepts any indentation).
struct Grammar {
    extensions: &'static [&'static str],
    language: &'static LazyLock<Language>,
    extra: Option<fn(&Document) -> Vec<Span>>,
    /// Whether a line at column 0 starts a top-level item.
    starts_item: fn(&str) -> bool,
    /// Whether an innermost ERROR node (given the source) is the grammar's
    /// gap, not the code's: a construct the compiler accepts.
    gap: fn(Node<'_>, &[u8]) -> bool,
    /// The lexical scan (see [`lex`]).
    lex: lex::Lexer,
    /// The regions around a change that parse on their own, innermost first
    /// (see [`slice`]).
    slices: fn(&slice::Sides<'_>, &splice::DiffRun) -> Vec<slice::Slice>,
    /// For a whole file with errors: the text with what the grammar cannot
    /// read where it stands blanked (same bytes, spaces), to be parsed again
    /// (`None`: nothing to blank).
    blank: Option<fn(&Tree, &str) -> Option<String>>,
    /// Whether comments are only what the grammar skips between tokens, so
    /// that a change of lines holding nothing else changes no token (not
    /// so for Python, whose comment lines the indentation scanner reads).
    comments_skipped: bool,
}

static PYTHON: LazyLock<Language> = LazyLock::new(|| tree_sitter_python::LANGUAGE.into());
static RUST: LazyLock<Language> = LazyLock::new(|| tree_sitter_rust::LANGUAGE.into());

/// Adding a language is one line here and its grammar crate in Cargo.toml.
static REGISTRY: &[Grammar] = &[
    Grammar {
        extensions: &["py", "pyi"],
        language: &PYTHON,
        extra: Some(python_indentation),
        starts_item: python_item,
        gap: |_, _| false,
        lex: lex::python_from,
        slices: slice::python,
        blank: None,
        comments_skipped: false,
    },
    Grammar {
        extensions: &["rs"],
        language: &RUST,
        extra: None,
        starts_item: rust_item,
        gap: rust_gap,
        lex: lex::rust_from,
        slices: slice::rust,
        blank: Some(rust_blank),
        comments_skipped: true,
    },
];

/// What the guard found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not checked: the language is unknown.
    UnknownLanguage,
    /// Not checked: the file is larger than [`MAX_BYTES`].
    TooLarge,
    /// Checked: these errors are new (empty: the edit broke nothing).
    Checked(Vec<SyntaxIssue>),
}

fn grammar(path: &str) -> Option<&'static Grammar> {
    let ext = path.rsplit_once('.')?.1;
    REGISTRY.iter().find(|g| g.extensions.contains(&ext))
}

/// Checks the edit `before` → `after` of `path`; `before` is `None` for a new file.
///
/// The usual case costs two small parses: the smallest region around the
/// edit that parses on its own (see [`nested`]), before and after, and if
/// both are clean the edit broke nothing. Otherwise both whole files are
/// parsed and their errors compared (see [`new_issues`]).
pub(crate) fn check(path: &str, before: Option<&Document>, after: &Document) -> Verdict {
    check_with(path, before, after, true)
}

/// [`check`], with the fast path on or off (off: always the whole files).
fn check_with(path: &str, before: Option<&Document>, after: &Document, fast: bool) -> Verdict {
    let Some(grammar) = grammar(path) else {
        return Verdict::UnknownLanguage;
    };
    let language: &Language = grammar.language;
    if after.text().len() > MAX_BYTES || before.is_some_and(|b| b.text().len() > MAX_BYTES) {
        return Verdict::TooLarge;
    }
    let mut parser = Parser::new();
    if parser.set_language(language).is_err() {
        return Verdict::UnknownLanguage;
    }
    if let Some(b) = before.filter(|_| fast)
        && settled(grammar, &mut parser, b, after)
    {
        return Verdict::Checked(Vec::new());
    }
    let runs = match before {
        Some(b) => splice::doc_line_diff(b, after),
        None => Vec::new(),
    };
    // The whole files: the old one first, so the new one parses incrementally.
    let (known, old_tree) = match before {
        Some(b) => match parser.parse(b.text(), None) {
            Some(mut tree) => {
                let mut known = file_errors(grammar, &mut parser, &tree, b.text());
                if let Some(extra) = grammar.extra {
                    known.extend(extra(b));
                }
                for e in input_edits(b, after, &runs) {
                    tree.edit(&e);
                }
                (known, Some(tree))
            }
            None => (Vec::new(), None),
        },
        None => (Vec::new(), None),
    };
    let Some(new_tree) = parser.parse(after.text(), old_tree.as_ref()) else {
        return Verdict::Checked(Vec::new());
    };
    let mut fresh = file_errors(grammar, &mut parser, &new_tree, after.text());
    if let Some(extra) = grammar.extra {
        fresh.extend(extra(after));
    }
    drop_old_constructs(&known, &mut fresh);
    let edited = edited_rows(after, before.map(|_| runs.as_slice()));
    Verdict::Checked(
        new_issues(known, fresh, &runs, &edited)
            .into_iter()
            .map(|mut i| {
                if i.line < after.line_count() {
                    i.text = after.line(i.line).to_owned();
                }
                i
            })
            .collect(),
    )
}

/// The fast path: whether slices around the changes settle the edit `before`
/// → `after` as breaking nothing (`false`: only the whole files can tell).
///
/// The changed lines come from the guard's own walk ([`diff::runs`]), not
/// the shortest diff the whole files need. Each change is settled on its
/// own: the innermost region [`slice`] offers that parses clean before and
/// after, else the top-level items around it (see [`nested`]); when the
/// items around the changes are tiny against the files they go first, as
/// parsing them then costs less than the lexical scan the nested slices need.
fn settled(grammar: &Grammar, parser: &mut Parser, b: &Document, after: &Document) -> bool {
    let runs = diff::runs(b, after);
    let top = around_edits(grammar.starts_item, b, after, &runs);
    let top_pair = |parser: &mut Parser| {
        if top.is_empty() {
            return Pair::OldBroken;
        }
        top.iter()
            .map(|t| t.pair(grammar, parser, b, after))
            .find(|p| *p != Pair::Clean)
            .unwrap_or(Pair::Clean)
    };
    // The nested slices need a lexical scan of both whole files, which
    // costs about what parsing a 1/TOP_FIRST share of them does: top-level
    // items smaller than that are parsed as they are, first.
    let top_bytes: usize = top
        .iter()
        .map(|t| b.byte_range(t.slice.old.clone()).len())
        .sum();
    let small = !top.is_empty()
        && top_bytes.saturating_mul(TOP_FIRST) <= b.text().len() + after.text().len();
    if small {
        return match top_pair(parser) {
            Pair::Clean => true,
            Pair::NewBroken => false,
            // (The top-level items are not tried again.)
            Pair::OldBroken => matches!(
                nested(grammar, parser, b, after, &runs, &[]),
                Fast::Clean(_)
            ),
        };
    }
    match nested(grammar, parser, b, after, &runs, &top) {
        Fast::Clean(_) => true,
        Fast::Broken => false,
        Fast::Unknown => top_pair(parser) == Pair::Clean,
    }
}

/// What the nested slices say about an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fast {
    /// Every change lies in a slice that parses clean before and after:
    /// the slices' old and new line ranges.
    Clean(Vec<(Range<usize>, Range<usize>)>),
    /// A slice parsed clean before and not after (most likely the edit broke
    /// it), or nothing clean before could be placed around some change:
    /// only the whole files can tell.
    Broken,
    /// The nested slices were not tried (too many changes, or the lexical
    /// scan could not be used).
    Unknown,
}

/// Whether `run` lies inside `slice`, on both sides.
fn inside(slice: &slice::Slice, run: &splice::DiffRun) -> bool {
    run.old.start >= slice.old.start
        && run.old.end <= slice.old.end
        && run.new.start >= slice.new.start
        && run.new.end <= slice.new.end
}

/// The nested fast path: for each change, the regions [`slice`] offers,
/// innermost first, each parsed in its wrapper before and after (the new one
/// incrementally); the first clean pair covers every change inside it. A
/// region may contain the regions already checked, never cut one. A change
/// no region settles is settled by the top-level items around it (`top`,
/// from [`around_edits`]), on their own: the other changes keep their small
/// regions.
fn nested(
    grammar: &Grammar,
    parser: &mut Parser,
    before: &Document,
    after: &Document,
    runs: &[splice::DiffRun],
    top: &[Top],
) -> Fast {
    // Many scattered changes: the top-level slices or the whole files are
    // as cheap, and the search per change stays bounded.
    if runs.iter().filter(|r| !r.equal).count() > MAX_NESTED_CHANGES {
        return Fast::Unknown;
    }
    let Some(sides) = slice::Sides::new(before, after, runs, grammar.lex) else {
        return Fast::Unknown;
    };
    let mut done: Vec<slice::Slice> = Vec::new();
    // Whether a region starting at old line `start` would cut one checked.
    let cuts = |done: &[slice::Slice], start: usize| {
        done.iter()
            .any(|d| d.old.start < start && start < d.old.end)
    };
    let mut settled = false;
    for run in runs.iter().filter(|r| !r.equal) {
        if done.iter().any(|d| inside(d, run)) {
            continue;
        }
        if grammar.comments_skipped && sides.only_comments(run) {
            settled = true;
            continue;
        }
        let mut placed = false;
        for cand in (grammar.slices)(&sides, run) {
            if !inside(&cand, run) || cuts(&done, cand.old.start) {
                continue;
            }
            // The changes inside, in the wrapped slice's lines (the lines
            // the wrapper puts above).
            let above = cand.wrapper.lines_above();
            let local: Vec<splice::DiffRun> = runs
                .iter()
                .filter(|r| !r.equal && inside(&cand, r))
                .map(|r| splice::DiffRun {
                    equal: false,
                    old: r.old.start - cand.old.start + above..r.old.end - cand.old.start + above,
                    new: r.new.start - cand.new.start + above..r.new.end - cand.new.start + above,
                })
                .collect();
            let wrapped = |doc: &Document, r: &Range<usize>| {
                Document::from_text(&cand.wrapper.wrap(&doc.text()[doc.byte_range(r.clone())]))
            };
            let (old, new) = (wrapped(before, &cand.old), wrapped(after, &cand.new));
            match pair(grammar, parser, &old, &new, &local, cand.wrapper.proven()) {
                Pair::Clean => {
                    done.retain(|d| d.old.start < cand.old.start);
                    done.push(cand);
                    placed = true;
                    break;
                }
                Pair::OldBroken => {}
                Pair::NewBroken => return Fast::Broken,
            }
        }
        if placed {
            continue;
        }
        let Some(t) = top
            .iter()
            .find(|t| inside(&t.slice, run) && !cuts(&done, t.slice.old.start))
        else {
            return Fast::Broken;
        };
        if t.pair(grammar, parser, before, after) != Pair::Clean {
            return Fast::Broken;
        }
        done.retain(|d| d.old.start < t.slice.old.start);
        done.push(t.slice.clone());
    }
    if done.is_empty() && !settled {
        return Fast::Unknown;
    }
    Fast::Clean(done.into_iter().map(|s| (s.old, s.new)).collect())
}

/// Which errors of the new text the edit introduced.
///
/// - Each error is the innermost ERROR or MISSING node (an ERROR node that
///   holds others stands for them), spanning rows; it is reported at the
///   first edited row its outermost ERROR node covers, else where it starts.
/// - If the old text was clean, every error is new.
/// - If it was already broken, error recovery shifts and regroups the old
///   errors around any edit, so an error is new only if it covers an edited
///   row and no old error of the same kind spanned the same (unchanged)
///   lines, nor one of the same kind stood on the lines its run replaced.
fn new_issues(
    known: Vec<Span>,
    fresh: Vec<Span>,
    runs: &[splice::DiffRun],
    edited: &[bool],
) -> Vec<SyntaxIssue> {
    let first_edited =
        |(a, b): (usize, usize)| (a..=b).find(|&r| edited.get(r).copied().unwrap_or(false));
    let to_new = |line: usize| {
        runs.iter()
            .find(|r| r.equal && r.old.contains(&line))
            .map(|r| r.new.start + (line - r.old.start))
    };
    let seen: HashSet<(usize, usize, &str)> = known
        .iter()
        .filter_map(|s| Some((to_new(s.start)?, to_new(s.end)?, s.issue.kind.as_str())))
        .collect();
    // Old errors on lines the edit rewrote, per changed run and kind: an
    // error on the rewritten lines of the same run and kind is the old one
    // carried along (`let x = ;` → `let y = ;`), not a net new one.
    let changed_run = |line: usize, old: bool| {
        runs.iter()
            .position(|r| !r.equal && if old { &r.old } else { &r.new }.contains(&line))
    };
    let mut carried: Vec<(usize, &str)> = known
        .iter()
        .filter(|s| to_new(s.start).is_none())
        .filter_map(|s| {
            let run = (s.start..=s.end).find_map(|l| changed_run(l, true))?;
            Some((run, s.issue.kind.as_str()))
        })
        .collect();
    let mut out: Vec<SyntaxIssue> = Vec::new();
    for span in &fresh {
        let edited_row = first_edited((span.start, span.end));
        if !known.is_empty()
            && (edited_row.is_none()
                || seen.contains(&(span.start, span.end, span.issue.kind.as_str())))
        {
            continue;
        }
        let kind = span.issue.kind.as_str();
        if let Some(k) = edited_row
            .and_then(|r| changed_run(r, false))
            .and_then(|run| carried.iter().position(|&c| c == (run, kind)))
        {
            carried.swap_remove(k);
            continue;
        }
        let mut issue = span.issue.clone();
        if let Some(r) = first_edited(span.outer).filter(|&r| r != span.start) {
            // An error that starts above the edit and runs into it: the
            // parser skipped tokens up to where it ends, which is the place
            // it could not accept.
            issue.line = if span.start < r && r <= span.end {
                span.end
            } else {
                r
            };
            issue.column = 0;
        }
        if !out
            .iter()
            .any(|o| o.line == issue.line && o.kind == issue.kind)
        {
            out.push(issue);
        }
    }
    out
}

/// Rows of `after` an edit wrote, and the rows on either side of a deletion
/// (`runs` is `None` for a new file: every row).
fn edited_rows(after: &Document, runs: Option<&[splice::DiffRun]>) -> Vec<bool> {
    let n = after.line_count();
    let Some(runs) = runs else {
        return vec![true; n + 1];
    };
    let mut rows = vec![false; n + 1];
    for r in runs.iter().filter(|r| !r.equal) {
        if r.new.is_empty() {
            rows[r.new.start.saturating_sub(1)] = true;
            rows[r.new.start.min(n)] = true;
        }
        for i in r.new.clone() {
            rows[i] = true;
        }
    }
    rows
}

/// The top-level items around changes (see [`around_edits`]).
struct Top {
    /// The changes inside, in the slice's own lines.
    local: Vec<splice::DiffRun>,
    /// Their lines in the whole files.
    slice: slice::Slice,
}

impl Top {
    /// Whether the items are clean before and after (their texts are cut
    /// from the files only now: most edits never need them).
    fn pair(
        &self,
        grammar: &Grammar,
        parser: &mut Parser,
        before: &Document,
        after: &Document,
    ) -> Pair {
        let cut = |doc: &Document, r: &Range<usize>| {
            Document::from_text(&doc.text()[doc.byte_range(r.clone())])
        };
        let (old, new) = (cut(before, &self.slice.old), cut(after, &self.slice.new));
        clean_pair(grammar, parser, &old, &new, &self.local)
    }
}

/// The top-level items around each change, before and after: from the last
/// line that starts an item above the change to the first that starts one
/// below it. Changes with no item start between them share one slice.
fn around_edits(
    starts: fn(&str) -> bool,
    before: &Document,
    after: &Document,
    runs: &[splice::DiffRun],
) -> Vec<Top> {
    // Lines of an unchanged run are the same in both texts: a line found in
    // `before` is at the same offset of the run in `after`.
    let starter = |e: &splice::DiffRun, k: usize| {
        starts(before.line(k)).then_some((k, e.new.start + (k - e.old.start)))
    };
    let mut spans: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    let mut open: Option<(usize, usize)> = None;
    for (i, r) in runs.iter().enumerate() {
        if r.equal {
            continue;
        }
        if open.is_none() {
            let above = i
                .checked_sub(1)
                .map(|j| &runs[j])
                .filter(|e| e.equal)
                .and_then(|e| e.old.clone().rev().find_map(|k| starter(e, k)));
            open = Some(match above {
                Some(p) => p,
                // No item starts since the previous slice: extend it.
                None => spans.pop().map_or((0, 0), |(o, n)| (o.start, n.start)),
            });
        }
        let below = runs
            .get(i + 1)
            .filter(|e| e.equal)
            .and_then(|e| e.old.clone().find_map(|k| starter(e, k)));
        if let (Some((eo, en)), Some((so, sn))) = (below, open) {
            spans.push((so..eo, sn..en));
            open = None;
        }
    }
    if let Some((so, sn)) = open {
        spans.push((so..before.line_count(), sn..after.line_count()));
    }
    spans
        .into_iter()
        .map(|(o, n)| {
            // The changes inside the slice, in its own line numbers: every
            // changed run lies within one slice (slices end on unchanged
            // lines; an insertion where two slices meet is in the one whose
            // new side holds it).
            let inside = |r: &&splice::DiffRun| {
                !r.equal
                    && r.old.start >= o.start
                    && r.old.end <= o.end
                    && r.new.start >= n.start
                    && r.new.end <= n.end
            };
            let local = runs
                .iter()
                .filter(inside)
                .map(|r| splice::DiffRun {
                    equal: false,
                    old: r.old.start - o.start..r.old.end - o.start,
                    new: r.new.start - n.start..r.new.end - n.start,
                })
                .collect();
            Top {
                local,
                slice: slice::Slice {
                    old: o,
                    new: n,
                    wrapper: slice::Wrapper::Bare,
                },
            }
        })
        .collect()
}

/// How a pair of slices parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pair {
    /// Both clean.
    Clean,
    /// The old slice has errors (or did not parse): the slice was a bad guess.
    OldBroken,
    /// The old slice is clean and the new one is not.
    NewBroken,
}

/// Whether the slices `old` and `new` (`new` is `old` changed by `runs`)
/// both parse without errors and pass the language's extra check. `new` is
/// parsed incrementally from `old`'s tree moved through the change, as the
/// whole files are: only what the change touched is parsed again.
fn clean_pair(
    grammar: &Grammar,
    parser: &mut Parser,
    old: &Document,
    new: &Document,
    runs: &[splice::DiffRun],
) -> Pair {
    pair(grammar, parser, old, new, runs, false)
}

/// [`clean_pair`], or with `proven` (the slice's boundaries are proven by
/// the lexical scan, see [`slice::Wrapper::proven`]) only `new` parsed: the
/// old slice's parse only tells whether the slice was a good guess, and an
/// error it had is one the new slice has too, which the whole files settle.
fn pair(
    grammar: &Grammar,
    parser: &mut Parser,
    old: &Document,
    new: &Document,
    runs: &[splice::DiffRun],
    proven: bool,
) -> Pair {
    if proven {
        let clean = parser
            .parse(new.text(), None)
            .is_some_and(|t| clean_tree(grammar, &t, new));
        return if clean { Pair::Clean } else { Pair::NewBroken };
    }
    let Some(mut tree) = parser.parse(old.text(), None) else {
        return Pair::OldBroken;
    };
    if !clean_tree(grammar, &tree, old) {
        return Pair::OldBroken;
    }
    for e in input_edits(old, new, runs) {
        tree.edit(&e);
    }
    if parser
        .parse(new.text(), Some(&tree))
        .is_some_and(|t| clean_tree(grammar, &t, new))
    {
        Pair::Clean
    } else {
        Pair::NewBroken
    }
}

/// Whether `tree` (of `doc`) has no errors and `doc` passes the language's extra check.
fn clean_tree(grammar: &Grammar, tree: &Tree, doc: &Document) -> bool {
    (!tree.root_node().has_error() || errors(tree, doc.text().as_bytes(), grammar.gap).is_empty())
        && grammar.extra.is_none_or(|extra| extra(doc).is_empty())
}

/// A Python line that starts a statement at the top level (a guess: a wrong
/// guess only makes the slice fail to parse, and the whole files are checked).
fn python_item(line: &str) -> bool {
    let continues = |k: &&str| {
        line.strip_prefix(*k)
            .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
    };
    line.starts_with(|c: char| {
        !(c.is_whitespace() || matches!(c, ')' | ']' | '}' | '#' | '"' | '\'' | '.' | ','))
    }) && !["else", "elif", "except", "finally"].iter().any(continues)
}

/// A Rust line that starts an item at the top level (same caveat).
fn rust_item(line: &str) -> bool {
    let Some(c) = line.chars().next() else {
        return false;
    };
    (c.is_alphabetic() || c == '#' || c == '/' || c == '_')
        && !line.starts_with("where")
        && !line.starts_with("//!")
}

/// Python's indentation rules, as its tokenizer applies them: a block opener
/// (a logical line ending in `:`) must be followed by a deeper line; a deeper
/// line must follow an opener; a shallower line must return to an enclosing
/// level. Which lines start a logical line (not inside brackets, strings or
/// after a `\`) and each line's last code byte come from the Python lexer
/// ([`lex::python`]), the scan the slices use too.
fn python_indentation(doc: &Document) -> Vec<Span> {
    let table = lex::python(doc.text());
    let starts_logical = |i: usize| table.get(i).is_none_or(|l| l.code && !l.cont);
    let mut issues = Vec::new();
    let mut stack: Vec<usize> = vec![0];
    let mut expect_indent: Option<usize> = None; // the opener's line
    let issue = |line: usize, kind: &str| Span {
        start: line,
        end: line,
        outer: (line, line),
        construct: None,
        issue: SyntaxIssue {
            line,
            column: 0,
            kind: kind.to_owned(),
            text: String::new(),
        },
    };
    for (i, line) in doc.lines().enumerate() {
        let body = line.trim_start_matches([' ', '\t', '\u{c}']);
        if starts_logical(i) && !body.is_empty() && !body.starts_with('#') {
            let width = line[..line.len() - body.len()]
                .chars()
                .fold(0, |w, c| if c == '\t' { w / 8 * 8 + 8 } else { w + 1 });
            let top = *stack.last().unwrap_or(&0);
            if expect_indent.take().is_some() {
                if width > top {
                    stack.push(width);
                } else {
                    issues.push(issue(i, "IndentationError: expected an indented block"));
                }
            } else if width > top {
                issues.push(issue(i, "IndentationError: unexpected indent"));
                // Recover as if a block had opened there: the lines after it
                // at the same depth are one error, not one each (a fragment
                // indented throughout, saved alone, has a single old error
                // that every added line would otherwise repeat as new).
                stack.push(width);
            } else if width < top {
                while stack.last().is_some_and(|&t| t > width) {
                    stack.pop();
                }
                if stack.last() != Some(&width) {
                    issues.push(issue(
                        i,
                        "IndentationError: unindent does not match any outer indentation level",
                    ));
                    stack.push(width);
                }
            }
        }
        // A logical line ends here (the next line starts one) in a `:`.
        if starts_logical(i + 1) && table.get(i).is_some_and(|l| l.last == b':') {
            expect_indent = Some(i);
        }
    }
    if let Some(i) = expect_indent {
        issues.push(issue(i, "IndentationError: expected an indented block"));
    }
    issues
}

/// The point where line `i` starts (or the end of the text).
fn point(doc: &Document, i: usize) -> (usize, Point) {
    let byte = doc.byte_range(0..i).end;
    if i < doc.line_count() || doc.has_final_newline() || doc.line_count() == 0 {
        (byte, Point { row: i, column: 0 })
    } else {
        let last = doc.line_count() - 1;
        (
            byte,
            Point {
                row: last,
                column: doc.line(last).len(),
            },
        )
    }
}

/// The changes `before` → `after` as tree-sitter edits, last first (so each
/// is expressed in coordinates the ones before it have not moved).
fn input_edits(before: &Document, after: &Document, runs: &[splice::DiffRun]) -> Vec<InputEdit> {
    let mut edits: Vec<InputEdit> = runs
        .iter()
        .filter(|r| !r.equal)
        .map(|r| {
            let (start_byte, start_position) = point(before, r.old.start);
            let (old_end_byte, old_end_position) = point(before, r.old.end);
            let new_len = after.byte_range(r.new.clone()).len();
            let (_, new_end) = point(after, r.new.end);
            InputEdit {
                start_byte,
                old_end_byte,
                new_end_byte: start_byte + new_len,
                start_position,
                old_end_position,
                new_end_position: Point {
                    row: start_position.row + (new_end.row - point(after, r.new.start).1.row),
                    column: new_end.column,
                },
            }
        })
        .collect();
    edits.reverse();
    edits
}

/// An error and the rows it covers.
#[derive(Debug, Clone)]
struct Span {
    start: usize,
    end: usize,
    /// The rows of the outermost ERROR node around it (where the parser
    /// first lost track), for reporting.
    outer: (usize, usize),
    /// For an ERROR over code with a word in it: its text, whitespace
    /// collapsed (see [`construct`]).
    construct: Option<String>,
    issue: SyntaxIssue,
}

/// The innermost ERROR and MISSING nodes of a tree: an ERROR node that holds
/// others stands for them (error recovery often wraps the real error in one
/// that starts at the enclosing function or the top of the file).
///
/// ERROR nodes the grammar's `gap` excuses (code the compiler accepts) are
/// left out, before and after alike.
fn errors(tree: &Tree, src: &[u8], gap: fn(Node<'_>, &[u8]) -> bool) -> Vec<Span> {
    let mut out = Vec::new();
    walk_errors(tree.root_node(), None, src, gap, &mut out);
    out
}

/// [`errors`]' walk: `outer` is the outermost ERROR node above `node`.
fn walk_errors(
    node: Node<'_>,
    outer: Option<(usize, usize)>,
    src: &[u8],
    gap: fn(Node<'_>, &[u8]) -> bool,
    out: &mut Vec<Span>,
) {
    let (p, end) = (node.start_position(), node.end_position());
    let rows = (p.row, end.row.max(p.row));
    if (node.is_missing() || (node.is_error() && !error_inside(node))) && gap(node, src) {
        return;
    }
    if node.is_missing() || (node.is_error() && !error_inside(node)) {
        out.push(error_span(node, outer, src));
        return;
    }
    if !node.has_error() {
        return;
    }
    let found = out.len();
    let inner = outer.or(node.is_error().then_some(rows));
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk_errors(child, inner, src, gap, out);
    }
    // An ERROR that holds others stands for them; when every one of them
    // is a grammar gap, what the ERROR itself skipped (a stray bracket
    // beside a macro's excused tokens) is still an error unless it is a
    // gap too.
    if node.is_error() && out.len() == found && !gap(node, src) {
        out.push(error_span(node, outer, src));
    }
}

/// The [`Span`] of an ERROR or MISSING node (`outer`: the outermost ERROR
/// node above it).
fn error_span(node: Node<'_>, outer: Option<(usize, usize)>, src: &[u8]) -> Span {
    let (p, end) = (node.start_position(), node.end_position());
    let rows = (p.row, end.row.max(p.row));
    let kind = if node.is_missing() {
        format!("MISSING {}", node.kind())
    } else {
        "ERROR".to_owned()
    };
    Span {
        start: rows.0,
        end: rows.1,
        outer: outer.unwrap_or(rows),
        construct: construct(node, src),
        issue: SyntaxIssue {
            line: p.row,
            column: p.column,
            kind,
            text: String::new(),
        },
    }
}

/// A whole file's errors (see [`errors`]); when it has some, they are the
/// errors left once the grammar's `blank` has blanked what it cannot read
/// (one more parse, only for a file that has errors: the slow path).
/// Blanking keeps every byte offset, so the errors' positions stand.
fn file_errors(grammar: &Grammar, parser: &mut Parser, tree: &Tree, text: &str) -> Vec<Span> {
    let found = errors(tree, text.as_bytes(), grammar.gap);
    if found.is_empty() {
        return found;
    }
    let Some(blanked) = grammar.blank.and_then(|blank| blank(tree, text)) else {
        return found;
    };
    match parser.parse(&blanked, None) {
        Some(t) => errors(&t, blanked.as_bytes(), grammar.gap),
        None => found,
    }
}

/// Rust: the attributes in the broken part of the tree (`#[…]` parsed as
/// an attribute, so whole, or an ERROR that is exactly one), blanked.
/// rustc's parser takes an outer attribute nearly anywhere, the grammar not
/// everywhere (on a field of a struct pattern: `let S { a, #[cfg(test)] b }
/// = s;`, on a tuple element after the first), and a whole attribute is not
/// what makes code wrong: with it blanked, the errors that remain are the
/// code's.
fn rust_blank(tree: &Tree, text: &str) -> Option<String> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(node) = stack.pop() {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            let stray = child.is_error()
                && child
                    .utf8_text(text.as_bytes())
                    .is_ok_and(|t| one_attribute(t.trim()));
            if (child.kind() == "attribute_item" && !child.has_error()) || stray {
                spans.push(child.byte_range());
            } else if child.has_error() {
                stack.push(child);
            }
        }
    }
    if spans.is_empty() {
        return None;
    }
    let mut bytes = text.as_bytes().to_vec();
    for r in spans {
        for b in bytes
            .get_mut(r)?
            .iter_mut()
            .filter(|b| !matches!(b, b'\n' | b'\r'))
        {
            *b = b' ';
        }
    }
    String::from_utf8(bytes).ok()
}

/// Whether `text` is one outer attribute, `#[…]`, whole (an ERROR the
/// grammar made of one it could not place: after a tuple's first element).
fn one_attribute(text: &str) -> bool {
    let Some(body) = text.strip_prefix('#').map(str::trim_start) else {
        return false;
    };
    if !body.starts_with('[') || !whole_tokens(body) {
        return false;
    }
    // The `[` that opens it closes at the very end.
    let mut depth = 0usize;
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                while let Some((_, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1 == body.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// Whether an ERROR node holds another ERROR or MISSING node.
fn error_inside(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    node.children(&mut cursor)
        .any(|c| c.is_error() || c.is_missing() || c.has_error())
}

/// Rust code the grammar reports as an error and rustc accepts:
/// - `try!(expr)` of Rust 2015 (the grammar reads `try` as the 2018
///   keyword): an ERROR that is `try!` (or the `!` after a `try`);
/// - tokens inside a macro invocation's or a `macro_rules!` definition's
///   token trees (a DSL may use any token rustc's lexer knows, `~` say),
///   as long as the ERROR's text is whole tokens: brackets balanced,
///   strings closed, no comment opened, no character the lexer refuses.
///   An unclosed string or a stray bracket inside `println!(…)` still counts.
fn rust_gap(node: Node<'_>, src: &[u8]) -> bool {
    if node.is_missing() {
        return missing_in_unit_type(node, src);
    }
    let Ok(text) = node.utf8_text(src) else {
        return false;
    };
    let text = text.trim();
    let after_try = text
        .strip_prefix("try")
        .map(|r| r.trim_start())
        .and_then(|r| r.strip_prefix('!'));
    if let Some(rest) = after_try {
        return whole_tokens(rest);
    }
    if text == "!" {
        // The few bytes before it: `try` (or a macro named like a primitive
        // type, snapbox's `str![…]`, which the grammar reads as the type),
        // spaces, and the character before.
        let at = node.start_byte();
        let before = String::from_utf8_lossy(&src[at.saturating_sub(32)..at]);
        let before = before.trim_end();
        let word = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(before, |k| &before[k + 1..]);
        if PRIMITIVE_MACROS.contains(&word)
            && !before[..before.len() - word.len()].ends_with(['#', '\'', '.'])
        {
            return true;
        }
    }
    if binding_at(text, src, node.end_byte()) {
        return true;
    }
    if safe_item(node, text, src) || foreign_type(node, text, src) || where_unit_struct(node, text)
    {
        return true;
    }
    !text.is_empty() && in_macro(node) && whole_tokens(text)
}

/// Rust 2024's `safe fn` / `safe static` in an `unsafe extern` block, which
/// the grammar does not know: the error is the `safe` qualifier (alone, or
/// with the item it starts) and the item after it is a function or static.
fn safe_item(node: Node<'_>, text: &str, src: &[u8]) -> bool {
    let Some(rest) = text.strip_prefix("safe") else {
        return false;
    };
    let after = if rest.trim().is_empty() {
        String::from_utf8_lossy(&src[node.end_byte()..src.len().min(node.end_byte() + 16)])
            .trim_start()
            .to_owned()
    } else if rest.starts_with(char::is_whitespace) {
        rest.trim_start().to_owned()
    } else {
        return false;
    };
    let item = after.starts_with("fn ") || after.starts_with("static ");
    let mut up = node.parent();
    while let Some(n) = up {
        if n.kind() == "foreign_mod_item" {
            return item;
        }
        up = n.parent();
    }
    false
}

/// Words before a `!` that make a macro call rustc accepts and the grammar
/// does not: Rust 2015's `try!`, and macros named like a primitive type.
const PRIMITIVE_MACROS: &[&str] = &[
    "try", "str", "bool", "char", "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32",
    "u64", "u128", "usize", "f32", "f64",
];

/// A binding to a parenthesized pattern (`raw @ (A | B) => …`), which the
/// grammar cannot read: the error is the binding, `name @` (after `ref`,
/// `mut`), and a `(` follows.
fn binding_at(text: &str, src: &[u8], end: usize) -> bool {
    let Some(name) = text.strip_suffix('@').map(str::trim_end) else {
        return false;
    };
    let name = name.strip_prefix("ref ").unwrap_or(name).trim_start();
    let name = name.strip_prefix("mut ").unwrap_or(name).trim_start();
    let paren = src
        .get(end..)
        .and_then(|r| r.iter().find(|b| !b.is_ascii_whitespace()))
        == Some(&b'(');
    paren
        && name.starts_with(|c: char| c.is_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// The unit type `()` where the grammar wants a named type (the bounded
/// type of a `where` predicate, `(): Trait`): it reads a tuple type that
/// misses its element.
fn missing_in_unit_type(node: Node<'_>, src: &[u8]) -> bool {
    node.parent().is_some_and(|p| {
        p.kind() == "tuple_type"
            && p.utf8_text(src)
                .is_ok_and(|t| t.chars().filter(|c| !c.is_whitespace()).eq("()".chars()))
    })
}

/// A foreign type in an `extern` block (`pub type Name<…>;`, as
/// `#[wasm_bindgen]` blocks declare them), which the grammar reads only
/// without a visibility: the error is the item, a name and its generics.
fn foreign_type(node: Node<'_>, text: &str, src: &[u8]) -> bool {
    // The visibility is the ERROR's start, or (before an item without one)
    // the node just before it, which the grammar gave that item.
    let rest = match text.strip_prefix("pub") {
        Some(rest) => {
            let rest = rest.trim_start();
            match rest.strip_prefix('(') {
                Some(r) => match r.split_once(')') {
                    Some((_, r)) => r.trim_start(),
                    None => return false,
                },
                None => rest,
            }
        }
        None if node
            .prev_sibling()
            .is_some_and(|p| p.kind() == "visibility_modifier") =>
        {
            text
        }
        None => return false,
    };
    let Some(name) = rest
        .strip_prefix("type")
        .filter(|r| r.starts_with(char::is_whitespace))
        .map(str::trim_start)
    else {
        return false;
    };
    // The `;` is the ERROR's end when another item follows, else after it.
    let (name, ended) = match name.strip_suffix(';') {
        Some(n) => (n.trim_end(), true),
        None => (name, false),
    };
    let semicolon = ended
        || src
            .get(node.end_byte()..)
            .and_then(|r| r.iter().find(|b| !b.is_ascii_whitespace()))
            == Some(&b';');
    // The name, then nothing or its generics `<…>` to the end (the `>` of
    // a `->` in them closes nothing).
    let generics = name.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
    let mut depth = 0i32;
    let mut prev = ' ';
    let generics_only = generics.is_empty()
        || (generics.starts_with('<')
            && generics.ends_with('>')
            && generics.char_indices().all(|(i, c)| {
                depth += match (prev, c) {
                    (_, '<') => 1,
                    ('-', '>') => 0,
                    (_, '>') => -1,
                    _ => 0,
                };
                prev = c;
                depth > 0 || i + 1 == generics.len()
            }));
    // Up to the item list, which must be an `extern` block's.
    let mut up = node.parent();
    while let Some(n) = up.filter(|n| n.kind() != "declaration_list") {
        up = n.parent();
    }
    let in_extern = up
        .and_then(|p| p.parent())
        .is_some_and(|p| p.kind() == "foreign_mod_item");
    semicolon
        && in_extern
        && generics_only
        && name.starts_with(|c: char| c.is_alphabetic() || c == '_')
        && !name.contains(';')
        && whole_tokens(name)
}

/// A unit struct with a `where` clause (`struct S where T: Send;`), which
/// the grammar cannot read: the error is the clause alone, parsed whole.
fn where_unit_struct(node: Node<'_>, text: &str) -> bool {
    node.parent().is_some_and(|p| p.kind() == "struct_item")
        && text.starts_with("where")
        && node.named_child_count() == 1
        && node
            .named_child(0)
            .is_some_and(|c| c.kind() == "where_clause" && !c.has_error())
}

/// Whether a node lies inside a macro invocation's or definition's tokens.
fn in_macro(node: Node<'_>) -> bool {
    let mut up = node.parent();
    while let Some(n) = up {
        if matches!(
            n.kind(),
            "token_tree"
                | "token_tree_pattern"
                | "macro_invocation"
                | "macro_definition"
                | "macro_rule"
        ) {
            return true;
        }
        up = n.parent();
    }
    false
}

/// Whether `text` is a run of whole Rust tokens: brackets balanced, every
/// string closed, no comment, only characters rustc's lexer accepts.
fn whole_tokens(text: &str) -> bool {
    let mut open: Vec<char> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '(' | '[' | '{' => open.push(c),
            ')' | ']' | '}' => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                if open.pop() != Some(want) {
                    return false;
                }
            }
            '"' => loop {
                match chars.next() {
                    None => return false,
                    Some('\\') => {
                        chars.next();
                    }
                    Some('"') => break,
                    Some(_) => {}
                }
            },
            '/' if matches!(chars.peek(), Some('*' | '/')) => return false,
            '\\' | '`' => return false,
            c if c.is_whitespace()
                || c.is_alphanumeric()
                || c == '_'
                || c.is_ascii_punctuation() => {}
            _ => return false,
        }
    }
    open.is_empty()
}

/// An ERROR's text, whitespace collapsed, when it holds a word (a construct
/// the grammar cannot read, such as `safe` in a Rust 2024 `unsafe extern`
/// block): the same construct in the unedited file was the grammar's
/// trouble before the edit, and is not the edit's. Punctuation alone (`=`,
/// `)`) is too common to say which error it is; those go by position.
fn construct(node: Node<'_>, src: &[u8]) -> Option<String> {
    if !node.is_error() {
        return None;
    }
    let text = node.utf8_text(src).ok()?;
    text.contains(|c: char| c.is_alphabetic())
        .then(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Drops the errors of the new text that are over the same construct as an
/// error of the unedited file (see [`construct`]): matched by the code
/// itself, wherever the edit moved it or whatever it changed around it.
fn drop_old_constructs(known: &[Span], fresh: &mut Vec<Span>) {
    let old: HashSet<&str> = known
        .iter()
        .filter_map(|s| s.construct.as_deref())
        .collect();
    if !old.is_empty() {
        fresh.retain(|s| s.construct.as_deref().is_none_or(|c| !old.contains(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_errors(path: &str, before: &str, after: &str) -> Vec<SyntaxIssue> {
        match check(
            path,
            Some(&Document::from_text(before)),
            &Document::from_text(after),
        ) {
            Verdict::Checked(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn python_breakage_is_caught() {
        let ok = "def f(x):\n    return x + 1\n\n\ndef g():\n    return 2\n";
        assert!(new_errors("a.py", ok, ok).is_empty());
        let unclosed = ok.replace("return x + 1", "return (x + 1");
        assert!(!new_errors("a.py", ok, &unclosed).is_empty());
        let dedent = ok.replace("    return 2", "return 2");
        assert!(
            !new_errors("a.py", ok, &dedent).is_empty(),
            "indentation break"
        );
    }

    #[test]
    fn rust_breakage_is_caught_and_old_errors_do_not_count() {
        let ok = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let broken = ok.replace("let x = 1;", "let x = 1");
        let issues = new_errors("m.rs", ok, &broken);
        assert!(!issues.is_empty());
        // Already broken: an unrelated edit elsewhere is fine.
        let still = broken.replace("println!(\"{x}\")", "println!(\"x = {x}\")");
        assert!(new_errors("m.rs", &broken, &still).is_empty());
        // Lines inserted above move the old error; it is still not new.
        let shifted = format!("// header\n// more\n{broken}");
        assert!(new_errors("m.rs", &broken, &shifted).is_empty());
    }

    /// Found by the comparison on real history: prose lines inside a Rust
    /// struct literal, then a field added next to them; recovery reported the
    /// old breakage at other places. No net increase, nothing new.
    #[test]
    fn nearby_edit_in_a_broken_file_is_not_new() {
        let broken = "fn f() -> S {\n# [c45] unrelated lines inserted here\n# [c45] more prose\n    S {\n        a: 1,\n    }\n}\n";
        let edited = broken.replace("        a: 1,\n", "        a: 1,\n        b: None,\n");
        assert!(new_errors("m.rs", broken, &edited).is_empty());
    }

    /// Breakages whose cause sits inside the edited item but whose effect
    /// runs past it: the fast path must not let them through.
    #[test]
    fn the_fast_path_misses_nothing_that_spills_out() {
        let py = "class A:\n    def a(self):\n        return 1\n\n\ndef b():\n    return 2\n";
        for broken in [
            py.replace("        return 1", "        return \"\"\"1"),
            py.replace("        return 1", "        return (1"),
            py.replace("        return 1\n", ""),
            py.replace("    return 2", "return 2"),
            format!("{py}@decorator\n"),
        ] {
            assert!(!new_errors("a.py", py, &broken).is_empty(), "{broken}");
        }
        let rs = "impl A {\n    fn a() {}\n}\n\nfn b() {}\n";
        for broken in [
            rs.replace("}\n\n", "\n\n"),
            rs.replace("fn a() {}", "fn a() { /* }"),
            rs.replace("fn a() {}", "fn a() { r#\" }"),
        ] {
            assert!(!new_errors("m.rs", rs, &broken).is_empty(), "{broken}");
        }
        // And a valid edit stays valid.
        assert!(new_errors("a.py", py, &py.replace("return 1", "return 11")).is_empty());
    }

    /// Found by replaying ripgrep's history: Rust 2015 `try!` in every
    /// position it takes, and tokens the grammar cannot read inside macros,
    /// are not errors; what rustc refuses inside a macro still is.
    #[test]
    fn rust_2024_safe_items_are_a_grammar_gap() {
        let new =
            "unsafe extern \"C\" {\n    safe fn abs(x: i32) -> i32;\n    safe static N: i32;\n}\n";
        assert_eq!(new_errors("lib.rs", "", new), Vec::new());
        // `safe` anywhere else is no gap.
        assert!(!new_errors("lib.rs", "", "fn f() {\n    safe fn g() {}\n}\n").is_empty());
    }

    #[test]
    fn grammar_gaps_are_not_the_edits() {
        let ok = "fn f() -> R {\n    Ok(1)\n}\n";
        for gap in [
            "fn f() -> R {\n    let x = try!(g());\n    Ok(x)\n}\n",
            "fn f() -> R {\n    try!(g());\n    Ok(S { a: try!(h()) })\n}\n",
            "fn f() -> R {\n    match try!(g()) { _ => {} }\n    Ok(try!(h()).len())\n}\n",
            "fn f() -> R {\n    let x = try!{g()};\n    Ok(x)\n}\n",
            "fn f() -> R {\n    route! { GET ~ list };\n    Ok(1)\n}\n",
            "macro_rules! m { ($a:expr ~ $b:expr) => { $a }; }\nfn f() -> R {\n    Ok(1)\n}\n",
        ] {
            assert!(new_errors("m.rs", ok, gap).is_empty(), "{gap}");
        }
        for broken in [
            "fn f() -> R {\n    println!(\"{x});\n    Ok(1)\n}\n",
            "fn f() -> R {\n    m!(a ] b);\n    Ok(1)\n}\n",
            "fn f() -> R {\n    m!(a \\ b);\n    Ok(1)\n}\n",
            "fn f() -> R {\n    m!(a \u{201c}b\u{201d});\n    Ok(1)\n}\n",
            "fn f() -> R {\n    let x = try!(g();\n    Ok(x)\n}\n",
        ] {
            assert!(!new_errors("m.rs", ok, broken).is_empty(), "{broken}");
        }
    }

    /// Found by applying real crates' files as created files (the replays
    /// of ripgrep, insta and click had none): a foreign type in an `extern`
    /// block, as every `#[wasm_bindgen] extern "C"` block declares them
    /// (js-sys), is rustc's syntax and the grammar's gap; a broken item next
    /// to it is still the edit's.
    #[test]
    fn a_foreign_type_is_a_grammar_gap() {
        let ok = "#[wasm_bindgen]\nextern \"C\" {\n    fn f();\n}\n";
        for gap in [
            "    pub type Array<T = JsValue>;\n",
            "    #[wasm_bindgen(extends = Object)]\n    pub type ArrayTuple<T: JsTuple = (JsValue,)>;\n",
            "    pub(crate) type Opaque;\n",
            "    pub type Instant;\n\n    /// Doc.\n    #[wasm_bindgen(constructor, catch)]\n    pub fn new(n: &BigInt) -> Result<Instant, RangeError>;\n",
            "    /// Doc.\n    #[wasm_bindgen(js_namespace = Temporal, extends = Object)]\n    #[derive(Clone, Debug)]\n    pub type Instant;\n\n    /// Doc.\n    #[wasm_bindgen(constructor, js_namespace = Temporal, catch)]\n    pub fn new(n: &BigInt) -> Result<Instant, RangeError>;\n",
            "    pub type Instant;\n    fn now();\n",
            "    pub type Function<\n        T: JsFunction = fn(\n            JsValue,\n        ) -> JsValue,\n    >;\n",
        ] {
            let new = ok.replace("    fn f();\n", &format!("    fn f();\n{gap}"));
            assert_eq!(new_errors("lib.rs", ok, &new), Vec::new(), "{new}");
            assert_eq!(new_errors("lib.rs", "", &new), Vec::new(), "{new}");
        }
        for broken in [
            "    pub type Array<T = JsValue>;\n    pub fn g(;\n",
            "    pub type = Array;\n",
            "    pub type Instant\n    pub fn new(n: &BigInt) -> Result<Instant, RangeError>;\n",
        ] {
            let new = ok.replace("    fn f();\n", &format!("    fn f();\n{broken}"));
            assert!(!new_errors("lib.rs", ok, &new).is_empty(), "{new}");
        }
        // Outside an `extern` block a bodiless `pub type` is no gap.
        assert!(!new_errors("lib.rs", "", "fn f() {\n    pub type X;\n}\n").is_empty());
    }

    /// Found in syn (src/error.rs): a unit struct with a `where` clause,
    /// `struct S where T: Send;`, which the grammar cannot read.
    #[test]
    fn a_unit_struct_with_a_where_clause_is_a_grammar_gap() {
        let ok = "struct A;\n";
        let new = "struct A;\n\n#[cfg(test)]\nstruct _Test\nwhere\n    Error: Send + Sync;\n";
        assert_eq!(new_errors("lib.rs", ok, new), Vec::new());
        assert_eq!(new_errors("lib.rs", "", new), Vec::new());
        for broken in [
            "struct A;\nstruct B\nwhere\n    Error: Send +;\n",
            "struct A;\nstruct B\nwhere\n    Error: Send\n",
        ] {
            assert!(!new_errors("lib.rs", ok, broken).is_empty(), "{broken}");
        }
    }

    /// Found in portable-atomic, quinn-proto and proc-macro2: an attribute
    /// on a field of a struct pattern (`let S { a, #[cfg(test)] b } = s;`),
    /// which the grammar cannot read; its errors go when the attributes in
    /// the broken part of the tree are blanked. A real error in the same
    /// pattern is still the edit's.
    #[test]
    fn an_attribute_on_a_pattern_field_is_a_grammar_gap() {
        let ok =
            "fn f(s: S) -> u64 {\n    let S {\n        a,\n        c,\n    } = s;\n    a + c\n}\n";
        let cfg = ok.replace(
            "        a,\n",
            "        a,\n        #[cfg(test)]\n        b,\n",
        );
        assert_eq!(new_errors("lib.rs", ok, &cfg), Vec::new(), "{cfg}");
        assert_eq!(new_errors("lib.rs", "", &cfg), Vec::new(), "{cfg}");
        // The same on an element of a tuple expression (zerovec).
        let tuple = "fn f(s: S) -> (u8, u8) {\n    (\n        s.a,\n        s.b,\n    )\n}\n";
        let tagged = tuple.replace(
            "        s.b,\n",
            "        #[expect(clippy::unwrap_used)]\n        s.b,\n",
        );
        assert_eq!(new_errors("lib.rs", tuple, &tagged), Vec::new(), "{tagged}");
        let arm = "fn p(t: T) {\n    match t {\n        T::L(L {\n            #[cfg(w)]\n                inner: F(l),\n            ..\n        }) if l.neg() => {\n            push(l);\n        }\n        _ => {}\n    }\n}\n";
        assert_eq!(new_errors("lib.rs", "", arm), Vec::new(), "{arm}");
        for broken in [
            cfg.replace("        b,\n", "        b,,\n"),
            cfg.replace("    } = s;\n", "    } = s\n"),
            cfg.replace("#[cfg(test)]", "#[cfg(test]"),
        ] {
            assert!(!new_errors("lib.rs", ok, &broken).is_empty(), "{broken}");
        }
    }

    /// Found in zerovec, portable-atomic and quinn-proto: an attribute the
    /// grammar does not read as one at all (on a tuple element after the
    /// first: `#` and an array) is an ERROR that is exactly `#[…]`, blanked
    /// like the others; a real error beside it is still the edit's.
    #[test]
    fn attributes_behind_attributes_are_blanked_too() {
        let pair = "fn f(k: K, idx: usize) -> (u8, u8) {\n    (\n        #[expect(clippy::unwrap_used)] // idx in range\n        k.keys.get(idx).unwrap(),\n        #[expect(clippy::unwrap_used)] // idx in 0..len = values.len()\n        k.values.get(idx).unwrap(),\n    )\n}\n";
        assert_eq!(new_errors("lib.rs", "", pair), Vec::new(), "{pair}");
        let split = "fn f(s: &S) -> Option<(u8, &S)> {\n    if let Some(first) = s.first() {\n        return Some((\n            first,\n            // `unwrap()` must succeed.\n            #[expect(clippy::unwrap_used)]\n            s.sub(1..s.len()).unwrap(),\n        ));\n    }\n    None\n}\n";
        assert_eq!(new_errors("lib.rs", "", split), Vec::new(), "{split}");
        let detect = "#[cold]\n#[must_use]\nfn _detect(mut info: CpuInfo) -> CpuInfo {\n    let AA64Reg {\n        aa64isar0,\n        aa64isar1,\n        #[cfg(test)]\n        aa64isar3,\n        aa64mmfr2,\n    } = imp::aa64reg();\n\n    // Atomic, bits [23:20]\n    if extract(aa64isar0, 23, 20) >= 0b0010 {\n        info.set(CpuInfo::HAS_LSE);\n    }\n    info\n}\n";
        assert_eq!(new_errors("lib.rs", "", detect), Vec::new(), "{detect}");
        let broken = pair.replace("k.values.get(idx).unwrap(),", "k.values.get(idx).unwrap(,");
        assert!(!new_errors("lib.rs", "", &broken).is_empty(), "{broken}");
    }

    /// Found in pip (`_internal/req/req_file.py`): a comment that ends in
    /// a backslash (`# last line contains \`) continues nothing, so the
    /// indented line after it is no continuation line; a real `\` at the
    /// end of code still continues.
    #[test]
    fn a_comment_ending_in_a_backslash_continues_nothing() {
        let ok = "def f(lines):\n    for line in lines:\n        yield line\n";
        let new = "def f(lines):\n    for line in lines:\n        yield line\n\n    # last line contains \\\n    if lines:\n        yield lines[-1]\n";
        assert_eq!(new_errors("a.py", ok, new), Vec::new(), "{new}");
        assert_eq!(new_errors("a.py", "", new), Vec::new(), "{new}");
        let broken = new.replace("    if lines:\n        yield", "    if lines:\n    yield");
        assert!(!new_errors("a.py", ok, &broken).is_empty(), "{broken}");
        // Code ending in `\` continues onto the next line, at any indentation.
        let continued = "x = 1 + \\\n        2\n";
        assert_eq!(new_errors("a.py", "", continued), Vec::new(), "{continued}");
    }

    /// Found by `the_fast_path_agrees_on_adversarial_python` (its seed is in
    /// proptest-regressions/syntax/mod.txt): a one-quote string continued by
    /// a `\` at its line's end goes on on the next line, where `'''` closes
    /// it and opens an empty string, not a triple-quoted one; the indented
    /// lines of a later `'''` string were then read as code.
    #[test]
    fn a_one_quote_string_goes_on_after_a_backslash_at_its_end() {
        let ok = "class A:\n    x = 1\n    def b(self):\n        s = '''\n  z = 3\n'''\n        return s\n";
        let new = ok.replace("    x = 1\n", "    s = 'a\\\n    '''\n");
        assert_eq!(new_errors("a.py", ok, &new), Vec::new(), "{new}");
        assert_eq!(new_errors("a.py", "", &new), Vec::new(), "{new}");
        // Escapes still count: `\\` at the end escapes the backslash, so
        // the string ends unclosed there (the tokenizer's error).
        let broken = ok.replace("    x = 1\n", "    s = 'a\\\\\n    '''\n");
        assert!(!new_errors("a.py", ok, &broken).is_empty(), "{broken}");
    }

    /// Found in winnow's tests: snapbox's `str![…]` macro, which the
    /// grammar reads as the type `str` followed by a stray `!`.
    #[test]
    fn a_macro_named_like_a_primitive_type_is_a_grammar_gap() {
        let ok = "#[test]\nfn t() {\n    let input = 1;\n    check(input);\n}\n";
        for gap in [
            "    let expected = str![\"0000\"];\n",
            "    let expected = str![[r#\"\"abc\"\"#]];\n",
        ] {
            let new = ok.replace("    check(input);\n", &format!("{gap}    check(input);\n"));
            assert_eq!(new_errors("t.rs", ok, &new), Vec::new(), "{new}");
        }
        for broken in [
            "    let expected = str![\"0000\";\n",
            "    let expected = strr![\"0000\"]\n",
        ] {
            let new = ok.replace(
                "    check(input);\n",
                &format!("{broken}    check(input);\n"),
            );
            assert!(!new_errors("t.rs", ok, &new).is_empty(), "{new}");
        }
    }

    /// Found in zerocopy-derive: a binding to a parenthesized pattern
    /// (`raw @ (U8 | U16) => …`), which the grammar cannot read.
    #[test]
    fn a_binding_to_a_parenthesized_pattern_is_a_grammar_gap() {
        let ok = "fn c(raw: R) -> u8 {\n    match raw {\n        R::C => 0,\n        _ => 2,\n    }\n}\n";
        let new = ok.replace(
            "        _ => 2,\n",
            "        raw @ (U8 | U16) => raw.n(),\n        _ => 2,\n",
        );
        assert_eq!(new_errors("lib.rs", ok, &new), Vec::new(), "{new}");
        for broken in [
            ok.replace(
                "        _ => 2,\n",
                "        raw @ (U8 | U16 => raw.n(),\n        _ => 2,\n",
            ),
            ok.replace(
                "        _ => 2,\n",
                "        raw @ => raw.n(),\n        _ => 2,\n",
            ),
        ] {
            assert!(!new_errors("lib.rs", ok, &broken).is_empty(), "{broken}");
        }
    }

    /// Found in typenum and zerocopy: the unit type as the bounded type of a
    /// `where` predicate (`(): Trait<…>,`), which the grammar reads as a
    /// tuple type missing its element.
    #[test]
    fn a_unit_type_in_a_where_clause_is_a_grammar_gap() {
        let ok = "impl<U> Div<U> for UInt\nwhere\n    U: Len,\n{\n}\n";
        let new = ok.replace("    U: Len,\n", "    U: Len,\n    (): PrivateDiv<U>,\n");
        assert_eq!(new_errors("lib.rs", ok, &new), Vec::new(), "{new}");
        for broken in [
            ok.replace("    U: Len,\n", "    U: Len,\n    (: PrivateDiv<U>,\n"),
            ok.replace("    U: Len,\n", "    U: Len,\n    (,): PrivateDiv<U>,\n"),
        ] {
            assert!(!new_errors("lib.rs", ok, &broken).is_empty(), "{broken}");
        }
    }

    /// A construct the grammar cannot read (Rust 2024 `safe fn`) is the
    /// grammar's in the edited file when it already was in the original,
    /// even on an edited line; a new construct of another kind still counts.
    #[test]
    fn an_error_the_original_had_is_matched_by_its_code() {
        let old = "unsafe extern \"C\" {\n    safe fn abs(x: i32) -> i32;\n}\n";
        let kept = old.replace("abs(x: i32)", "abs(value: i32)");
        assert!(new_errors("m.rs", old, &kept).is_empty());
        let broken = old.replace(
            "abs(x: i32) -> i32;",
            "abs(x: i32) -> i32;\n    let y = = 2;",
        );
        assert!(!new_errors("m.rs", old, &broken).is_empty());
    }

    /// `base` with `edits` (a line, a pick from `pool`, insert or replace)
    /// made: the fast path says "clean" only when the whole files agree.
    fn fast_agrees(
        path: &str,
        base: &str,
        pool: &[&str],
        edits: &[(usize, usize, bool)],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let mut lines: Vec<String> = base.lines().map(str::to_owned).collect();
        for &(at, pick, insert) in edits {
            let at = at % lines.len();
            let new = pool[pick % pool.len()].to_owned();
            if insert {
                lines.insert(at, new)
            } else {
                lines[at] = new
            }
        }
        let after = Document::from_text(&(lines.join("\n") + "\n"));
        fast_agrees_on(path, &Document::from_text(base), &after)
    }

    /// The fast path says "clean" of `before` → `after` only when the whole
    /// files agree.
    fn fast_agrees_on(
        path: &str,
        before: &Document,
        after: &Document,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let fast = check_with(path, Some(before), after, true);
        let full = check_with(path, Some(before), after, false);
        let clean = |v: &Verdict| matches!(v, Verdict::Checked(i) if i.is_empty());
        proptest::prop_assert!(
            !clean(&fast) || clean(&full),
            "fast path passed a breakage:\n{}\n{:?}",
            after.text(),
            full
        );
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The fast path says "clean" only when the whole files agree.
        #[test]
        fn the_fast_path_agrees_with_the_whole_files(
            rust in proptest::bool::ANY,
            edits in proptest::collection::vec((0usize..40, 0usize..16, proptest::bool::ANY), 1..4),
        ) {
            let (path, base, pool): (&str, &str, &[&str]) = if rust {
                ("m.rs", RS_BASE, RS_POOL)
            } else {
                ("a.py", PY_BASE, PY_POOL)
            };
            fast_agrees(path, base, pool, &edits)?;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The fast path (its new slices parsed incrementally) says "clean"
        /// only when the whole files agree, on a file of methods, fields,
        /// code in raw strings and comments, and a test module.
        #[test]
        fn the_fast_path_agrees_on_nested_items(
            edits in proptest::collection::vec((0usize..60, 0usize..24, proptest::bool::ANY), 1..4),
        ) {
            fast_agrees("m.rs", RS_NESTED, RS_NESTED_POOL, &edits)?;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The fast path says "clean" only when the whole files agree, on
        /// macro invocations' tokens (Rust inside `proptest!`, a DSL with
        /// tokens no Rust rule takes inside `html!`, `macro_rules!`).
        #[test]
        fn the_fast_path_agrees_on_macro_tokens(
            edits in proptest::collection::vec((0usize..40, 0usize..26, proptest::bool::ANY), 1..4),
        ) {
            fast_agrees("m.rs", RS_MACROS, RS_MACROS_POOL, &edits)?;
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The fast path says "clean" only when the whole files agree, on a
        /// Python module of docstrings, decorated methods, nested blocks and
        /// clauses, where slices start at a change (a block's first
        /// statement, a sibling's) or at the top level.
        #[test]
        fn the_fast_path_agrees_on_python_blocks(
            edits in proptest::collection::vec((0usize..40, 0usize..24, proptest::bool::ANY), 1..4),
        ) {
            fast_agrees("a.py", PY_BLOCKS, PY_BLOCKS_POOL, &edits)?;
        }
    }

    const PY_BLOCKS: &str = "\"\"\"Module.\n\nUsage: run\n\"\"\"\n\nimport os\n\n\nclass A:\n    \"\"\"Doc.\"\"\"\n\n    x = 1\n\n    @property\n    def a(self):\n        \"\"\"Get.\"\"\"\n        try:\n            return self.x\n        except KeyError:\n            pass\n        return None\n\n    def b(self, y):\n        if y:\n            return [\n                y,\n            ]\n        else:\n            return y\n\n\n@dec\ndef f():\n    return 1\n\n\nX = f()\n";
    const PY_BLOCKS_POOL: &[&str] = &[
        "",
        "X = 2",
        "    y = 2",
        "        z = 3",
        "            w = 4",
        "def g():",
        "    def h(self):",
        "        \"\"\"Doc.\"\"\"",
        "    \"\"\"",
        "\"\"\"",
        "        return (1",
        "    )",
        "else:",
        "        else:",
        "    elif x:",
        "        except ValueError:",
        "        try:",
        "@dec",
        "    @dec",
        "]",
        "class C:",
        "    pass",
        "        pass",
        "# note",
    ];

    /// An edit inside a method: a breakage there is found, and a clean one
    /// passes.
    #[test]
    fn an_edit_inside_a_method_is_checked() {
        let ok = RS_NESTED.replace("self.x + 1", "self.x + 2");
        assert!(new_errors("m.rs", RS_NESTED, &ok).is_empty());
        let broken = RS_NESTED.replace("self.x + 1", "self.x + ");
        assert!(!new_errors("m.rs", RS_NESTED, &broken).is_empty());
    }

    const RS_NESTED: &str = "use std::fmt;\n\npub struct A {\n    pub x: u32,\n    #[allow(dead_code)]\n    y: u32,\n}\n\nimpl A {\n    /// Doc.\n    pub fn a(&self) -> u32 {\n        self.x + 1\n    }\n\n    fn b(&self) -> String {\n        let s = r#\"\n    fn fake() {\n    let y = ;\n\"#;\n        s.to_owned()\n    }\n\n    /*\n    let z = 3;\n    fn old() {}\n    */\n    const C: u32 = 3;\n}\n\nfn free() -> u32 {\n    let v = vec![\n        1,\n    ];\n    if v.is_empty() {\n        0\n    } else {\n        1\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn t() {\n        assert_eq!(free(), 1);\n    }\n}\n";
    const RS_NESTED_POOL: &[&str] = &[
        "",
        "}",
        "    }",
        "{",
        "    fn c(&self) {}",
        "    pub fn d() -> u32 {",
        "        let y = 2;",
        "    let z = (3;",
        "    /*",
        "    */",
        "*/",
        "        r#\"",
        "\"#;",
        "    \"#;",
        "    where",
        "    #[test]",
        "    impl B {",
        "    x: u32,",
        "    ]",
        "    // c",
        "    let w = 1;",
        "        0",
        "    } else {",
        "    const D: u8 = 1;",
    ];

    const RS_MACROS: &str = "use proptest::prelude::*;\n\nproptest! {\n    #[test]\n    fn a(x in 0u32..10) {\n        prop_assert!(x < 10);\n    }\n}\n\nfn view() -> Html {\n    let v = html! {\n        <div class=\"x\">\n            { count ~ 1 }\n        </div>\n    };\n    v\n}\n\nmacro_rules! twice {\n    ($e:expr) => {\n        $e; $e\n    };\n}\n\nthread_local! {\n    static X: u32 = 1;\n}\n";
    const RS_MACROS_POOL: &[&str] = &[
        "",
        "}",
        "    }",
        "{",
        "    #[test]",
        "    fn c(y in 0..3) {",
        "        prop_assert!(y < 3);",
        "        let z = (3;",
        "    ~ ~",
        "        <p>",
        "    \"open",
        "    r#\"",
        "\"#;",
        "    /*",
        "*/",
        "    ]",
        "    $x:expr,",
        "    'a",
        "    static Y: u8 = 2;",
        "quote! {",
        "    let w = 1;",
        "        0",
        "    // c",
        "    ( ]",
        "    m! {",
        "    };",
    ];

    const PY_BASE: &str = "import os\n\n\nclass A:\n    x = 1\n\n    def a(self, y):\n        if y:\n            return [\n                y,\n            ]\n        return None\n\n\n@staticmethod\ndef b():\n    s = \"\"\"doc\nstring\n\"\"\"\n    return s\n\n\nif __name__ == \"__main__\":\n    b()\nelse:\n    pass\n";
    const PY_POOL: &[&str] = &[
        "",
        "x = 1",
        "    y = 2",
        "        z = 3",
        "def f():",
        "    def g(self):",
        "return (1",
        "    )",
        "\"\"\"",
        "    '''",
        "else:",
        "    elif x:",
        "@dec",
        "]",
        "class C:",
        "    pass",
    ];
    const RS_BASE: &str = "use std::fmt;\n\n/// Doc.\n#[derive(Debug)]\npub struct A {\n    x: u32,\n}\n\nimpl A\nwhere\n    Self: Sized,\n{\n    fn a(&self) -> u32 {\n        let s = r#\"raw\nfn fake() {\n\"#;\n        self.x\n    }\n}\n\nfn b() {\n    let v = vec![\n        1,\n    ];\n}\n";
    const RS_POOL: &[&str] = &[
        "",
        "}",
        "{",
        "fn c() {}",
        "    let y = 2;",
        "    let z = (3;",
        "/*",
        "*/",
        "r#\"",
        "\"#;",
        "where",
        "#[test]",
        "impl B {",
        "    x: u32,",
        "]",
        "// c",
    ];

    /// The slices the nested fast path parsed for an edit (`None`: it did
    /// not settle the edit).
    fn fast_slices(
        path: &str,
        before: &str,
        after: &str,
    ) -> Option<Vec<(Range<usize>, Range<usize>)>> {
        let grammar = grammar(path)?;
        let mut parser = Parser::new();
        parser.set_language(grammar.language).ok()?;
        let (before, after) = (Document::from_text(before), Document::from_text(after));
        let runs = splice::doc_line_diff(&before, &after);
        match nested(grammar, &mut parser, &before, &after, &runs, &[]) {
            Fast::Clean(v) => Some(v),
            _ => None,
        }
    }

    const RS_IMPL: &str = "pub struct S {\n    x: u32,\n}\n\nimpl S {\n    pub fn a(&self) -> u32 {\n        self.x\n    }\n\n    pub fn b(&self) -> u32 {\n        let y = self.x + 1;\n        let z = y * 2;\n        z + 1\n    }\n\n    pub fn c(&self) -> u32 {\n        3\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn one() {\n        let s = S { x: 1 };\n        assert_eq!(s.a(), 1);\n    }\n\n    #[test]\n    fn two() {\n        let s = S { x: 2 };\n        assert_eq!(s.b(), 7);\n    }\n}\n";

    /// An edit inside a method of an impl, or inside a test function of
    /// `mod tests`, is settled by parsing a few of that function's
    /// statements (lines 10..13 are `fn b`'s body, 32..34 `fn two`'s), and
    /// a change to a method's signature by parsing that method (lines
    /// 9..15: `fn b` and the blank line after it): never the whole impl or
    /// test module.
    #[test]
    fn the_slice_parsed_is_the_method_not_the_impl() {
        let edit = |from: &str, to: &str| {
            assert_eq!(RS_IMPL.matches(from).count(), 1, "{from}");
            fast_slices("m.rs", RS_IMPL, &RS_IMPL.replace(from, to))
        };
        assert_eq!(edit("y * 2", "y * 3"), Some(vec![(11..12, 11..12)]));
        assert_eq!(edit("z + 1", "z + 2"), Some(vec![(12..13, 12..13)]));
        assert_eq!(
            edit(
                "        let z = y * 2;\n",
                "        let z = y * 2;\n        let w = z;\n"
            ),
            Some(vec![(12..12, 12..13)])
        );
        assert_eq!(
            edit("S { x: 2 }", "S { x: 3 }"),
            Some(vec![(32..33, 32..33)])
        );
        assert_eq!(
            edit("pub fn b(&self) -> u32", "pub fn b(&self, k: u32) -> u32"),
            Some(vec![(9..15, 9..15)])
        );
        // Two changes in two methods: two slices.
        let two = RS_IMPL
            .replace("y * 2", "y * 4")
            .replace("        3\n", "        4\n");
        assert_eq!(
            fast_slices("m.rs", RS_IMPL, &two),
            Some(vec![(11..12, 11..12), (16..17, 16..17)])
        );
    }

    const RS_PROPTEST: &str = "use proptest::prelude::*;\n\nfn helper() -> u32 {\n    1\n}\n\nproptest! {\n    #[test]\n    fn a(x in 0u32..10) {\n        prop_assert!(x < 10);\n    }\n\n    #[test]\n    fn b(y in 0u32..10) {\n        prop_assert!(y < 10);\n    }\n}\n";

    /// A change among a macro invocation's tokens (a new test in
    /// `proptest! {`, lines 7..16) is settled by parsing the lines it
    /// changed as tokens, not the whole invocation (before: the top-level
    /// item, 11 ms for the 280-line `proptest!` of `tests/integration/props.rs`);
    /// a change that breaks the tokens is still refused.
    #[test]
    fn a_change_among_macro_tokens_is_settled_by_its_lines() {
        let new_test =
            "    #[test]\n    fn c(z in 0u32..3) {\n        prop_assert!(z < 3);\n    }\n\n";
        let at = RS_PROPTEST.find("    #[test]\n    fn b").unwrap();
        let mut added = RS_PROPTEST.to_owned();
        added.insert_str(at, new_test);
        assert_eq!(
            fast_slices("m.rs", RS_PROPTEST, &added),
            Some(vec![(13..13, 13..18)])
        );
        // Tokens no Rust rule takes are fine in a macro; an unclosed
        // bracket is not.
        let edit = |from: &str, to: &str| {
            assert_eq!(RS_PROPTEST.matches(from).count(), 1, "{from}");
            RS_PROPTEST.replace(from, to)
        };
        let dsl = edit(
            "    #[test]\n    fn b",
            "    x ~ y;\n\n    #[test]\n    fn b",
        );
        assert_eq!(
            fast_slices("m.rs", RS_PROPTEST, &dsl),
            Some(vec![(12..12, 12..14)])
        );
        assert_eq!(new_errors("m.rs", RS_PROPTEST, &dsl), Vec::new());
        let broken = edit(
            "    #[test]\n    fn b",
            "    x ~ (y;\n\n    #[test]\n    fn b",
        );
        assert!(!new_errors("m.rs", RS_PROPTEST, &broken).is_empty());
        // `macro_rules!` is no token tree of one rule: not sliced so.
        assert!(!slice::macro_header("macro_rules! m {"));
        assert!(slice::macro_header("let q = quote::quote! {"));
        assert!(!slice::macro_header("if x != {"));
        assert!(!slice::macro_header("let s = \"m! {\";"));
    }

    const PY_MODULE: &str = "#!/usr/bin/env python3\n\"\"\"Tool.\n\nUsage:\nrun it\n\"\"\"\n\nimport os\n\nX = 1\n\n\n@dec\ndef f():\n    return X\n\n\nif X:\n    f()\nelse:\n    pass\n";

    /// A change at a Python file's top level is settled by the top-level
    /// statements around it, found by the lexical scan: a line inside the
    /// module docstring that looks like a statement (`Usage:`, `run it`) is
    /// no boundary, a decorated `def` starts at its decorator, and a clause
    /// (`else:`) ends nothing. (Before, such a change was settled only by
    /// parsing both whole files: 20 ms on the 45 KB `benches/compare.py`.)
    #[test]
    fn a_python_top_level_change_is_settled_by_its_statement() {
        let edit = |from: &str, to: &str| {
            assert_eq!(PY_MODULE.matches(from).count(), 1, "{from}");
            fast_slices("a.py", PY_MODULE, &PY_MODULE.replace(from, to))
        };
        // In the docstring: the docstring, from its first line to `import`.
        assert_eq!(edit("run it\n", "run it twice\n"), Some(vec![(1..7, 1..7)]));
        // A statement inserted at the top level: from itself to the next
        // (the decorator, not the `def` it decorates).
        assert_eq!(
            edit("X = 1\n", "X = 1\nY = 2\n"),
            Some(vec![(10..12, 10..13)])
        );
        // A decorated `def` changed: from its decorator.
        assert_eq!(
            edit("def f():", "def f(y=1):"),
            Some(vec![(12..17, 12..17)])
        );
        // The `if` of an `if`/`else` at the end: from itself to the end
        // (the `else:` is no boundary).
        assert_eq!(edit("if X:", "if not X:"), Some(vec![(17..21, 17..21)]));
        // Inside the `else:` body: that body, from the change, whose code
        // above ends a block's header.
        assert_eq!(
            edit("    pass\n", "    f()\n"),
            Some(vec![(20..21, 20..21)])
        );
        // A docstring the edit leaves open is not settled here.
        assert_eq!(edit("run it\n\"\"\"\n", "run it\n"), None);
    }

    /// Many scattered one-line changes in a large file (16 in 8,000 lines:
    /// the line diff's middle is past its bound) are settled by one small
    /// slice each, not by parsing the region between the first and the last
    /// change as one.
    #[test]
    fn scattered_changes_in_a_large_file_are_settled_one_by_one() {
        let before: String = (0..1000)
            .map(|i| format!("fn f{i}() -> u32 {{\n    let a = {i};\n    let b = a + 1;\n    b\n}}\n\n// {i}\n\n"))
            .collect();
        let after = (0..16).fold(before.clone(), |text, k| {
            let i = 30 + 60 * k;
            text.replace(&format!("let a = {i};"), &format!("let a = {i} * 2;"))
        });
        let slices = fast_slices("m.rs", &before, &after);
        let Some(slices) = slices else {
            panic!("the nested slices did not settle the edit");
        };
        assert_eq!(slices.len(), 16, "{slices:?}");
        assert!(
            slices.iter().all(|(o, n)| o.len() <= 3 && n.len() <= 3),
            "{slices:?}"
        );
    }

    const PY_CLASS: &str = "class A:\n    class B:\n        def m(self, x):\n            y = x + 1\n            if y:\n                return y\n            return 0\n\n    def n(self):\n        return 2\n";

    /// Python: the statements around the change at their indentation,
    /// in a `def` wrapper; a new block opener takes its compound statement.
    #[test]
    fn the_python_slice_is_the_innermost_statements() {
        let edit = |from: &str, to: &str| {
            assert_eq!(PY_CLASS.matches(from).count(), 1, "{from}");
            fast_slices("a.py", PY_CLASS, &PY_CLASS.replace(from, to))
        };
        // The first statement of a body: from itself, as the code above it
        // ends the `def`'s header, to the next statement.
        assert_eq!(edit("x + 1", "x + 2"), Some(vec![(3..4, 3..4)]));
        // A statement added first in the body: with the statement after it.
        assert_eq!(
            edit("x):\n", "x):\n            z = 0\n"),
            Some(vec![(3..4, 3..5)])
        );
        // Indented deeper than the body: not placed here, and the method
        // is broken after (only the whole files can tell).
        assert_eq!(edit("x):\n", "x):\n                z = 0\n"), None);
        assert_eq!(edit("return y", "return -y"), Some(vec![(5..6, 5..6)]));
        assert_eq!(edit("return 2", "return 3"), Some(vec![(9..10, 9..10)]));
        // A method's signature, after the end of a sibling's body: from
        // itself, not from the sibling.
        assert_eq!(
            edit("def n(self):", "def n(self, k):"),
            Some(vec![(8..10, 8..10)])
        );
        // Dedenting out of the method is not a statement at its level.
        assert_eq!(edit("            return 0", "return 0"), None);
    }

    /// Breakages that a slice parsed in the wrong context would let through:
    /// an expression statement among items, a string or comment opened or
    /// closed at a slice's edge, a clause cut from its statement.
    #[test]
    fn the_nested_slices_miss_nothing() {
        for (from, to) in [
            (
                "    pub fn c(&self) -> u32 {\n",
                "    c();\n    pub fn c(&self) -> u32 {\n",
            ),
            ("        let z = y * 2;\n", "        let z = y * 2\n"),
            ("        let z = y * 2;\n", "        let z = \"y * 2;\n"),
            ("        let z = y * 2;\n", "        let z = y * 2; /*\n"),
            ("        let z = y * 2;\n", "        let z = r#\"y * 2;\n"),
            ("        z + 1\n", "        z + 1;\n        }\n"),
            (
                "        let s = S { x: 2 };\n",
                "        let s = S { x: 2 };\n    fn three() {\n",
            ),
        ] {
            assert_eq!(RS_IMPL.matches(from).count(), 1, "{from}");
            let after = RS_IMPL.replace(from, to);
            assert!(!new_errors("m.rs", RS_IMPL, &after).is_empty(), "{after}");
        }
        for (from, to) in [
            (
                "            y = x + 1\n",
                "            y = x + 1\n          z = 2\n",
            ),
            ("            y = x + 1\n", "            y = '''x + 1\n"),
            (
                "            y = x + 1\n",
                "            else:\n                y = x + 1\n",
            ),
            ("            if y:\n", "            z = 1\n"),
            (
                "    def n(self):\n",
                "    @decorator\n    def n(self):\n        pass\n    x = 1\n",
            ),
            // Found by the properties: a wrapper that is an `if` gave a stray
            // `elif` a partner (its seed, and that of an `else` deeper than
            // its `if`, are in proptest-regressions/syntax/mod.txt).
            (
                "\n    def n(self):\n",
                "\n    elif x:\n        pass\n    def n(self):\n",
            ),
        ] {
            assert_eq!(PY_CLASS.matches(from).count(), 1, "{from}");
            let after = PY_CLASS.replace(from, to);
            assert!(!new_errors("a.py", PY_CLASS, &after).is_empty(), "{after}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// The fast path says "clean" only when the whole files agree, on
        /// code that is hard to slice: strings and raw strings whose lines
        /// look like code, nested block comments, character literals that
        /// are brackets, impl/trait/mod/extern nesting, closures, match arms.
        #[test]
        fn the_fast_path_agrees_on_adversarial_rust(
            edits in proptest::collection::vec((0usize..80, 0usize..64, proptest::bool::ANY), 1..4),
        ) {
            fast_agrees("m.rs", RS_DEEP, RS_DEEP_POOL, &edits)?;
        }

        /// The same for Python: nested classes, decorators, triple-quoted
        /// strings with unindented lines, line continuations, brackets over
        /// several lines, clauses.
        #[test]
        fn the_fast_path_agrees_on_adversarial_python(
            edits in proptest::collection::vec((0usize..60, 0usize..64, proptest::bool::ANY), 1..4),
        ) {
            fast_agrees("a.py", PY_DEEP, PY_DEEP_POOL, &edits)?;
        }
    }

    const RS_DEEP: &str = r###"use std::fmt;

/// Doc with a fake brace {.
pub trait T {
    fn t(&self) -> u32;
    fn d(&self) -> u32 {
        1
    }
}

impl T for A {
    fn t(&self) -> u32 {
        let s = r##"
    }
fn fake() { "#
"##;
        let c = '{';
        let l: &'static str = "}\
            still";
        /* outer /* inner } */
        fn hidden() {
        */
        match self.x {
            0 => 1,
            n if n > 2 => {
                let f = |y: u32| {
                    y + 1
                };
                f(n)
            }
            _ => 2,
        }
    }
}

mod inner {
    pub(crate) mod deeper {
        pub fn g() -> Vec<u8> {
            let v = vec![
                1,
                2,
            ];
            v
        }
    }

    extern "C" {
        fn abs(x: i32) -> i32;
    }
}

fn free(a: u32) -> u32 {
    let b = if a > 1 {
        a
    } else {
        0
    };
    'outer: loop {
        break 'outer b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t() {
        let x = free(1);
        assert_eq!(x, 1);
    }
}
"###;
    const RS_DEEP_POOL: &[&str] = &[
        "",
        "}",
        "{",
        "    }",
        "        }",
        "        let y = 2;",
        "        y();",
        "    w();",
        "    let w = 1;",
        "    fn c(&self) {}",
        "        fn e() {",
        "        r##\"",
        "\"##;",
        "\"#",
        "    \"##;",
        "/*",
        "*/",
        "    /* {",
        "        */",
        "        /* /* */",
        "        let q = '\"';",
        "        let q = '{';",
        "        let q = '\\'';",
        "    'a: loop {",
        "            0 => 3,",
        "            n => {",
        "        let f = |z| {",
        "        };",
        "    } else {",
        "    impl B {",
        "    mod m {",
        "    trait U {",
        "    extern \"C\" {",
        "        \"",
        "        \";",
        "        let s = \"a\\",
        "        ]",
        "        vec![",
        "    where",
        "    #[test]",
        "    const D: u8 = 1;",
        "        let v = match x {",
        "            _ => 1,",
        "        foo()",
        "            .bar();",
        "        x",
        "        let b = b\"{\";",
        "        let r = br#\"}\"#;",
        "    unsafe {",
        "        if a {",
        "        } else if b {",
        "    fn f(",
        "    ) -> u32 {",
        "        1 +",
        "    let S { a } = s;",
        "    S {",
        "        a: 1,",
        "    };",
        "    // }",
        "    /// doc {",
        "    fn t(&self) -> u32 {",
        "    pub fn g() -> Vec<u8> {",
        "            v",
        "    }}",
    ];

    const PY_DEEP: &str = r#"import os


class A:
    """Doc.

unindented line in the docstring
    def fake(self):
"""

    class B:
        x = [
            1,
    2,
        ]

        @staticmethod
        def b(y):
            if y:
                return (y +
                        1)
            elif y is None:
                s = '''
not code: (
'''
                return s
            else:
                t = 1 + \
                    2
                return t

    @property
    def a(self):
        try:
            return self.x
        except KeyError:
            pass
        finally:
            pass


def f(z):
    def g():
        return r"\" ("
    return g
"#;
    const PY_DEEP_POOL: &[&str] = &[
        "",
        "x = 1",
        "    y = 2",
        "        z = 3",
        "            w = 4",
        "                v = 5",
        "def f():",
        "    def g(self):",
        "        def h():",
        "            def i():",
        "return (1",
        "    )",
        "                )",
        "\"\"\"",
        "    '''",
        "'''",
        "                '''",
        "else:",
        "    elif x:",
        "            elif x:",
        "        except E:",
        "            else:",
        "        finally:",
        "@dec",
        "    @dec",
        "        @dec",
        "]",
        "        ]",
        "class C:",
        "    class D:",
        "        pass",
        "            pass",
        "                pass",
        "    s = 'a\\",
        "        t = 1 + \\",
        "            u = (1 +",
        "\\",
        "    #",
        "        # (",
        "        )",
        "    x = [",
        "    if x:",
        "            if x:",
        "            try:",
        "\tx = 1",
        "        s = r\"\\\"\"",
        "        s = f'{x}'",
        "not code",
        "            return (y +",
        "                        1)",
        "                return s",
        "    def a(self):",
        "        x = [",
        "            1,",
    ];

    #[test]
    fn unknown_languages_are_not_checked() {
        assert_eq!(
            check("notes.txt", None, &Document::from_text("(((")),
            Verdict::UnknownLanguage
        );
    }

    /// A file of `n` functions: a `use` list, then free functions of three
    /// statements each, the last one in an `impl`.
    fn many_fns(n: usize) -> String {
        let mut text = "use std::fmt;\nuse std::io::{Read, Write};\n\n".to_owned();
        for i in 0..n {
            text += &format!(
                "/// Function {i}.\npub fn f{i}(x: u32) -> u32 {{\n    let a = x + {i};\n    let b = a * 2;\n    b + 1\n}}\n\n"
            );
        }
        text + "impl S {\n    fn m(&self) -> u32 {\n        let c = 3;\n        c\n    }\n}\n"
    }

    /// `text` with each `(from, to)` replaced once (each `from` occurs once).
    fn edited(text: &str, edits: &[(&str, &str)]) -> String {
        edits.iter().fold(text.to_owned(), |t, (from, to)| {
            assert_eq!(t.matches(from).count(), 1, "{from}");
            t.replacen(from, to, 1)
        })
    }

    /// Twelve clean hunks spread over a 60-function file (a `use` list made
    /// longer, functions inserted between others, statements changed and
    /// added, a doc comment, the `impl`'s method): each is settled by a
    /// small slice of its own (the doc comment by none), never by the
    /// top-level items between the first and the last, nor by the whole
    /// files.
    #[test]
    fn many_clean_hunks_are_settled_one_by_one() {
        let before = many_fns(60);
        let after = edited(
            &before,
            &[
                (
                    "use std::io::{Read, Write};\n",
                    "use std::io::{\n    BufRead, Read, Write,\n};\n",
                ),
                ("let a = x + 3;", "let a = x + 3 * 2;"),
                (
                    "/// Function 8.\n",
                    "fn added() -> u32 {\n    7\n}\n\n/// Function 8.\n",
                ),
                ("let a = x + 12;\n", "let a = x + 12;\n    let z = a - 1;\n"),
                ("/// Function 20.", "/// Function twenty."),
                ("let a = x + 25;\n    let b = a * 2;\n", "let a = x + 25;\n"),
                ("let a = x + 31;", "let a = if x > 1 { x } else { 31 };"),
                (
                    "/// Function 40.\n",
                    "const K: u32 = 4;\n\n/// Function 40.\n",
                ),
                ("let a = x + 44;", "let a = x.wrapping_add(44);"),
                ("pub fn f50(x: u32)", "pub fn f50(x: u32, _y: u32)"),
                ("let a = x + 55;", "let a = x + 56;"),
                ("        let c = 3;", "        let c = 4;"),
            ],
        );
        assert!(new_errors("m.rs", &before, &after).is_empty());
        let Some(slices) = fast_slices("m.rs", &before, &after) else {
            panic!("the slices did not settle the edit");
        };
        // (The doc comment's change moves no token: it needs no slice.)
        assert_eq!(slices.len(), 11, "{slices:?}");
        assert!(
            slices.iter().all(|(o, n)| o.len() <= 7 && n.len() <= 7),
            "{slices:?}"
        );
    }

    /// Many clean hunks and one that breaks the code, first, in the middle
    /// or last, at the top level or in a function: the breakage is found,
    /// on its line, and nothing else is reported.
    #[test]
    fn one_broken_hunk_among_clean_ones_is_found() {
        let before = many_fns(60);
        let clean = [
            ("let a = x + 3;", "let a = x + 3 * 2;"),
            (
                "/// Function 8.\n",
                "fn added() -> u32 {\n    7\n}\n\n/// Function 8.\n",
            ),
            ("let a = x + 31;", "let a = x + 32;"),
            ("let a = x + 55;", "let a = x + 56;"),
        ];
        for (from, to) in [
            ("let a = x + 1;", "let a = x + ;"),
            (
                "let b = a * 2;\n    b + 1\n}\n\n/// Function 21.",
                "let b = a * 2\n    b + 1\n}\n\n/// Function 21.",
            ),
            (
                "/// Function 30.\n",
                "fn broken( -> u32 {\n    7\n}\n\n/// Function 30.\n",
            ),
            ("/// Function 59.\n", "struct Half {\n\n/// Function 59.\n"),
            ("        c\n    }\n", "        c +\n    }\n"),
        ] {
            let mut edits = clean.to_vec();
            edits.push((from, to));
            let after = edited(&before, &edits);
            let issues = new_errors("m.rs", &before, &after);
            assert!(!issues.is_empty(), "{to}");
            // The lines the broken hunk wrote (and the one after them).
            let at = after.find(to).map(|k| after[..k].matches('\n').count());
            let Some(first) = at else {
                panic!("{to}");
            };
            let last = first + to.trim_end().matches('\n').count() + 1;
            assert!(
                issues.iter().all(|i| (first..=last).contains(&i.line)),
                "{to}: {issues:?} (the hunk wrote lines {first}..={last})"
            );
            // Every clean hunk alone passes.
            for e in &clean {
                assert!(new_errors("m.rs", &before, &edited(&before, &[*e])).is_empty());
            }
        }
    }

    /// Two nearby hunks that are each a breakage alone: together they are
    /// one (a bracket, a struct, a function left open by the first and
    /// closed in the wrong place by the second), or valid code (a comment
    /// or a string opened by one and closed by the other, a function's end
    /// moved down past the next one). The guard agrees with the whole files
    /// on every one, and refuses exactly the broken ones.
    #[test]
    fn an_error_spanning_two_nearby_hunks_is_found() {
        let before = many_fns(6);
        let broken: [&[(&str, &str)]; 4] = [
            &[
                ("let a = x + 2;", "let a = (x + 2;"),
                (
                    "    b + 1\n}\n\n/// Function 3.",
                    "    b + 1)\n}\n\n/// Function 3.",
                ),
            ],
            &[
                ("/// Function 2.\n", "struct S {\n/// Function 2.\n"),
                ("/// Function 4.\n", "}\n/// Function 4.\n"),
            ],
            &[
                ("let a = x + 2;", "let a = [x + 2;"),
                (
                    "let b = a * 2;\n    b + 1\n}\n\n/// Function 3.",
                    "let b = a * 2];\n    b + 1\n}\n\n/// Function 3.",
                ),
            ],
            &[
                (
                    "    b + 1\n}\n\n/// Function 2.\n",
                    "    b + 1\n\n/// Function 2.\n",
                ),
                ("let a = x + 3;", "let a = x + 3;\n    }"),
            ],
        ];
        let valid: [&[(&str, &str)]; 3] = [
            &[
                ("let a = x + 2;", "let a = x + 2; /*"),
                (
                    "    b + 1\n}\n\n/// Function 3.",
                    "    */ b + 1\n}\n\n/// Function 3.",
                ),
            ],
            &[
                ("let a = x + 2;", "let a = \"x + 2;"),
                (
                    "let b = a * 2;\n    b + 1\n}\n\n/// Function 3.",
                    "let b = a * 2\";\n    b + 1\n}\n\n/// Function 3.",
                ),
            ],
            &[
                (
                    "    b + 1\n}\n\n/// Function 2.\n",
                    "    b + 1;\n\n/// Function 2.\n",
                ),
                (
                    "    b + 1\n}\n\n/// Function 3.\n",
                    "    b + 1\n}\n}\n\n/// Function 3.\n",
                ),
            ],
        ];
        for (edits, refused) in broken
            .iter()
            .map(|e| (e, true))
            .chain(valid.iter().map(|e| (e, false)))
        {
            let after = edited(&before, edits);
            let (b, a) = (Document::from_text(&before), Document::from_text(&after));
            let fast = check_with("m.rs", Some(&b), &a, true);
            let full = check_with("m.rs", Some(&b), &a, false);
            assert_eq!(fast, full, "{after}");
            assert_eq!(fast != Verdict::Checked(Vec::new()), refused, "{after}");
        }
    }

    /// `base` with clean edits (see [`clean_edit`]) at `picks`, then with
    /// `bad` lines of `pool` put in (a line, a pick, insert or replace).
    fn many_edits(
        base: &str,
        picks: &[usize],
        pool: &[&str],
        bad: &[(usize, usize, bool)],
    ) -> String {
        let mut lines: Vec<String> = base.lines().map(str::to_owned).collect();
        let mut at: Vec<(usize, usize)> = picks
            .iter()
            .map(|&p| (p % lines.len(), p / lines.len()))
            .collect();
        at.sort_unstable();
        at.dedup_by_key(|(line, _)| *line);
        for &(line, kind) in at.iter().rev() {
            clean_edit(&mut lines, line, kind);
        }
        for &(line, pick, insert) in bad {
            let line = line % lines.len();
            let new = pool[pick % pool.len()].to_owned();
            if insert {
                lines.insert(line, new);
            } else {
                lines[line] = new;
            }
        }
        lines.join("\n") + "\n"
    }

    /// An edit that keeps Rust code valid wherever it lands (in a string or
    /// a comment it changes only their text): a function inserted before a
    /// line that starts an item at column 0, a statement before a `let`, a
    /// `let`'s value made longer; other lines are left alone.
    fn clean_edit(lines: &mut Vec<String>, i: usize, kind: usize) {
        let line = lines[i].clone();
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let item = ["fn ", "pub ", "impl ", "#[", "mod ", "use ", "const "]
            .iter()
            .any(|p| line.starts_with(p));
        if item {
            lines.insert(i, format!("fn added_{i}() -> u32 {{\n    {kind}\n}}\n"));
        } else if body.starts_with("let ") && body.contains(" = ") && !body.contains('"') {
            if kind.is_multiple_of(2) {
                lines.insert(i, format!("{indent}let added_{i} = {kind};"));
            } else {
                lines[i] = line.replacen(" = ", &format!(" = {kind} + "), 1);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Many hunks over a file of many items (the Rust bases one after
        /// another): clean ones, and none, one or two lines of the
        /// adversarial pool. The fast path, which settles each change on
        /// its own, says "clean" only when the whole files agree.
        #[test]
        fn the_fast_path_agrees_on_many_hunks(
            picks in proptest::collection::vec(0usize..2000, 2..16),
            bad in proptest::collection::vec((0usize..400, 0usize..64, proptest::bool::ANY), 0..3),
        ) {
            let base = [RS_BASE, RS_DEEP, RS_NESTED, RS_IMPL].join("\n");
            let after = Document::from_text(&many_edits(&base, &picks, RS_DEEP_POOL, &bad));
            fast_agrees_on("m.rs", &Document::from_text(&base), &after)?;
        }
    }

    const RS_MATCH: &str = "fn f(x: u32) -> S {\n    let y = match x {\n        0 => S { a: 0 },\n        1 => {\n            S { a: 1 }\n        }\n        2 => S { a: 2 },\n        _ => S { a: 3 },\n    };\n    y\n}\n";

    /// A change among a `match`'s arms is settled by the arms around it
    /// (lines 2..3, the arm `0 => …,`), and an arm whose body is no block
    /// and lost its comma, with another arm after it, is still an error
    /// (a slice of arms ends only after a `,` or at the match's `}`): the
    /// guard agrees with the whole files on each.
    #[test]
    fn match_arms_are_sliced_and_miss_nothing() {
        let edit = |from: &str, to: &str| {
            assert_eq!(RS_MATCH.matches(from).count(), 1, "{from}");
            RS_MATCH.replace(from, to)
        };
        assert_eq!(
            fast_slices("m.rs", RS_MATCH, &edit("S { a: 0 }", "S { a: 10 }")),
            Some(vec![(2..3, 2..3)])
        );
        let (b, clean) = (Document::from_text(RS_MATCH), Verdict::Checked(Vec::new()));
        for (from, to, broken) in [
            ("0 => S { a: 0 },", "0 => S { a: 0 }", true),
            (
                "        1 => {\n            S { a: 1 }\n        }\n",
                "        1 => S { a: 1 }\n",
                true,
            ),
            ("2 => S { a: 2 },", "2 => S { a: 2 }, 3 =>", true),
            ("_ => S { a: 3 },", "_ => S { a: 3 }", false),
            (
                "_ => S { a: 3 },",
                "4 => S { a: 4 },\n        _ => S { a: 3 },",
                false,
            ),
            (
                "        1 => {\n            S { a: 1 }\n        }\n",
                "        1 => {\n            S { a: 1 }\n        },\n",
                false,
            ),
        ] {
            let after = edit(from, to);
            let a = Document::from_text(&after);
            let fast = check_with("m.rs", Some(&b), &a, true);
            assert_eq!(fast, check_with("m.rs", Some(&b), &a, false), "{after}");
            assert_eq!(fast != clean, broken, "{after}");
        }
    }

    /// A change of lines that hold only comments and blanks (a doc comment
    /// rewritten, one added at the end of a block or of the file, an inner
    /// doc comment among items) moves no token: it is settled without a
    /// parse, and the whole files agree with that on each; a comment that
    /// opens and runs on (`/*`) is not such a change.
    #[test]
    fn comment_only_changes_are_settled_without_a_parse() {
        let old = "//! Crate.\n\n/// Doc.\nfn a() -> u32 {\n    // note\n    1\n}\n";
        let edits = [
            ("/// Doc.\n", "/// Doc, longer.\n/// And more.\n"),
            ("    1\n}\n", "    1\n    // trailing\n}\n"),
            ("    1\n}\n", "    1\n}\n/// dangling\n"),
            ("/// Doc.\n", "//! Inner, late.\n/// Doc.\n"),
            ("    // note\n", "    /* note */\n"),
            ("    // note\n", ""),
        ];
        for (from, to) in edits {
            assert_eq!(old.matches(from).count(), 1, "{from}");
            let new = old.replace(from, to);
            assert_eq!(fast_slices("m.rs", old, &new), Some(vec![]), "{new}");
            let (b, a) = (Document::from_text(old), Document::from_text(&new));
            assert_eq!(
                check_with("m.rs", Some(&b), &a, true),
                check_with("m.rs", Some(&b), &a, false),
                "{new}"
            );
        }
        let open = old.replace("    // note\n", "    /* note\n");
        assert_ne!(fast_slices("m.rs", old, &open), Some(vec![]));
        assert!(!new_errors("m.rs", old, &open).is_empty());
    }
}
