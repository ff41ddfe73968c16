//! Unified diffs: what `diff -u`, `git diff` and models write. The spec is
//! `edit-formats/unified-diff.md`; the format's definition (`DEF`) is at the
//! top of this module, and [`ops_of`] (` `/`-`/`+` lines to splice ops) is
//! shared with apply_patch.
//!
//! Parsing accepts git diffs (extended headers: modes, renames, `index`),
//! plain `---`/`+++` diffs, several files per input, `/dev/null`, `\ No
//! newline at end of file`, CRLF patches, fences and prose around the diff,
//! and hunk headers with full, omitted, wrong or no line numbers (wrong counts
//! are recounted from the body). Parsing never touches files.
//!
//! Placement treats a hunk's line number as a hint: the old side (context and
//! removed lines) is located through the cascade. One place: applied there,
//! whatever the offset. Several places: only the one exactly at the stated
//! line (shifted by the offset earlier hunks of the file were found at) is
//! taken, and a hunk without context lines is placed by position only when
//! the file is known to be the diff's pre-image (git blob id) — otherwise
//! refused. When the whole old side is not found, up to two outer context
//! lines may be dropped (like `patch`'s fuzz) if the rest is unique at its own
//! indentation; then the approximate step every quoting format shares
//! ([`locate`](super::locate): a `-` line may carry a typo, never another
//! word or value).
//!
//! Invariant: context lines keep the file's bytes; only `-` and `+` lines
//! change; the final newline changes only when the diff's markers say so.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;

use super::tool_args::{Arg, bad, fields};
use super::{Action, EditOp, FileChange, FormatDef, FormatEdit, Patch, Resolution, ResolveContext};
use crate::matcher::{self, Candidate, Match, MatchError, MatchOptions, Tier};
use crate::report::{EditError, EditKind, EditStatus, ParseError, Warning};
use crate::splice::{self, Op};
use crate::text::{Document, Eol};

/// The unified diff format's definition.
pub(crate) static DEF: FormatDef = FormatDef {
    name: "udiff",
    summary: "unified diffs (diff -u, git diff): hunks of context, removed and added lines",
    instructions: include_str!("../../edit-formats/unified-diff.prompt.md"),
    tool: include_str!("../../edit-formats/unified-diff.tool.json"),
    detect: looks_like,
    detect_last: false,
    detect_tool_call: is_tool_call,
    tool_call_rank: 3,
    parse: parse_text,
    parse_tool_call,
    render: |path, before, after| render_unified(Some(path), Some(path), before, after, 3),
    view: super::numbered_view,
};

/// One line of a hunk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` ` — unchanged.
    Context(String),
    /// `-` — removed.
    Remove(String),
    /// `+` — added.
    Add(String),
}

/// One hunk: where it claims to be, and its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// `-a,b`: 1-based start and count on the old side, when given.
    pub old: Option<(usize, Option<usize>)>,
    /// `+c,d`: 1-based start and count on the new side, when given.
    pub new: Option<(usize, Option<usize>)>,
    /// The body.
    pub lines: Vec<HunkLine>,
    /// The old side's last line has no newline (`\ No newline at end of file`).
    pub old_missing_newline: bool,
    /// The new side's last line has no newline.
    pub new_missing_newline: bool,
    /// 1-based input line of the `@@` header (0 when not from text).
    pub source_line: usize,
    /// For each line of the body, whether the diff ended it in `\r\n`
    /// (empty for a hunk not read from text; see [`Hunk::crlf`]).
    pub crlf_lines: Vec<bool>,
}

impl Hunk {
    fn side(&self, old: bool) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) => Some(t.as_str()),
                HunkLine::Remove(t) if old => Some(t.as_str()),
                HunkLine::Add(t) if !old => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// Whether most of the diff's own lines ended in `\r\n` (it was made
    /// from a CRLF file): the ending new lines get where the file has none
    /// to copy.
    pub fn crlf(&self) -> bool {
        self.crlf_lines.iter().filter(|&&cr| cr).count() * 2 > self.crlf_lines.len()
    }

    /// Context and removed lines, in order.
    pub fn old_lines(&self) -> Vec<&str> {
        self.side(true)
    }

    /// Context and added lines, in order.
    pub fn new_lines(&self) -> Vec<&str> {
        self.side(false)
    }

    /// The hunk that undoes this one.
    pub fn reversed(&self) -> Hunk {
        Hunk {
            old: self.new,
            new: self.old,
            lines: self
                .lines
                .iter()
                .map(|l| match l {
                    HunkLine::Context(t) => HunkLine::Context(t.clone()),
                    HunkLine::Remove(t) => HunkLine::Add(t.clone()),
                    HunkLine::Add(t) => HunkLine::Remove(t.clone()),
                })
                .collect(),
            old_missing_newline: self.new_missing_newline,
            new_missing_newline: self.old_missing_newline,
            source_line: self.source_line,
            crlf_lines: self.crlf_lines.clone(),
        }
    }

    /// The endings the diff gives its `+` lines, in order, when it was made
    /// from this very file: `m` matched the whole old side word for word,
    /// line for line, and every old line ends in the diff as the file line
    /// it matched does (a last line without an ending matches either). Such
    /// a diff states its new lines' endings as `git apply` and `patch` read
    /// them: a commit that turns a file's LF into CRLF, or one line of a
    /// mixed file, is applied as made. Any other diff's `+` lines take the
    /// file's endings (unified-diff.md §5.2); an empty file has none, so
    /// its new lines end as the diff ends them.
    fn literal_endings(&self, doc: &Document, m: &Match) -> Option<Vec<Eol>> {
        let identity = m
            .alignment
            .iter()
            .enumerate()
            .all(|(i, d)| *d == Some(m.range.start + i));
        if m.tier != Tier::Exact || !identity || m.alignment.len() != m.range.len() {
            return None;
        }
        self.literal_endings_at(doc, m.range.clone())
    }

    /// [`literal_endings`](Self::literal_endings) with the old side at
    /// file lines `range`, line for line.
    fn literal_endings_at(&self, doc: &Document, range: Range<usize>) -> Option<Vec<Eol>> {
        if self.crlf_lines.len() != self.lines.len() {
            return None;
        }
        let mut at = range.start;
        let mut out = Vec::new();
        for (line, &cr) in self.lines.iter().zip(&self.crlf_lines) {
            let stated = if cr { Eol::CrLf } else { Eol::Lf };
            match line {
                HunkLine::Add(_) => out.push(stated),
                HunkLine::Context(_) | HunkLine::Remove(_) => {
                    if at >= range.end || ![stated, Eol::None].contains(&doc.eol(at)) {
                        return None;
                    }
                    at += 1;
                }
            }
        }
        (at == range.end).then_some(out)
    }

    /// How many context lines open the hunk, and how many close it.
    fn context_edges(&self) -> (usize, usize) {
        let is_context = |l: &&HunkLine| matches!(l, HunkLine::Context(_));
        let lead = self.lines.iter().take_while(is_context).count();
        let trail = self.lines.iter().rev().take_while(is_context).count();
        (lead, trail)
    }

    fn has_context(&self) -> bool {
        self.lines.iter().any(|l| matches!(l, HunkLine::Context(_)))
    }

    /// The 0-based line the old side starts at, as the header states it. With
    /// a count of 0 the start names the line *after which* text is inserted.
    pub fn stated_start(&self) -> Option<usize> {
        let (start, count) = self.old?;
        Some(if count == Some(0) {
            start
        } else {
            start.saturating_sub(1)
        })
    }

    /// Whether the new side may stand at its stated line of `doc`, as it
    /// does in the diff's post-image: lines compared without trailing
    /// whitespace, and true when the header states no new side. False
    /// proves `doc` is not that post-image (for a diff whose hunks agree with
    /// its `index` line), which spares hashing it (`apply::deferrable`).
    pub(crate) fn new_side_may_stand(&self, doc: &Document) -> bool {
        let Some(start) = self.new_stated_start() else {
            return true;
        };
        let new = self.new_lines();
        start + new.len() <= doc.line_count()
            && new
                .iter()
                .enumerate()
                .all(|(i, l)| doc.line(start + i).trim_end() == l.trim_end())
    }

    fn new_stated_start(&self) -> Option<usize> {
        let (start, count) = self.new?;
        Some(if count == Some(0) {
            start
        } else {
            start.saturating_sub(1)
        })
    }
}

