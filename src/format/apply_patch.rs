//! Codex-style `apply_patch`: `*** Begin Patch` / `*** End Patch` around
//! `*** Add File:`, `*** Update File:` (with `*** Move to:`) and `*** Delete
//! File:` sections; updates are chunks of ` `/`-`/`+` lines, each optionally
//! opened by `@@ anchor` lines that narrow where it applies. The spec is
//! `edit-formats/apply-patch.md`; the format's definition (`DEF`) is at the
//! top of this module. Chunk bodies are unified-diff lines ([`HunkLine`]),
//! read with the diff's own helpers.
//!
//! Better than the original where its users asked: context lines keep the
//! file's bytes after a tolerant match; a chunk of only `+` lines after an
//! `@@` anchor goes right after the anchor, not at the end of the file;
//! stacked anchors narrow in order, each to the block under the previous one
//! (its indented body); a chunk that matches in two places is refused, never
//! applied at the first; and, through the engine, a failing patch writes
//! nothing (moves and additions included). The envelope is read leniently:
//! padding, a heredoc wrapper or a missing end marker are accepted with a note.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;

use super::tool_args::{Arg, bad, fields};
use super::udiff::{HunkLine, kept_lines, ops_of};
use super::{
    Action, EditOp, FileChange, FormatDef, FormatEdit, Patch, Removal, Resolution, ResolveContext,
};
use crate::matcher::{
    self, Candidate, Match, MatchError, MatchOptions, Tier, indent_width, split_indent,
};
use crate::report::{EditError, EditKind, EditStatus, ParseError, Warning};
use crate::splice::{self, Piece};
use crate::text::Document;

/// The apply_patch format's definition.
pub(crate) static DEF: FormatDef = FormatDef {
    name: "apply-patch",
    summary: "Codex-style *** Begin Patch envelopes: add, update (with @@ anchors), move and delete files",
    instructions: include_str!("../../edit-formats/apply-patch.prompt.md"),
    tool: include_str!("../../edit-formats/apply-patch.tool.json"),
    detect: looks_like,
    detect_last: false,
    detect_tool_call: is_tool_call,
    tool_call_rank: 2,
    parse: |input, _| parse_text(input),
    parse_tool_call: |args, _| parse_tool_call(args),
    render,
    view: super::numbered_view,
};

/// One chunk of an `*** Update File:` section (or the body of an `*** Add File:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// `@@ …` anchor lines, outermost first.
    pub anchors: Vec<String>,
    /// The body.
    pub lines: Vec<HunkLine>,
    /// `*** End of File`: the chunk ends at the end of the file.
    pub end_of_file: bool,
    /// 1-based input line where the chunk starts.
    pub source_line: usize,
}

// ------------------------------------------------------------------ parsing

fn header<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.trim().strip_prefix(name).map(str::trim)
}

/// The markers that give a patch its structure.
const MARKERS: [&str; 7] = [
    "*** Begin Patch",
    "*** End Patch",
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
    "*** End of File",
];

/// Whether a line inside a section is structure: one of the known markers at
/// column 0. A context line starts with a space, so ` *** WARNING ***` (or
/// ` *** End Patch`, quoted from a file) is text, never structure.
fn is_marker(line: &str) -> bool {
    let t = line.trim_end();
    // A header (`…:`) is followed by its path; the others stand alone.
    MARKERS.iter().any(|m| {
        if m.ends_with(':') {
            t.starts_with(m)
        } else {
            t == *m
        }
    })
}

/// The first line of an apply_patch envelope or section header, if any.
pub(crate) fn looks_like(input: &str) -> Option<usize> {
    input.lines().position(|l| {
        let t = l.trim();
        t == "*** Begin Patch"
            || t.starts_with("*** Update File:")
            || t.starts_with("*** Add File:")
            || t.starts_with("*** Delete File:")
    })
}

