//! Hashline: the model sees every line as `LINE:HASH|content` and edits by
//! anchor instead of retyping old text. The spec is `edit-formats/hashline.md`;
//! the format's definition (`DEF`) is at the top of this module, and the hash
//! itself is the text model's ([`line_hash`]).
//!
//! The hash is 3 letters from a 16-letter alphabet (4,096 values) over the
//! line without its ending and trailing whitespace. Collisions are tolerated:
//! the line number identifies the line, the hash only proves the model saw
//! the current content.
//!
//! Every anchor of an edit is verified before anything is written. Each
//! anchor yields the displacements its content allows (the content echoed
//! after `|`, or from the version the caller says the model saw, or the
//! stated line's own when its hash matches, found within a window around
//! the stated line): relocation compares content, never the hash alone.
//! The edits of one file in one input are placed together: each takes a
//! displacement all its anchors allow; when every edit allows 0 they stay in
//! place, otherwise the order of the edits (the lines between two edits
//! shrink only by deletion) narrows them, and an edit left with several
//! places is refused naming them, as one with none is stale; the feedback
//! shows fresh anchors. Invariant: the anchors of one edit never resolve
//! with two different displacements, and an edit moves only to the one
//! place its anchors and the call's order leave.
//!
//! Repairs (each reported): anchor prefixes echoed into every payload line
//! are stripped; a range replacement whose payload restates the lines just
//! before *and* after the range drops both echoes; an insertion whose payload
//! restates its anchor line does not duplicate it.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;

use super::tool_args::{Arg, Fields, bad, fields};
use super::{
    Action, EditOp, FileChange, FormatDef, FormatEdit, Patch, Removal, Resolution, ResolveContext,
    push_edit,
};
use crate::matcher::{Match, Tier};
use crate::report::{EditError, EditKind, EditStatus, ParseError, Warning};
use crate::splice::{self, Piece};
use crate::text::{Document, line_hash};

/// The hashline format's definition.
pub(crate) static DEF: FormatDef = FormatDef {
    name: "hashline",
    summary: "hashline anchors: the model sees LINE:HASH|code and edits lines by anchor",
    instructions: include_str!("../../edit-formats/hashline.prompt.md"),
    tool: include_str!("../../edit-formats/hashline.tool.json"),
    detect: looks_like,
    detect_last: false,
    detect_tool_call: is_tool_call,
    tool_call_rank: 1,
    parse: |input, _| parse_text(input),
    parse_tool_call: |args, _| parse_json(args),
    render,
    view,
};

/// How far (in lines, each way) an anchor is looked for when its line moved.
pub(crate) const RELOCATION_WINDOW: usize = 20;

/// A reference to a line: `40:ZPM`, optionally with the content echoed (`40:ZPM|code`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    /// 1-based line number.
    pub line: usize,
    /// The hash as written (upper case).
    pub hash: String,
    /// The line's content, when the model echoed it.
    pub content: Option<String>,
}

impl Anchor {
    /// Parses `LINE:HASH` or `LINE:HASH|content`.
    pub fn parse(s: &str) -> Option<Anchor> {
        let s = s.trim_start();
        let (head, content) = match s.split_once('|') {
            Some((h, c)) => (h.trim(), Some(c.to_owned())),
            None => (s.trim(), None),
        };
        let (line, hash) = head.split_once(':')?;
        let line: usize = line.trim().parse().ok().filter(|&l| l >= 1)?;
        let hash = hash.trim().to_ascii_uppercase();
        if hash.is_empty() || hash.len() > 8 || !hash.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return None;
        }
        Some(Anchor {
            line,
            hash,
            content,
        })
    }

    fn text(&self) -> String {
        format!("{}:{}", self.line, self.hash)
    }
}

/// One hashline edit.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AnchorOp {
    /// Replace lines `start..=end` (an empty payload deletes them).
    Replace {
        /// First line.
        start: Anchor,
        /// Last line (the same as `start` for one line).
        end: Anchor,
        /// The new lines.
        lines: Vec<String>,
    },
    /// Insert after a line.
    InsertAfter {
        /// The line.
        anchor: Anchor,
        /// The new lines.
        lines: Vec<String>,
    },
    /// Insert before a line.
    InsertBefore {
        /// The line.
        anchor: Anchor,
        /// The new lines.
        lines: Vec<String>,
    },
    /// Replace the whole file (or create it).
    SetFile {
        /// The file's lines.
        lines: Vec<String>,
    },
}

/// An anchor edit with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorEdit {
    /// The operation.
    pub op: AnchorOp,
    /// 1-based input line of the directive (0 for JSON).
    pub source_line: usize,
    /// The anchors of every edit the same input gives for the same file
    /// (this edit's included): the call's evidence of how far the file
    /// moved, which places an edit its own anchors leave open (spec §5.1).
    pub call: std::sync::Arc<CallAnchors>,
    /// This edit's place among `call`'s edits.
    pub call_index: usize,
}

// ------------------------------------------------------------------ parsing

/// A directive line: `@@ file PATH`, `@@ replace A [B]`, `@@ insert after A`,
/// `@@ insert before A`, `@@ delete A [B]`, `@@ set file`, `@@ delete file`.
#[derive(Debug)]
enum Directive {
    File(String),
    Replace(Anchor, Anchor),
    Delete(Anchor, Anchor),
    After(Anchor),
    Before(Anchor),
    SetFile,
    DeleteFile,
}

