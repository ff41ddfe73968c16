//! The syntax guard's nested slices: for one change, the smallest regions
//! around it that can be parsed on their own, innermost first, and the
//! wrapper each is parsed in.
//!
//! Owns the choice of region: a run of Rust statements in a block (parsed in
//! `fn __lancet_probe() {…}`), a run of items in an `impl`/`trait`/`mod`/
//! `extern` block (parsed in `mod __lancet_probe {…}`, whose grammar rule is
//! the same), a run of arms of a `match` (parsed in `match () {…}`), a run
//! of lines of a macro invocation's `{…}` tokens (parsed in
//! `__lancet_probe! {…}`: a token tree takes any balanced run), a run
//! of whole top-level items (parsed as they are), a run of Python statements
//! at one indentation (parsed under
//! `def __lancet_probe():`, their bytes untouched: a wrapper no clause can
//! continue, so an `else` cut from its `if` is an error there too), a run of
//! Python top-level statements (parsed as they are); a Python run may start
//! at the change itself when the change starts a statement in both files
//! (a docstring, a block's new first statement, a changed signature). Does
//! not parse (the caller does: the new slice, and for Python the old one
//! too). Invariant: every boundary is a line outside any string or comment,
//! at the same bracket depth in the old and the new file (from
//! [`super::lex`]), with the same text before it in both files (an end is an
//! unchanged line), and a statement or item boundary in both; a region the
//! rules cannot place is simply not offered.

use std::ops::Range;

use super::lex::{self, LineLex};
use crate::splice::DiffRun;
use crate::text::Document;

/// How a slice is parsed on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wrapper {
    /// Rust statements, inside `fn __lancet_probe() {` … `}`.
    Block,
    /// Rust items of an `impl`/`trait`/`mod`/`extern` block, inside
    /// `mod __lancet_probe {` … `}` (tree-sitter's `declaration_list`).
    Items,
    /// Python statements indented alike, in `def __lancet_probe():` (an
    /// `if True:` would give a stray `elif` at the slice's level a partner).
    Indented,
    /// Top-level items, parsed as they are: a file of their own.
    Bare,
    /// Rust arms of a `match`, inside `fn __lancet_probe() { match () {` …
    /// `} }` (tree-sitter's `match_block`).
    Arms,
    /// Python top-level statements, parsed as they are (a file of their
    /// own); like [`Wrapper::Indented`], guessed from lines, so the old
    /// slice is parsed too.
    Module,
    /// Rust tokens of a macro invocation's `{…}` (`proptest! {`,
    /// `quote! {`, `thread_local! {`), inside `__lancet_probe! {` … `}`
    /// (tree-sitter's `token_tree`: any balanced run of tokens).
    Tokens,
}

impl Wrapper {
    /// The slice's text in its wrapper: one line before it, and for Rust one
    /// line after it.
    pub(super) fn wrap(self, slice: &str) -> String {
        let (head, tail) = match self {
            Wrapper::Block => ("fn __lancet_probe() {\n", "}\n"),
            Wrapper::Items => ("mod __lancet_probe {\n", "}\n"),
            Wrapper::Arms => ("fn __lancet_probe() { match () {\n", "} }\n"),
            Wrapper::Tokens => ("__lancet_probe! {\n", "}\n"),
            Wrapper::Indented => ("def __lancet_probe():\n", ""),
            Wrapper::Bare | Wrapper::Module => return slice.to_owned(),
        };
        let eol = if slice.is_empty() || slice.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        [head, slice, eol, tail].concat()
    }
}

impl Wrapper {
    /// Whether a slice in this wrapper stands on boundaries the lexical scan
    /// proves, in a wrapper of the same grammar rule as where it stands, so
    /// that a new slice that parses clean is clean in its file (the old one
    /// need not be parsed). Rust: a boundary is a line outside strings and
    /// comments, at the block's depth in both files, after code that ended
    /// a statement or item (`;`, `{`, or `}` and a line no expression
    /// continues); a block that a `fn`/`if`/`else`/`while`/`for`/`loop`,
    /// `=`/`=>`/closure or `unsafe`/`async`/`const` header opens is a
    /// `block`, an `impl`/`trait`/`mod`/`extern` one a `declaration_list`,
    /// a `match` one a `match_block` (whose arms a slice takes from after a
    /// `,` to before one, see [`rust`]), a macro invocation's a `token_tree`
    /// (where any line at its depth is a boundary), as in the wrappers; the
    /// top level is a `source_file`. Python's indentation and clauses are guessed from
    /// lines: its slices are still checked by parsing the old one.
    pub(super) fn proven(self) -> bool {
        !matches!(self, Wrapper::Indented | Wrapper::Module)
    }