/// Drops the bare empty lines (no leading space) at the end of a chunk: they
/// separate chunks. `bare` counts them; a context line of one space is a
/// blank line the model quoted (the renderer writes one to make a place
/// unique) and stays.
fn trim_blank_tail(c: &mut Chunk, bare: &mut usize) {
    while *bare > 0 && matches!(c.lines.last(), Some(HunkLine::Context(t)) if t.is_empty()) {
        c.lines.pop();
        *bare -= 1;
    }
    *bare = 0;
}

/// `EOF`, `PATCH`, `END_PATCH`: the word that closes a shell heredoc (not
/// indented by a space, which would make it a context line).
fn is_heredoc_end(line: &str) -> bool {
    if line.starts_with(' ') {
        return false;
    }
    let t = line.trim();
    !t.is_empty() && t.len() <= 16 && t.chars().all(|c| c.is_ascii_uppercase() || c == '_')
}

fn parse_text(input: &str) -> Result<Patch, ParseError> {
    let lines: Vec<&str> = input
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut patch = parse_envelope(input, &lines, 0)?;
    // Further envelopes in the same reply (one per file, say) are part of the
    // change: ignoring them would report success for half of it.
    while let Some(end) = patch.end {
        let Some(next) = lines[end + 1..]
            .iter()
            .position(|l| l.trim() == "*** Begin Patch")
        else {
            break;
        };
        let more = parse_envelope(input, &lines, end + 1 + next)?;
        patch.changes.extend(more.changes);
        for note in more.notes {
            if !patch.notes.contains(&note) {
                patch.notes.push(note);
            }
        }
        patch.end = more.end;
    }
    if patch.changes.is_empty() {
        return Err(ParseError::NoEdits);
    }
    Ok(Patch {
        changes: patch.changes,
        notes: patch.notes,
    })
}

/// One envelope's sections and notes, and the line of its `*** End Patch`.
struct Envelope {
    changes: Vec<FileChange>,
    notes: Vec<Warning>,
    end: Option<usize>,
}

