//! Search/replace: the model quotes the lines to change (SEARCH) and writes
//! what they become (REPLACE). The spec is `edit-formats/search-replace.md`;
//! the format's definition (`DEF`: names, words, parsers, renderer, view) is
//! at the top of this module, and the block's resolution is its `FormatEdit`.
//!
//! Parsing is lenient about what models write (5–9 marker characters,
//! `ORIGINAL`/`UPDATED` and `------- SEARCH`/`+++++++ REPLACE` variants, fences,
//! prose, a path on the line before or inside the fence, `:start_line:` hints)
//! and strict about structure: a block that is opened must be closed. Content
//! lines that look like markers can be written with a leading backslash, and a
//! `=======` line inside a block is content whenever the other split of the
//! block is the one that matches the file.
//!
//! Resolving goes through the cascade with the whole SEARCH; then, in order:
//! the SEARCH with echoed line numbers removed, the other divider splits, and
//! substring semantics (SEARCH that starts or ends mid-line). A block whose
//! REPLACE is already in the file is `already_applied`, never a failure loop.
//! The tool-call form (`old_string`/`new_string`) has substring semantics
//! first, like `str_replace` tools.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;

use super::tool_args::{Arg, Fields, bad, fields};
use super::{
    EditOp, FileChange, FormatDef, FormatEdit, Patch, Resolution, ResolveContext, push_edit,
};
use crate::matcher::{self, Candidate, Match, MatchOptions, Tier};
use crate::report::{EditError, EditKind, EditStatus, ParseError, Warning};
use crate::splice::{self, Piece, ops_from_diff};
use crate::text::Document;

/// The search/replace format's definition.
pub(crate) static DEF: FormatDef = FormatDef {
    name: "search-replace",
    summary: "SEARCH/REPLACE blocks: the model quotes the lines to change and writes their replacement",
    instructions: include_str!("../../edit-formats/search-replace.prompt.md"),
    tool: include_str!("../../edit-formats/search-replace.tool.json"),
    detect: looks_like,
    detect_last: false,
    detect_tool_call: is_tool_call,
    tool_call_rank: 0,
    parse: |input, _| parse_text(input),
    parse_tool_call: |args, _| parse_json(args),
    render: render_blocks,
    view: super::numbered_view,
};

/// One SEARCH/REPLACE block (or one `old_string`/`new_string` edit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The ways to read the block, preferred first. A block holds one split
    /// per `=======` line in it: usually one, more when the content itself has
    /// `=======` lines.
    pub splits: Vec<Split>,
    /// A 1-based line hint (`:start_line:`).
    pub hint: Option<usize>,
    /// Replace every occurrence (tool-call form).
    pub replace_all: bool,
    /// The number of occurrences the edit expects (tool-call form).
    pub expected: Option<usize>,
    /// Tool-call form: the raw `old_string`/`new_string`, matched as substrings first.
    pub fragment: Option<(String, String)>,
    /// 1-based input line of the opening marker (0 for JSON).
    pub source_line: usize,
}

/// One reading of a block: SEARCH and REPLACE split at one divider.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Split {
    /// The lines to find.
    pub search: Vec<String>,
    /// The lines they become.
    pub replace: Vec<String>,
    /// 1-based input line of the divider (0 for JSON).
    pub divider: usize,
    /// Whether the divider has as many `=` as the opener has `<`.
    pub marker_match: bool,
    /// Indices of the `...` elision lines (unescaped) in `search`, then in `replace`.
    pub elisions: (Vec<usize>, Vec<usize>),
}

impl Block {
    /// The preferred reading's SEARCH lines.
    pub fn search(&self) -> &[String] {
        &self.splits[0].search
    }

    /// The preferred reading's REPLACE lines.
    pub fn replace(&self) -> &[String] {
        &self.splits[0].replace
    }
}

// ------------------------------------------------------------------ markers

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Open,
    Divider,
    Close,
}

/// Recognises a marker line; returns it with the length of its run of marker characters.
fn marker(line: &str) -> Option<(Marker, usize)> {
    let t = line.trim();
    let run = |c: char| t.chars().take_while(|&x| x == c).count();
    let word = |n: usize| t[n..].trim().to_ascii_uppercase();
    let first = t.chars().next()?;
    let n = run(first);
    if !(5..=9).contains(&n) {
        return None;
    }
    match (first, word(n).as_str()) {
        ('<', "SEARCH" | "ORIGINAL" | "FIND") | ('-', "SEARCH") => Some((Marker::Open, n)),
        ('=', "") => Some((Marker::Divider, n)),
        ('>', "REPLACE" | "UPDATED") | ('+', "REPLACE") => Some((Marker::Close, n)),
        _ => None,
    }
}

/// Whether a content line must be escaped to survive parsing.
fn needs_escape(line: &str) -> bool {
    let t = line.trim_start().trim_start_matches('\\');
    marker(t).is_some() || t.trim() == "..."
}

/// `\=======` in a block is the literal line `=======` (one backslash removed).
fn unescape(line: &str) -> String {
    let body = line.trim_start();
    if body.starts_with('\\') && needs_escape(body) {
        let ws = &line[..line.len() - body.len()];
        return format!("{ws}{}", &body[1..]);
    }
    line.to_owned()
}