/// Options for reading a diff.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffOptions {
    /// Strip this many leading path components (`-p N`); `None`: drop git's `a/` and `b/`.
    pub strip: Option<usize>,
    /// Apply the diff in reverse (`-R`).
    pub reverse: bool,
}

// ------------------------------------------------------------------ parsing

/// A file's part of a diff, while it is read.
#[derive(Debug, Default)]
struct Section {
    git: bool,
    /// Paths as written (before stripping); `Some(None)` is `/dev/null`.
    old: Option<Option<String>>,
    new: Option<Option<String>>,
    git_paths: Option<(String, String)>,
    rename_from: Option<String>,
    rename_to: Option<String>,
    old_mode: Option<u32>,
    new_mode: Option<u32>,
    created: bool,
    deleted: bool,
    index: Option<(String, String)>,
    hunks: Vec<Hunk>,
}

/// A `---`/`+++` pair starting at `i`.
fn file_header_at(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
}

/// A line that closes the fence `open` (same character, at least as long, nothing after).
fn closes_fence(line: &str, open: &str) -> bool {
    let t = line.trim_end();
    let ch = open.as_bytes()[0];
    t.len() >= open.len() && t.bytes().all(|b| b == ch)
}

/// The marker of a fence that opens on `line` (```` ``` ````, `~~~`, longer).
fn opens_fence(line: &str) -> Option<&str> {
    let ch = *line
        .as_bytes()
        .first()
        .filter(|c| **c == b'`' || **c == b'~')?;
    let n = line.bytes().take_while(|b| *b == ch).count();
    (n >= 3).then(|| &line[..n])
}

/// A line that ends a hunk body whatever its first character: a hunk or git
/// header, a `---`/`+++` pair that opens a hunk (a removed `-- x` next to an
/// added `++ y` is body), or the line that closes the fence the diff sits in
/// (any other fence-like line is a line of the file).
fn ends_body(lines: &[&str], i: usize, fence: Option<&str>) -> bool {
    let l = lines[i];
    let opens_hunk =
        file_header_at(lines, i) && lines.get(i + 2).is_none_or(|n| n.starts_with("@@"));
    l.starts_with("@@")
        || l.starts_with("diff --git ")
        || opens_hunk
        || fence.is_some_and(|f| closes_fence(l, f))
}

/// Unquotes a C-style quoted path (`"a/with\ttab"`) as git writes it.
fn unquote(s: &str) -> String {
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return s.to_owned();
    };
    let mut out = Vec::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            i += 1;
            match bytes[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                d @ b'0'..=b'7' => {
                    let mut v = u32::from(d - b'0');
                    let mut k = 0;
                    while k < 2 && i + 1 < bytes.len() && (b'0'..=b'7').contains(&bytes[i + 1]) {
                        i += 1;
                        k += 1;
                        v = v * 8 + u32::from(bytes[i] - b'0');
                    }
                    out.push(v as u8);
                }
                other => out.push(other),
            }
        } else {
            out.push(bytes[i]);
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The path of a `---`/`+++` line: tab-separated timestamps dropped, quotes undone.
fn header_path(rest: &str) -> Option<String> {
    let mut p = rest.split('\t').next().unwrap_or(rest).trim_end();
    // A timestamp after a space instead of a tab: `--- f 2024-01-31 12:00:00 …`.
    if let Some(at) = p.find(|c: char| c.is_whitespace()) {
        let tail = p[at..].trim_start();
        let dated = tail.len() >= 10
            && tail.as_bytes()[..4].iter().all(u8::is_ascii_digit)
            && tail.as_bytes()[4] == b'-';
        if dated && !p.starts_with('"') {
            p = &p[..at];
        }
    }
    let p = unquote(p);
    (p != "/dev/null").then_some(p)
}

/// The two paths of `diff --git a/x b/y`.
fn git_paths(rest: &str) -> Option<(String, String)> {
    let rest = rest.trim();
    if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find('"')? + 2;
        let (a, b) = rest.split_at(end);
        return Some((unquote(a), unquote(b.trim())));
    }
    // Equal names: `a/p b/p`; otherwise split at the last " b/".
    let half = rest.len() / 2;
    if rest.len() % 2 == 1 && rest.as_bytes()[half] == b' ' {
        let (a, b) = (&rest[..half], &rest[half + 1..]);
        if a.get(2..) == b.get(2..) {
            return Some((a.to_owned(), b.to_owned()));
        }
    }
    let (a, b) = rest.rsplit_once(" b/")?;
    Some((a.to_owned(), format!("b/{b}")))
}

/// A file mode of a git header on input line `line`: only what git records
/// for a regular file, 100644 and 100755 (or 644 and 755), is accepted. A
/// symlink (120000) or a submodule (160000) is not a file lancet writes, and
/// any other mode (setuid 104755, world-writable 100777) is refused rather
/// than set on a file a model named.
fn parse_mode(s: &str, line: usize) -> Result<u32, ParseError> {
    match s.trim() {
        "100644" | "644" => Ok(0o644),
        "100755" | "755" => Ok(0o755),
        "120000" => Err(ParseError::Unsupported {
            line,
            what: "symlinks (mode 120000)",
        }),
        "160000" => Err(ParseError::Unsupported {
            line,
            what: "submodules (mode 160000)",
        }),
        other => Err(ParseError::BadMode {
            line,
            mode: other.chars().take(16).collect(),
        }),
    }
}