/// One or two anchors: `A`, `A B`, `A..B`, `A-B`, `A, B`; an anchor may echo
/// its content after `|` (spaces included), so the second anchor is found as
/// a later `LINE:HASH` token rather than by splitting on spaces. An echo may
/// itself hold such tokens (`r[0:n]`) and end in what looks like a separator
/// (`alpha one,`): of the readings, the first whose echoes hash to their
/// anchors wins, else the first that parses.
fn anchors(rest: &str) -> Option<(Anchor, Anchor)> {
    let rest = rest.trim();
    let bytes = rest.as_bytes();
    // Start offsets of `digits:LETTERS` tokens that begin a word.
    let token_at = |i: usize| -> bool {
        (i == 0 || !bytes[i - 1].is_ascii_alphanumeric()) && bytes[i].is_ascii_digit() && {
            let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            let j = i + digits;
            j < bytes.len()
                && bytes[j] == b':'
                && bytes.get(j + 1).is_some_and(u8::is_ascii_alphabetic)
        }
    };
    let starts: Vec<usize> = (0..bytes.len()).filter(|&i| token_at(i)).collect();
    if starts.first() != Some(&0) {
        return None;
    }
    let echo_holds = |a: &Anchor| a.content.as_deref().is_none_or(|c| line_hash(c) == a.hash);
    let mut readings: Vec<(Anchor, Anchor)> = Vec::new();
    for &second in &starts[1..] {
        let Some(b) = Anchor::parse(&rest[second..]) else {
            continue;
        };
        let head = rest[..second].trim_end();
        let bare = head.trim_end_matches(['.', '-', ',']).trim_end();
        // The separator stripped (`1:AB|x .. 2:CD`) first, then the echo as
        // written when its last character is the line's own (`one, 2:CD`).
        for first in [bare, head] {
            if let Some(a) = Anchor::parse(first) {
                readings.push((a, b.clone()));
            }
        }
    }
    // The whole text as one anchor: an echo holding a `1:end` slice.
    if let Some(a) = Anchor::parse(rest) {
        readings.push((a.clone(), a));
    }
    let best = readings
        .iter()
        .position(|(a, b)| echo_holds(a) && echo_holds(b))
        .unwrap_or(0);
    (!readings.is_empty()).then(|| readings.swap_remove(best))
}

fn directive(line: &str) -> Option<Result<Directive, ()>> {
    let rest = line.strip_prefix("@@ ")?.trim();
    let lower = rest.to_ascii_lowercase();
    let after = |prefix: &str| rest.get(prefix.len()..).map(str::trim);
    Some(if lower == "set file" {
        Ok(Directive::SetFile)
    } else if lower == "delete file" {
        Ok(Directive::DeleteFile)
    } else if lower.starts_with("file ") {
        Ok(Directive::File(after("file ").unwrap_or("").to_owned()))
    } else if lower.starts_with("replace ") {
        anchors(after("replace ").unwrap_or(""))
            .map(|(a, b)| Directive::Replace(a, b))
            .ok_or(())
    } else if lower.starts_with("delete ") {
        anchors(after("delete ").unwrap_or(""))
            .map(|(a, b)| Directive::Delete(a, b))
            .ok_or(())
    } else if lower.starts_with("insert after ") {
        Anchor::parse(after("insert after ").unwrap_or(""))
            .map(Directive::After)
            .ok_or(())
    } else if lower.starts_with("insert before ") {
        Anchor::parse(after("insert before ").unwrap_or(""))
            .map(Directive::Before)
            .ok_or(())
    } else {
        return None;
    })
}

/// A Markdown code fence: its character (`` ` `` or `~`) and length.
#[derive(Debug, Clone, Copy)]
struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    /// Whether `l` closes this fence: the same character, at least as many,
    /// nothing else but whitespace.
    fn closed_by(self, l: &str) -> bool {
        let t = l.trim();
        let n = t.chars().take_while(|&c| c == self.ch).count();
        n >= self.len && n == t.chars().count()
    }
}

/// `l` as an opening fence: 3 or more `` ` `` or `~`, then an optional info string.
fn fence(l: &str) -> Option<Fence> {
    let t = l.trim_start();
    let ch = t.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = t.chars().take_while(|&c| c == ch).count();
    // A backtick fence's info string holds no backtick (CommonMark).
    let info_ok = ch == '~' || !t[len..].contains('`');
    (len >= 3 && info_ok).then_some(Fence { ch, len })
}

/// Whether `input` uses the hashline text syntax: the first directive's line.
pub(crate) fn looks_like(input: &str) -> Option<usize> {
    input
        .lines()
        .position(|l| matches!(directive(l), Some(Ok(_))))
}

fn parse_text(input: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = input
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut changes: Vec<FileChange> = Vec::new();
    let mut path: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let Some(d) = directive(lines[i]) else {
            i += 1;
            continue;
        };
        let at = i + 1;
        let d: Result<Directive, ()> = d;
        if d.is_err() {
            return Err(ParseError::BadDirective { line: at });
        }
        let takes_payload = matches!(
            d,
            Ok(Directive::Replace(..)
                | Directive::After(_)
                | Directive::Before(_)
                | Directive::SetFile)
        );
        // The payload: `+` lines up to the next directive (other lines are separators or prose).
        let mut payload = Vec::new();
        let mut plain = Vec::new();
        let mut last_plus = 0;
        i += 1;
        // A payload wrapped in a code fence: the opening fence (the first
        // non-blank line after the directive) is skipped, and its closing
        // fence ends the payload.
        let mut opened: Option<(usize, Fence)> = None;
        if takes_payload {
            let first = (i..lines.len()).find(|&k| !lines[k].trim().is_empty());
            if let Some((k, f)) = first.and_then(|k| Some((k, fence(lines[k])?))) {
                opened = Some((k + 1, f));
                i = k + 1;
            }
        }
        let ends = |l: &str| {
            directive(l).is_some()
                || l.starts_with("```")
                || opened.is_some_and(|(_, f)| f.closed_by(l))
        };
        while i < lines.len() && !ends(lines[i]) {
            match lines[i].strip_prefix('+') {
                Some(l) => {
                    payload.push(l.to_owned());
                    last_plus = i + 1;
                }
                None if !lines[i].trim().is_empty() => plain.push(i + 1),
                None => {}
            }
            i += 1;
        }
        // Lines without `+` are never dropped silently: before or between `+`
        // lines, or as the whole payload, they are a mistake; after the last
        // `+` line they are prose.
        let stray = plain.iter().find(|&&l| payload.is_empty() || l < last_plus);
        if let (true, Some(&line)) = (takes_payload, stray) {
            return Err(ParseError::BadPayloadLine { line });
        }
        // A fence that leaves an edit without new lines is refused: taken as
        // written, it would delete the lines (or empty the file).
        if let (true, Some((line, _))) = (payload.is_empty(), opened) {
            return Err(ParseError::Unsupported {
                line,
                what: "code fences that leave a hashline edit without new lines (inside the fence, write each new line as `+` and its text; to delete lines, use `@@ delete`)",
            });
        }
        let Ok(d) = d else {
            return Err(ParseError::BadDirective { line: at });
        };
        let op = match d {
            Directive::File(p) => {
                path = Some(p);
                continue;
            }
            Directive::DeleteFile => {
                changes.push(FileChange {
                    action: Action::Remove(EditOp::RemoveFile(Removal { source_line: at })),
                    ..FileChange::edit(path.clone(), Vec::new())
                });
                continue;
            }
            Directive::Replace(start, end) => AnchorOp::Replace {
                start,
                end,
                lines: payload,
            },
            Directive::Delete(start, end) => AnchorOp::Replace {
                start,
                end,
                lines: Vec::new(),
            },
            Directive::After(anchor) => AnchorOp::InsertAfter {
                anchor,
                lines: payload,
            },
            Directive::Before(anchor) => AnchorOp::InsertBefore {
                anchor,
                lines: payload,
            },
            Directive::SetFile => AnchorOp::SetFile { lines: payload },
        };
        push_edit(
            &mut changes,
            path.clone(),
            EditOp::Anchor(AnchorEdit {
                op,
                source_line: at,
                call: Default::default(),
                call_index: 0,
            }),
        );
    }
    if changes.is_empty() {
        return Err(ParseError::NoEdits);
    }
    share_call_anchors(&mut changes);
    Ok(Patch {
        changes,
        notes: Vec::new(),
    })
}