/// The envelope whose `*** Begin Patch` is the first at or after line `from`
/// (0-based); from the first section header when there is none.
fn parse_envelope(input: &str, lines: &[&str], from: usize) -> Result<Envelope, ParseError> {
    let mut notes = Vec::new();
    let begin = lines[from..]
        .iter()
        .position(|l| l.trim() == "*** Begin Patch")
        .map(|b| b + from);
    let heredoc = Warning::LenientEnvelope {
        what: "a heredoc wrapper",
    };
    if begin.is_some_and(|b| lines[from..b].iter().any(|l| l.contains("<<"))) {
        notes.push(heredoc.clone());
    }
    if begin.is_some_and(|b| lines[b] != "*** Begin Patch") {
        notes.push(Warning::LenientEnvelope {
            what: "padded `*** Begin Patch`",
        });
    }
    let start = match begin {
        Some(b) => b + 1,
        None => {
            let first = looks_like(input).ok_or(ParseError::NoEdits)?;
            notes.push(Warning::LenientEnvelope {
                what: "no `*** Begin Patch` line",
            });
            first
        }
    };
    // The end marker at column 0; a padded one only when there is none, since
    // a context line (` *** End Patch`, quoting a file) is padded by its space.
    let end = lines[start..]
        .iter()
        .position(|l| l.trim_end() == "*** End Patch")
        .or_else(|| {
            lines[start..]
                .iter()
                .position(|l| l.trim() == "*** End Patch")
        })
        .map(|e| e + start);
    if end.is_none() {
        notes.push(Warning::LenientEnvelope {
            what: "no `*** End Patch` line",
        });
    }
    let mut stop = end.unwrap_or(lines.len());
    if end.is_none() {
        // A fenced patch without its end marker ends at the closing fence, at
        // column 0: a context line quoting a fence (` ```sh`) starts with a space.
        if let Some(f) = lines[start..].iter().position(|l| l.starts_with("```")) {
            stop = start + f;
        }
    }
    if end.is_none() {
        // A heredoc wrapper's closing word (`EOF`, `PATCH`) after the last section.
        let last = lines[start..stop]
            .iter()
            .rposition(|l| !l.trim().is_empty())
            .map(|k| k + start);
        if let Some(k) = last.filter(|&k| is_heredoc_end(lines[k])) {
            if !notes.contains(&heredoc) {
                notes.push(heredoc.clone());
            }
            stop = k;
        }
    }
    let body = &lines[start..stop];
    let mut changes = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let at = start + i + 1;
        let line = body[i];
        if let Some(path) = header(line, "*** Add File:") {
            let mut added = Vec::new();
            i += 1;
            while i < body.len() && !is_marker(body[i].trim_start()) {
                match body[i].strip_prefix('+') {
                    Some(l) => added.push(HunkLine::Add(l.to_owned())),
                    // An empty line in a new file's content (a `+` a tool trimmed).
                    None if body[i].trim().is_empty() => added.push(HunkLine::Add(String::new())),
                    None => {
                        return Err(ParseError::BadPatchLine {
                            line: start + i + 1,
                        });
                    }
                }
                i += 1;
            }
            while matches!(added.last(), Some(HunkLine::Add(t)) if t.is_empty()) {
                added.pop();
            }
            let chunk = Chunk {
                anchors: Vec::new(),
                lines: added,
                end_of_file: false,
                source_line: at,
            };
            changes.push(FileChange {
                action: Action::Create(vec![EditOp::Chunk(chunk)]),
                ..FileChange::edit(Some(path.to_owned()), Vec::new())
            });
        } else if let Some(path) = header(line, "*** Delete File:") {
            changes.push(FileChange {
                action: Action::Remove(EditOp::RemoveFile(Removal { source_line: at })),
                ..FileChange::edit(Some(path.to_owned()), Vec::new())
            });
            i += 1;
        } else if let Some(path) = header(line, "*** Update File:") {
            i += 1;
            let mut rename_to = None;
            if let Some(to) = body
                .get(i)
                .filter(|l| is_marker(l))
                .and_then(|l| header(l, "*** Move to:"))
            {
                rename_to = Some(to.to_owned());
                i += 1;
            }
            let mut chunks: Vec<Chunk> = Vec::new();
            let mut current = Chunk {
                anchors: Vec::new(),
                lines: Vec::new(),
                end_of_file: false,
                source_line: start + i + 1,
            };
            // Bare empty lines at the end of `current` (see `trim_blank_tail`).
            let mut bare = 0;
            while i < body.len() {
                let l = body[i];
                if l.trim_end() == "*** End of File" {
                    current.end_of_file = true;
                    i += 1;
                    continue;
                }
                if is_marker(l) {
                    break;
                }
                if let Some(anchor) = l.strip_prefix("@@") {
                    // Blank lines before the next `@@` separate chunks; they are not context.
                    trim_blank_tail(&mut current, &mut bare);
                    if !current.lines.is_empty() {
                        chunks.push(std::mem::replace(
                            &mut current,
                            Chunk {
                                anchors: Vec::new(),
                                lines: Vec::new(),
                                end_of_file: false,
                                source_line: start + i + 1,
                            },
                        ));
                    }
                    let anchor = anchor.trim();
                    // `@@ -1,3 +1,3 @@` (a unified diff habit) carries no anchor.
                    let numbers = anchor.starts_with('-') && anchor.ends_with("@@");
                    if !anchor.is_empty() && !numbers {
                        current.anchors.push(anchor.to_owned());
                    }
                } else {
                    if !l.is_empty() {
                        bare = 0;
                    }
                    match l.chars().next() {
                        Some(' ') => current.lines.push(HunkLine::Context(l[1..].to_owned())),
                        Some('-') => current.lines.push(HunkLine::Remove(l[1..].to_owned())),
                        Some('+') => current.lines.push(HunkLine::Add(l[1..].to_owned())),
                        // A blank line between chunks, or an empty context line a tool trimmed.
                        None => {
                            if !current.lines.is_empty() {
                                current.lines.push(HunkLine::Context(String::new()));
                                bare += 1;
                            }
                        }
                        _ => {
                            return Err(ParseError::BadPatchLine {
                                line: start + i + 1,
                            });
                        }
                    }
                }
                i += 1;
            }
            trim_blank_tail(&mut current, &mut bare);
            // Cut off with the reply (apply-patch.md §1): no end marker, no
            // fence or heredoc word closed the patch, the input ends in
            // this chunk, and the chunk changes nothing or ends on a `-`
            // line (what replaces it was cut).
            let unfinished = !current
                .lines
                .iter()
                .any(|l| !matches!(l, HunkLine::Context(_)))
                || matches!(current.lines.last(), Some(HunkLine::Remove(_)));
            // A section with no body line at all is the empty-hunk error.
            let started = !current.lines.is_empty()
                || (!current.anchors.is_empty() && chunks.iter().any(|c| !c.lines.is_empty()));
            if end.is_none() && stop == lines.len() && i == body.len() && started && unfinished {
                return Err(ParseError::TruncatedChunk {
                    line: current.source_line,
                });
            }
            if !current.lines.is_empty() || !current.anchors.is_empty() {
                chunks.push(current);
            }
            // Neither a change nor a move: the section would silently do nothing.
            if rename_to.is_none() && chunks.iter().all(|c| c.lines.is_empty()) {
                return Err(ParseError::EmptyHunk { line: at });
            }
            changes.push(FileChange {
                rename_to,
                ..FileChange::edit(
                    Some(path.to_owned()),
                    chunks.into_iter().map(EditOp::Chunk).collect(),
                )
            });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return Err(ParseError::BadPatchLine { line: at });
        }
    }
    Ok(Envelope {
        changes,
        notes,
        end,
    })
}