/// A side of a hunk header: 1-based start and optional count.
type Span = Option<(usize, Option<usize>)>;

/// `@@ -a,b +c,d @@ section`, `@@ -a +c @@`, `@@ @@`, `@@ ... @@`, `@@`.
fn parse_hunk_header(line: &str) -> Result<(Span, Span), ()> {
    let rest = line.trim_start_matches('@').trim_start();
    let middle = match rest.find("@@") {
        Some(end) => &rest[..end],
        None => rest,
    };
    let mut old = None;
    let mut new = None;
    for token in middle.split_whitespace() {
        // By character: a token may start with a multi-byte one.
        let mut chars = token.chars();
        let sign = chars.next().map(String::from).unwrap_or_default();
        let nums = chars.as_str();
        let sign = sign.as_str();
        let parse = |nums: &str| -> Result<(usize, Option<usize>), ()> {
            let (a, b) = match nums.split_once(',') {
                Some((a, b)) => (a, Some(b)),
                None => (nums, None),
            };
            let a = a.parse().map_err(|_| ())?;
            let b = b.map(|b| b.parse().map_err(|_| ())).transpose()?;
            Ok((a, b))
        };
        match sign {
            "-" if old.is_none() => old = Some(parse(nums)?),
            "+" if new.is_none() => new = Some(parse(nums)?),
            _ if token.chars().all(|c| c == '.') => {}
            _ => return Err(()),
        }
    }
    Ok((old, new))
}

/// Reads a hunk body from `start`; returns the hunk and the index after it.
fn read_body(lines: &[&str], start: usize, header: &Hunk, fence: Option<&str>) -> (Hunk, usize) {
    let counts = match (header.old, header.new) {
        (Some((_, Some(oc))), Some((_, Some(nc)))) => Some((oc, nc)),
        (Some((_, oc)), Some((_, nc))) => Some((oc.unwrap_or(1), nc.unwrap_or(1))),
        _ => None,
    };
    // Counted read first; if the counts do not fit the body, recount.
    if let Some((oc, nc)) = counts {
        let (mut o, mut n, mut j) = (0, 0, start);
        while j < lines.len() && (o < oc || n < nc) && !ends_body(lines, j, fence) {
            match lines[j].chars().next() {
                Some('-') => o += 1,
                Some('+') => n += 1,
                Some('\\') => {}
                // A context line, or one that lost its leading space: the counts
                // decide whether the whole hunk reads right that way.
                _ => {
                    o += 1;
                    n += 1;
                }
            }
            j += 1;
        }
        while j < lines.len() && lines[j].starts_with('\\') {
            j += 1;
        }
        let more = j < lines.len()
            && !ends_body(lines, j, fence)
            && matches!(lines[j].chars().next(), Some(' ' | '-' | '+'));
        if o == oc && n == nc && !more {
            return (body(lines, start, j, header), j);
        }
    }
    let mut j = start;
    while j < lines.len() && !ends_body(lines, j, fence) {
        match lines[j].chars().next() {
            None | Some(' ' | '-' | '+' | '\\') => j += 1,
            _ => break,
        }
    }
    // Blank lines at the end separate the diff from what follows.
    let mut end = j;
    while end > start && lines[end - 1].is_empty() {
        end -= 1;
    }
    (body(lines, start, end, header), j)
}

fn body(lines: &[&str], start: usize, end: usize, header: &Hunk) -> Hunk {
    let mut h = header.clone();
    for l in &lines[start..end] {
        match l.chars().next() {
            None => h.lines.push(HunkLine::Context(String::new())),
            Some(' ') => h.lines.push(HunkLine::Context(l[1..].to_owned())),
            Some('-') => h.lines.push(HunkLine::Remove(l[1..].to_owned())),
            Some('+') => h.lines.push(HunkLine::Add(l[1..].to_owned())),
            // Accepted by the counts: a context line that lost its leading space.
            Some(c) if c != '\\' => h.lines.push(HunkLine::Context((*l).to_owned())),
            Some('\\') => match h.lines.last() {
                Some(HunkLine::Context(_)) => {
                    h.old_missing_newline = true;
                    h.new_missing_newline = true;
                }
                Some(HunkLine::Remove(_)) => h.old_missing_newline = true,
                Some(HunkLine::Add(_)) => h.new_missing_newline = true,
                None => {}
            },
            _ => {}
        }
    }
    h
}