fn escape(line: &str) -> String {
    if needs_escape(line) {
        let body = line.trim_start();
        let ws = &line[..line.len() - body.len()];
        return format!("{ws}\\{body}");
    }
    line.to_owned()
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// An XML-ish tag on a line of its own (`<source>`, `</code>`,
/// `<source lang="python">`): some replies wrap a block in one instead of a
/// backtick fence, so it is skipped like a fence when looking for the path.
fn is_tag_fence(line: &str) -> bool {
    let t = line.trim();
    let Some(inner) = t.strip_prefix('<').and_then(|r| r.strip_suffix('>')) else {
        return false;
    };
    let inner = inner.strip_prefix('/').unwrap_or(inner);
    let name_end = inner.find(' ').unwrap_or(inner.len());
    let (name, attrs) = inner.split_at(name_end);
    name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !attrs.contains(['<', '>'])
}

/// A line naming a file, without the decorations models put before the
/// name (`# `, `**`, `` ` ``, quotes, `File:`); what follows the name is the
/// caller's to trim.
pub(crate) fn undecorated(line: &str) -> &str {
    let mut t = line.trim().trim_start_matches(['#', '*', '`', ' ']);
    for prefix in ["File:", "file:", "Path:", "path:", "Filename:", "filename:"] {
        if let Some(rest) = t.strip_prefix(prefix) {
            t = rest.trim();
        }
    }
    t.trim_start_matches(['#', '*', '`', '"', '\'', ' '])
}

/// A file path as models write it above a block (`path`, `**path**`, `# path:`, `` `path` ``).
pub(crate) fn path_from(line: &str) -> Option<String> {
    let t = undecorated(line).trim_end_matches([':', '*', '`', '"', '\'', ' ']);
    if t.is_empty() || t.len() > 255 || t.chars().any(char::is_whitespace) || t.ends_with('.') {
        return None;
    }
    if t.starts_with("<<<") || t.starts_with("===") || t.starts_with(">>>") {
        return None;
    }
    let file = t.rsplit('/').next().unwrap_or(t);
    let has_ext = file.rsplit_once('.').is_some_and(|(stem, ext)| {
        !ext.is_empty()
            && ext.len() <= 12
            && ext.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && (!stem.is_empty() || file.len() > 1)
    });
    let known = matches!(
        file,
        "Makefile"
            | "Dockerfile"
            | "Gemfile"
            | "Rakefile"
            | "Procfile"
            | "LICENSE"
            | "README"
            | "Justfile"
            | "Vagrantfile"
    );
    (has_ext || known || t.contains('/')).then(|| t.to_owned())
}

/// The path named just above the block at `open` (within four lines; fences and blank lines skipped).
fn path_above(lines: &[&str], open: usize) -> Option<String> {
    for i in (open.saturating_sub(4)..open).rev() {
        let line = lines[i];
        if line.trim().is_empty() {
            continue;
        }
        if is_tag_fence(line) {
            continue;
        }
        if is_fence(line) {
            // ```python path/to/file.py — or a bare info string naming the file.
            let info = line.trim_start().trim_start_matches(['`', '~']).trim();
            if let Some(p) = info.split_whitespace().rev().find_map(path_from)
                && (info.contains('.') || info.contains('/'))
            {
                return Some(p);
            }
            continue;
        }
        if marker(line).is_some() {
            return None;
        }
        return path_from(line);
    }
    None
}

/// The first line holding a SEARCH/REPLACE block opener, if any (the parser
/// then reports a malformed block precisely instead of "unrecognised input").
pub(crate) fn looks_like(input: &str) -> Option<usize> {
    input
        .lines()
        .position(|line| matches!(marker(line), Some((Marker::Open, _))))
}

fn parse_hint(line: &str, key: &str) -> Option<usize> {
    let rest = line.trim().strip_prefix(key)?;
    rest.trim().parse().ok()
}

// ------------------------------------------------------------------ parsing

fn parse_text(input: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = input
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut changes: Vec<FileChange> = Vec::new();
    let mut current: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let Some((kind, open_len)) = marker(lines[i]) else {
            i += 1;
            continue;
        };
        match kind {
            Marker::Open => {}
            // A lone `=======` outside a block is prose (a Markdown heading underline).
            Marker::Divider => {
                i += 1;
                continue;
            }
            // A closer without an opener is a block that lost its start: say so
            // rather than drop the edit silently.
            Marker::Close => return Err(ParseError::StrayMarker { line: i + 1 }),
        }
        let open = i;
        if let Some(p) = path_above(&lines, open) {
            current = Some(p);
        }
        let mut j = open + 1;
        let mut hint = None;
        while j < lines.len() {
            if let Some(h) = parse_hint(lines[j], ":start_line:") {
                hint = Some(h);
            } else if parse_hint(lines[j], ":end_line:").is_none() && lines[j].trim() != "-------" {
                break;
            }
            j += 1;
        }
        let close = (j..lines.len())
            .find(|&k| matches!(marker(lines[k]), Some((Marker::Close, _))))
            .ok_or(ParseError::Unterminated { line: open + 1 })?;
        if let Some(k) = (j..close).find(|&k| matches!(marker(lines[k]), Some((Marker::Open, _)))) {
            // A second opener before any closer: the first block was never closed.
            let _ = k;
            return Err(ParseError::Unterminated { line: open + 1 });
        }
        let mut dividers: Vec<usize> = (j..close)
            .filter(|&k| matches!(marker(lines[k]), Some((Marker::Divider, _))))
            .collect();
        if dividers.is_empty() {
            return Err(ParseError::MissingDivider { line: open + 1 });
        }
        // A doubled divider (`=======` twice in a row, and no other): models
        // write it for an empty REPLACE or by stutter, never to put a
        // `=======` line into the file (that is written `\=======`). It is one
        // divider; the second line is dropped, not written as content.
        let mut replace_from = None;
        if let [a, b] = dividers[..]
            && b == a + 1
        {
            dividers = vec![a];
            replace_from = Some(b + 1);
        }
        // With several candidates, a divider as long as the opener is the likelier one.
        let same_len: Vec<usize> = dividers
            .iter()
            .copied()
            .filter(|&k| marker(lines[k]).is_some_and(|(_, n)| n == open_len))
            .collect();
        if !same_len.is_empty() && same_len.len() < dividers.len() {
            let rest: Vec<usize> = dividers
                .iter()
                .copied()
                .filter(|k| !same_len.contains(k))
                .collect();
            dividers = same_len.into_iter().chain(rest).collect();
        }
        let split = |d: usize| -> Split {
            // `...` written as `\...` is a literal line, not an elision.
            let elided = |range: std::ops::Range<usize>| -> Vec<usize> {
                lines[range.clone()]
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.trim() == "...")
                    .map(|(i, _)| i)
                    .collect()
            };
            let mut search: Vec<String> = lines[j..d].iter().map(|l| unescape(l)).collect();
            let from = replace_from.unwrap_or(d + 1);
            let mut replace: Vec<String> = lines[from..close].iter().map(|l| unescape(l)).collect();
            super::strip_bom(&mut search);
            super::strip_bom(&mut replace);
            Split {
                search,
                replace,
                divider: d + 1,
                marker_match: marker(lines[d]).is_some_and(|(_, n)| n == open_len),
                elisions: (elided(j..d), elided(from..close)),
            }
        };
        let block = Block {
            splits: dividers.iter().map(|&d| split(d)).collect(),
            hint,
            replace_all: false,
            expected: None,
            fragment: None,
            source_line: open + 1,
        };
        push_edit(&mut changes, current.clone(), EditOp::SearchReplace(block));
        i = close + 1;
    }
    if changes.is_empty() {
        return Err(ParseError::NoEdits);
    }
    Ok(Patch {
        changes,
        notes: Vec::new(),
    })
}

/// The edit tool's arguments: `{path, old_string, new_string, replace_all,
/// expected_replacements}`, or `{path, edits: [{old_string, new_string, …}]}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolArgs {
    path: Arg<String>,
    file_path: Arg<String>,
    #[serde(rename = "filePath")]
    file_path_camel: Arg<String>,
    edits: Arg<Vec<Arg<Fields<EditArgs>>>>,
}

/// One replacement of the tool call (the arguments themselves, or an item of `edits`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EditArgs {
    old_string: Arg<String>,
    new_string: Arg<String>,
    replace_all: Arg<Option<bool>>,
    expected_replacements: Arg<Option<u64>>,
}

const EDITS: &str = "an array of {old_string, new_string} objects";

/// Whether a JSON object is this format's tool call: it has an `old_string`,
/// at the top or in its first `edits` item.
fn is_tool_call(args: &Value) -> bool {
    let Some(a) = fields::<ToolArgs>(args) else {
        return false;
    };
    let first = match &a.edits {
        Arg::Given(items) => items.first().and_then(Arg::given),
        _ => None,
    };
    fields::<EditArgs>(args).is_some_and(|e| e.old_string.is_given())
        || first.is_some_and(|Fields(e)| e.old_string.is_given())
}