// ------------------------------------------------------------------ resolving

/// Lines whose trimmed text is the anchor (or, when none is, starts with it;
/// or, when none does, that the anchor is a typo of — the rule a removed
/// line is held to, for an anchor of at least `min_chars` non-space
/// characters, as the approximate step asks of a block), within `scope`.
fn find_anchor(doc: &Document, anchor: &str, scope: Range<usize>, min_chars: usize) -> Vec<usize> {
    let a = anchor.trim();
    let equal: Vec<usize> = scope.clone().filter(|&i| doc.line(i).trim() == a).collect();
    if !equal.is_empty() {
        return equal;
    }
    let folded: Vec<usize> = scope
        .clone()
        .filter(|&i| matcher::same_up_to_unicode(doc.line(i), a))
        .collect();
    if !folded.is_empty() {
        return folded;
    }
    let prefixed: Vec<usize> = scope
        .clone()
        .filter(|&i| doc.line(i).trim_start().starts_with(a))
        .collect();
    if !prefixed.is_empty() || a.chars().filter(|c| !c.is_whitespace()).count() < min_chars {
        return prefixed;
    }
    scope
        .filter(|&i| super::locate::is_typo_of(a, doc.line(i)))
        .collect()
}

/// The block an anchor line opens: the lines after it that are indented
/// deeper (blank lines included), plus the line that closes it.
fn block_after(doc: &Document, at: usize) -> Range<usize> {
    let base = indent_width(split_indent(doc.line(at)).0, 4);
    let mut end = at + 1;
    while end < doc.line_count() {
        let line = doc.line(end);
        if !line.trim().is_empty() && indent_width(split_indent(line).0, 4) <= base {
            // The closing line (`}` or the next definition) belongs to the scope too.
            end += 1;
            break;
        }
        end += 1;
    }
    at + 1..end
}