fn parse_text(input: &str, opts: DiffOptions) -> Result<Patch, ParseError> {
    let raw: Vec<&str> = input.split('\n').collect();
    let lines: Vec<&str> = raw
        .iter()
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut sections: Vec<Section> = Vec::new();
    // The fence the diff sits in, if any: its closing line ends a hunk.
    let mut fence: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        match fence {
            Some(f) if closes_fence(line, f) => {
                fence = None;
                i += 1;
                continue;
            }
            None => {
                if let Some(f) = opens_fence(line) {
                    fence = Some(f);
                    i += 1;
                    continue;
                }
            }
            Some(_) => {}
        }
        if let Some(rest) = line.strip_prefix("diff --git ") {
            sections.push(Section {
                git: true,
                git_paths: git_paths(rest),
                ..Section::default()
            });
            i += 1;
            continue;
        }
        if file_header_at(&lines, i) {
            let old = header_path(&line[4..]);
            let new = header_path(&lines[i + 1][4..]);
            let reuse = sections
                .last()
                .is_some_and(|s| s.git && s.old.is_none() && s.hunks.is_empty());
            if !reuse {
                sections.push(Section {
                    ..Section::default()
                });
            }
            if let Some(s) = sections.last_mut() {
                s.old = Some(old);
                s.new = Some(new);
            }
            i += 2;
            continue;
        }
        if line.starts_with("@@") {
            let (old, new) =
                parse_hunk_header(line).map_err(|()| ParseError::BadHunkHeader { line: i + 1 })?;
            let header = Hunk {
                old,
                new,
                lines: Vec::new(),
                old_missing_newline: false,
                new_missing_newline: false,
                source_line: i + 1,
                crlf_lines: Vec::new(),
            };
            let (mut hunk, next) = read_body(&lines, i + 1, &header, fence);
            // A hunk interrupted by a line that is none of ` `, `-`, `+` (a context
            // line that lost its leading space) must not end silently half-read.
            if let Some(&stray) = lines.get(next) {
                let prose = !stray.is_empty()
                    && !ends_body(&lines, next, fence)
                    && !matches!(stray.chars().next(), Some(' ' | '-' | '+' | '\\'));
                let resumes = lines[next + 1..]
                    .iter()
                    .find(|l| !l.is_empty())
                    .is_some_and(|l| {
                        matches!(l.chars().next(), Some(' ' | '-' | '+')) && !l.starts_with("--- ")
                    });
                let counted_short = matches!((header.old, header.new), (Some((_, Some(oc))), Some((_, Some(nc))))
                    if hunk.old_lines().len() < oc || hunk.new_lines().len() < nc);
                if prose && resumes && counted_short {
                    return Err(ParseError::BadHunkLine { line: next + 1 });
                }
            }
            if let Some(e) = cut_off(&hunk, &header, &lines[next..]) {
                return Err(e);
            }
            let body = &raw[i + 1..next];
            // The body's lines as `body` read them: every one but the
            // `\ No newline` markers, from the first on.
            hunk.crlf_lines = body
                .iter()
                .filter(|l| !l.starts_with('\\'))
                .take(hunk.lines.len())
                .map(|l| l.ends_with('\r'))
                .collect();
            if hunk.lines.is_empty() {
                return Err(ParseError::EmptyHunk { line: i + 1 });
            }
            if sections.is_empty() {
                sections.push(Section {
                    ..Section::default()
                });
            }
            if let Some(s) = sections.last_mut() {
                s.hunks.push(hunk);
            }
            i = next;
            continue;
        }
        if let Some(s) = sections
            .last_mut()
            .filter(|s| s.git && s.hunks.is_empty() && s.old.is_none())
        {
            if let Some(v) = line.strip_prefix("old mode ") {
                s.old_mode = Some(parse_mode(v, i + 1)?);
            } else if let Some(v) = line.strip_prefix("new mode ") {
                s.new_mode = Some(parse_mode(v, i + 1)?);
            } else if let Some(v) = line.strip_prefix("new file mode ") {
                s.created = true;
                s.new_mode = Some(parse_mode(v, i + 1)?);
            } else if let Some(v) = line.strip_prefix("deleted file mode ") {
                s.deleted = true;
                s.old_mode = Some(parse_mode(v, i + 1)?);
            } else if let Some(v) = line.strip_prefix("rename from ") {
                s.rename_from = Some(unquote(v));
            } else if let Some(v) = line.strip_prefix("rename to ") {
                s.rename_to = Some(unquote(v));
            } else if let Some(v) = line.strip_prefix("index ") {
                let ids = v.split_whitespace().next().unwrap_or("");
                if let Some((a, b)) = ids.split_once("..") {
                    s.index = Some((a.to_owned(), b.to_owned()));
                }
                if let Some(m) = v.split_whitespace().nth(1) {
                    let m = parse_mode(m, i + 1)?;
                    s.new_mode = s.new_mode.or(Some(m));
                    s.old_mode = s.old_mode.or(Some(m));
                }
            } else if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
                return Err(ParseError::BinaryPatch { line: i + 1 });
            } else if line.starts_with("copy from ") || line.starts_with("copy to ") {
                return Err(ParseError::Unsupported {
                    line: i + 1,
                    what: "copies",
                });
            }
        }
        i += 1;
    }
    let changes: Vec<FileChange> = sections
        .into_iter()
        .map(|s| section_change(s, opts))
        .collect::<Result<_, _>>()?;
    if changes.is_empty() {
        return Err(ParseError::NoEdits);
    }
    Ok(Patch {
        changes,
        notes: Vec::new(),
    })
}

/// Whether a hunk was cut off with the reply (unified-diff.md §1.4): its
/// header states both counts, its body holds fewer old or new lines, nothing
/// but empty lines follows it (no hunk, file header, closing fence or prose:
/// the input ends), and wrong counts do not explain the shortfall — the body
/// changes nothing, or ends on a `-` line (what replaces it was cut), or a
/// side is more
/// than [`USUAL_MISCOUNT`] lines short. Counts off by one or two on a hunk
/// that is whole are recounted, as before.
fn cut_off(hunk: &Hunk, header: &Hunk, rest: &[&str]) -> Option<ParseError> {
    let (Some((_, Some(oc))), Some((_, Some(nc)))) = (header.old, header.new) else {
        return None;
    };
    let (ro, rn) = (hunk.old_lines().len(), hunk.new_lines().len());
    // A hunk with no line at all is the empty-hunk error, whatever its counts.
    if hunk.lines.is_empty() || (ro >= oc && rn >= nc) || rest.iter().any(|l| !l.is_empty()) {
        return None;
    }
    let changes = hunk
        .lines
        .iter()
        .any(|l| matches!(l, HunkLine::Add(_) | HunkLine::Remove(_)));
    let ends_removing = matches!(hunk.lines.last(), Some(HunkLine::Remove(_)));
    let far = oc.saturating_sub(ro) > USUAL_MISCOUNT || nc.saturating_sub(rn) > USUAL_MISCOUNT;
    (!changes || ends_removing || far).then_some(ParseError::TruncatedHunk {
        line: hunk.source_line,
        stated_old: oc,
        stated_new: nc,
        read_old: ro,
        read_new: rn,
    })
}

/// How many lines a model's `@@` count is off by when the hunk is whole.
const USUAL_MISCOUNT: usize = 2;

/// Strips `n` leading components.
fn strip(path: &str, n: usize) -> String {
    let mut p = path;
    for _ in 0..n {
        match p.find('/') {
            Some(i) => p = &p[i + 1..],
            None => break,
        }
    }
    p.to_owned()
}

