//! Whole file: the model writes the file's complete new content, fenced, with
//! its path. The spec is `edit-formats/whole.md`; the format's definition
//! (`DEF`) is at the top of this module.
//!
//! The new content is diffed against the file, so every line the model kept
//! keeps the file's bytes (endings, trailing whitespace); only changed lines
//! are written from the model's text. A missing file is created.
//!
//! The truncation guard (scenario 45): a rewrite that removes more than
//! [`TRUNCATION_SHARE`] of the file's lines **and** contains lazy placeholders
//! the file did not have (`// ... rest unchanged ...`) is refused — the model
//! elided code it meant to keep. Placeholders under the threshold are applied
//! with a warning.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;

use super::tool_args::{Arg, bad, fields};
use super::{EditOp, FileChange, FormatDef, FormatEdit, Patch, Resolution, ResolveContext};
use crate::matcher::{Match, Tier};
use crate::report::{EditError, EditKind, EditStatus, ParseError, Warning};
use crate::splice::{self, Op, Piece};
use crate::text::Document;

/// The whole-file format's definition.
pub(crate) static DEF: FormatDef = FormatDef {
    name: "whole",
    summary: "whole files: the model writes the complete new content, fenced, with its path",
    instructions: include_str!("../../edit-formats/whole.prompt.md"),
    tool: include_str!("../../edit-formats/whole.tool.json"),
    detect: looks_like,
    // A fenced file with a path is the least specific shape: only when nothing else fits.
    detect_last: true,
    detect_tool_call: is_tool_call,
    tool_call_rank: 4,
    parse: |input, _| parse_text(input),
    parse_tool_call: |args, _| parse_tool_call(args),
    render,
    view,
};

/// Share of the file's lines a rewrite may remove while it holds new placeholders.
pub(crate) const TRUNCATION_SHARE: f64 = 0.3;

/// A file's new content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WholeFile {
    /// The lines, without endings.
    pub lines: Vec<String>,
    /// 1-based input line where the content starts (0 for JSON).
    pub source_line: usize,
}

/// An opening fence: its marker (```` ``` ````, `~~~`, longer runs) and info string.
fn fence(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|c| *c == ch).count();
    (n >= 3).then(|| (&t[..n], t[n..].trim()))
}

/// A fenced block: its path (from the info string or the line above), its
/// content, the line its content starts on.
type Fenced = (Option<String>, Vec<String>, usize);

/// Why the fences of an input do not hold complete files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FenceProblem {
    /// A fence opened at this line never closes: the output was cut off.
    Unclosed(usize),
    /// A file's fence was closed early by a line of its own content, so the
    /// fence meant to close it opens a block that never closes.
    ClosedEarly {
        open: usize,
        closed_by: usize,
        fence: usize,
        needed: usize,
    },
}

/// A line that is only a run of `ch` (at least 3), trimmed: its length.
fn bare_run(line: &str, ch: char) -> Option<usize> {
    let t = line.trim();
    (t.len() >= 3 && t.chars().all(|c| c == ch)).then_some(t.len())
}

/// The fenced blocks of `input`, or why they are not complete.
fn fences(input: &str) -> Result<Vec<Fenced>, FenceProblem> {
    let lines: Vec<&str> = input
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut out = Vec::new();
    // The last closed block with a path: its opener's line, marker and closer.
    let mut last_file: Option<(usize, &str, usize)> = None;
    let mut i = 0;
    while i < lines.len() {
        let Some((marker, info)) = fence(lines[i]) else {
            i += 1;
            continue;
        };
        let from_info = info
            .split_whitespace()
            .rev()
            .find(|w| w.contains('.') || w.contains('/'))
            .and_then(super::search_replace::path_from);
        let from_above = (0..i)
            .rev()
            .find(|&k| !lines[k].trim().is_empty())
            .and_then(|k| super::search_replace::path_from(lines[k]));
        let close = (i + 1..lines.len()).find(|&k| {
            let t = lines[k].trim();
            t.len() >= marker.len() && t.chars().all(|c| marker.starts_with(c))
        });
        let Some(close) = close else {
            // A bare fence with no path above it, right after a file whose
            // fence a content line closed: that fence was meant to close the
            // file, and a backtick line of the file closed it first (tildes
            // are left to the plain cut-off message).
            let ch = marker.chars().next().unwrap_or('`');
            if let Some((open, m, closed_by)) = last_file.filter(|(_, m, _)| {
                ch == '`' && info.is_empty() && from_above.is_none() && m.starts_with(ch)
            }) {
                let longest = lines[open + 1..i]
                    .iter()
                    .filter_map(|l| bare_run(l, ch))
                    .max()
                    .unwrap_or(0);
                return Err(FenceProblem::ClosedEarly {
                    open: open + 1,
                    closed_by: closed_by + 1,
                    fence: m.len(),
                    needed: longest.max(m.len()) + 1,
                });
            }
            return Err(FenceProblem::Unclosed(i + 1));
        };
        let content = lines[i + 1..close]
            .iter()
            .map(|l| (*l).to_owned())
            .collect();
        let path = from_info.or(from_above);
        last_file = path.is_some().then_some((i, marker, close));
        out.push((path, content, i + 2));
        i = close + 1;
    }
    Ok(out)
}