    /// How many lines the wrapper puts above the slice.
    pub(super) fn lines_above(self) -> usize {
        match self {
            Wrapper::Bare | Wrapper::Module => 0,
            _ => 1,
        }
    }
}

/// A region to parse: old lines, the new lines they became, the wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Slice {
    pub(super) old: Range<usize>,
    pub(super) new: Range<usize>,
    pub(super) wrapper: Wrapper,
}

/// Both files, their lexical tables and the line diff between them.
pub(super) struct Sides<'a> {
    pub(super) before: &'a Document,
    pub(super) after: &'a Document,
    pub(super) old: Vec<LineLex>,
    pub(super) new: Vec<LineLex>,
    pub(super) runs: &'a [DiffRun],
}

impl<'a> Sides<'a> {
    pub(super) fn new(
        before: &'a Document,
        after: &'a Document,
        runs: &'a [DiffRun],
        lexer: lex::Lexer,
    ) -> Option<Sides<'a>> {
        let (old, new) = lex::tables(lexer, before, after, runs);
        // The tables count lines as the documents do (or nothing is offered).
        (old.len() == before.line_count() + 1 && new.len() == after.line_count() + 1).then_some(
            Sides {
                before,
                after,
                old,
                new,
                runs,
            },
        )
    }

    /// The new line of old line `i` if it is unchanged (the end of the file
    /// maps to the end).
    fn to_new(&self, i: usize) -> Option<usize> {
        if i == self.before.line_count() {
            return Some(self.after.line_count());
        }
        let k = self.runs.partition_point(|r| r.old.end <= i);
        let r = self.runs.get(k)?;
        (r.equal && r.old.contains(&i)).then(|| r.new.start + (i - r.old.start))
    }

    /// Whether the change `run` only rewrote lines that hold nothing but
    /// blanks and comments, into such lines: every line, old and new, starts
    /// in code, has no code on it, and the line after it starts in code
    /// again, at the same depth in both files. Such a change leaves every
    /// token where it was (for a grammar whose comments are only skipped
    /// between tokens), so it breaks nothing.
    pub(super) fn only_comments(&self, run: &DiffRun) -> bool {
        let quiet = |lx: &[LineLex], r: &Range<usize>| {
            lx[r.clone()].iter().all(|l| l.code && l.last == 0) && lx[r.end].code
        };
        quiet(&self.old, &run.old)
            && quiet(&self.new, &run.new)
            && self.old[run.old.start].depth == self.new[run.new.start].depth
            && self.old[run.old.end].depth == self.new[run.new.end].depth
    }

    /// The new line where a slice starting at old line `s` starts: the line
    /// before it must be unchanged (so the text before the slice is the same).
    fn start_to_new(&self, s: usize) -> Option<usize> {
        match s {
            0 => Some(0),
            _ => self.to_new(s - 1).map(|n| n + 1),
        }
    }
}

/// The last code byte on lines `floor..below`, scanning up (0: none).
fn prev_code(lx: &[LineLex], below: usize, floor: usize) -> u8 {
    (floor..below)
        .rev()
        .map(|j| lx[j].last)
        .find(|&b| b != 0)
        .unwrap_or(0)
}