fn section_change(s: Section, opts: DiffOptions) -> Result<FileChange, ParseError> {
    // Paths: `---`/`+++` first, else the `diff --git` line; `a/`/`b/` dropped
    // for git diffs (and plain diffs that use them) unless `-p` says otherwise.
    let (old, new) = match (&s.old, &s.new, &s.git_paths) {
        (Some(o), Some(n), _) => (o.clone(), n.clone()),
        (_, _, Some((a, b))) => (
            (!s.created).then(|| a.clone()),
            (!s.deleted).then(|| b.clone()),
        ),
        _ => (None, None),
    };
    // git's `a/`/`b/` (and its mnemonic `i/`, `w/`, `c/`, `o/`) prefixes are dropped when
    // both paths carry one; `git diff --no-prefix` paths are kept whole.
    let one_letter = |p: &Option<String>| {
        p.as_deref().is_none_or(|p| {
            let b = p.as_bytes();
            b.len() > 2 && b[1] == b'/' && b"abiwco".contains(&b[0])
        })
    };
    let auto = one_letter(&old) && one_letter(&new) && (old.is_some() || new.is_some());
    let n = opts.strip.unwrap_or(usize::from(auto));
    let mut old = old.map(|p| strip(&p, n));
    let mut new = new.map(|p| strip(&p, n));
    if let Some(from) = &s.rename_from {
        old = Some(from.clone());
    }
    if let Some(to) = &s.rename_to {
        new = Some(to.clone());
    }
    let mut hunks = s.hunks;
    let mut base_blob = s.index.as_ref().map(|(a, _)| a.clone());
    let mut result_blob = s.index.as_ref().map(|(_, b)| b.clone());
    let (mut old_mode, mut new_mode) = (s.old_mode, s.new_mode);
    let (mut created, mut deleted) = (
        s.created || (old.is_none() && new.is_some()),
        s.deleted || (new.is_none() && old.is_some()),
    );
    if opts.reverse {
        std::mem::swap(&mut old, &mut new);
        std::mem::swap(&mut old_mode, &mut new_mode);
        std::mem::swap(&mut created, &mut deleted);
        hunks = hunks.iter().map(Hunk::reversed).collect();
        std::mem::swap(&mut base_blob, &mut result_blob);
    }
    base_blob = base_blob.filter(|b| !b.chars().all(|c| c == '0'));
    result_blob = result_blob.filter(|b| !b.chars().all(|c| c == '0'));
    let ops: Vec<EditOp> = hunks.into_iter().map(EditOp::Hunk).collect();
    let (path, action, rename_to) = if created {
        (new, Action::Create(ops), None)
    } else if deleted {
        (old, Action::Delete(ops), None)
    } else if s.git || s.rename_from.is_some() {
        let moved = (old != new).then(|| new.clone()).flatten();
        (old, Action::Edit(ops), moved)
    } else {
        // A plain diff edits its old file, as `patch` does when both exist;
        // `diff -u file.orig file` (a backup name on the old side) edits `file`.
        let backup = old.as_deref().is_some_and(|o| {
            [".orig", ".bak", ".old", "~"]
                .iter()
                .any(|suffix| o.ends_with(suffix))
        });
        let path = if backup { new.or(old) } else { old.or(new) };
        (path, Action::Edit(ops), None)
    };
    let mode = new_mode.filter(|m| old_mode != Some(*m) || created);
    Ok(FileChange {
        path,
        action,
        rename_to,
        mode,
        base_blob,
        result_blob,
    })
}

/// Whether `input` looks like a unified diff: a hunk header, or a file header pair.
pub(crate) fn looks_like(input: &str) -> Option<usize> {
    // Line by line with one line of lookahead (`file_header_at`'s): a diff
    // says so on its first line, and detection asks every format, so the
    // rest of a large diff is not split into a table first.
    let mut lines = input.lines().peekable();
    let mut i = 0;
    while let Some(line) = lines.next() {
        let header =
            line.starts_with("--- ") && lines.peek().is_some_and(|next| next.starts_with("+++ "));
        if line.starts_with("diff --git ")
            || header
            || (line.starts_with("@@ -") && parse_hunk_header(line).is_ok_and(|(o, _)| o.is_some()))
        {
            return Some(i);
        }
        i += 1;
    }
    None
}

// ------------------------------------------------------------------ resolving

/// The old side of ` `/`-`/`+` lines (a hunk's, an apply_patch chunk's) and
/// the ops that turn it into the new side.
pub(crate) fn ops_of(lines: &[HunkLine]) -> (Vec<&str>, Vec<Op>) {
    let mut old = Vec::new();
    let mut ops = Vec::new();
    for l in lines {
        match l {
            HunkLine::Context(t) => {
                ops.push(Op::Keep(old.len()));
                old.push(t.as_str());
            }
            HunkLine::Remove(t) => old.push(t.as_str()),
            HunkLine::Add(t) => ops.push(Op::Add(t.clone())),
        }
    }
    (old, ops)
}

fn strict(opts: &MatchOptions) -> MatchOptions {
    MatchOptions {
        max_tier: opts.max_tier.min(Tier::Unicode),
        nearest: false,
        ..opts.clone()
    }
}

/// How far a hunk's stated position may be trusted when its text occurs more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    /// Exactly: the file is the diff's pre-image, or the hunks around this one
    /// were found at the same offset.
    Exact,
    /// As a hint: the hunk has context, so a near candidate that clearly beats
    /// the others may be taken.
    Hint,
    /// Not at all (a context-free hunk in a file that is not the pre-image).
    None,
}

/// The one match to use among `found`, in this order: the only one; the one
/// exactly at the stated line (shifted by the learned offset) when position is
/// trusted exactly; for a numbered hunk whose shape says it ends (starts) the
/// file — no trailing (leading) context where the other side has some, as
/// `diff` writes at the edges — the only one at that edge; for a hunk with
/// context, the one exactly at the stated line, else the nearest to it when it
/// is less than half as far as the runner-up. Anything else is ambiguous.
fn choose(
    found: Vec<Match>,
    h: &Hunk,
    doc_len: usize,
    expected: Option<usize>,
    trust: Trust,
) -> Result<Match, EditError> {
    if found.len() == 1 {
        return found.into_iter().next().ok_or(EditError::BlankSearch);
    }
    let tier = found.first().map_or(Tier::Exact, |m| m.tier);
    let (lead, trail) = h.context_edges();
    let ends_file = h.old_missing_newline || (trail == 0 && lead > 0);
    let starts_file = lead == 0 && trail > 0 && h.stated_start() == Some(0);
    let only = |keep: &dyn Fn(&Match) -> bool| -> Option<Match> {
        let mut it = found.iter().filter(|m| keep(m));
        match (it.next(), it.next()) {
            (Some(m), None) => Some(m.clone()),
            _ => None,
        }
    };
    let at_expected = |m: &Match| Some(m.range.start) == expected;
    // A numbered hunk whose shape says it sits at an edge of the file (as
    // `diff` writes hunks there) prefers the candidate at that edge; a hunk
    // without numbers is a model's, whose context is uneven for no reason.
    let numbered = h.old.is_some();
    let picked = if trust == Trust::Exact {
        only(&at_expected)
    } else {
        None
    }
    .or_else(|| {
        if numbered && ends_file {
            only(&|m| m.range.end == doc_len)
        } else {
            None
        }
    })
    .or_else(|| {
        if numbered && starts_file {
            only(&|m| m.range.start == 0)
        } else {
            None
        }
    })
    .or_else(|| {
        if trust == Trust::Hint {
            only(&at_expected)
        } else {
            None
        }
    })
    .or_else(|| match (trust, expected) {
        (Trust::Hint, Some(e)) => {
            let starts: Vec<usize> = found.iter().map(|m| m.range.start).collect();
            matcher::pick_by_hint(&starts, e).map(|i| found[i].clone())
        }
        _ => None,
    });
    match picked {
        Some(mut m) => {
            m.by_hint = true;
            Ok(m)
        }
        None => Err(EditError::Ambiguous {
            tier,
            candidates: found.iter().map(Candidate::from).collect(),
        }),
    }
}