/// The edit tool's arguments: `{path, edits: [{op, start, end, anchor, lines}]}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolArgs {
    path: Arg<String>,
    file_path: Arg<String>,
    edits: Arg<Vec<Arg<Fields<EditArgs>>>>,
}

/// One operation of the tool call.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EditArgs {
    op: Arg<String>,
    start: Arg<String>,
    end: Arg<String>,
    anchor: Arg<String>,
    lines: Arg<Option<Payload>>,
    /// What some models call `lines`.
    content: Arg<Option<Payload>>,
}

/// New lines: a list, or one text to split at its line breaks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Payload {
    Text(String),
    Lines(Vec<String>),
}

const EDITS: &str = "an array of {op, …} objects";
const OPS: &str = "one of replace, insert_after, insert_before, delete, set_file, delete_file";

/// Whether a JSON object is a hashline call: its first `edits` item has an `op`.
fn is_tool_call(args: &Value) -> bool {
    fields::<ToolArgs>(args).is_some_and(|a| match &a.edits {
        Arg::Given(items) => items
            .first()
            .and_then(Arg::given)
            .is_some_and(|Fields(e)| e.op.is_given()),
        _ => false,
    })
}

fn parse_json(args: &Value) -> Result<Patch, ParseError> {
    let a: ToolArgs = fields(args).ok_or_else(|| bad("json", "a JSON object"))?;
    let path = a.path.or(a.file_path).optional("path", "a string")?;
    let mut ops = Vec::new();
    let mut remove = false;
    for item in a.edits.required("edits", EDITS)? {
        let Fields(e) = item.required("edits", EDITS)?;
        let anchor = |arg: &Arg<String>, field: &str| -> Result<Anchor, ParseError> {
            arg.given()
                .and_then(|s| Anchor::parse(s))
                .ok_or_else(|| bad(field, "an anchor such as \"12:ZPM\""))
        };
        // `lines` when given (even as null), else `content`.
        let payload = e.lines.or(e.content);
        let lines = || -> Result<Vec<String>, ParseError> {
            Ok(
                match payload.optional("lines", "an array of strings")?.flatten() {
                    None => Vec::new(),
                    Some(Payload::Text(s)) => split_payload(&s),
                    Some(Payload::Lines(lines)) => lines,
                },
            )
        };
        // The first line: `start`, or `anchor` when `start` is not a readable anchor.
        let start = || anchor(&e.start, "start").or_else(|_| anchor(&e.anchor, "anchor"));
        // A missing `end` is the start line; a malformed one is an error.
        let end = |start: &Anchor| match &e.end {
            Arg::Missing => Ok(start.clone()),
            given => anchor(given, "end"),
        };
        let op = match e.op.required("op", OPS)?.as_str() {
            "replace" => {
                let start = start()?;
                let end = end(&start)?;
                AnchorOp::Replace {
                    start,
                    end,
                    lines: lines()?,
                }
            }
            "delete" => {
                let start = start()?;
                let end = end(&start)?;
                AnchorOp::Replace {
                    start,
                    end,
                    lines: Vec::new(),
                }
            }
            "insert_after" | "append" => AnchorOp::InsertAfter {
                anchor: anchor(&e.anchor, "anchor")?,
                lines: lines()?,
            },
            "insert_before" | "prepend" => AnchorOp::InsertBefore {
                anchor: anchor(&e.anchor, "anchor")?,
                lines: lines()?,
            },
            "set_file" => AnchorOp::SetFile { lines: lines()? },
            "delete_file" => {
                remove = true;
                continue;
            }
            _ => return Err(bad("op", OPS)),
        };
        ops.push(EditOp::Anchor(AnchorEdit {
            op,
            source_line: 0,
            call: Default::default(),
            call_index: 0,
        }));
    }
    let mut changes = Vec::new();
    if !ops.is_empty() {
        changes.push(FileChange::edit(path.clone(), ops));
    }
    if remove {
        changes.push(FileChange {
            action: Action::Remove(EditOp::RemoveFile(Removal { source_line: 0 })),
            ..FileChange::edit(path, Vec::new())
        });
    }
    if changes.is_empty() {
        return Err(ParseError::NoEdits);
    }
    share_call_anchors(&mut changes);
    Ok(Patch {
        changes,
        notes: Vec::new(),
    })
}

/// The anchors of one operation.
fn op_anchors(op: &AnchorOp) -> Vec<&Anchor> {
    match op {
        AnchorOp::Replace { start, end, .. } if start == end => vec![start],
        AnchorOp::Replace { start, end, .. } => vec![start, end],
        AnchorOp::InsertAfter { anchor, .. } | AnchorOp::InsertBefore { anchor, .. } => {
            vec![anchor]
        }
        AnchorOp::SetFile { .. } => Vec::new(),
    }
}

/// Gives every anchor edit the anchors of all edits of its file in this input
/// (sections naming one path are gathered, as the engine gathers them).
fn share_call_anchors(changes: &mut [FileChange]) {
    fn edits(c: &mut FileChange) -> Vec<&mut AnchorEdit> {
        match &mut c.action {
            Action::Edit(ops) | Action::Create(ops) | Action::Delete(ops) => ops
                .iter_mut()
                .filter_map(|op| match op {
                    EditOp::Anchor(a) => Some(a),
                    _ => None,
                })
                .collect(),
            Action::Remove(_) => Vec::new(),
        }
    }
    let mut by_path: Vec<(Option<String>, CallAnchors)> = Vec::new();
    for c in changes.iter_mut() {
        let path = c.path.clone();
        let at = match by_path.iter().position(|(p, _)| *p == path) {
            Some(at) => at,
            None => {
                by_path.push((path, CallAnchors::default()));
                by_path.len() - 1
            }
        };
        for e in edits(c) {
            let call = &mut by_path[at].1;
            e.call_index = call.edits.len();
            call.edits.push(own(e));
            call.deletes.push(deletes(e));
        }
    }
    let calls: Vec<(Option<String>, std::sync::Arc<CallAnchors>)> = by_path
        .into_iter()
        .map(|(p, call)| (p, std::sync::Arc::new(call)))
        .collect();
    for c in changes.iter_mut() {
        let path = c.path.clone();
        let Some((_, call)) = calls.iter().find(|(p, _)| *p == path) else {
            continue;
        };
        for e in edits(c) {
            e.call = call.clone();
        }
    }
}

