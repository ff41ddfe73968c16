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
//!
//! A block under a bare name (`benchsuite`: one word, no extension, no `/`)
//! in a reply whose other blocks name paths may be a file at the root or an
//! example: the parser marks it ([`WholeFile::bare_name`]) and the plan,
//! which sees the root, settles it ([`settle_bare_names`]) — the file's new
//! content when the root holds that file, else dropped with a note. Never
//! skipped without a word.

use std::ops::Range;

use serde::Deserialize;
use serde_json::Value;

use super::tool_args::{Arg, bad, fields};
use super::{Action, EditOp, FileChange, FormatDef, FormatEdit, Patch, Resolution, ResolveContext};
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
    /// The path is a bare name read above the fence (`benchsuite`), not a
    /// path: the block is that file only if the root holds a file of that
    /// name, which the plan decides (`whole::settle_bare_names`).
    pub bare_name: bool,
}

/// An opening fence: its marker (```` ``` ````, `~~~`, longer runs) and info string.
fn fence(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let ch = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = t.chars().take_while(|c| *c == ch).count();
    (n >= 3).then(|| (&t[..n], t[n..].trim()))
}

/// A fenced block.
struct Fenced {
    /// Its path, from the info string or the line above.
    path: Option<String>,
    /// Without a path: the bare name on the line above, if it holds one
    /// ([`bare_name`]).
    bare: Option<String>,
    content: Vec<String>,
    /// The 1-based line its content starts on.
    at: usize,
}

/// A line above a fence that names a file at the root the way no path rule
/// can tell from a word (`benchsuite`, `configure`): after the decorations a
/// path may carry (`` `x` ``, `**x**`, `# x`, `File: x`), one token of
/// letters, digits and `_ - . + @`, at least one letter or digit, not
/// starting with `-`, not ending with `.`. A trailing `:` makes it prose
/// (`Output:`, `Then run:`), as do spaces (a sentence). Called only where the
/// line does not read as a path.
fn bare_name(line: &str) -> Option<String> {
    let t = super::search_replace::undecorated(line).trim_end_matches(['*', '`', '"', '\'', ' ']);
    let ok = !t.is_empty()
        && t.len() <= 255
        && !t.starts_with('-')
        && !t.ends_with('.')
        && t.chars().any(char::is_alphanumeric)
        && t.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '@'));
    ok.then(|| t.to_owned())
}

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
        let above = (0..i).rev().find(|&k| !lines[k].trim().is_empty());
        let from_above = above.and_then(|k| super::search_replace::path_from(lines[k]));
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
        let bare = match (&path, above) {
            (None, Some(k)) => bare_name(lines[k]),
            _ => None,
        };
        last_file = path.is_some().then_some((i, marker, close));
        out.push(Fenced {
            path,
            bare,
            content,
            at: i + 2,
        });
        i = close + 1;
    }
    Ok(out)
}

/// The fenced files: those with a path, and beside them those under a bare
/// name (files or examples, settled at plan time); or, when no fence names a
/// path, a lone fence (for `--file`; a bare name above it is not its path).
fn files(input: &str) -> Result<Vec<Fenced>, FenceProblem> {
    let mut all = fences(input)?;
    if all.iter().any(|f| f.path.is_some()) {
        all.retain(|f| f.path.is_some() || f.bare.is_some());
        return Ok(all);
    }
    if all.len() != 1 {
        return Ok(Vec::new());
    }
    for f in &mut all {
        f.bare = None;
    }
    Ok(all)
}