fn resolve_hunk(
    h: &Hunk,
    doc: &Document,
    ctx: &ResolveContext<'_>,
) -> Result<Resolution, EditError> {
    // A diff of a BOM file quotes the BOM on its first line; the document keeps
    // the BOM apart from the lines, so the quoted one is dropped.
    let stripped;
    let h = if doc.has_bom() && h.lines.iter().any(|l| line_text(l).starts_with('\u{feff}')) {
        let mut c = h.clone();
        for l in &mut c.lines {
            let (HunkLine::Context(t) | HunkLine::Remove(t) | HunkLine::Add(t)) = l;
            if let Some(rest) = t.strip_prefix('\u{feff}') {
                *t = rest.to_owned();
            }
        }
        stripped = c;
        &stripped
    } else {
        h
    };
    let opts = ctx.matching;
    let (old, ops) = ops_of(&h.lines);
    let expected = h
        .stated_start()
        .map(|s| (s as isize + ctx.offset).max(0) as usize);
    let final_newline = match (h.old_missing_newline, h.new_missing_newline) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    };
    // No old side: pure insertion placed by position alone.
    if old.is_empty() {
        let n = doc.line_count();
        let at = expected.unwrap_or(0).min(n);
        let new: Vec<String> = h.new_lines().iter().map(|s| (*s).to_owned()).collect();
        // A re-sent bracketed insertion: the hunks around it were found already
        // applied, so the offset is the post-image's, and its lines already
        // stand word for word at its new-side line shifted by it.
        if ctx.bracketed && !ctx.verified && !new.is_empty() {
            let start = h
                .new_stated_start()
                .map(|s| (s as isize + ctx.offset).max(0) as usize);
            if let Some(s) = start.filter(|s| s + new.len() <= n)
                && (s..s + new.len()).zip(&new).all(|(i, l)| doc.line(i) == l)
            {
                let mut r = already(s..s + new.len());
                r.offset = Some(ctx.offset);
                return Ok(r);
            }
        }
        if doc.is_empty() || ctx.verified || ctx.bracketed || h.stated_start() == Some(0) && n == 0
        {
            let mut r = Resolution::status(EditStatus::Applied);
            r.eol = h.crlf().then_some(Eol::CrLf);
            // An empty file (or a new one) has no endings of its own to
            // give: the lines end as the diff ends them.
            let eols = (n == 0).then(|| h.literal_endings_at(doc, 0..0)).flatten();
            r.pieces = vec![splice::Piece {
                range: at..at,
                lines: new,
                eols,
            }];
            r.lines = Some(at..at);
            r.final_newline = final_newline.filter(|_| at == n);
            return Ok(r);
        }
        return Err(EditError::Unplaceable);
    }
    let trust = if ctx.verified || ctx.bracketed {
        Trust::Exact
    } else if h.has_context() {
        Trust::Hint
    } else {
        Trust::None
    };
    let position_trusted = trust != Trust::None;
    // `lead`: leading context lines fuzz dropped, so the hunk's own first line
    // sits that far above the match.
    let place = |m: Match,
                 warnings: Vec<Warning>,
                 needle: &[&str],
                 ops: &[Op],
                 lead: usize|
     -> Resolution {
        let mut pieces = splice::splice(doc, needle, &m, ops);
        if let Some(eols) = h.literal_endings(doc, &m) {
            splice::state_endings(&mut pieces, &eols);
        }
        let touches_end = m.range.end == doc.line_count();
        let mut r = Resolution::status(EditStatus::Applied);
        r.final_newline = final_newline.filter(|_| touches_end);
        r.eol = h.crlf().then_some(Eol::CrLf);
        r.tier = Some(m.tier);
        r.similarity = Some(m.similarity);
        if let Some(s) = h.stated_start() {
            let off = m.range.start as isize - lead as isize - s as isize;
            r.offset = Some(off);
            if off != 0 {
                r.warnings.push(Warning::Offset { lines: off });
            }
        }
        r.warnings.extend(warnings);
        r.lines = Some(m.range.clone());
        // Lines rewritten to themselves are no change at all.
        r.pieces = pieces.into_iter().filter(|p| p.changes(doc)).collect();
        if r.pieces.is_empty() && r.final_newline.is_none_or(|w| w == doc.has_final_newline()) {
            r.status = EditStatus::AlreadyApplied;
        }
        r
    };
    let new = h.new_lines();
    let expected_new = h
        .new_stated_start()
        .map(|s| (s as isize + ctx.offset).max(0) as usize);
    let already_at = |range: Range<usize>| {
        let mut r = already(range.clone());
        r.offset = h
            .new_stated_start()
            .map(|s| range.start as isize - s as isize);
        r
    };
    // The new side word for word (exact tier): evidence the hunk is already in.
    // Only a new side that adds a line the old side lacks proves anything by
    // being there (locate.md): a deletion's new side is its context, which
    // stands in the file whether or not the deletion was made.
    // Both looked at only when a step below needs them: a hunk placed at its
    // stated line of a verified file (step 0) needs neither.
    let proves_once = std::cell::OnceCell::new();
    let proves = || *proves_once.get_or_init(|| super::locate::proves_applied(&old, &new));
    let shows_once = std::cell::OnceCell::new();
    let shows =
        || *shows_once.get_or_init(|| super::locate::deletion_shows(&old, &kept_lines(&h.lines)));
    let new_exactly = || -> Vec<Match> {
        if new.is_empty() || !h.has_context() || !proves() {
            return Vec::new();
        }
        let exact = MatchOptions {
            max_tier: Tier::Exact,
            nearest: false,
            ..opts.clone()
        };
        matcher::locate_all(doc, &new, &exact).unwrap_or_default()
    };
    // 0. A verified file is the diff's pre-image: a hunk whose old side stands
    //    word for word at its stated line is placed there, as step 1 would
    //    (an exact match at the expected line wins under exact trust), without
    //    searching the whole file for its twins.
    if let Some(e) = expected.filter(|_| ctx.verified) {
        let here = e + old.len() <= doc.line_count()
            && old.iter().enumerate().all(|(i, l)| doc.line(e + i) == *l);
        if here {
            let m = Match {
                range: e..e + old.len(),
                tier: Tier::Exact,
                similarity: 1.0,
                alignment: (e..e + old.len()).map(Some).collect(),
                by_hint: false,
            };
            if let Some(done) = appended_at_end(h, doc, &m, &new) {
                return Ok(already_at(done));
            }
            return Ok(place(m, Vec::new(), &old, &ops, 0));
        }
    }
    // 1. The whole old side, strict tiers — unless the old side was found only
    //    tolerantly or away from the stated line while the new side is there
    //    word for word: then the hunk was applied before (a re-sent hunk must
    //    not land on a twin of its old text, or again through blank-line drift).
    match matcher::locate_all(doc, &old, &strict(opts)) {
        Ok(found) => {
            let tolerant = found.first().is_some_and(|m| m.tier > Tier::Exact);
            let at_expected = expected.is_some_and(|e| found.iter().any(|m| m.range.start == e));
            if tolerant || !at_expected {
                let done = new_exactly();
                let hit = done
                    .iter()
                    .find(|m| Some(m.range.start) == expected_new)
                    .or_else(|| done.first().filter(|_| tolerant && done.len() == 1));
                if let Some(m) = hit {
                    return Ok(already_at(m.range.clone()));
                }
            }
            let m = choose(found, h, doc.line_count(), expected, trust)?;
            if let Some(done) = appended_at_end(h, doc, &m, &new) {
                return Ok(already_at(done));
            }
            return Ok(place(m, Vec::new(), &old, &ops, 0));
        }
        Err(MatchError::NotFound { .. }) => {}
        Err(e) => return Err(unplaceable_if_empty(e)),
    }
    // 2. Already applied: the new side is there (and the hunk says something
    //    besides position: context, or a verified file), it adds a line the
    //    old side lacks, and it stands where the old side would have matched.
    //    A deletion's new side is looked for only once the old side is found
    //    nowhere, not even approximately (step 5).
    let done_by_new = |require_proof: bool| -> Option<Resolution> {
        if new.is_empty() || !(h.has_context() || ctx.verified) {
            return None;
        }
        let allowed = if require_proof {
            proves()
        } else {
            !proves()
                && (ctx.verified || shows() && !super::locate::short_quote_near(doc, &old, opts))
        };
        if !allowed {
            return None;
        }
        let found = matcher::locate_all(doc, &new, &strict(opts)).ok()?;
        let m = choose(found, h, doc.line_count(), expected_new, trust).ok()?;
        let at_hint = ctx.verified || ctx.bracketed || Some(m.range.start) == expected_new;
        (!require_proof || super::locate::applied_here(doc, &old, m.range.clone(), at_hint, opts))
            .then(|| already_at(m.range))
    };
    if let Some(r) = done_by_new(true) {
        return Ok(r);
    }
    // 3. Fuzz: drop outer context lines, keeping the rest unique.
    let (lead, trail) = h.context_edges();
    // At most two context lines in all, from the ends only, and at least one
    // context line kept: a hunk is never placed by its changed lines alone.
    let context = h
        .lines
        .iter()
        .filter(|l| matches!(l, HunkLine::Context(_)))
        .count();
    for (drop_lead, drop_trail) in [(1, 0), (0, 1), (1, 1), (2, 0), (0, 2)] {
        if drop_lead > lead || drop_trail > trail || drop_lead + drop_trail >= context {
            continue;
        }
        let inner = &h.lines[drop_lead..h.lines.len() - drop_trail];
        let (needle, inner_ops) = ops_of(inner);
        if needle.iter().all(|l| l.trim().is_empty()) {
            continue;
        }
        // What remains must match at its own indentation: a remainder found
        // only at another one lost the lines that showed how the block is
        // indented, and its new lines would be re-indented by a guess.
        let as_written = MatchOptions {
            max_tier: opts.max_tier.min(Tier::Whitespace),
            ..strict(opts)
        };
        if let Ok(found) = matcher::locate_all(doc, &needle, &as_written)
            && let [m] = found.as_slice()
        {
            let w = vec![Warning::Fuzz {
                dropped: drop_lead + drop_trail,
            }];
            return Ok(place(m.clone(), w, &needle, &inner_ops, drop_lead));
        }
    }
    // 4. The fuzzy tier (locate.md: every quoted line alike, context or
    //    `-`); several close places are settled like the strict tiers: only
    //    the one exactly at the stated line, never the nearest.
    let mut failure = None;
    if opts.max_tier == Tier::Fuzzy {
        let kept = kept_lines(&h.lines);
        let found = match super::locate::approximate(doc, &old, &new, &kept, None, opts) {
            Err(MatchError::Ambiguous { candidates, .. })
                if position_trusted
                    && expected.is_some_and(|e| candidates.iter().any(|c| c.range.start == e)) =>
            {
                super::locate::approximate(doc, &old, &new, &kept, expected, opts)
            }
            other => other,
        };
        match found {
            Ok(m) => return Ok(place(m, Vec::new(), &old, &ops, 0)),
            // (A `-` line naming another word or value: `settle` quotes
            // the place as the nearest.)
            Err(e @ MatchError::NotFound { .. }) => failure = Some(e),
            Err(e) => return Err(unplaceable_if_empty(e)),
        }
    }
    // 5. A deletion re-sent: its old side is nowhere, even approximately,
    //    and its context lines stand together.
    if let Some(r) = done_by_new(false) {
        return Ok(r);
    }
    if let Some(e) = failure {
        return Err(unplaceable_if_empty(e));
    }
    let nearest = MatchOptions {
        nearest: true,
        ..opts.clone()
    };
    Err(match matcher::locate(doc, &old, expected, &nearest) {
        Err(e) => unplaceable_if_empty(e),
        Ok(_) => EditError::NotFound {
            nearest: Vec::new(),
            bounded: false,
            after_edit: None,
        },
    })
}