fn split_payload(s: &str) -> Vec<String> {
    if s.is_empty() {
        return Vec::new();
    }
    let s = s.strip_suffix('\n').unwrap_or(s);
    s.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
        .collect()
}

// ------------------------------------------------------------------ resolving

/// What one anchor says about where its line stands now: the displacements
/// (current line − stated line) at which the line it stood for stands (spec
/// §5): placed by the snapshot's diff, else its content (echo, else the
/// caller's snapshot, else line N's when its hash matches) searched for
/// within the relocation window. The hash alone never relocates an anchor.
fn candidates(doc: &Document, a: &Anchor, seen: Option<&Document>, map: &SeenMap) -> Vec<isize> {
    let i = a.line - 1;
    // The snapshot's line diff says where the very line the model saw went
    // (or that it changed), whatever the line holds.
    if let (Some(s), Some(moved)) = (seen, map) {
        let echo_agrees = a.content.as_deref().is_none_or(|c| same(c, s.line(i)));
        if i < s.line_count() && line_hash(s.line(i)) == a.hash && echo_agrees {
            return moved[i]
                .map(|j| vec![j as isize - i as isize])
                .unwrap_or_default();
        }
    }
    // An echo that does not hash to the anchor is garbled and disregarded.
    let content = a
        .content
        .as_deref()
        .filter(|c| line_hash(c) == a.hash)
        .or_else(|| {
            seen.filter(|s| i < s.line_count() && line_hash(s.line(i)) == a.hash)
                .map(|s| s.line(i))
        });
    // Without it, a hash matching at line N says the model saw line N's
    // content (a collision aside, the risk every verification takes): that
    // content is searched for like an echo, so a copy of the line standing
    // at N in a file that moved is not taken for it. A hash matching
    // elsewhere relocates nothing.
    let in_place = i < doc.line_count() && line_hash(doc.line(i)) == a.hash;
    let Some(content) = content.or_else(|| in_place.then(|| doc.line(i))) else {
        return Vec::new();
    };
    let lo = i.saturating_sub(RELOCATION_WINDOW);
    let hi = (i + RELOCATION_WINDOW + 1).min(doc.line_count());
    (lo..hi)
        .filter(|&k| same(doc.line(k), content))
        .map(|k| k as isize - i as isize)
        .collect()
}

/// Where each line of the caller's snapshot stands in the current file (its
/// line diff snapshot → current), when the two differ; `None` otherwise.
type SeenMap = Option<Vec<Option<usize>>>;

fn seen_map(doc: &Document, seen: Option<&Document>) -> SeenMap {
    let s = seen?;
    if s.line_count() == doc.line_count() && s.lines().eq(doc.lines()) {
        return None;
    }
    let old: Vec<&str> = s.lines().collect();
    let new: Vec<&str> = doc.lines().collect();
    let mut map = vec![None; old.len()];
    for r in splice::line_diff(&old, &new).iter().filter(|r| r.equal) {
        for (o, n) in r.old.clone().zip(r.new.clone()) {
            map[o] = Some(n);
        }
    }
    Some(map)
}

/// Where one edit of the call goes (spec §5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placement {
    /// Every anchor of the edit at this displacement (0: in place).
    At(isize),
    /// The anchors have no displacement in common: stale.
    Stale,
    /// Several displacements fit the edit and nothing in the call tells
    /// them apart (ascending).
    Ambiguous(Vec<isize>),
}

/// The anchors of every edit of one file in one input (sections naming the
/// file gathered, text or tool call), in input order: the call's evidence of
/// how far the file moved, which places an edit its own anchors leave open
/// (spec §5.1). The placement worked out from them is kept for the document
/// it was worked out on (by a fingerprint of what it read), so the edits of
/// a file search once, not once each.
#[derive(Default)]
pub struct CallAnchors {
    edits: Vec<Vec<Anchor>>,
    /// Which edits only delete lines (a `delete`, or a `replace` with no new lines).
    deletes: Vec<bool>,
    /// (fingerprint of the document and snapshot, the placement of every edit).
    cache: std::sync::Mutex<Option<(u128, std::sync::Arc<[Placement]>)>>,
}

impl std::fmt::Debug for CallAnchors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallAnchors")
            .field("edits", &self.edits)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CallAnchors {
    fn eq(&self, other: &Self) -> bool {
        self.edits == other.edits && self.deletes == other.deletes
    }
}

impl Eq for CallAnchors {}

impl CallAnchors {
    /// The placement of every edit against `doc` (and the snapshot), from
    /// the cache when it was worked out on the same content.
    fn placements(&self, doc: &Document, seen: Option<&Document>) -> std::sync::Arc<[Placement]> {
        let key = self.key(doc, seen);
        let mut cache = self.cache.lock().ok();
        if let Some(Some((k, p))) = cache.as_deref()
            && *k == key
        {
            return p.clone();
        }
        let placed: std::sync::Arc<[Placement]> =
            place_call(&self.edits, &self.deletes, doc, seen).into();
        if let Some(c) = cache.as_deref_mut() {
            *c = Some((key, placed.clone()));
        }
        placed
    }

    /// A fingerprint of everything the placement reads: without a snapshot,
    /// the file's length and, for each edit, its lines and the relocation
    /// window around them (a few lines per edit, not the file, as each edit
    /// asks for it); with one, both texts whole (its line diff reads them
    /// whole).
    fn key(&self, doc: &Document, seen: Option<&Document>) -> u128 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(&(doc.line_count() as u64).to_le_bytes());
        match seen {
            Some(s) => {
                h.update(&(doc.text().len() as u64).to_le_bytes());
                h.update(doc.text().as_bytes());
                h.update(s.text().as_bytes());
            }
            None => {
                for anchors in &self.edits {
                    let (Some(first), Some(last)) = (
                        anchors.iter().map(|a| a.line - 1).min(),
                        anchors.iter().map(|a| a.line - 1).max(),
                    ) else {
                        continue;
                    };
                    // The range's own lines too: a deletion compares them (`same_deletion`).
                    let lo = first
                        .saturating_sub(RELOCATION_WINDOW)
                        .min(doc.line_count());
                    let hi = (last + RELOCATION_WINDOW + 1).min(doc.line_count());
                    for k in lo..hi {
                        h.update(doc.line(k).as_bytes());
                        h.update(b"\n");
                    }
                }
            }
        }
        h.digest128()
    }
}