/// Whether `input` holds a fenced file with a path: the fence's line.
pub(crate) fn looks_like(input: &str) -> Option<usize> {
    match fences(input) {
        Ok(f) if f.iter().any(|f| f.path.is_some()) => {
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
        .map(|f| {
            let bare_name = f.path.is_none() && f.bare.is_some();
            FileChange::edit(
                f.path.or(f.bare),
                vec![EditOp::Whole(WholeFile {
                    lines: f.content,
                    source_line: f.at,
                    bare_name,
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
        unechoed = WholeFile { lines, ..w.clone() };
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
            eols: None,
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

/// Settles the blocks under a bare name against the root: one whose name
/// `is_file` there stays, that file's new content like any other; each other
/// one is dropped with a note ([`Warning::BareNameSkipped`]) — it was an
/// example, or a file to create that the model must name as `./NAME`.
/// `None` when nothing is dropped: the patch stands as it is.
pub(crate) fn settle_bare_names(patch: &Patch, is_file: impl Fn(&str) -> bool) -> Option<Patch> {
    let bare = |c: &FileChange| match (&c.path, &c.action) {
        (Some(name), Action::Edit(ops)) => match ops.as_slice() {
            [EditOp::Whole(w)] if w.bare_name => Some((name.clone(), w.source_line)),
            _ => None,
        },
        _ => None,
    };
    // Most patches have none: they cost one look per change, no allocation.
    if !patch.changes.iter().any(|c| bare(c).is_some()) {
        return None;
    }
    let dropped: Vec<Option<(String, usize)>> = patch
        .changes
        .iter()
        .map(|c| bare(c).filter(|(name, _)| !is_file(name)))
        .collect();
    if dropped.iter().all(Option::is_none) {
        return None;
    }
    let mut out = Patch {
        changes: Vec::with_capacity(patch.changes.len()),
        notes: patch.notes.clone(),
    };
    for (c, d) in patch.changes.iter().zip(dropped) {
        match d {
            // The content starts on the line after the fence.
            Some((name, at)) => out.notes.push(Warning::BareNameSkipped {
                name,
                line: at.saturating_sub(1),
            }),
            None => out.changes.push(c.clone()),
        }
    }
    Some(out)
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
                bare_name: false,
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

    /// One word that could name a file at the root is a bare name; prose
    /// (a trailing `:`, a sentence), fences and rules are not.
    #[test]
    fn bare_names_and_prose() {
        for (line, want) in [
            ("benchsuite", Some("benchsuite")),
            ("  `configure`  ", Some("configure")),
            ("**run-tests**", Some("run-tests")),
            ("### benchsuite", Some("benchsuite")),
            ("File: benchsuite", Some("benchsuite")),
            ("gradlew", Some("gradlew")),
            ("Output:", None),
            ("`benchsuite`:", None),
            ("Then run:", None),
            ("The tests should pass after that", None),
            ("```", None),
            ("---", None),
            ("}", None),
            ("$", None),
            ("--verbose", None),
            ("Done.", None),
            ("cat > x", None),
        ] {
            assert_eq!(bare_name(line).as_deref(), want, "{line:?}");
        }
    }

    /// Beside a file with a path, a block under a bare name is parsed as a
    /// candidate (marked, named); prose-headed blocks are still skipped.
    #[test]
    fn a_bare_name_beside_a_path_is_a_candidate() {
        let p = parse_text(
            "a.py\n```\nA = 2\n```\n\nOutput:\n```\n2\n```\n\nbenchsuite\n```sh\nrun\n```\n",
        )
        .unwrap();
        let got: Vec<(Option<&str>, bool)> = p
            .changes
            .iter()
            .map(|c| match c.action.ops() {
                [EditOp::Whole(w)] => (c.path.as_deref(), w.bare_name),
                _ => panic!("{c:?}"),
            })
            .collect();
        assert_eq!(got, [(Some("a.py"), false), (Some("benchsuite"), true)]);
    }

    /// With no path anywhere, a lone fence under a bare name is the
    /// `--file` fence (no path of its own), and several are no edits.
    #[test]
    fn bare_names_alone_keep_the_lone_fence_rule() {
        let p = parse_text("benchsuite\n```\nx\n```\n").unwrap();
        assert_eq!(p.changes[0].path, None);
        assert!(matches!(
            p.changes[0].action.ops(),
            [EditOp::Whole(WholeFile {
                bare_name: false,
                ..
            })]
        ));
        assert_eq!(
            parse_text("benchsuite\n```\nx\n```\nconfigure\n```\ny\n```\n"),
            Err(ParseError::NoEdits)
        );
    }

    /// Settling keeps candidates the root has and drops the others with a
    /// note naming the block's fence line; with nothing to drop it is `None`.
    #[test]
    fn settling_bare_names() {
        let p = parse_text("a.py\n```\nA\n```\nbenchsuite\n```\nb\n```\nconfigure\n```\nc\n```\n")
            .unwrap();
        assert_eq!(settle_bare_names(&p, |_| true), None);
        let s = settle_bare_names(&p, |n| n == "benchsuite").unwrap();
        let paths: Vec<_> = s.changes.iter().map(|c| c.path.as_deref()).collect();
        assert_eq!(paths, [Some("a.py"), Some("benchsuite")]);
        assert_eq!(
            s.notes,
            [Warning::BareNameSkipped {
                name: "configure".into(),
                line: 10
            }]
        );
    }

    #[test]
    fn truncation_guard() {
        let doc = Document::from_text(&(0..20).map(|i| format!("line {i}\n")).collect::<String>());
        let lines: Vec<String> = vec!["line 0".into(), "// ... rest unchanged ...".into()];
        let e = resolve_whole(
            &WholeFile {
                lines,
                source_line: 1,
                bare_name: false,
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