/// A hunk that ends with added lines (no trailing context) appends after
/// context that stood at the end of the file it was made from, and context at
/// the end must stay at the end. When its old side was found short of the end
/// and the new side stands right there, word for word, reaching the end, the
/// hunk was applied before: re-sent, it must not append a second time.
fn appended_at_end(h: &Hunk, doc: &Document, m: &Match, new: &[&str]) -> Option<Range<usize>> {
    let ends_with_addition = matches!(h.lines.last(), Some(HunkLine::Add(_)));
    let n = doc.line_count();
    let start = m.range.start;
    let fits = start + new.len() == n && m.range.end < n;
    (ends_with_addition
        && h.has_context()
        && fits
        && (start..n).zip(new).all(|(i, l)| doc.line(i) == *l))
    .then_some(start..n)
}

/// For each old-side line (context and `-`), whether the hunk keeps it.
pub(super) fn kept_lines(lines: &[HunkLine]) -> Vec<bool> {
    lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Context(_) => Some(true),
            HunkLine::Remove(_) => Some(false),
            HunkLine::Add(_) => None,
        })
        .collect()
}

fn line_text(l: &HunkLine) -> &str {
    match l {
        HunkLine::Context(t) | HunkLine::Remove(t) | HunkLine::Add(t) => t,
    }
}

fn already(range: Range<usize>) -> Resolution {
    let mut r = Resolution::status(EditStatus::AlreadyApplied);
    r.tier = Some(Tier::Exact);
    r.similarity = Some(1.0);
    r.lines = Some(range);
    r
}