/// Places every edit of a call (spec §5.1). Each edit's candidates are the
/// displacements all its anchors allow. When every edit allows 0 (or none:
/// stale), nothing shows the file moved: all stay in place. Otherwise the edits keep their
/// order, and the lines between two edits can only have shrunk by the lines
/// deleted there (the file moved by lines added or removed): edit q below
/// edit p, `g` lines apart as stated, has d_q ≥ d_p − g. That narrows each
/// edit's candidates to the ones some placement of the whole call uses; an
/// edit left with one is placed, with more it is ambiguous.
fn place_call(
    edits: &[Vec<Anchor>],
    deletes: &[bool],
    doc: &Document,
    seen: Option<&Document>,
) -> Vec<Placement> {
    // The snapshot's diff is computed only when it differs from the file.
    let map = seen_map(doc, seen);
    let mut cands: Vec<Vec<isize>> = edits
        .iter()
        .map(|anchors| {
            let mut it = anchors.iter().map(|a| candidates(doc, a, seen, &map));
            let first = it.next().unwrap_or_else(|| vec![0]);
            it.fold(first, |mut acc, c| {
                acc.retain(|d| c.contains(d));
                acc
            })
        })
        .collect();
    // A stale edit (no candidate) shows that its line changed, not that the
    // file moved: a re-sent call whose other edits verify stays in place.
    if cands.iter().all(|c| c.is_empty() || c.contains(&0)) {
        return cands
            .iter()
            .map(|c| match c.is_empty() {
                true => Placement::Stale,
                false => Placement::At(0),
            })
            .collect();
    }
    // The anchored edits with candidates, in the order of their lines.
    let span = |k: usize| {
        let lines = edits[k].iter().map(|a| a.line);
        (lines.clone().min().unwrap_or(0), lines.max().unwrap_or(0))
    };
    let mut chain: Vec<usize> = (0..edits.len())
        .filter(|&k| !edits[k].is_empty() && !cands[k].is_empty())
        .collect();
    chain.sort_by_key(|&k| span(k));
    // Consecutive edits whose lines do not overlap, and the lines between them.
    let links: Vec<(usize, usize, isize)> = chain
        .windows(2)
        .filter_map(|w| {
            let (p, q) = (w[0], w[1]);
            let gap = span(q).0 as isize - span(p).1 as isize - 1;
            (gap >= 0).then_some((p, q, gap))
        })
        .collect();
    let before: Vec<Vec<isize>> = cands.clone();
    for &(p, q, gap) in &links {
        if let Some(lo) = cands[p].iter().min().map(|m| m - gap) {
            cands[q].retain(|&d| d >= lo);
        }
    }
    for &(p, q, gap) in links.iter().rev() {
        if let Some(hi) = cands[q].iter().max().map(|m| m + gap) {
            cands[p].retain(|&d| d <= hi);
        }
    }
    // Candidates no order of the edits explains: the file changed otherwise
    // (lines swapped, not added or removed), and nothing can be trusted.
    let broken = chain.iter().any(|&k| cands[k].is_empty());
    (0..edits.len())
        .map(|k| {
            if edits[k].is_empty() {
                return Placement::At(0);
            }
            match cands[k].as_slice() {
                _ if before[k].is_empty() || broken => Placement::Stale,
                [d] => Placement::At(*d),
                // Deleting one of two equal neighbouring lines: either gives
                // the same text, so the nearest is taken.
                ds if deletes.get(k) == Some(&true) && same_deletion(doc, span(k), ds) => {
                    Placement::At(
                        ds.iter()
                            .copied()
                            .min_by_key(|d| (d.abs(), *d))
                            .unwrap_or(0),
                    )
                }
                ds => Placement::Ambiguous(ds.to_vec()),
            }
        })
        .collect()
}

/// Whether deleting the stated lines `span` (1-based, inclusive) at each of
/// the displacements `ds` (ascending) leaves the same text, byte for byte
/// (trailing whitespace too: the lines kept keep it).
fn same_deletion(doc: &Document, span: (usize, usize), ds: &[isize]) -> bool {
    let (Some(&lo), Some(&hi)) = (ds.first(), ds.last()) else {
        return false;
    };
    let from = span.0 as isize - 1 + lo;
    let to = span.1 as isize + hi;
    if from < 0 || to as usize > doc.line_count() {
        return false;
    }
    let region: Vec<&str> = (from as usize..to as usize).map(|i| doc.line(i)).collect();
    let without = |d: isize| -> Vec<&str> {
        let cut = (d - lo) as usize..(d - lo) as usize + (span.1 - span.0 + 1);
        region
            .iter()
            .enumerate()
            .filter(|(i, _)| !cut.contains(i))
            .map(|(_, l)| *l)
            .collect()
    };
    let first = without(lo);
    ds.iter().all(|&d| without(d) == first)
}

/// The one displacement every anchor of an edit takes (spec §5.1).
fn displacement(e: &AnchorEdit, doc: &Document, seen: Option<&Document>) -> Placement {
    match e.call.placements(doc, seen).get(e.call_index) {
        Some(p) if e.call.edits.get(e.call_index).map(Vec::as_slice) == Some(&own(e)) => p.clone(),
        // An edit made by hand, outside a parsed input: its own anchors alone.
        _ => place_call(&[own(e)], &[deletes(e)], doc, seen).swap_remove(0),
    }
}

/// Whether an edit only deletes lines.
fn deletes(e: &AnchorEdit) -> bool {
    matches!(&e.op, AnchorOp::Replace { lines, .. } if lines.is_empty())
}

/// The anchors of an edit, owned.
fn own(e: &AnchorEdit) -> Vec<Anchor> {
    op_anchors(&e.op).into_iter().cloned().collect()
}