/// The fenced files: those with a path; or, when no fence names one, a lone
/// fence (for `--file`).
fn files(input: &str) -> Result<Vec<Fenced>, FenceProblem> {
    let all = fences(input)?;
    if all.iter().any(|(p, _, _)| p.is_some()) {
        return Ok(all.into_iter().filter(|(p, _, _)| p.is_some()).collect());
    }
    Ok(if all.len() == 1 { all } else { Vec::new() })
}

/// Whether `input` holds a fenced file with a path: the fence's line.
pub(crate) fn looks_like(input: &str) -> Option<usize> {
    match fences(input) {
        Ok(f) if f.iter().any(|(p, _, _)| p.is_some()) => {
            input.lines().position(|l| fence(l).is_some())
        }
        // A file whose fence closed early: whole, so that the parse error says so.
        Err(FenceProblem::ClosedEarly { open, .. }) => Some(open - 1),
        // A cut-off fence after a path: whole, so that the parse error says so.
        Err(FenceProblem::Unclosed(line)) if line > 1 => input
            .lines()
            .nth(line - 2)
            .and_then(super::search_replace::path_from)
            .map(|_| line - 1),
        _ => None,
    }
}

fn parse_text(input: &str) -> Result<Patch, ParseError> {
    let changes: Vec<FileChange> = files(input)
        .map_err(|p| match p {
            FenceProblem::Unclosed(line) => ParseError::UnclosedFence { line },
            FenceProblem::ClosedEarly {
                open,
                closed_by,
                fence,
                needed,
            } => ParseError::FenceClosedEarly {
                open,
                closed_by,
                fence,
                needed,
            },
        })?
        .into_iter()
        .map(|(path, lines, at)| {
            FileChange::edit(
                path,
                vec![EditOp::Whole(WholeFile {
                    lines,
                    source_line: at,
                })],
            )
        })
        .collect();
    if changes.is_empty() {
        return Err(ParseError::NoEdits);
    }
    Ok(Patch {
        changes,
        notes: Vec::new(),
    })
}

fn resolve_whole(w: &WholeFile, doc: &Document) -> Result<Resolution, EditError> {
    // A model that echoes a file as it read it starts the content with the
    // file's BOM: that U+FEFF is the BOM the document keeps apart from its
    // lines, not a character of the first line (written, it would be a
    // second BOM). A file without one may be given one.
    let unechoed;
    let w = if doc.has_bom() && w.lines.first().is_some_and(|l| l.starts_with('\u{feff}')) {
        let mut lines = w.lines.clone();
        super::strip_bom(&mut lines);
        unechoed = WholeFile {
            lines,
            source_line: w.source_line,
        };
        &unechoed
    } else {
        w
    };
    let old: Vec<&str> = doc.lines().collect();
    // Lines the model copied byte for byte are kept first; then, inside
    // each changed block, lines equal but for trailing whitespace count as
    // kept too: a model retyping a file drops trailing spaces it never meant
    // to change. (In that order: where the file has both a blank line and a
    // whitespace-only one, a blank line the model wrote is the blank one.)
    // A copy never adds trailing whitespace: a line with trailing whitespace
    // the file's lacks is the model's own (a `//! ` it wrote), written as given.
    let old_key: Vec<&str> = old.iter().map(|l| l.trim_end()).collect();
    let new_key: Vec<&str> = w.lines.iter().map(|l| l.trim_end()).collect();
    let mut ops = Vec::with_capacity(w.lines.len());
    for run in splice::line_diff(&old, &w.lines) {
        if run.equal {
            ops.extend(run.old.map(Op::Keep));
            continue;
        }
        let (o, n) = (run.old.start, run.new.start);
        for sub in splice::line_diff(&old_key[run.old.clone()], &new_key[run.new.clone()]) {
            if !sub.equal {
                ops.extend(
                    w.lines[n + sub.new.start..n + sub.new.end]
                        .iter()
                        .cloned()
                        .map(Op::Add),
                );
                continue;
            }
            for (i, j) in
                (o + sub.old.start..o + sub.old.end).zip(n + sub.new.start..n + sub.new.end)
            {
                let model = &w.lines[j];
                if old[i].starts_with(model.as_str()) {
                    ops.push(Op::Keep(i));
                } else {
                    ops.push(Op::Add(model.clone()));
                }
            }
        }
    }
    let kept = ops.iter().filter(|op| matches!(op, Op::Keep(_))).count();
    let removed = old.len() - kept;
    let new_placeholders: Vec<&String> = w
        .lines
        .iter()
        .filter(|l| super::search_replace::is_placeholder(l) && !old.contains(&l.as_str()))
        .collect();
    let mut warnings = Vec::new();
    if let Some(first) = new_placeholders.first() {
        let share = removed as f64 / old.len().max(1) as f64;
        if share > TRUNCATION_SHARE {
            return Err(EditError::Truncated {
                removed,
                total: old.len(),
                placeholder: first.trim().to_owned(),
            });
        }
        warnings.push(Warning::PlaceholderWritten {
            text: first.trim().to_owned(),
        });
    }
    let range = 0..old.len();
    let pieces: Vec<Piece> = if old.is_empty() {
        vec![Piece {
            range: 0..0,
            lines: w.lines.clone(),
        }]
    } else {
        let m = Match::at(range.clone(), Tier::Exact);
        splice::splice(doc, &old, &m, &ops)
    };
    let mut r = Resolution::status(if pieces.is_empty() {
        EditStatus::AlreadyApplied
    } else {
        EditStatus::Applied
    });
    r.pieces = pieces;
    r.lines = Some(range);
    r.warnings = warnings;
    Ok(r)
}