/// The scope's lines as a document of their own, for the matcher; matches are
/// shifted back by `scope.start`.
fn locate_in(
    doc: &Document,
    old: &[&str],
    scope: &Range<usize>,
    opts: &MatchOptions,
    all: bool,
) -> Result<Vec<Match>, MatchError> {
    let shift = |mut m: Match| {
        m.range = m.range.start + scope.start..m.range.end + scope.start;
        m.alignment = m
            .alignment
            .iter()
            .map(|a| a.map(|d| d + scope.start))
            .collect();
        m
    };
    if scope.start == 0 && scope.end == doc.line_count() {
        return if all {
            matcher::locate_all(doc, old, opts)
        } else {
            matcher::locate(doc, old, None, opts).map(|m| vec![m])
        };
    }
    let text: String = scope
        .clone()
        .map(|i| format!("{}\n", doc.line(i)))
        .collect();
    let sub = Document::from_text(&text);
    let found = if all {
        matcher::locate_all(&sub, old, opts)
    } else {
        matcher::locate(&sub, old, None, opts).map(|m| vec![m])
    };
    found
        .map(|v| v.into_iter().map(shift).collect())
        .map_err(|e| match e {
            MatchError::Ambiguous { tier, candidates } => MatchError::Ambiguous {
                tier,
                candidates: candidates
                    .into_iter()
                    .map(|c| Candidate {
                        range: c.range.start + scope.start..c.range.end + scope.start,
                        similarity: c.similarity,
                    })
                    .collect(),
            },
            MatchError::NotFound { nearest, bounded } => MatchError::NotFound {
                nearest: nearest
                    .into_iter()
                    .map(|c| Candidate {
                        range: c.range.start + scope.start..c.range.end + scope.start,
                        similarity: c.similarity,
                    })
                    .collect(),
                bounded,
            },
            other => other,
        })
}

/// The shared approximate step ([`locate::approximate`](super::locate::approximate))
/// within `scope`: the cascade, then [`settle`](super::locate::settle).
fn approximate_in<N: AsRef<str>>(
    doc: &Document,
    old: &[&str],
    new: &[N],
    kept: &[bool],
    scope: &Range<usize>,
    opts: &MatchOptions,
) -> Result<Match, MatchError> {
    let m = locate_in(doc, old, scope, opts, false)?
        .into_iter()
        .next()
        .ok_or(MatchError::EmptyNeedle)?;
    super::locate::settle(doc, old, new, kept, m)
}