/// `12:ZPM|code` prefixes echoed into payload lines, removed when every non-empty line has one.
fn strip_echoed_anchors(doc: &Document, lines: &mut [String], warnings: &mut Vec<Warning>) {
    let prefixed = |l: &str| -> Option<(Anchor, usize)> {
        let (head, _) = l.split_once('|')?;
        Anchor::parse(head).map(|a| (a, head.len() + 1))
    };
    // A prefix that is a true anchor of this file, followed by that very line,
    // is an echo wherever it appears; otherwise every line must carry one (a
    // lone `12|` may be real text, such as a Markdown table row).
    let true_echo = |l: &str| {
        prefixed(l).is_some_and(|(a, cut)| {
            let i = a.line - 1;
            i < doc.line_count() && line_hash(doc.line(i)) == a.hash && same(&l[cut..], doc.line(i))
        })
    };
    let nonempty: Vec<&String> = lines.iter().filter(|l| !l.is_empty()).collect();
    let all = !nonempty.is_empty() && nonempty.iter().all(|l| prefixed(l).is_some());
    let mut stripped = false;
    for l in lines.iter_mut() {
        if (all || true_echo(l))
            && let Some((_, cut)) = prefixed(l)
        {
            *l = l[cut..].to_owned();
            stripped = true;
        }
    }
    if stripped {
        warnings.push(Warning::StrippedAnchors);
    }
}

/// Lines equal but for trailing whitespace (what the hash ignores too).
fn same(a: &str, b: &str) -> bool {
    a.trim_end() == b.trim_end()
}

/// Whether a new line restates the file line `of` as an echo does: a copy,
/// or one that drops trailing whitespace — never one that adds some (that
/// line is the model's own).
fn echoes(l: &str, of: &str) -> bool {
    same(l, of) && l.len() <= of.len()
}

/// Whether `lines` stand in `doc` from line `at` on, and say enough (some
/// text) to count as evidence that an edit already put them there.
fn already_there(doc: &Document, at: usize, lines: &[String]) -> bool {
    let text: usize = lines.iter().map(|l| l.trim().len()).sum();
    text >= 4
        && at + lines.len() <= doc.line_count()
        && lines
            .iter()
            .enumerate()
            .all(|(k, l)| same(doc.line(at + k), l))
}