fn parse_json(args: &Value) -> Result<Patch, ParseError> {
    let a: ToolArgs = fields(args).ok_or_else(|| bad("json", "a JSON object"))?;
    let path = a
        .path
        .or(a.file_path)
        .or(a.file_path_camel)
        .optional("path", "a string")?;
    let blocks = match a.edits {
        Arg::Given(items) => items
            .into_iter()
            .map(|item| tool_block(item.required("edits", EDITS)?.0))
            .collect::<Result<Vec<_>, _>>()?,
        Arg::Wrong => return Err(bad("edits", EDITS)),
        Arg::Missing => vec![tool_block(fields(args).unwrap_or_default())?],
    };
    if blocks.is_empty() {
        return Err(ParseError::NoEdits);
    }
    Ok(Patch {
        notes: Vec::new(),
        changes: vec![FileChange::edit(
            path,
            blocks.into_iter().map(EditOp::SearchReplace).collect(),
        )],
    })
}

/// One replacement of the tool call as a block, its arguments checked in order.
fn tool_block(e: EditArgs) -> Result<Block, ParseError> {
    // A BOM the model copied from the file belongs to the file, not to the line.
    let text = |arg: Arg<String>, field: &str| -> Result<String, ParseError> {
        let s = arg.required(field, "a string")?.replace("\r\n", "\n");
        Ok(s.trim_start_matches('\u{feff}').to_owned())
    };
    let old = text(e.old_string, "old_string")?;
    let new = text(e.new_string, "new_string")?;
    let replace_all = e
        .replace_all
        .optional("replace_all", "true or false")?
        .flatten()
        .unwrap_or(false);
    let at_least_one = "a whole number of at least 1";
    let expected = match e
        .expected_replacements
        .optional("expected_replacements", at_least_one)?
        .flatten()
    {
        Some(n) if n >= 1 => Some(n as usize),
        Some(_) => return Err(bad("expected_replacements", at_least_one)),
        None => None,
    };
    Ok(Block {
        splits: vec![Split {
            search: to_lines(&old),
            replace: to_lines(&new),
            ..Split::default()
        }],
        hint: None,
        replace_all,
        expected,
        fragment: Some((old, new)),
        source_line: 0,
    })
}

/// Splits text into lines; a final newline does not start another line.
fn to_lines(s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    let s = s.strip_suffix('\n').unwrap_or(s);
    s.split('\n').map(str::to_owned).collect()
}

// ------------------------------------------------------------------ checks

/// A lazy placeholder such as `# ... existing code ...` or `// ...`.
pub(crate) fn is_placeholder(line: &str) -> bool {
    let t = line.trim();
    let Some(rest) = ["//", "#", "/*", "<!--", "--", ";", "*", "{/*"]
        .iter()
        .find_map(|p| t.strip_prefix(p))
    else {
        return false;
    };
    let rest = rest
        .trim()
        .trim_end_matches("*/")
        .trim_end_matches("-->")
        .trim_end_matches("*/}")
        .trim();
    // An ellipsis in a code span (`$(…)`) or in brackets (`run(...)`) quotes
    // code; only a free-standing one stands for elided lines.
    let prose = without_quoted_ellipses(rest);
    if !(prose.contains("...") || prose.contains('\u{2026}')) {
        return false;
    }
    let words = prose.replace(['.', '\u{2026}'], " ").to_lowercase();
    if words.trim().is_empty() {
        return true;
    }
    // Whole words only: "interesting...", "decode..." and "another..." are prose.
    const KEYS: [&str; 15] = [
        "existing",
        "rest",
        "remaining",
        "unchanged",
        "same",
        "previous",
        "omitted",
        "other",
        "others",
        "code",
        "before",
        "keep",
        "unmodified",
        "elided",
        "here",
    ];
    let words: Vec<&str> = words
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.len() <= 8 && words.iter().any(|w| KEYS.contains(w))
}

/// `text` without its backtick code spans and without the ellipses (`...`,
/// `…`) that sit right inside brackets or quotes.
fn without_quoted_ellipses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, part) in text.split('`').enumerate() {
        // Odd parts are inside a code span (an unclosed span runs to the end).
        if i % 2 == 0 {
            out.push_str(part);
        }
    }
    let mut kept = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find(['.', '\u{2026}']) {
        let len = if rest[at..].starts_with('\u{2026}') {
            '\u{2026}'.len_utf8()
        } else if rest[at..].starts_with("...") {
            3
        } else {
            kept.push_str(&rest[..=at]);
            rest = &rest[at + 1..];
            continue;
        };
        let before = rest[..at].chars().next_back();
        let after = rest[at + len..].chars().next();
        let quoted = before.is_some_and(|c| "([{'\"".contains(c))
            || after.is_some_and(|c| ")]}'\"".contains(c));
        kept.push_str(&rest[..at]);
        if !quoted {
            kept.push_str(&rest[at..at + len]);
        }
        rest = &rest[at + len..];
    }
    kept.push_str(rest);
    kept
}

/// `12 | code` (a numbered view) or `12:ab|code` (a hashline view).
fn line_number_prefix(line: &str) -> Option<(usize, usize)> {
    let t = line.trim_start();
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 || digits > 7 {
        return None;
    }
    let n: usize = t[..digits].parse().ok()?;
    let rest = &t[digits..];
    let after = if let Some(r) = rest.trim_start().strip_prefix('|') {
        r.strip_prefix(' ').unwrap_or(r)
    } else if let Some(r) = rest.strip_prefix(':') {
        // hashline anchor `12:ab|`
        let tag = r.chars().take_while(char::is_ascii_alphanumeric).count();
        if tag == 0 || tag > 8 {
            return None;
        }
        r[tag..].strip_prefix('|')?
    } else {
        return None;
    };
    Some((n, line.len() - after.len()))
}

/// The block with echoed line-number prefixes removed, when every non-blank
/// SEARCH line carries one and their numbers ascend.
fn strip_line_numbers(search: &[String], replace: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let mut numbers = Vec::new();
    let mut out = Vec::with_capacity(search.len());
    for line in search {
        if line.trim().is_empty() {
            out.push(line.clone());
            continue;
        }
        let (n, cut) = line_number_prefix(line)?;
        numbers.push(n);
        out.push(line[cut..].to_owned());
    }
    if numbers.is_empty() || numbers.windows(2).any(|w| w[1] <= w[0]) {
        return None;
    }
    let all_numbered = replace
        .iter()
        .filter(|l| !l.trim().is_empty())
        .all(|l| line_number_prefix(l).is_some());
    let replace = replace
        .iter()
        .map(|l| match line_number_prefix(l) {
            Some((n, cut)) if all_numbered || numbers.contains(&n) => l[cut..].to_owned(),
            _ => l.clone(),
        })
        .collect();
    Some((out, replace))
}

// ------------------------------------------------------------------ resolving

/// Builds the resolution for `search → replace` placed at each of `matches`.
fn place(doc: &Document, search: &[String], replace: &[String], matches: &[Match]) -> Resolution {
    let ops = ops_from_diff(search, replace);
    let mut pieces: Vec<Piece> = Vec::new();
    for m in matches {
        pieces.extend(splice::splice(doc, search, m, &ops));
    }
    let first = &matches[0];
    let lines = matches.iter().fold(first.range.clone(), |acc, m| {
        acc.start.min(m.range.start)..acc.end.max(m.range.end)
    });
    finish(
        doc,
        pieces,
        Some(first.tier),
        Some(matches.iter().map(|m| m.similarity).fold(1.0, f64::min)),
        lines,
    )
}