/// The first line at or after line `i` that is not blank ("" at the end):
/// what follows a boundary there (blank lines continue nothing).
fn from_line(doc: &Document, i: usize) -> &str {
    (i..doc.line_count())
        .map(|k| doc.line(k))
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// Whether a line starts with `word` as a whole word.
fn starts_word(text: &str, word: &str) -> bool {
    text.strip_prefix(word)
        .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// A Rust line that can start an item (after an item that ended in `}`).
fn item_like(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with(|c: char| c.is_alphabetic() || matches!(c, '#' | '_' | '/'))
        && !["where", "else", "as"].iter().any(|w| starts_word(t, w))
}

/// A Rust line that starts a statement and cannot continue an expression
/// (after a statement that ended in `}`, which may be one without `;`).
fn stmt_like(line: &str) -> bool {
    let t = line.trim_start();
    ["let", "if", "for", "while", "loop", "match", "return"]
        .iter()
        .any(|w| starts_word(t, w))
}

/// What the `{` ending line `o` opens (depth `d` after it), from the header
/// it ends; `None` when the line does not say for sure.
fn classify(doc: &Document, lx: &[LineLex], o: usize, d: i32) -> Option<Wrapper> {
    let text = doc.line(o).trim();
    if !lx[o].code || text.matches('{').count() != 1 || !text.ends_with('{') {
        return None;
    }
    let pre = text[..text.len() - 1].trim_end();
    // A block in expression position: `= {`, `=> {`, `|x| {`, `move {`, ….
    let tail_block = ["=", "=>", "|"].iter().any(|s| pre.ends_with(s))
        || ["move", "loop", "unsafe", "else", "async", "const"]
            .iter()
            .any(|w| {
                pre.strip_suffix(w).is_some_and(|p| {
                    !p.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '\'')
                })
            });
    let base = lx[o].depth;
    let head = if base == d - 1 {
        text
    } else if base >= d && text.starts_with('}') {
        // `} else {`: the header follows the closing braces.
        text.trim_start_matches(|c: char| c == '}' || c.is_whitespace())
    } else if base >= d {
        // A header over several lines (`fn f(\n…\n) -> T {`): its first line.
        let h = (0..o).rev().find(|&j| lx[j].depth < d)?;
        let first = doc.line(h).trim();
        if lx[h].depth != d - 1 || !lx[h].code || first.contains('{') {
            return None;
        }
        first
    } else {
        return tail_block.then_some(Wrapper::Block);
    };
    if match_header(head) {
        return Some(Wrapper::Arms);
    }
    if macro_header(head) {
        return Some(Wrapper::Tokens);
    }
    let (word, foreign, qualified) = first_word(head);
    match word {
        "fn" | "if" | "else" | "while" | "for" | "loop" => Some(Wrapper::Block),
        "impl" | "trait" | "mod" => Some(Wrapper::Items),
        // `unsafe {`, `async {`, `extern "C" {`.
        "" if qualified && head.ends_with('{') && first_word_rest(head) == "{" => {
            Some(if foreign {
                Wrapper::Items
            } else {
                Wrapper::Block
            })
        }
        _ => tail_block.then_some(Wrapper::Block),
    }
}

/// Whether a header is a `match` (`match x {`, `let y = match x {`,
/// `A => match x {`, `return match x {`), on a line without a string, a
/// character literal or a comment (whose text could hold the word).
fn match_header(head: &str) -> bool {
    let head = head.trim();
    let head = head.strip_suffix('{').unwrap_or(head).trim_end();
    if head.contains(['"', '\'', '{', '}']) || head.contains("//") || head.contains("/*") {
        return false;
    }
    let at = if head.starts_with("match ") {
        Some(0)
    } else {
        head.find(" match ").map(|k| k + 1)
    };
    at.is_some_and(|k| {
        let before = head[..k].trim_end();
        before.is_empty()
            || before.ends_with('=')
            || before.ends_with("=>")
            || before == "return"
            || before.ends_with(" return")
    })
}

/// Whether a header opens a macro invocation's tokens (`proptest! {`,
/// `let q = quote::quote! {`), on a line without a string, a character
/// literal or a comment. Not `macro_rules! m {`, whose rules the grammar
/// parses as rules, not as one token tree.
pub(super) fn macro_header(head: &str) -> bool {
    let head = head.trim();
    let Some(head) = head.strip_suffix('{').map(str::trim_end) else {
        return false;
    };
    if head.contains(['"', '\'', '{', '}']) || head.contains("//") || head.contains("/*") {
        return false;
    }
    let Some(path) = head.strip_suffix('!') else {
        return false;
    };
    let name_at = path
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |k| k + 1);
    let name = &path[name_at..];
    name.starts_with(|c: char| c.is_alphabetic() || c == '_') && name != "macro_rules"
}