fn resolve_anchor_edit(
    e: &AnchorEdit,
    doc: &Document,
    ctx: &ResolveContext<'_>,
) -> Result<Resolution, EditError> {
    let mut warnings = Vec::new();
    let mut stale = Vec::new();
    let placement = displacement(e, doc, ctx.seen);
    if !matches!(placement, Placement::At(_)) {
        for a in op_anchors(&e.op) {
            if !stale.contains(&a.text()) {
                stale.push(a.text());
            }
        }
    }
    let shift = match placement {
        Placement::At(d) => Ok(d),
        Placement::Stale => Err(Vec::new()),
        Placement::Ambiguous(ds) => Err(ds),
    };
    let d = *shift.as_ref().unwrap_or(&0);
    // Every anchor takes the edit's one displacement: a range never mixes two.
    let mut place = |a: &Anchor| -> usize {
        let to = (a.line - 1) as isize + d;
        if d != 0 && stale.is_empty() {
            let w = Warning::Relocated {
                from: a.line - 1,
                to: to as usize,
            };
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        to.max(0) as usize
    };
    let (range, mut lines) = match &e.op {
        AnchorOp::SetFile { lines } => (0..doc.line_count(), lines.clone()),
        AnchorOp::Replace { start, end, lines } => {
            let s = place(start);
            let t = place(end);
            if stale.is_empty() && t < s {
                return Err(EditError::AnchorOrder {
                    start: start.text(),
                    end: end.text(),
                });
            }
            (s..t + 1, lines.clone())
        }
        AnchorOp::InsertAfter { anchor, lines } => {
            let k = place(anchor);
            (k + 1..k + 1, lines.clone())
        }
        AnchorOp::InsertBefore { anchor, lines } => {
            let k = place(anchor);
            (k..k, lines.clone())
        }
    };
    if !stale.is_empty() {
        // A re-sent replacement: its anchors went stale because it was applied.
        if let AnchorOp::Replace { start, lines, .. } = &e.op
            && already_there(doc, start.line - 1, lines)
        {
            let mut r = Resolution::status(EditStatus::AlreadyApplied);
            r.tier = Some(Tier::Anchor);
            r.lines = Some(start.line - 1..start.line - 1 + lines.len());
            return Ok(r);
        }
        // Several places fit: the lines where the edit's first anchor could stand.
        return Err(match shift {
            Err(ds) if !ds.is_empty() => {
                let first = op_anchors(&e.op).first().map_or(1, |a| a.line) as isize;
                EditError::AmbiguousAnchors {
                    anchors: stale,
                    lines: ds.iter().map(|d| (first + d) as usize).collect(),
                }
            }
            _ => EditError::StaleAnchors { anchors: stale },
        });
    }
    strip_echoed_anchors(doc, &mut lines, &mut warnings);
    match &e.op {
        AnchorOp::Replace { .. }
            if lines.len() >= 2 && range.start > 0 && range.end < doc.line_count() =>
        {
            // Both neighbours restated: the model echoed the frame. One side
            // alone is kept. An echo copies a line or drops its trailing
            // whitespace; a payload line that adds some is the model's own.
            let before = doc.line(range.start - 1);
            let after = doc.line(range.end);
            if lines.first().is_some_and(|l| echoes(l, before))
                && lines.last().is_some_and(|l| echoes(l, after))
            {
                lines.remove(0);
                lines.pop();
                warnings.push(Warning::BoundaryEcho);
            }
        }
        AnchorOp::InsertAfter { .. }
            if range.start > 0
                && lines.len() > 1
                && echoes(&lines[0], doc.line(range.start - 1)) =>
        {
            lines.remove(0);
            warnings.push(Warning::BoundaryEcho);
        }
        AnchorOp::InsertBefore { .. }
            if range.start < doc.line_count()
                && lines.len() > 1
                && lines
                    .last()
                    .is_some_and(|l| echoes(l, doc.line(range.start))) =>
        {
            lines.pop();
            warnings.push(Warning::BoundaryEcho);
        }
        _ => {}
    }
    // A re-sent insertion: its lines already stand where they would go.
    let inserted_already = match &e.op {
        AnchorOp::InsertAfter { .. } => already_there(doc, range.start, &lines),
        AnchorOp::InsertBefore { .. } => {
            range.start >= lines.len() && already_there(doc, range.start - lines.len(), &lines)
        }
        _ => false,
    };
    if inserted_already {
        let mut r = Resolution::status(EditStatus::AlreadyApplied);
        r.tier = Some(Tier::Anchor);
        r.lines = Some(range);
        r.warnings = warnings;
        return Ok(r);
    }
    // Lines the edit keeps keep their bytes: diff the range against the payload.
    let old: Vec<&str> = range.clone().map(|i| doc.line(i)).collect();
    let m = Match::at(range.clone(), Tier::Anchor);
    let pieces: Vec<Piece> = if old.is_empty() {
        vec![Piece {
            range: range.clone(),
            lines: lines.clone(),
            eols: None,
        }]
    } else {
        splice::splice(doc, &old, &m, &splice::ops_from_diff(&old, &lines))
    };
    let mut r = Resolution::status(
        if pieces
            .iter()
            .all(|p| p.lines.is_empty() && p.range.is_empty())
        {
            EditStatus::Noop
        } else {
            EditStatus::Applied
        },
    );
    r.pieces = pieces
        .into_iter()
        .filter(|p| !(p.range.is_empty() && p.lines.is_empty()))
        .collect();
    if r.pieces.is_empty() && !lines.is_empty() || r.pieces.is_empty() && !old.is_empty() {
        r.status = EditStatus::AlreadyApplied;
    }
    r.tier = Some(Tier::Anchor);
    r.similarity = Some(1.0);
    r.lines = Some(range);
    r.warnings = warnings;
    Ok(r)
}

// ------------------------------------------------------------------ view and render

/// `LINE:HASH|content` for every line (or `lines`, 0-based half-open).
pub(crate) fn view(doc: &Document, lines: Option<Range<usize>>) -> String {
    let range = lines.unwrap_or(0..doc.line_count());
    let end = range.end.min(doc.line_count());
    let mut out = String::new();
    for i in range.start.min(end)..end {
        let l = doc.line(i);
        out.push_str(&format!("{}:{}|{}\n", i + 1, line_hash(l), l));
    }
    out
}

/// The change from `before` to `after` as hashline directives against `before`.
///
/// Every change is written as a `replace` of whole lines (an insertion takes a
/// neighbouring line with it), widened until no repair could misread it: a
/// payload that starts and ends with the lines around its range would be
/// taken for an echo.
fn render(path: &str, before: &str, after: &str) -> String {
    let old = Document::from_text(before);
    let new = Document::from_text(after);
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let mut out = format!("@@ file {path}\n");
    if old_lines.is_empty() {
        out.push_str("@@ set file\n");
        for l in &new_lines {
            out.push_str(&format!("+{l}\n"));
        }
        return out;
    }
    let runs = splice::line_diff(&old_lines, &new_lines);
    // Where each kept old line is in the new text.
    let mut kept: Vec<Option<usize>> = vec![None; old_lines.len()];
    for r in runs.iter().filter(|r| r.equal) {
        for (o, n) in r.old.clone().zip(r.new.clone()) {
            kept[o] = Some(n);
        }
    }
    let n_old = old_lines.len();
    let mut spans: Vec<Range<usize>> = runs
        .iter()
        .filter(|r| !r.equal)
        .map(|r| match (r.old.is_empty(), r.old.start) {
            (false, _) => r.old.clone(),
            (true, 0) => 0..1,
            (true, s) => s - 1..s,
        })
        .collect();
    // The new lines a span of old lines becomes: between the kept lines around it.
    let new_range = |sp: &Range<usize>| -> Option<Range<usize>> {
        let start = if sp.start == 0 {
            0
        } else {
            kept[sp.start - 1]? + 1
        };
        let end = if sp.end == n_old {
            new_lines.len()
        } else {
            kept[sp.end]?
        };
        Some(start..end)
    };
    loop {
        spans.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<usize>> = Vec::new();
        for sp in spans.drain(..) {
            match merged.last_mut() {
                Some(last) if sp.start <= last.end => last.end = last.end.max(sp.end),
                _ => merged.push(sp),
            }
        }
        let mut widened = false;
        for sp in &mut merged {
            let Some(n) = new_range(sp) else { continue };
            let payload = &new_lines[n];
            let echo = payload.len() >= 2
                && sp.start > 0
                && sp.end < n_old
                && payload.first() == Some(&old_lines[sp.start - 1])
                && payload.last() == Some(&old_lines[sp.end]);
            if echo {
                *sp = sp.start - 1..sp.end + 1;
                widened = true;
            }
        }
        let complete = merged.iter().all(|sp| new_range(sp).is_some());
        spans = merged;
        if !widened && complete {
            break;
        }
        if !complete {
            // A span whose neighbour is another span's line: merge on the next pass.
            for sp in &mut spans {
                if new_range(sp).is_none() {
                    *sp = sp.start.saturating_sub(1)..(sp.end + 1).min(n_old);
                }
            }
        }
    }
    let anchor = |i: usize| format!("{}:{}", i + 1, line_hash(old_lines[i]));
    for sp in spans {
        let Some(n) = new_range(&sp) else { continue };
        let payload: String = new_lines[n.clone()]
            .iter()
            .map(|l| format!("+{l}\n"))
            .collect();
        if n.is_empty() {
            out.push_str(&format!(
                "@@ delete {} {}\n",
                anchor(sp.start),
                anchor(sp.end - 1)
            ));
        } else {
            out.push_str(&format!(
                "@@ replace {} {}\n{payload}",
                anchor(sp.start),
                anchor(sp.end - 1)
            ));
        }
    }
    out
}

impl FormatEdit for AnchorEdit {
    fn kind(&self) -> EditKind {
        EditKind::Anchor
    }

    fn source_line(&self) -> usize {
        self.source_line
    }

    fn can_create(&self) -> bool {
        matches!(self.op, AnchorOp::SetFile { .. })
    }

    fn resolve(&self, doc: &Document, ctx: &ResolveContext<'_>) -> Result<Resolution, EditError> {
        resolve_anchor_edit(self, doc, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matcher::MatchOptions;

    fn apply(doc: &Document, text: &str) -> Result<Document, EditError> {
        let patch = parse_text(text).map_err(|_| EditError::BlankSearch)?;
        let opts = MatchOptions::default();
        let ctx = ResolveContext::new(&opts);
        let mut b = crate::edit::TextEditBuilder::new();
        for op in patch.ops() {
            let r = op.resolve(doc, &ctx)?;
            for p in r.pieces {
                b.replace(p.range, p.lines, 0);
            }
        }
        Ok(doc.apply(&b.finish().map_err(|_| EditError::BlankSearch)?))
    }

    fn apply_seen(doc: &Document, seen: &Document, text: &str) -> Result<Document, EditError> {
        let patch = parse_text(text).map_err(|_| EditError::BlankSearch)?;
        let opts = MatchOptions::default();
        let ctx = ResolveContext {
            seen: Some(seen),
            ..ResolveContext::new(&opts)
        };
        let mut b = crate::edit::TextEditBuilder::new();
        for op in patch.ops() {
            for p in op.resolve(doc, &ctx)?.pieces {
                b.replace(p.range, p.lines, 0);
            }
        }
        Ok(doc.apply(&b.finish().map_err(|_| EditError::BlankSearch)?))
    }

    #[test]
    fn snapshot_diff_places_a_blank_anchor_whose_file_moved() {
        // The model read `seen`; 3 lines (one blank) were added above since.
        let seen = Document::from_text("a\n\nb\n");
        let doc = Document::from_text("x\n\ny\na\n\nb\n");
        let blank = line_hash("");
        // Without the snapshot the blank line at the stated line 2 would do.
        let text = format!("@@ insert after 2:{blank}\n+new\n");
        let out = apply_seen(&doc, &seen, &text).unwrap();
        assert_eq!(out.text(), "x\n\ny\na\n\nnew\nb\n");
        // An anchor that is not the snapshot's line there (another hash) is
        // placed by its echo, searched for in the window.
        let echoed = format!("@@ insert after 2:{}|a\n+new\n", line_hash("a"));
        let out = apply_seen(&doc, &seen, &echoed).unwrap();
        assert_eq!(out.text(), "x\n\ny\na\nnew\n\nb\n");
    }

    #[test]
    fn call_placement_is_worked_out_per_document() {
        // One parsed call resolved against two versions of a file: the
        // placement cached for one is never used for the other.
        let patch = parse_text(&format!("@@ replace 2:{}|b\n+B\n", line_hash("b"))).unwrap();
        let opts = MatchOptions::default();
        let ctx = ResolveContext::new(&opts);
        let op = patch.ops()[0];
        let moved = Document::from_text("x\na\nb\n");
        let in_place = Document::from_text("a\nb\nc\n");
        assert_eq!(op.resolve(&moved, &ctx).unwrap().lines, Some(2..3));
        assert_eq!(op.resolve(&in_place, &ctx).unwrap().lines, Some(1..2));
        assert_eq!(op.resolve(&moved, &ctx).unwrap().lines, Some(2..3));
        // The snapshot is part of the key too.
        let seen = Document::from_text("a\nb\n");
        let with_seen = ResolveContext {
            seen: Some(&seen),
            ..ResolveContext::new(&opts)
        };
        assert_eq!(op.resolve(&moved, &with_seen).unwrap().lines, Some(2..3));
    }

    #[test]
    fn replace_insert_delete() {
        let doc = Document::from_text("a\nb\nc\nd\n");
        let a = |i: usize| format!("{}:{}", i + 1, line_hash(doc.line(i)));
        let out = apply(
            &doc,
            &format!(
                "@@ replace {} {}\n+B\n+C\n@@ insert after {}\n+e\n",
                a(1),
                a(2),
                a(3)
            ),
        )
        .unwrap();
        assert_eq!(out.text(), "a\nB\nC\nd\ne\n");
        let out = apply(
            &doc,
            &format!("@@ delete {}\n@@ insert before {}\n+z\n", a(0), a(0)),
        )
        .unwrap();
        assert_eq!(out.text(), "z\nb\nc\nd\n");
    }

    #[test]
    fn stale_anchor_refused_and_echoed_content_relocates() {
        let doc = Document::from_text("x\ny\na\nb\n");
        let old = Document::from_text("a\nb\n");
        let stale = format!("@@ replace 1:{}\n+A\n", line_hash(old.line(0)));
        assert!(matches!(
            apply(&doc, &stale),
            Err(EditError::StaleAnchors { .. })
        ));
        let echoed = format!("@@ replace 1:{}|a\n+A\n", line_hash("a"));
        assert_eq!(apply(&doc, &echoed).unwrap().text(), "x\ny\nA\nb\n");
    }

    #[test]
    fn fenced_payload_is_the_lines_inside_the_fence() {
        let doc = Document::from_text("a\nb\nc\n");
        let a = |i: usize| format!("{}:{}", i + 1, line_hash(doc.line(i)));
        let replace = format!("@@ replace {}\n```python\n+B\n```\n", a(1));
        assert_eq!(apply(&doc, &replace).unwrap().text(), "a\nB\nc\n");
        let insert = format!("@@ insert after {}\n\n~~~text\n+d\n~~~\nprose\n", a(2));
        assert_eq!(apply(&doc, &insert).unwrap().text(), "a\nb\nc\nd\n");
        // A fence after payload lines still ends the payload.
        let after = format!("@@ replace {}\n+B\n```\n+ignored\n", a(1));
        assert_eq!(apply(&doc, &after).unwrap().text(), "a\nB\nc\n");
    }

    #[test]
    fn fence_leaving_an_edit_without_lines_is_refused() {
        let doc = Document::from_text("a\nb\nc\n");
        let h = line_hash("b");
        for text in [
            format!("@@ replace 2:{h}\n```python\n```\n"),
            format!("@@ insert after 2:{h}\n```\n"),
            "@@ set file\n~~~\n~~~\n".to_owned(),
        ] {
            assert!(
                matches!(
                    parse_text(&text),
                    Err(ParseError::Unsupported { line: 2, .. })
                ),
                "{text}"
            );
        }
        // Without a fence an empty replace is still a deletion.
        let delete = format!(
            "@@ replace 2:{h}\n@@ insert after 3:{}\n+d\n",
            line_hash("c")
        );
        assert_eq!(apply(&doc, &delete).unwrap().text(), "a\nc\nd\n");
    }

    #[test]
    fn boundary_echoes_dropped_only_when_both_sides_echo() {
        let doc = Document::from_text("1\n2\n3\n4\n");
        let a = |i: usize| format!("{}:{}", i + 1, line_hash(doc.line(i)));
        let both = format!("@@ replace {} {}\n+1\n+two\n+three\n+4\n", a(1), a(2));
        assert_eq!(apply(&doc, &both).unwrap().text(), "1\ntwo\nthree\n4\n");
        let one = format!("@@ replace {} {}\n+1\n+two\n", a(1), a(2));
        assert_eq!(apply(&doc, &one).unwrap().text(), "1\n1\ntwo\n4\n");
    }
}