/// Drops pieces that would rewrite lines to themselves; none left means the change is already there.
fn finish(
    doc: &Document,
    mut pieces: Vec<Piece>,
    tier: Option<Tier>,
    similarity: Option<f64>,
    lines: Range<usize>,
) -> Resolution {
    pieces.retain(|p| p.changes(doc));
    let mut r = Resolution::status(if pieces.is_empty() {
        EditStatus::AlreadyApplied
    } else {
        EditStatus::Applied
    });
    r.pieces = pieces;
    r.tier = tier;
    r.similarity = similarity;
    r.lines = Some(lines);
    r
}

/// Where the literal `text` occurs in the document (lines joined by `\n`):
/// byte ranges into that joined text, plus the joined text's line starts.
struct Joined {
    text: String,
    starts: Vec<usize>,
}

impl Joined {
    fn new(doc: &Document) -> Joined {
        let mut text = String::with_capacity(doc.text().len());
        let mut starts = Vec::with_capacity(doc.line_count() + 1);
        for i in 0..doc.line_count() {
            starts.push(text.len());
            text.push_str(doc.line(i));
            if doc.eol(i) != crate::text::Eol::None {
                text.push('\n');
            }
        }
        starts.push(text.len());
        Joined { text, starts }
    }

    fn line_of(&self, pos: usize) -> usize {
        let n = self.starts.len() - 1;
        if pos >= self.text.len() {
            return n.saturating_sub(1);
        }
        self.starts.partition_point(|&s| s <= pos) - 1
    }

    /// The lines byte range `r` touches (a range ending with a line's `\n`
    /// ends on that line).
    fn lines_of(&self, r: &Range<usize>) -> Range<usize> {
        self.line_of(r.start)..self.line_of(r.end.max(r.start + 1) - 1) + 1
    }

    /// The lines an occurrence's replacement rewrites: the lines it touches,
    /// plus the next line when the occurrence swallows a line break that the
    /// new text does not restore (the two lines join, as with `str.replace`).
    fn region_of(&self, r: &Range<usize>, new: &str) -> Range<usize> {
        let mut lines = self.lines_of(r);
        let eats_newline = r.end > r.start && self.text.as_bytes()[r.end - 1] == b'\n';
        if eats_newline && !new.ends_with('\n') && lines.end < self.starts.len() - 1 {
            lines.end += 1;
        }
        lines
    }
}

/// Substring semantics: replace `occurrences` (byte ranges of the line-joined
/// text) by `new`, rewriting only the lines they touch.
fn resolve_fragment(
    doc: &Document,
    new: &str,
    occurrences: &[Range<usize>],
    joined: &Joined,
) -> Resolution {
    // Group occurrences whose regions overlap, so each group is one region.
    let mut groups: Vec<(Range<usize>, Vec<Range<usize>>)> = Vec::new();
    for occ in occurrences {
        let lines = joined.region_of(occ, new);
        match groups.last_mut() {
            Some((g, members)) if lines.start < g.end => {
                g.end = g.end.max(lines.end);
                members.push(occ.clone());
            }
            _ => groups.push((lines, vec![occ.clone()])),
        }
    }
    let n = doc.line_count();
    let mut pieces = Vec::new();
    let mut final_newline = None;
    let mut span: Option<Range<usize>> = None;
    for (lines, members) in &groups {
        let region = joined.starts[lines.start]..joined.starts[lines.end];
        let old_text = &joined.text[region.clone()];
        let mut new_text = String::with_capacity(old_text.len() + new.len());
        let mut at = region.start;
        for occ in members {
            new_text.push_str(&joined.text[at..occ.start]);
            new_text.push_str(new);
            at = occ.end;
        }
        new_text.push_str(&joined.text[at..region.end]);
        // At the end of the file the replacement decides the final newline, literally.
        if lines.end == n
            && !new_text.is_empty()
            && new_text.ends_with('\n') != old_text.ends_with('\n')
        {
            final_newline = Some(new_text.ends_with('\n'));
        }
        let old_lines = to_lines(old_text);
        let new_lines = to_lines(&new_text);
        let m = Match::at(lines.clone(), Tier::Exact);
        pieces.extend(splice::splice(
            doc,
            &old_lines,
            &m,
            &ops_from_diff(&old_lines, &new_lines),
        ));
        span = Some(span.map_or(lines.clone(), |s| {
            s.start.min(lines.start)..s.end.max(lines.end)
        }));
    }
    let mut r = finish(
        doc,
        pieces,
        Some(Tier::Exact),
        Some(1.0),
        span.unwrap_or(0..0),
    );
    if final_newline.is_some() {
        r.final_newline = final_newline;
        r.status = EditStatus::Applied;
    }
    r
}

fn fragment_candidates(joined: &Joined, occurrences: &[Range<usize>]) -> Vec<Candidate> {
    occurrences
        .iter()
        .map(|o| Candidate {
            range: joined.lines_of(o),
            similarity: 1.0,
        })
        .collect()
}

/// What looking for the REPLACE text found.
enum Done {
    /// REPLACE sits where SEARCH would have matched: the edit is already there.
    Here(Resolution),
    /// REPLACE is in the file, but SEARCH's best approximate place is
    /// elsewhere: that text is not this edit's result.
    Elsewhere,
    /// REPLACE is not in the file (or proves nothing).
    Absent,
}

/// Whether the edit is already applied: REPLACE is in the file at a strict
/// tier, once, *and* at the place SEARCH would have matched — the line
/// `hint` names, or the place in the file most similar to SEARCH. A REPLACE
/// found anywhere else is [`Done::Elsewhere`].
fn already_applied(
    doc: &Document,
    search: &[String],
    replace: &[String],
    max_tier: Tier,
    hint: Option<usize>,
) -> Done {
    if replace.iter().all(|l| l.trim().is_empty())
        || !super::locate::proves_applied(search, replace)
    {
        return Done::Absent;
    }
    let strict = MatchOptions {
        max_tier,
        nearest: false,
        ..MatchOptions::default()
    };
    let Ok(m) = matcher::locate(doc, replace, None, &strict) else {
        return Done::Absent;
    };
    let hinted = hint.is_some_and(|h| m.range.start.saturating_sub(2) <= h && h < m.range.end + 2);
    if !super::locate::applied_here(
        doc,
        search,
        m.range.clone(),
        hinted,
        &MatchOptions::default(),
    ) {
        return Done::Elsewhere;
    }
    if still_old(doc, search, replace, &m)
        || m.tier > Tier::Exact && !super::locate::proves_applied_tolerantly(search, replace)
    {
        return Done::Absent;
    }
    let mut r = Resolution::status(EditStatus::AlreadyApplied);
    r.tier = Some(m.tier);
    r.similarity = Some(m.similarity);
    r.lines = Some(m.range);
    Done::Here(r)
}