impl FormatEdit for WholeFile {
    fn kind(&self) -> EditKind {
        EditKind::Whole
    }

    fn source_line(&self) -> usize {
        self.source_line
    }

    fn can_create(&self) -> bool {
        true
    }

    fn resolve(&self, doc: &Document, _: &ResolveContext<'_>) -> Result<Resolution, EditError> {
        resolve_whole(self, doc)
    }
}

/// The whole new file, fenced with more backticks than any run in it.
fn render(path: &str, _before: &str, after: &str) -> String {
    let body: String = Document::from_text(after)
        .lines()
        .map(|l| format!("{l}\n"))
        .collect();
    // A fence longer than any run of backticks in the content.
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{path}\n{fence}\n{body}{fence}\n")
}

/// The lines as they are: a model writing whole files sees plain text.
fn view(doc: &Document, lines: Option<Range<usize>>) -> String {
    let range = lines.unwrap_or(0..doc.line_count());
    let end = range.end.min(doc.line_count());
    (range.start.min(end)..end)
        .map(|i| format!("{}\n", doc.line(i)))
        .collect()
}

// ------------------------------------------------------------------ tool calls

/// The edit tool's arguments: `{path, content}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolArgs {
    path: Arg<String>,
    file_path: Arg<String>,
    content: Arg<String>,
}

/// Whether a JSON object is a whole-file call: it has `content`.
fn is_tool_call(args: &Value) -> bool {
    fields::<ToolArgs>(args).is_some_and(|a| a.content.is_given())
}

fn parse_tool_call(args: &Value) -> Result<Patch, ParseError> {
    let a: ToolArgs = fields(args).ok_or_else(|| bad("json", "a JSON object"))?;
    let path = a.path.or(a.file_path).required("path", "a string")?;
    let content = a.content.required("content", "a string")?;
    let content = content.strip_suffix('\n').unwrap_or(&content);
    let lines = if content.is_empty() {
        Vec::new()
    } else {
        content
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned())
            .collect()
    };
    Ok(Patch {
        changes: vec![FileChange::edit(
            Some(path),
            vec![EditOp::Whole(WholeFile {
                lines,
                source_line: 0,
            })],
        )],
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fenced_files_with_paths() {
        let p = parse_text(
            "Here:\n\nsrc/a.py\n```python\nx = 1\n```\n\n```rust src/b.rs\nfn f() {}\n```\n",
        )
        .unwrap();
        assert_eq!(p.changes.len(), 2);
        assert_eq!(p.changes[1].path.as_deref(), Some("src/b.rs"));
    }

    #[test]
    fn truncation_guard() {
        let doc = Document::from_text(&(0..20).map(|i| format!("line {i}\n")).collect::<String>());
        let lines: Vec<String> = vec!["line 0".into(), "// ... rest unchanged ...".into()];
        let e = resolve_whole(
            &WholeFile {
                lines,
                source_line: 1,
            },
            &doc,
        )
        .unwrap_err();
        assert!(matches!(
            e,
            EditError::Truncated {
                removed: 19,
                total: 20,
                ..
            }
        ));
    }
}