/// The qualifiers `pub`, `pub(…)`, `async`, `const`, `unsafe`, `default`,
/// `extern "…"` stripped from a header.
fn strip_qualifiers(head: &str) -> (&str, bool, bool) {
    let mut rest = head.trim_start();
    let (mut foreign, mut qualified) = (false, false);
    loop {
        if let Some(r) = rest.strip_prefix("pub(") {
            match r.find(')') {
                Some(k) => rest = r[k + 1..].trim_start(),
                None => return (rest, foreign, qualified),
            }
            continue;
        }
        let Some(w) = ["pub", "async", "const", "unsafe", "default", "extern"]
            .into_iter()
            .find(|w| starts_word(rest, w))
        else {
            return (rest, foreign, qualified);
        };
        rest = rest[w.len()..].trim_start();
        qualified = true;
        if w == "extern" {
            foreign = true;
            if let Some(r) = rest.strip_prefix('"') {
                match r.find('"') {
                    Some(k) => rest = r[k + 1..].trim_start(),
                    None => return (rest, foreign, qualified),
                }
            }
        }
    }
}

/// The header's first word after its qualifiers, whether `extern` was among
/// them, and whether any was.
fn first_word(head: &str) -> (&str, bool, bool) {
    let (rest, foreign, qualified) = strip_qualifiers(head);
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (&rest[..end], foreign, qualified)
}

/// What follows the qualifiers.
fn first_word_rest(head: &str) -> &str {
    strip_qualifiers(head).0
}

/// Whether every line of `range` stays at depth `d` or deeper.
fn stays(lx: &[LineLex], range: Range<usize>, d: i32) -> bool {
    lx[range].iter().all(|l| l.min >= d)
}

/// Rust: the runs of statements or items around `run`, innermost first (at
/// most one per enclosing block whose kind the header says).
pub(super) fn rust(s: &Sides<'_>, run: &DiffRun) -> Vec<Slice> {
    let (ol, nl) = (&s.old, &s.new);
    let low = |lx: &[LineLex], r: &Range<usize>| {
        lx[r.clone()]
            .iter()
            .map(|l| l.min)
            .chain([lx[r.start].depth, lx[r.end].depth])
            .min()
            .unwrap_or(0)
    };
    let deepest = low(ol, &run.old).min(low(nl, &run.new));
    let (a, b) = (run.old.start, run.old.end);
    let mut out = Vec::new();
    let mut d = deepest;
    while d >= 1 {
        let level = d;
        d -= 1;
        // The line holding the `{` that opens this depth.
        let Some(o) = (0..a).rev().find(|&j| ol[j].min < level) else {
            continue;
        };
        let Some(on) = s.to_new(o) else {
            continue;
        };
        if ol[o + 1].depth != level || ol[o].last != b'{' {
            continue;
        }
        let Some(wrapper) = classify(s.before, ol, o, level) else {
            continue;
        };
        let boundary_ok = |lx: &[LineLex], i: usize| lx[i].code && lx[i].depth == level;
        let opens = |prev: u8, line: &str| match wrapper {
            Wrapper::Items => matches!(prev, b';' | b'{') || (prev == b'}' && item_like(line)),
            // An arm ends in `,`, or in `}` only when its body is a block,
            // which a line cannot tell (`A => S { x }` needs its comma): a
            // slice of arms starts after a `,` or the match's `{` and ends
            // before a line after a `,` or at the match's `}`, so its last
            // arm is followed as in the file.
            Wrapper::Arms => matches!(prev, b',' | b'{'),
            // Tokens: any line at the token tree's depth (outside strings
            // and comments) starts and ends a balanced run of them.
            Wrapper::Tokens => true,
            _ => matches!(prev, b';' | b'{') || (prev == b'}' && stmt_like(line)),
        };
        let closes = |doc: &Document, i: usize| {
            i < doc.line_count() && doc.line(i).trim_start().starts_with('}')
        };
        // The start: the nearest line above the change that starts a
        // statement (an item) in both files, or closes the block (lines
        // added at the end of a block: nothing of the old block is parsed).
        let start = (o + 1..=a).rev().find_map(|st| {
            let sn = s.start_to_new(st)?;
            (st < s.before.line_count()
                && sn < s.after.line_count()
                && boundary_ok(ol, st)
                && boundary_ok(nl, sn)
                && (opens(prev_code(ol, st, o), from_line(s.before, st)) || closes(s.before, st))
                && (opens(prev_code(nl, sn, on), from_line(s.after, sn)) || closes(s.after, sn)))
            .then_some((st, sn))
        });
        let Some((st, sn)) = start else {
            continue;
        };
        // The end: the first unchanged line below it that starts a statement
        // (an item) or closes the block, in both files.
        let ends = |lx: &[LineLex], doc: &Document, e: usize, from: usize| {
            if !boundary_ok(lx, e) {
                return false;
            }
            if closes(doc, e) {
                return true;
            }
            let line = if e < doc.line_count() {
                doc.line(e)
            } else {
                ""
            };
            match prev_code(lx, e, from) {
                0 => true,
                p => opens(p, line) && p != b'{',
            }
        };
        let mut end = None;
        for e in b..=s.before.line_count() {
            if let Some(en) = s.to_new(e)
                && ends(ol, s.before, e, st)
                && ends(nl, s.after, en, sn)
            {
                end = Some((e, en));
                break;
            }
            if ol[e].min < level {
                break;
            }
        }
        let Some((e, en)) = end else {
            continue;
        };
        if stays(ol, st..e, level) && stays(nl, sn..en, level) {
            out.push(Slice {
                old: st..e,
                new: sn..en,
                wrapper,
            });
        }
    }
    out.extend(rust_top(s, run));
    out
}