/// Whether the file, where REPLACE was found tolerantly, still shows the
/// state the edit changes: a line there is, byte for byte, a SEARCH line
/// REPLACE does not keep (REPLACE strips `//! ` to `//!`, the file has
/// `//! `), or SEARCH itself — at any tier, a typo included — spans the
/// found lines and more (a deletion whose kept tail was found: the lines it
/// removes are still around it).
fn still_old(doc: &Document, search: &[String], replace: &[String], m: &Match) -> bool {
    let dropped: std::collections::HashSet<&str> = search
        .iter()
        .filter(|l| !l.trim().is_empty() && !replace.contains(l))
        .map(String::as_str)
        .collect();
    let shows_old = m.alignment.iter().zip(replace).any(|(d, r)| {
        d.is_some_and(|d| doc.line(d) != r.as_str() && dropped.contains(doc.line(d)))
    });
    if shows_old {
        return true;
    }
    if search.len() <= replace.len() {
        return false;
    }
    // REPLACE found only by passing over blank lines the file has there, as
    // many as SEARCH quotes: the blank line the edit removes is still there.
    if m.range.len() > replace.len() && m.range.len() == search.len() {
        return true;
    }
    // A deletion of SEARCH's tail (or head) whose removed lines still follow
    // (precede) the found lines, in order and byte for byte.
    let extra = search.len() - replace.len();
    let lines_at = |from: usize| (from..from + extra).map(|i| doc.line(i));
    let (head, tail) = (&search[..extra], &search[search.len() - extra..]);
    let informative = |ls: &[String]| ls.iter().any(|l| !l.trim().is_empty());
    let tail_left = informative(tail)
        && m.range.end + extra <= doc.line_count()
        && tail.iter().map(String::as_str).eq(lines_at(m.range.end));
    let head_left = informative(head)
        && m.range.start >= extra
        && head
            .iter()
            .map(String::as_str)
            .eq(lines_at(m.range.start - extra));
    if tail_left || head_left {
        return true;
    }
    matcher::locate(doc, search, None, &MatchOptions::default()).is_ok_and(|o| {
        o.range.start <= m.range.start
            && m.range.end <= o.range.end
            && o.range.len() > m.range.len()
    })
}

/// How much REPLACE resembles SEARCH (0–1): the share of lines a line diff keeps.
/// A model's REPLACE is its SEARCH with a few lines changed, so the right way
/// to split a block with several `=======` lines is the one that scores highest.
fn kinship(search: &[String], replace: &[String]) -> f64 {
    let kept = ops_from_diff(search, replace)
        .iter()
        .filter(|op| matches!(op, splice::Op::Keep(_)))
        .count();
    let total = search.len() + replace.len();
    if total == 0 {
        1.0
    } else {
        2.0 * kept as f64 / total as f64
    }
}

/// Refuses a REPLACE with a lazy placeholder that its SEARCH does not have.
fn check_placeholder(search: &[String], replace: &[String]) -> Result<(), EditError> {
    match replace
        .iter()
        .find(|l| is_placeholder(l) && !search.contains(l))
    {
        Some(p) => Err(EditError::LazyPlaceholder {
            text: p.trim().to_owned(),
        }),
        None => Ok(()),
    }
}

/// A new file's content.
fn create(lines: &[String]) -> Resolution {
    let mut r = Resolution::status(EditStatus::Applied);
    r.pieces = vec![Piece {
        range: 0..0,
        lines: lines.to_vec(),
        eols: None,
    }];
    r.lines = Some(0..0);
    r
}

/// Picks among the splits of a block that matched: the only one; else the one
/// whose REPLACE clearly resembles its SEARCH most (by 0.2); else, among those
/// close to the best, the only one whose divider is as long as the opener;
/// else refuses.
fn choose_split(
    splits: &[&Split],
    mut hits: Vec<(Resolution, usize, f64)>,
) -> Result<Option<Resolution>, EditError> {
    hits.sort_by(|a, b| b.2.total_cmp(&a.2));
    let pick = match hits.as_slice() {
        [] => return Ok(None),
        [_] => 0,
        [best, second, ..] if best.2 - second.2 >= 0.2 => 0,
        several => {
            let best = several[0].2;
            let close: Vec<usize> = (0..several.len())
                .filter(|&i| best - several[i].2 < 0.2)
                .collect();
            let matching: Vec<usize> = close
                .iter()
                .copied()
                .filter(|&i| splits[several[i].1].marker_match)
                .collect();
            match matching.as_slice() {
                [only] => *only,
                _ => {
                    let mut lines: Vec<usize> = close
                        .iter()
                        .map(|&i| splits[several[i].1].divider)
                        .collect();
                    lines.sort_unstable();
                    return Err(EditError::AmbiguousDivider { lines });
                }
            }
        }
    };
    let (res, k, _) = hits.swap_remove(pick);
    check_placeholder(&splits[k].search, &splits[k].replace)?;
    Ok(Some(res))
}

fn blank(lines: &[String]) -> bool {
    lines.iter().all(|l| l.trim().is_empty())
}