fn resolve_chunk(
    c: &Chunk,
    doc: &Document,
    ctx: &ResolveContext<'_>,
) -> Result<Resolution, EditError> {
    let opts = ctx.matching;
    // Narrow by the anchors, in order. Each anchor is looked for where the one
    // before it allows; after it, the chunk must *start* in its zone: the block
    // it opens (deeper-indented lines and the line closing them), or, for a
    // line that opens no block, everything after it. The chunk may run past.
    //
    // An anchor line that occurs more than once (`impl Dir {` in two `cfg`
    // variants) narrows to all of its zones: the chunk's own lines then
    // decide, and must still be unique. An anchor found nowhere in the file,
    // not even as a typo, says nothing about where the chunk is: for a chunk
    // with lines enough of its own to be located by (the approximate step's
    // 12 non-space characters), it is passed over with a note; a pure
    // addition or a chunk of a line or two has nothing else to go by and fails.
    let n = doc.line_count();
    let min_chars = if opts.max_tier < Tier::Fuzzy {
        usize::MAX
    } else {
        opts.fuzzy_min_chars
    };
    let has_old = c.lines.iter().any(|l| !matches!(l, HunkLine::Add(_)));
    // Enough of its own to be located by: the approximate step's minimum.
    let own_chars: usize = c
        .lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Context(t) | HunkLine::Remove(t) => Some(t),
            HunkLine::Add(_) => None,
        })
        .map(|t| t.chars().filter(|ch| !ch.is_whitespace()).count())
        .sum();
    let mut notes = Vec::new();
    // (zone, the anchor line that opened it)
    let mut zones: Vec<(Range<usize>, Option<usize>)> = vec![(0..n, None)];
    for a in &c.anchors {
        let mut next: Vec<(Range<usize>, Option<usize>)> = Vec::new();
        for (zone, last) in &zones {
            let search = last.map_or(zone.clone(), |k: usize| k + 1..zone.end);
            for at in find_anchor(doc, a, search, min_chars) {
                if next.iter().any(|(_, l)| *l == Some(at)) {
                    continue;
                }
                let block = block_after(doc, at);
                let opens = block.clone().any(|i| {
                    let l = doc.line(i);
                    !l.trim().is_empty()
                        && indent_width(split_indent(l).0, 4)
                            > indent_width(split_indent(doc.line(at)).0, 4)
                });
                let zone = if opens { at..block.end } else { at..n };
                next.push((zone, Some(at)));
            }
        }
        if next.is_empty() {
            if own_chars >= opts.fuzzy_min_chars && find_anchor(doc, a, 0..n, min_chars).is_empty()
            {
                notes.push(Warning::AnchorIgnored { anchor: a.clone() });
                continue;
            }
            return Err(EditError::AnchorNotFound { anchor: a.clone() });
        }
        zones = next;
    }
    if zones.len() > 1 && !has_old {
        // A pure addition goes right after its anchor: two anchors, two places.
        return Err(EditError::Ambiguous {
            tier: Tier::Exact,
            candidates: zones
                .iter()
                .filter_map(|(_, l)| *l)
                .map(|i| Candidate {
                    range: i..i + 1,
                    similarity: 1.0,
                })
                .collect(),
        });
    }
    let last_anchor = zones.first().and_then(|(_, l)| *l);
    let first = zones.iter().map(|(z, _)| z.start).min().unwrap_or(0);
    let scope = first..n;
    let in_zone = |v: Vec<Match>| -> Vec<Match> {
        v.into_iter()
            .filter(|m| {
                zones
                    .iter()
                    .any(|(z, _)| z.contains(&m.range.start) || z.is_empty())
            })
            .collect()
    };
    let (old, ops) = ops_of(&c.lines);
    let new: Vec<String> = c
        .lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Add(t) | HunkLine::Context(t) => Some(t.clone()),
            HunkLine::Remove(_) => None,
        })
        .collect();
    if old.is_empty() {
        // Only additions: right after the anchor; with none, at the end of the file.
        let at = last_anchor.map_or(doc.line_count(), |a| a + 1);
        // Sent again: the lines already follow the anchor.
        let text: usize = new.iter().map(|l| l.trim().len()).sum();
        if text >= 4
            && at + new.len() <= n
            && new
                .iter()
                .enumerate()
                .all(|(k, l)| doc.line(at + k).trim_end() == l.trim_end())
        {
            let mut r = Resolution::status(EditStatus::AlreadyApplied);
            r.lines = Some(at..at + new.len());
            r.tier = Some(Tier::Exact);
            return Ok(r);
        }
        let mut r = Resolution::status(EditStatus::Applied);
        r.pieces = vec![Piece {
            range: at..at,
            lines: new,
            eols: None,
        }];
        r.lines = Some(at..at);
        r.tier = last_anchor.map(|_| Tier::Exact);
        return Ok(r);
    }
    let strict = MatchOptions {
        max_tier: opts.max_tier.min(Tier::Unicode),
        nearest: false,
        ..opts.clone()
    };
    let found = match locate_in(doc, &old, &scope, &strict, true).map(&in_zone) {
        Ok(found) if !found.is_empty() => found,
        Ok(_) => {
            return Err(EditError::NotFound {
                nearest: Vec::new(),
                bounded: false,
                after_edit: None,
            });
        }
        Err(MatchError::NotFound { .. }) => {
            // Already applied: the chunk's result is where it would go. Only
            // a new side that adds a line proves it before the approximate
            // search (locate.md); a deletion's only once its old side is
            // found nowhere, not even approximately.
            let new_refs: Vec<&str> = new.iter().map(String::as_str).collect();
            let proves = super::locate::proves_applied(&old, &new_refs);
            let shows = super::locate::deletion_shows(&old, &kept_lines(&c.lines));
            let has_context = c.lines.iter().any(|l| matches!(l, HunkLine::Context(_)));
            let done_by_new = |require_proof: bool| -> Option<Resolution> {
                let allowed = if require_proof {
                    proves
                } else {
                    !proves && shows && !super::locate::short_quote_near(doc, &old, opts)
                };
                if !has_context || !allowed {
                    return None;
                }
                let found = locate_in(doc, &new_refs, &scope, &strict, true)
                    .map(&in_zone)
                    .ok()?;
                let [m] = found.as_slice() else {
                    return None;
                };
                if require_proof
                    && (!super::locate::applied_here(doc, &old, m.range.clone(), false, opts)
                        || m.tier > Tier::Exact
                            && !super::locate::proves_applied_tolerantly(&old, &new_refs))
                {
                    return None;
                }
                let mut r = Resolution::status(EditStatus::AlreadyApplied);
                r.lines = Some(m.range.clone());
                r.tier = Some(m.tier);
                Some(r)
            };
            if let Some(r) = done_by_new(true) {
                return Ok(r);
            }
            if opts.max_tier < Tier::Fuzzy {
                if let Some(r) = done_by_new(false) {
                    return Ok(r);
                }
                let nearest = MatchOptions {
                    nearest: true,
                    ..opts.clone()
                };
                return Err(locate_in(doc, &old, &scope, &nearest, false)
                    .err()
                    .map_or(EditError::BlankSearch, EditError::from));
            }
            match approximate_in(doc, &old, &new, &kept_lines(&c.lines), &scope, opts) {
                Ok(m) => vec![m],
                Err(e @ MatchError::NotFound { .. }) => {
                    if let Some(r) = done_by_new(false) {
                        return Ok(r);
                    }
                    return Err(e.into());
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(e) => return Err(e.into()),
    };
    let mut found = found;
    if c.end_of_file {
        // `*** End of File`: only a place that ends the file will do.
        let n = doc.line_count();
        found.retain(|m| m.range.end == n);
        if found.is_empty() {
            return Err(EditError::NotFound {
                nearest: Vec::new(),
                bounded: false,
                after_edit: None,
            });
        }
    }
    let m = match found.len() {
        1 => found.into_iter().next().ok_or(EditError::BlankSearch)?,
        _ if c.end_of_file => {
            let n = doc.line_count();
            match found.iter().filter(|m| m.range.end == n).count() {
                1 => found
                    .into_iter()
                    .find(|m| m.range.end == n)
                    .ok_or(EditError::BlankSearch)?,
                _ => {
                    return Err(EditError::Ambiguous {
                        tier: found[0].tier,
                        candidates: found.iter().map(Candidate::from).collect(),
                    });
                }
            }
        }
        _ => {
            return Err(EditError::Ambiguous {
                tier: found[0].tier,
                candidates: found.iter().map(Candidate::from).collect(),
            });
        }
    };
    let pieces = splice::splice(doc, &old, &m, &ops);
    let mut r = Resolution::status(EditStatus::Applied);
    r.pieces = pieces.into_iter().filter(|p| p.changes(doc)).collect();
    if r.pieces.is_empty() {
        r.status = EditStatus::AlreadyApplied;
    }
    r.tier = Some(m.tier);
    r.similarity = Some(m.similarity);
    r.lines = Some(m.range);
    r.warnings.extend(notes);
    Ok(r)
}

/// The change as an apply_patch envelope: one `*** Update File:` section whose
/// chunks carry their context (widened until unique).
fn render(path: &str, before: &str, after: &str) -> String {
    if before.is_empty() {
        let body: String = Document::from_text(after)
            .lines()
            .map(|l| format!("+{l}\n"))
            .collect();
        return format!("*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch\n");
    }
    let blocks = super::search_replace::change_blocks(before, after);
    let mut out = format!("*** Begin Patch\n*** Update File: {path}\n");
    for (old, new) in blocks {
        out.push_str("@@\n");
        for run in splice::line_diff(&old, &new) {
            if run.equal {
                for l in &old[run.old] {
                    out.push_str(&format!(" {l}\n"));
                }
            } else {
                for l in &old[run.old] {
                    out.push_str(&format!("-{l}\n"));
                }
                for l in &new[run.new] {
                    out.push_str(&format!("+{l}\n"));
                }
            }
        }
    }
    out.push_str("*** End Patch\n");
    out
}

impl FormatEdit for Chunk {
    fn kind(&self) -> EditKind {
        EditKind::Chunk
    }

    fn source_line(&self) -> usize {
        self.source_line
    }

    fn resolve(&self, doc: &Document, ctx: &ResolveContext<'_>) -> Result<Resolution, EditError> {
        resolve_chunk(self, doc, ctx)
    }
}

// ------------------------------------------------------------------ tool calls

/// The edit tool's arguments: the whole patch, under `input` (or `patch`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolArgs {
    input: Arg<String>,
    patch: Arg<String>,
}

/// Whether a JSON object is an apply_patch call: its `input` (or `patch`)
/// text holds an envelope or a section header.
fn is_tool_call(args: &Value) -> bool {
    fields::<ToolArgs>(args).is_some_and(|a| {
        let text = a.input.or(a.patch);
        text.given().is_some_and(|t| looks_like(t).is_some())
    })
}

fn parse_tool_call(args: &Value) -> Result<Patch, ParseError> {
    let expected = "a string holding the patch";
    // Not an object at all is named as the patch's absence, as it always was.
    let a: ToolArgs = fields(args).ok_or_else(|| bad("input", expected))?;
    parse_text(&a.input.or(a.patch).required("input", expected)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(file: &str, patch: &str) -> Result<String, EditError> {
        let doc = Document::from_text(file);
        let p = parse_text(patch).map_err(|_| EditError::BlankSearch)?;
        let opts = MatchOptions::default();
        let ctx = ResolveContext::new(&opts);
        let mut b = crate::edit::TextEditBuilder::new();
        for op in p.ops() {
            for piece in op.resolve(&doc, &ctx)?.pieces {
                b.replace(piece.range, piece.lines, 0);
            }
        }
        Ok(doc
            .apply(&b.finish().map_err(|_| EditError::BlankSearch)?)
            .text()
            .to_owned())
    }

    const THREE: &str = "class A:\n    def run(self):\n        return 1\n\nclass B:\n    def run(self):\n        return 1\n\nclass C:\n    def run(self):\n        return 1\n";

    #[test]
    fn stacked_anchors_land_in_the_right_class() {
        let p = "*** Begin Patch\n*** Update File: x.py\n@@ class B:\n@@ def run(self):\n-        return 1\n+        return 2\n*** End Patch\n";
        let out = apply(THREE, p).unwrap();
        assert_eq!(
            out,
            THREE.replacen(
                "        return 1\n\nclass C",
                "        return 2\n\nclass C",
                1
            )
        );
    }

    #[test]
    fn ambiguous_chunk_is_refused() {
        let p = "*** Begin Patch\n*** Update File: x.py\n@@\n-        return 1\n+        return 2\n*** End Patch\n";
        assert!(matches!(apply(THREE, p), Err(EditError::Ambiguous { .. })));
    }

    #[test]
    fn pure_addition_goes_after_the_anchor() {
        let p = "*** Begin Patch\n*** Update File: x.py\n@@ class B:\n+    x = 1\n*** End Patch\n";
        let out = apply(THREE, p).unwrap();
        assert!(out.contains("class B:\n    x = 1\n    def run"), "{out}");
    }

    #[test]
    fn lenient_envelope_notes() {
        let p = "apply_patch <<'EOF'\n  *** Begin Patch\n*** Update File: x.py\n@@ class C:\n-        return 1\n+        return 3\nEOF\n";
        let patch = parse_text(p).unwrap();
        // Padded begin, no end marker, a heredoc wrapper.
        assert_eq!(patch.notes.len(), 3);
    }
}