/// A matcher error as an edit error; an empty needle here is a hunk with no old side.
fn unplaceable_if_empty(e: MatchError) -> EditError {
    match e {
        MatchError::EmptyNeedle => EditError::Unplaceable,
        other => other.into(),
    }
}

// ------------------------------------------------------------------ rendering

/// A unified diff of `before` → `after` (`None` path: `/dev/null`), with
/// `\ No newline at end of file` markers; empty when nothing changed.
pub fn render_unified(
    old_path: Option<&str>,
    new_path: Option<&str>,
    before: &str,
    after: &str,
    context: usize,
) -> String {
    if before == after {
        return String::new();
    }
    let old = old_path.map_or_else(|| "/dev/null".to_owned(), |p| format!("a/{p}"));
    let new = new_path.map_or_else(|| "/dev/null".to_owned(), |p| format!("b/{p}"));
    // Two large regions with nothing in common cost the diff minutes (n·d);
    // past a second it settles for a coarser diff, which is still correct.
    similar::TextDiff::configure()
        .timeout(std::time::Duration::from_secs(1))
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(context)
        .missing_newline_hint(true)
        .header(&old, &new)
        .to_string()
}

impl FormatEdit for Hunk {
    fn kind(&self) -> EditKind {
        EditKind::Hunk
    }

    fn source_line(&self) -> usize {
        self.source_line
    }

    fn resolve(&self, doc: &Document, ctx: &ResolveContext<'_>) -> Result<Resolution, EditError> {
        resolve_hunk(self, doc, ctx)
    }
}

// ------------------------------------------------------------------ tool calls

/// The edit tool's arguments: the diff, under `diff` (or `patch`, `input`,
/// which detection also takes for a diff).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolArgs {
    diff: Arg<String>,
    patch: Arg<String>,
    input: Arg<String>,
}

/// Whether a JSON object is a diff tool call: a `diff`, or text under `input`
/// or `patch` (what apply_patch does not claim first).
fn is_tool_call(args: &Value) -> bool {
    fields::<ToolArgs>(args)
        .is_some_and(|a| a.diff.is_given() || a.input.or(a.patch).given().is_some())
}

/// Parses tool-call arguments with options (`-p`, `-R`).
fn parse_tool_call(args: &Value, opts: DiffOptions) -> Result<Patch, ParseError> {
    let a: ToolArgs = fields(args).ok_or_else(|| bad("json", "a JSON object"))?;
    let diff = a
        .diff
        .or(a.patch)
        .or(a.input)
        .required("diff", "a string holding a unified diff")?;
    parse_text(&diff, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `looks_like` reads line by line with one line of lookahead; it says
    /// what the search over a table of every line said.
    #[test]
    fn looks_like_is_the_search_over_all_lines() {
        let table = |input: &str| {
            let lines: Vec<&str> = input.lines().collect();
            (0..lines.len()).find(|&i| {
                lines[i].starts_with("diff --git ")
                    || file_header_at(&lines, i)
                    || (lines[i].starts_with("@@ -")
                        && parse_hunk_header(lines[i]).is_ok_and(|(o, _)| o.is_some()))
            })
        };
        let pieces = [
            "text\n",
            "diff --git a/x b/x\n",
            "--- a/x\n",
            "+++ b/x\n",
            "@@ -1 +1 @@\n",
            "@@ -1,2 +0,0 @@\n",
            "@@ bad\n",
            "--- \n",
            "+++ \n",
            "-x\n",
            "+y\n",
            "\n",
            "--- a",
            "+++ b",
        ];
        // Every sequence of up to four pieces.
        let mut inputs = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = inputs
                .iter()
                .flat_map(|s| pieces.iter().map(move |p| format!("{s}{p}")))
                .collect();
            inputs.extend(longer);
        }
        inputs.sort();
        inputs.dedup();
        for input in &inputs {
            assert_eq!(looks_like(input), table(input), "{input:?}");
        }
    }

    #[test]
    fn hunk_headers() {
        assert_eq!(
            parse_hunk_header("@@ -5,6 +5,11 @@ def f():"),
            Ok((Some((5, Some(6))), Some((5, Some(11)))))
        );
        assert_eq!(
            parse_hunk_header("@@ -5 +5 @@"),
            Ok((Some((5, None)), Some((5, None))))
        );
        assert_eq!(parse_hunk_header("@@ @@"), Ok((None, None)));
        assert_eq!(parse_hunk_header("@@ ... @@"), Ok((None, None)));
        assert_eq!(parse_hunk_header("@@"), Ok((None, None)));
        assert!(parse_hunk_header("@@ -x,1 +1 @@").is_err());
    }

    #[test]
    fn git_path_forms() {
        assert_eq!(
            git_paths("a/x.rs b/x.rs"),
            Some(("a/x.rs".into(), "b/x.rs".into()))
        );
        assert_eq!(
            git_paths("a/old name.rs b/new name.rs"),
            Some(("a/old name.rs".into(), "b/new name.rs".into()))
        );
        assert_eq!(
            git_paths("\"a/t\\tab\" \"b/t\\tab\""),
            Some(("a/t\tab".into(), "b/t\tab".into()))
        );
    }

    #[test]
    fn parses_git_diff_with_headers() {
        let d = "diff --git a/run.sh b/bin/run.sh\nold mode 100644\nnew mode 100755\nsimilarity index 90%\nrename from run.sh\nrename to bin/run.sh\nindex 1234567..89abcde\n--- a/run.sh\n+++ b/bin/run.sh\n@@ -1,2 +1,2 @@\n #!/bin/sh\n-echo a\n+echo b\n";
        let p = parse_text(d, DiffOptions::default()).unwrap();
        let c = &p.changes[0];
        assert_eq!(c.path.as_deref(), Some("run.sh"));
        assert_eq!(c.rename_to.as_deref(), Some("bin/run.sh"));
        assert_eq!(c.mode, Some(0o755));
        assert_eq!(c.base_blob.as_deref(), Some("1234567"));
        assert_eq!(c.action.ops().len(), 1);
    }

    #[test]
    fn recounts_wrong_counts_and_stops_at_prose() {
        let d = "```diff\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n d\n```\nDone.\n";
        let p = parse_text(d, DiffOptions::default()).unwrap();
        let EditOp::Hunk(h) = &p.changes[0].action.ops()[0] else {
            panic!()
        };
        assert_eq!(h.lines.len(), 4);
    }

    #[test]
    fn no_newline_markers() {
        let d = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n";
        let p = parse_text(d, DiffOptions::default()).unwrap();
        let EditOp::Hunk(h) = &p.changes[0].action.ops()[0] else {
            panic!()
        };
        assert!(h.old_missing_newline && !h.new_missing_newline);
    }
}