/// Resolution order (each step only when the previous found nothing):
/// exact tier on every split (and with echoed line numbers removed) →
/// already applied, exactly → whitespace, indent and unicode tiers on every
/// split → SEARCH as a substring (mid-line start or end) → already applied,
/// tolerantly → the fuzzy tier on the preferred split.
fn resolve_block(
    b: &Block,
    doc: &Document,
    ctx: &ResolveContext<'_>,
) -> Result<Resolution, EditError> {
    let opts = ctx.matching;
    let tool_blank = b
        .fragment
        .as_ref()
        .is_none_or(|(old, _)| old.trim().is_empty());
    // An empty SEARCH creates an empty or missing file.
    if doc.is_empty()
        && tool_blank
        && let Some(sp) = b
            .splits
            .iter()
            .find(|sp| sp.search.iter().all(String::is_empty))
    {
        return Ok(create(&sp.replace));
    }
    let splits: Vec<&Split> = b.splits.iter().filter(|sp| !blank(&sp.search)).collect();
    if splits.is_empty() && tool_blank {
        return Err(
            if b.splits
                .iter()
                .any(|sp| sp.search.iter().any(|l| !l.is_empty()))
            {
                EditError::BlankSearch
            } else {
                EditError::EmptySearchOnExistingFile
            },
        );
    }
    let primary: &Split = splits.first().copied().unwrap_or(&b.splits[0]);
    if splits.len() <= 1 {
        check_placeholder(&primary.search, &primary.replace)?;
        if primary.search == primary.replace && b.fragment.as_ref().is_none_or(|(o, n)| o == n) {
            let mut r = Resolution::status(EditStatus::Noop);
            r.warnings.push(Warning::IdenticalBlock);
            return Ok(r);
        }
    }
    if let Some((old, new)) = &b.fragment
        && let Some(result) = resolve_tool_fragment(b, old, new, doc)
    {
        return result;
    }
    // `...` lines: piecewise when both sides have the same number; otherwise,
    // or when the pieces do not match, the lines are taken literally (a
    // Python `...` body is code), and the elision's error is kept for the report.
    let mut elision_error = None;
    let (se, re) = (primary.elisions.0.len(), primary.elisions.1.len());
    if splits.len() == 1 && (se > 0 || re > 0) {
        if se == re {
            match resolve_elided(primary, doc, opts) {
                Ok(res) => return Ok(res),
                Err(e) => elision_error = Some(e),
            }
        } else {
            elision_error = Some(EditError::ElisionMismatch {
                search: se,
                replace: re,
            });
        }
    }
    let hint = b.hint.map(|h| h.saturating_sub(1));
    let multi = b.replace_all || b.expected.is_some_and(|e| e > 1);
    let attempt = |search: &[String], replace: &[String], opts: &MatchOptions| {
        if multi {
            let found = matcher::locate_all(doc, search, opts).map_err(EditError::from)?;
            if let Some(e) = b.expected.filter(|&e| e != found.len()) {
                return Err(EditError::CountMismatch {
                    expected: e,
                    found: found.len(),
                    candidates: found.iter().map(Candidate::from).collect(),
                });
            }
            Ok(place(doc, search, replace, &found))
        } else {
            let m = matcher::locate(doc, search, hint, opts)
                .and_then(|m| {
                    if m.tier < Tier::Fuzzy {
                        return Ok(m);
                    }
                    // The approximate step holds rewritten lines as every format does (locate.md).
                    let kept =
                        super::locate::kept_of(search.len(), &ops_from_diff(search, replace));
                    super::locate::settle(doc, search, replace, &kept, m)
                })
                .map_err(EditError::from)?;
            let by_hint = m.by_hint;
            let mut r = place(doc, search, replace, std::slice::from_ref(&m));
            if by_hint {
                r.warnings.push(Warning::ChosenByHint {
                    hint: b.hint.unwrap_or(0),
                });
            }
            Ok(r)
        }
    };
    // Each split as written, then with echoed line numbers removed.
    let variants = |sp: &Split| {
        let mut v = vec![(sp.search.clone(), sp.replace.clone(), false)];
        if let Some((s, r)) = strip_line_numbers(&sp.search, &sp.replace) {
            v.push((s, r, true));
        }
        v
    };
    let note = |mut res: Resolution, stripped: bool, divider: Option<usize>| {
        if stripped {
            res.warnings.push(Warning::StrippedLineNumbers);
        }
        if let Some(line) = divider {
            res.warnings.push(Warning::DividerInContent { line });
        }
        res
    };
    // Every split through the tiers up to `max`; the error of the first split that
    // matched ambiguously is kept.
    let pass = |max: Tier| -> Result<Option<Resolution>, EditError> {
        let tiers = MatchOptions {
            max_tier: opts.max_tier.min(max),
            nearest: false,
            ..opts.clone()
        };
        let mut hits = Vec::new();
        let mut first_error = None;
        for (k, sp) in splits.iter().enumerate() {
            for (s, r, stripped) in variants(sp) {
                match attempt(&s, &r, &tiers) {
                    Ok(res) => {
                        let divider = (splits.len() > 1).then_some(sp.divider);
                        hits.push((note(res, stripped, divider), k, kinship(&s, &r)));
                        break;
                    }
                    Err(EditError::NotFound { .. }) => {}
                    Err(e) => {
                        first_error.get_or_insert(e);
                        break;
                    }
                }
            }
        }
        match (choose_split(&splits, hits)?, first_error) {
            (Some(res), _) => Ok(Some(res)),
            (None, Some(e)) => Err(e),
            (None, None) => Ok(None),
        }
    };
    if let Some(res) = pass(Tier::Exact)? {
        return Ok(res);
    }
    // A re-sent block whose REPLACE is in the file word for word is done, even if
    // a tolerant tier could find its SEARCH (blank-line drift would match it again).
    let mut elsewhere = false;
    match already_applied(doc, &primary.search, &primary.replace, Tier::Exact, hint) {
        Done::Here(res) => return Ok(res),
        Done::Elsewhere => elsewhere = true,
        Done::Absent => {}
    }
    if let Some(res) = pass(Tier::Unicode)? {
        return Ok(res);
    }
    check_placeholder(&primary.search, &primary.replace)?;
    if opts.max_tier > Tier::Exact
        && let Some(res) = resolve_text_fragment(primary, hint, doc)?
    {
        return Ok(res);
    }
    match already_applied(
        doc,
        &primary.search,
        &primary.replace,
        Tier::Indent.min(opts.max_tier),
        hint,
    ) {
        Done::Here(res) => return Ok(res),
        Done::Elsewhere => elsewhere = true,
        Done::Absent => {}
    }
    if elsewhere {
        // The REPLACE text stands somewhere SEARCH does not point to, and
        // SEARCH itself is not in the file: neither "done" nor a guess
        // nearby is honest. Not found, with the places most like SEARCH.
        let nearest = MatchOptions {
            max_tier: opts.max_tier.min(Tier::Unicode),
            ..opts.clone()
        };
        return Err(matcher::locate(doc, &primary.search, hint, &nearest)
            .err()
            .map_or(
                EditError::NotFound {
                    nearest: Vec::new(),
                    bounded: false,
                    after_edit: None,
                },
                EditError::from,
            ));
    }
    let mut failure = None;
    for (s, r, stripped) in variants(primary) {
        match attempt(&s, &r, opts) {
            Ok(res) => return Ok(note(res, stripped, None)),
            Err(e @ EditError::NotFound { .. }) => {
                failure.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    if elision_error.is_none()
        && !multi
        && let Some(res) = deletion_done(doc, &primary.search, &primary.replace, hint, opts)
    {
        return Ok(res);
    }
    Err(elision_error.or(failure).unwrap_or(EditError::NotFound {
        nearest: Vec::new(),
        bounded: false,
        after_edit: None,
    }))
}

/// A deletion re-sent, as every quoting format decides it (locate.md §4):
/// SEARCH is nowhere, not even approximately (the caller tried), REPLACE
/// adds nothing, a kept non-blank line brackets every run of removed lines,
/// and REPLACE stands in the file at one place (strict tiers; the hint picks
/// among several as it does for SEARCH).
fn deletion_done(
    doc: &Document,
    search: &[String],
    replace: &[String],
    hint: Option<usize>,
    opts: &MatchOptions,
) -> Option<Resolution> {
    if blank(replace) || super::locate::proves_applied(search, replace) {
        return None;
    }
    let kept = super::locate::kept_of(search.len(), &ops_from_diff(search, replace));
    if !super::locate::deletion_shows(search, &kept)
        || super::locate::short_quote_near(doc, search, opts)
    {
        return None;
    }
    let strict = MatchOptions {
        max_tier: opts.max_tier.min(Tier::Unicode),
        nearest: false,
        ..opts.clone()
    };
    let m = matcher::locate(doc, replace, hint, &strict).ok()?;
    let mut r = Resolution::status(EditStatus::AlreadyApplied);
    r.tier = Some(m.tier);
    r.similarity = Some(m.similarity);
    r.lines = Some(m.range);
    Some(r)
}

/// The tool-call form: `old_string` as a literal substring first.
fn resolve_tool_fragment(
    b: &Block,
    old: &str,
    new: &str,
    doc: &Document,
) -> Option<Result<Resolution, EditError>> {
    let joined = Joined::new(doc);
    let occ: Vec<Range<usize>> = joined
        .text
        .match_indices(old)
        .map(|(i, s)| i..i + s.len())
        .collect();
    if occ.is_empty() {
        return None;
    }
    let want_all = b.replace_all || b.expected.is_some();
    if let Some(e) = b.expected.filter(|&e| e != occ.len()) {
        return Some(Err(EditError::CountMismatch {
            expected: e,
            found: occ.len(),
            candidates: fragment_candidates(&joined, &occ),
        }));
    }
    if occ.len() > 1 && !want_all {
        return Some(Err(EditError::Ambiguous {
            tier: Tier::Exact,
            candidates: fragment_candidates(&joined, &occ),
        }));
    }
    if let [only] = occ.as_slice()
        && !want_all
        && dedented_line(&joined.text, only.clone(), old, new)
    {
        return None;
    }
    Some(Ok(resolve_fragment(doc, new, &occ, &joined)))
}

/// Whether a one-line `old_string` found inside its line is that whole line
/// quoted without its indentation, under a several-line `new_string` written
/// at the quote's indentation: only indentation stands before it, it runs to
/// the line's end, and a later non-blank line of `new_string` does not start
/// with that indentation. Substring semantics would indent only the first new
/// line (the file's indentation stays before it) and leave the others
/// dedented; the line tiers re-indent every new line by the quote's offset
/// (search-replace.md §2, "Substring first").
fn dedented_line(text: &str, occ: Range<usize>, old: &str, new: &str) -> bool {
    let body = old.strip_suffix('\n').unwrap_or(old);
    if body.contains('\n') || body.trim().is_empty() {
        return false;
    }
    let head_at = text[..occ.start].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[head_at..occ.start];
    let to_end = old.ends_with('\n') || text[occ.end..].starts_with('\n') || occ.end == text.len();
    if indent.is_empty() || !indent.chars().all(|c| c == ' ' || c == '\t') || !to_end {
        return false;
    }
    new.lines()
        .skip(1)
        .any(|l| !l.trim().is_empty() && !l.starts_with(indent))
}

/// A SEARCH that stops short of its line's end by a tail of punctuation
/// (`.`, `;`, `)`) that REPLACE ends with but SEARCH does not: the model wrote
/// REPLACE as the whole line and left the tail out of SEARCH, so the tail is
/// taken into the match instead of being kept after REPLACE (which would
/// double it). A tail with a letter, digit or space is text the model may
/// mean to keep, and stays.
fn absorb_tail(text: &str, occ: Range<usize>, old: &str, new: &str) -> Range<usize> {
    let rest = &text[occ.end..];
    let tail = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let punctuation =
        !tail.is_empty() && tail.len() <= 3 && tail.chars().all(|c| c.is_ascii_punctuation());
    if punctuation && new.ends_with(tail) && !old.ends_with(tail) {
        occ.start..occ.end + tail.len()
    } else {
        occ
    }
}

/// What a SEARCH found mid-line meant, from the rest of its line(s): `None`
/// when it is a misquoted line rather than a fragment — text with spaces (a
/// line, not a token) that starts or ends inside a word (`ource: a.rs` in
/// `source: a.rs`), for the line tiers to locate; else the occurrence,
/// widened to the whole first or last line when REPLACE restates that line
/// in full (SEARCH `----` under REPLACE `-----` on the file's `-----`: the
/// model quoted the line and lost a character), so the rest of the line is
/// not kept twice.
fn line_intent(
    text: &str,
    occ: Range<usize>,
    old: &str,
    replace: &[String],
) -> Option<Range<usize>> {
    let line_start = |at: usize| text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = |at: usize| text[at..].find('\n').map_or(text.len(), |i| at + i);
    let (head_at, tail_at) = (line_start(occ.start), line_end(occ.end));
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mid_word = (word(text[..occ.start].chars().next_back()) && word(old.chars().next()))
        || (word(old.chars().next_back()) && word(text[occ.end..].chars().next()));
    if mid_word && old.trim().contains(char::is_whitespace) {
        return None;
    }
    // The line the match starts in is restated only by REPLACE's first
    // line: a line REPLACE repeats further down (the same text as the last
    // quoted line, kept unchanged) restates its own line, not this one, and
    // widening to it would drop the rest of the line the match starts in.
    // The line it ends in may be restated by any REPLACE line (new lines may
    // follow it).
    let restated = |line: &str| replace.iter().any(|r| r == line);
    let mut span = occ.clone();
    if head_at < occ.start
        && replace.first().map(String::as_str) == Some(&text[head_at..line_end(occ.start)])
    {
        span.start = head_at;
    }
    if occ.end < tail_at && restated(&text[line_start(occ.end)..tail_at]) {
        span.end = tail_at;
    }
    Some(span)
}

/// A text block whose SEARCH starts or ends mid-line: substring semantics,
/// unique (or picked by the line hint).
fn resolve_text_fragment(
    sp: &Split,
    hint: Option<usize>,
    doc: &Document,
) -> Result<Option<Resolution>, EditError> {
    let old = sp.search.join("\n");
    if old.trim().len() < 3 {
        return Ok(None);
    }
    let joined = Joined::new(doc);
    let occ: Vec<Range<usize>> = joined
        .text
        .match_indices(old.as_str())
        .map(|(i, s)| i..i + s.len())
        .collect();
    let starts: Vec<usize> = occ.iter().map(|o| joined.line_of(o.start)).collect();
    let chosen = match occ.len() {
        0 => return Ok(None),
        1 => 0,
        _ => match hint.and_then(|h| matcher::pick_by_hint(&starts, h)) {
            Some(i) => i,
            None => {
                return Err(EditError::Ambiguous {
                    tier: Tier::Exact,
                    candidates: fragment_candidates(&joined, &occ),
                });
            }
        },
    };
    let new = sp.replace.join("\n");
    let Some(span) = line_intent(&joined.text, occ[chosen].clone(), &old, &sp.replace) else {
        return Ok(None);
    };
    let one = [absorb_tail(&joined.text, span, &old, &new)];
    let mut r = resolve_fragment(doc, &new, &one, &joined);
    r.warnings.push(Warning::PartialLineMatch {
        lines: joined.lines_of(&occ[chosen]),
    });
    Ok(Some(r))
}

/// SEARCH and REPLACE split on their `...` lines; every SEARCH piece must be
/// unique, and the pieces must lie in file order.
fn resolve_elided(
    sp: &Split,
    doc: &Document,
    opts: &MatchOptions,
) -> Result<Resolution, EditError> {
    let cut = |v: &[String], at: &[usize]| -> Vec<Vec<String>> {
        let mut pieces = Vec::new();
        let mut from = 0;
        for &i in at {
            pieces.push(v[from..i].to_vec());
            from = i + 1;
        }
        pieces.push(v[from..].to_vec());
        pieces
    };
    let (sp_pieces, rp_pieces) = (
        cut(&sp.search, &sp.elisions.0),
        cut(&sp.replace, &sp.elisions.1),
    );
    let mut pieces = Vec::new();
    let mut span: Option<Range<usize>> = None;
    let mut worst_tier = Tier::Exact;
    let mut min_sim: f64 = 1.0;
    for (k, (s, r)) in sp_pieces.iter().zip(&rp_pieces).enumerate() {
        if blank(s) {
            if blank(r) {
                continue;
            }
            return Err(EditError::ElidedPiece {
                piece: k,
                inner: Box::new(EditError::BlankSearch),
            });
        }
        let m = matcher::locate(doc, s, None, opts).map_err(|e| EditError::ElidedPiece {
            piece: k,
            inner: Box::new(EditError::from(e)),
        })?;
        if span.as_ref().is_some_and(|sp| m.range.start < sp.end) {
            // A piece before the previous one: the `...` would skip backwards.
            return Err(EditError::ElidedPiece {
                piece: k,
                inner: Box::new(EditError::NotFound {
                    nearest: vec![Candidate::from(&m)],
                    bounded: false,
                    after_edit: None,
                }),
            });
        }
        worst_tier = worst_tier.max(m.tier);
        min_sim = min_sim.min(m.similarity);
        span = Some(span.map_or(m.range.clone(), |sp| sp.start..m.range.end));
        pieces.extend(splice::splice(doc, s, &m, &ops_from_diff(s, r)));
    }
    let mut res = finish(
        doc,
        pieces,
        Some(worst_tier),
        Some(min_sim),
        span.unwrap_or(0..0),
    );
    res.warnings.push(Warning::Elided {
        pieces: sp_pieces.len(),
    });
    Ok(res)
}

impl FormatEdit for Block {
    fn kind(&self) -> EditKind {
        EditKind::Block
    }

    fn source_line(&self) -> usize {
        self.source_line
    }

    fn can_create(&self) -> bool {
        true
    }

    fn resolve(&self, doc: &Document, ctx: &ResolveContext<'_>) -> Result<Resolution, EditError> {
        resolve_block(self, doc, ctx)
    }
}

/// The change from `before` to `after` as `(old lines, new lines)` blocks
/// whose old lines are unique in `before` (context widened until they are),
/// in file order. Shared by the formats that quote old text.
pub(crate) fn change_blocks(before: &str, after: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let old = Document::from_text(before);
    let new = Document::from_text(after);
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let owned = |v: &[&str]| v.iter().map(|l| (*l).to_owned()).collect::<Vec<String>>();
    if old_lines.is_empty() {
        return vec![(Vec::new(), owned(&new_lines))];
    }
    let diff = splice::line_diff(&old_lines, &new_lines);
    // Changed stretches, in old-line coordinates.
    let hunks: Vec<Range<usize>> = diff
        .iter()
        .filter(|r| !r.equal)
        .map(|r| r.old.clone())
        .collect();
    // Grow each with context until SEARCH is non-empty, unique and long enough to locate.
    let mut spans: Vec<Range<usize>> = Vec::new();
    for h in hunks {
        let (mut os, mut oe) = (h.start.saturating_sub(1), (h.end + 1).min(old_lines.len()));
        loop {
            let search = &old_lines[os..oe];
            let unique = !search.is_empty() && count_exact(&old_lines, search) == 1;
            let enough = search.iter().map(|l| l.trim().len()).sum::<usize>() >= 3;
            if (unique && enough) || (os == 0 && oe == old_lines.len()) {
                break;
            }
            os = os.saturating_sub(1);
            oe = (oe + 1).min(old_lines.len());
        }
        // Overlapping blocks merge (a window containing a unique window is unique).
        match spans.last_mut() {
            Some(prev) if os < prev.end || h.start < prev.end => prev.end = prev.end.max(oe),
            _ => spans.push(os..oe),
        }
    }
    // Each span starts and ends on unchanged lines, so both ends map to the new
    // text. At a point where lines were only inserted, a block's start maps
    // before the insertion and its end after it.
    let mut bounds: Vec<(usize, usize)> = vec![(0, 0)];
    bounds.extend(diff.iter().map(|r| (r.old.end, r.new.end)));
    let map = |i: usize, at_end: bool| -> usize {
        let mut at = bounds.iter().filter(|(o, _)| *o == i);
        let hit = if at_end { at.next_back() } else { at.next() };
        if let Some((_, n)) = hit {
            return *n;
        }
        diff.iter()
            .find(|r| r.equal && r.old.start < i && i < r.old.end)
            .map_or(new_lines.len(), |r| r.new.start + (i - r.old.start))
    };
    spans
        .into_iter()
        .map(|o| {
            let n = map(o.start, false)..map(o.end, true);
            (owned(&old_lines[o]), owned(&new_lines[n]))
        })
        .collect()
}

/// Writes the change from `before` to `after` as blocks whose SEARCH is unique in `before`.
fn render_blocks(path: &str, before: &str, after: &str) -> String {
    let mut out = String::new();
    for (s, r) in change_blocks(before, after) {
        out.push_str(path);
        out.push_str("\n```\n<<<<<<< SEARCH\n");
        for l in &s {
            out.push_str(&escape(l));
            out.push('\n');
        }
        out.push_str("=======\n");
        for l in &r {
            out.push_str(&escape(l));
            out.push('\n');
        }
        out.push_str(">>>>>>> REPLACE\n```\n\n");
    }
    out
}

fn count_exact(hay: &[&str], needle: &[&str]) -> usize {
    hay.windows(needle.len()).filter(|w| w == &needle).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert_eq!(marker("<<<<<<< SEARCH"), Some((Marker::Open, 7)));
        assert_eq!(marker("<<<<<<<<< search  "), Some((Marker::Open, 9)));
        assert_eq!(marker("------- SEARCH"), Some((Marker::Open, 7)));
        assert_eq!(marker("======="), Some((Marker::Divider, 7)));
        assert_eq!(marker(">>>>> UPDATED"), Some((Marker::Close, 5)));
        assert_eq!(marker("<<<<<<< HEAD"), None);
        assert_eq!(marker("===="), None);
        assert_eq!(marker("=========="), None);
    }

    #[test]
    fn paths() {
        assert_eq!(path_from("src/main.rs"), Some("src/main.rs".into()));
        assert_eq!(path_from("**app.py**"), Some("app.py".into()));
        assert_eq!(path_from("# File: lib/x.ts:"), Some("lib/x.ts".into()));
        assert_eq!(path_from("Here is the change:"), None);
        assert_eq!(path_from("Done."), None);
        assert_eq!(path_from("Makefile"), Some("Makefile".into()));
    }

    #[test]
    fn placeholders() {
        assert!(is_placeholder("    # ... existing code ..."));
        assert!(is_placeholder("// ..."));
        assert!(is_placeholder("/* ... rest of the function ... */"));
        assert!(!is_placeholder(
            "# wait... this is a real comment about the parser state machine"
        ));
        assert!(!is_placeholder("print('...')"));
        assert!(!is_placeholder(
            "/// How many `$(…)`, backticks, `<(…)` and `>(…)` it holds, here-document"
        ));
        assert!(!is_placeholder("// every run(...) call ends here"));
        assert!(is_placeholder("// ... (rest unchanged) ..."));
        assert!(is_placeholder("// existing code..."));
        assert!(is_placeholder("# … keep the rest …"));
    }

    #[test]
    fn line_number_prefixes() {
        assert_eq!(
            line_number_prefix("12 | foo").map(|(n, c)| (n, &"12 | foo"[c..])),
            Some((12, "foo"))
        );
        assert_eq!(
            line_number_prefix("7:ab|  x").map(|(n, c)| (n, &"7:ab|  x"[c..])),
            Some((7, "  x"))
        );
        assert_eq!(line_number_prefix("x = 12 | 3"), None);
    }

    #[test]
    fn escapes_round_trip() {
        for l in ["=======", "  <<<<<<< SEARCH", "\\=======", "...", "plain"] {
            assert_eq!(unescape(&escape(l)), l);
        }
    }
}