/// Rust: the top-level items around `run`, parsed as they are: from the
/// nearest line at or above it where an item starts to the first unchanged
/// line below it where one does (or the end), in both files. An item starts
/// on a line at depth 0 outside strings and comments whose code before it
/// ends in `;` or `}` (the line then starting like an item), or has none:
/// at depth 0 nothing continues an item that ended so, so the text on
/// either side is the same run of whole items in both files.
fn rust_top(s: &Sides<'_>, run: &DiffRun) -> Option<Slice> {
    let (ol, nl) = (&s.old, &s.new);
    let starts = |lx: &[LineLex], doc: &Document, i: usize| {
        lx[i].code
            && lx[i].depth == 0
            && match prev_code(lx, i, 0) {
                0 | b';' => true,
                b'}' => i >= doc.line_count() || item_like(from_line(doc, i)),
                _ => false,
            }
    };
    let (st, sn) = (0..=run.old.start).rev().find_map(|st| {
        let sn = s.start_to_new(st)?;
        (starts(ol, s.before, st) && starts(nl, s.after, sn)).then_some((st, sn))
    })?;
    let (n_old, n_new) = (s.before.line_count(), s.after.line_count());
    let (e, en) = (run.old.end..=n_old).find_map(|e| {
        let en = s.to_new(e)?;
        (e == n_old || (starts(ol, s.before, e) && starts(nl, s.after, en))).then_some((e, en))
    })?;
    (en >= run.new.end && en <= n_new && stays(ol, st..e, 0) && stays(nl, sn..en, 0)).then_some(
        Slice {
            old: st..e,
            new: sn..en,
            wrapper: Wrapper::Bare,
        },
    )
}

/// Python: the leading whitespace of a line.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t', '\u{c}']).len()]
}

/// A Python line that starts a logical line with code on it.
fn logical(lx: &[LineLex], doc: &Document, i: usize) -> bool {
    if i >= doc.line_count() || !lx[i].code || lx[i].cont {
        return false;
    }
    let t = doc.line(i).trim_start();
    !t.is_empty() && !t.starts_with('#')
}

/// A Python clause that continues the compound statement before it.
fn clause(line: &str) -> bool {
    let t = line.trim_start();
    ["else", "elif", "except", "finally", "case"]
        .iter()
        .any(|w| starts_word(t, w))
}

/// Whether every clause (`else:`, `except …:`, …) among the logical lines
/// of `range` follows, at its own indentation, a statement it can continue.
/// tree-sitter's error recovery reads a misplaced clause differently in
/// different surroundings, so a slice that has one is not offered.
fn clauses_attach(lx: &[LineLex], doc: &Document, range: Range<usize>) -> bool {
    let first = |i: usize| {
        let t = doc.line(i).trim_start();
        let t = t.strip_prefix("async ").map_or(t, str::trim_start);
        let end = t
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        &t[..end]
    };
    let lines: Vec<usize> = range.filter(|&i| logical(lx, doc, i)).collect();
    lines.iter().enumerate().all(|(k, &i)| {
        let partners: &[&str] = match first(i) {
            "else" => &["if", "elif", "for", "while", "try", "except"],
            "elif" => &["if", "elif"],
            "except" => &["try", "except"],
            "finally" => &["try", "except", "else"],
            "case" => &["match", "case"],
            _ => return true,
        };
        let width = indent(doc.line(i)).len();
        lines[..k]
            .iter()
            .rev()
            .find(|&&j| indent(doc.line(j)).len() <= width)
            .is_some_and(|&j| {
                indent(doc.line(j)) == indent(doc.line(i)) && partners.contains(&first(j))
            })
    })
}

/// Whether the logical line before line `i` is a decorator.
fn decorated(lx: &[LineLex], doc: &Document, i: usize) -> bool {
    (0..i)
        .rev()
        .find(|&j| logical(lx, doc, j))
        .is_some_and(|j| doc.line(j).trim_start().starts_with('@'))
}

/// Whether every logical line of `range` is indented at least `by` (its
/// indentation starts with those bytes).
fn indented(lx: &[LineLex], doc: &Document, range: Range<usize>, by: &str) -> bool {
    range
        .filter(|&i| logical(lx, doc, i))
        .all(|i| indent(doc.line(i)).starts_with(by))
}

/// Python: the runs of statements around `run` at each indentation that
/// encloses it, innermost first, the top level last ([`python_top`]).
pub(super) fn python(s: &Sides<'_>, run: &DiffRun) -> Vec<Slice> {
    let (ol, nl) = (&s.old, &s.new);
    let a = run.old.start;
    let mut out: Vec<Slice> = match from_change(s, run) {
        Some((st, sn, by)) if !by.is_empty() => {
            statements(s, st, sn, run.old.end, by).into_iter().collect()
        }
        _ => Vec::new(),
    };
    // The shallowest indentation between a candidate start and the change.
    let mut floor = usize::MAX;
    for st in (0..a).rev() {
        if !logical(ol, s.before, st) {
            continue;
        }
        let line = s.before.line(st);
        let by = indent(line);
        let width = by.len();
        if width == 0 {
            break;
        }
        let deeper = width > floor || out.last().is_some_and(|p| width >= p_width(s, p));
        floor = floor.min(width);
        if deeper || clause(line) {
            continue;
        }
        let Some(sn) = s.to_new(st) else {
            continue;
        };
        if !logical(nl, s.after, sn) || decorated(ol, s.before, st) || decorated(nl, s.after, sn) {
            continue;
        }
        out.extend(statements(s, st, sn, run.old.end, by));
    }
    out.extend(python_top(s, run));
    out
}

/// Python: the statements at indentation `by` from old line `st` (new line
/// `sn`), a statement start in both files, to the first unchanged logical
/// line at or after old line `from` at this indentation or less, if both
/// sides hold a statement and every line is indented at least `by`.
fn statements(s: &Sides<'_>, st: usize, sn: usize, from: usize, by: &str) -> Option<Slice> {
    let (ol, nl) = (&s.old, &s.new);
    let has_code = |lx: &[LineLex], doc: &Document, r: Range<usize>| {
        r.into_iter().any(|i| logical(lx, doc, i))
    };
    for e in from..=s.before.line_count() {
        if e < s.before.line_count() && !logical(ol, s.before, e) {
            continue;
        }
        let at = if e < s.before.line_count() {
            indent(s.before.line(e))
        } else {
            ""
        };
        if at.len() > by.len() && at.starts_with(by) {
            continue;
        }
        let Some(en) = s.to_new(e) else {
            continue;
        };
        let ok = by.starts_with(at)
            && !(at == by && clause(s.before.line(e)))
            && (en == s.after.line_count() || logical(nl, s.after, en));
        if !ok {
            return None;
        }
        // A run of statements that would be empty on a side, or cut a
        // decorator from what it decorates, goes on past the next statement
        // at its indentation.
        if !has_code(ol, s.before, st..e)
            || !has_code(nl, s.after, sn..en)
            || decorated(ol, s.before, e)
            || decorated(nl, s.after, en)
        {
            if at == by {
                continue;
            }
            return None;
        }
        return (indented(ol, s.before, st..e, by)
            && indented(nl, s.after, sn..en, by)
            && clauses_attach(ol, s.before, st..e)
            && clauses_attach(nl, s.after, sn..en))
        .then_some(Slice {
            old: st..e,
            new: sn..en,
            wrapper: Wrapper::Indented,
        });
    }
    None
}

/// Python: where a slice may start at the change itself: its old and new
/// first lines and the indentation of the statement it starts with, when
/// the text before it is the same in both files and ends a statement (the
/// change starts in code, on no continued line), and the first statement at
/// or after it is indented alike in both files, no clause and not
/// decorated, and either the statement before it is as deep or deeper (a
/// sibling, or a sibling's body) or the code before it ends a less indented
/// block's header (a `:`, as before a docstring or a block's new first
/// statement). Its indentation is then a level the lines before it opened,
/// in both files alike: whatever error it makes is one both files have.
fn from_change<'s>(s: &Sides<'s>, run: &DiffRun) -> Option<(usize, usize, &'s str)> {
    let (ol, nl) = (&s.old, &s.new);
    let (a, an) = (run.old.start, run.new.start);
    if s.start_to_new(a) != Some(an) || !ol[a].code || ol[a].cont {
        return None;
    }
    let first_old = (a..s.before.line_count()).find(|&i| logical(ol, s.before, i))?;
    let first_new = (an..s.after.line_count()).find(|&i| logical(nl, s.after, i))?;
    let by = indent(s.before.line(first_old));
    let starts = |lx: &[LineLex], doc: &Document, i: usize| {
        indent(doc.line(i)) == by && !clause(doc.line(i)) && !decorated(lx, doc, i)
    };
    if !starts(ol, s.before, first_old) || !starts(nl, s.after, first_new) {
        return None;
    }
    let fits = match (0..a).rev().find(|&j| logical(ol, s.before, j)) {
        None => by.is_empty(),
        Some(p) => {
            let above = indent(s.before.line(p));
            if prev_code(ol, a, 0) == b':' {
                by.len() > above.len() && by.starts_with(above)
            } else {
                above.starts_with(by)
            }
        }
    };
    fits.then_some((a, an, by))
}

/// Python: the top-level statements around `run`, from the change itself
/// when it starts one ([`from_change`]), else from the last top-level
/// statement that starts above it (the file's start if none), to the first
/// that starts below it (the file's end if none). A start is a logical line
/// at column 0 that no clause (`else:`, …) continues and no decorator
/// precedes, unchanged and such a line in both files. Lines inside strings
/// are never boundaries, so a change inside a module docstring gets the
/// docstring's statement, not the whole file.
fn python_top(s: &Sides<'_>, run: &DiffRun) -> Option<Slice> {
    let (ol, nl) = (&s.old, &s.new);
    let (before, after) = (s.before, s.after);
    // Old line `i` as a boundary: its new line, if it is one in both files.
    let boundary = |i: usize| {
        if i == before.line_count() {
            return Some(after.line_count());
        }
        let line = before.line(i);
        if !logical(ol, before, i)
            || !indent(line).is_empty()
            || clause(line)
            || decorated(ol, before, i)
        {
            return None;
        }
        let n = s.to_new(i)?;
        (logical(nl, after, n) && !decorated(nl, after, n)).then_some(n)
    };
    let (st, sn) = match from_change(s, run) {
        Some((st, sn, "")) => (st, sn),
        _ => (0..run.old.start)
            .rev()
            .find_map(|i| Some((i, boundary(i)?)))
            .unwrap_or((0, 0)),
    };
    let (e, en) = (run.old.end..=before.line_count()).find_map(|i| Some((i, boundary(i)?)))?;
    (clauses_attach(ol, before, st..e) && clauses_attach(nl, after, sn..en)).then_some(Slice {
        old: st..e,
        new: sn..en,
        wrapper: Wrapper::Module,
    })
}

/// The indentation width of a slice's first line.
fn p_width(s: &Sides<'_>, p: &Slice) -> usize {
    // (A slice that starts at a change may start on blank lines.)
    let first = p
        .old
        .clone()
        .find(|&i| logical(&s.old, s.before, i))
        .unwrap_or(p.old.start);
    indent(s.before.line(first)).len()
}
