//! Edit formats: how a model writes a change, behind one trait.
//!
//! A format parses model text (or tool-call JSON arguments) into a [`Patch`]:
//! per file, either format-specific edits ([`EditOp`]) or a whole-file action
//! (create, delete). Resolving an edit against a [`Document`] goes through the
//! matcher cascade and [`splice`](crate::splice) and yields a [`Resolution`]:
//! line replacements plus what the report should say.
//!
//! Parsing never touches files; resolving is a pure function of the edit and
//! the document. The closed [`Format`] enum is the runtime choice; adding a
//! format means a new variant, a module, and its files under `edit-formats/`.

pub(crate) mod apply_patch;
pub(crate) mod hashline;
pub(crate) mod search_replace;
pub(crate) mod udiff;
pub(crate) mod whole;

use std::ops::Range;

use crate::matcher::{MatchOptions, Tier};
use crate::report::{EditError, EditStatus, Warning};
use crate::splice::Piece;
use crate::text::Document;

pub use apply_patch::{ApplyPatch, Chunk};
pub use hashline::{Anchor, AnchorEdit, AnchorOp, Hashline, line_hash};
pub use search_replace::{Block, SearchReplace, Split};
pub use udiff::{DiffOptions, Hunk, HunkLine, UnifiedDiff, render_unified};
pub use whole::{Whole, WholeFile};

/// Why model text could not be parsed. Positions are 1-based input lines.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A block was opened and never closed.
    #[error("line {line}: block opened here is never closed")]
    Unterminated {
        /// Line of the opening marker.
        line: usize,
    },
    /// A block has no divider between its two halves.
    #[error("line {line}: block has no divider")]
    MissingDivider {
        /// Line of the opening marker.
        line: usize,
    },
    /// A divider or closing marker appeared outside a block.
    #[error("line {line}: marker outside a block")]
    StrayMarker {
        /// Line of the marker.
        line: usize,
    },
    /// The input holds no edit this format recognises.
    #[error("no edits found")]
    NoEdits,
    /// The tool-call arguments are not what the format's schema asks for.
    #[error("bad tool arguments: {field}")]
    BadArguments {
        /// The field at fault (`path`, `old_string`, …) or `json` when it is not an object.
        field: String,
        /// What was expected of it.
        expected: &'static str,
    },
    /// A hunk header whose line numbers cannot be read.
    #[error("line {line}: bad hunk header")]
    BadHunkHeader {
        /// Line of the header.
        line: usize,
    },
    /// A line inside a hunk that is none of ` `, `-`, `+`, `\`.
    #[error("line {line}: not a hunk line")]
    BadHunkLine {
        /// The line.
        line: usize,
    },
    /// A hunk with no body.
    #[error("line {line}: empty hunk")]
    EmptyHunk {
        /// Line of the header.
        line: usize,
    },
    /// A binary patch (lancet edits text).
    #[error("line {line}: binary patch")]
    BinaryPatch {
        /// Line where it starts.
        line: usize,
    },
    /// A hashline directive (`@@ replace …`) whose anchors cannot be read.
    #[error("line {line}: bad directive")]
    BadDirective {
        /// Line of the directive.
        line: usize,
    },
    /// A hashline payload line that does not start with `+`.
    #[error("line {line}: payload line without +")]
    BadPayloadLine {
        /// The line.
        line: usize,
    },
    /// A fence opened and never closed (the output was cut off).
    #[error("line {line}: unclosed fence")]
    UnclosedFence {
        /// The line of the opening fence.
        line: usize,
    },
    /// A line inside an apply_patch section that is none of ` `, `-`, `+`, `@@`, `***`.
    #[error("line {line}: not a patch line")]
    BadPatchLine {
        /// The line.
        line: usize,
    },
    /// Something the format has but lancet does not do.
    #[error("line {line}: {what} are not supported")]
    Unsupported {
        /// Line where it appears.
        line: usize,
        /// What it is.
        what: &'static str,
    },
    /// `--format auto` could not tell which format the input is.
    #[error("unrecognised input")]
    Unrecognised,
    /// A file mode that is not one git records for a regular file (100644, 100755).
    #[error("line {line}: file mode {mode} refused")]
    BadMode {
        /// Line where it appears.
        line: usize,
        /// The mode as written (at most 16 characters of it).
        mode: String,
    },
}

/// What one file should undergo.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Apply edits to its text (for search/replace, an empty SEARCH creates a missing file).
    Edit(Vec<EditOp>),
    /// Create it: it must not exist; the edits build its content from nothing.
    Create(Vec<EditOp>),
    /// Delete it: the edits, applied, must leave it empty (they check its content).
    Delete(Vec<EditOp>),
    /// Delete it, whatever it holds (it must exist). The op stands for the
    /// deletion in the report.
    Remove(EditOp),
}

impl Action {
    /// The edits, whatever the action.
    pub fn ops(&self) -> &[EditOp] {
        match self {
            Action::Edit(ops) | Action::Create(ops) | Action::Delete(ops) => ops,
            Action::Remove(op) => std::slice::from_ref(op),
        }
    }
}

/// The changes a patch makes to one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    /// Path relative to the root as the model wrote it; `None` when the input names no file.
    pub path: Option<String>,
    /// What to do.
    pub action: Action,
    /// Where the file moves to (a rename).
    pub rename_to: Option<String>,
    /// The file's mode afterwards (unix permission bits, e.g. `0o755`).
    pub mode: Option<u32>,
    /// The abbreviated git blob id of the content the change was made against
    /// (a git diff's `index` line). When the file matches it, the patch's line
    /// numbers are known to be exact.
    pub base_blob: Option<String>,
    /// The abbreviated git blob id of the content the change leads to: a file
    /// that already has it needs nothing.
    pub result_blob: Option<String>,
}

impl FileChange {
    /// A change that edits `path`'s text.
    pub fn edit(path: Option<String>, ops: Vec<EditOp>) -> FileChange {
        FileChange {
            path,
            action: Action::Edit(ops),
            rename_to: None,
            mode: None,
            base_blob: None,
            result_blob: None,
        }
    }
}

/// Parsed model output: file changes in input order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Patch {
    /// The changes. Several may name the same file; they are applied together.
    pub changes: Vec<FileChange>,
    /// What the parser forgave (a loose envelope), to tell the model.
    pub notes: Vec<Warning>,
}

impl Patch {
    /// Every edit of every file, in input order.
    pub fn ops(&self) -> Vec<&EditOp> {
        self.changes.iter().flat_map(|c| c.action.ops()).collect()
    }

    /// Number of edits (the unit that [`EditReport::index`](crate::EditReport::index) counts).
    pub fn edit_count(&self) -> usize {
        self.changes.iter().map(|c| c.action.ops().len()).sum()
    }
}

/// One format-specific edit of one file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EditOp {
    /// A search/replace block.
    SearchReplace(Block),
    /// A unified diff hunk.
    Hunk(Hunk),
    /// A hashline anchor edit.
    Anchor(AnchorEdit),
    /// An apply_patch chunk.
    Chunk(Chunk),
    /// A whole file's new content.
    Whole(WholeFile),
    /// Delete the file (hashline `delete file`, apply_patch `*** Delete File:`).
    RemoveFile {
        /// 1-based input line of the request (0 for JSON).
        source_line: usize,
    },
}

impl EditOp {
    /// 1-based input line the edit starts on (0 when it came from JSON).
    pub fn source_line(&self) -> usize {
        match self {
            EditOp::SearchReplace(b) => b.source_line,
            EditOp::Hunk(h) => h.source_line,
            EditOp::Anchor(a) => a.source_line,
            EditOp::Chunk(c) => c.source_line,
            EditOp::Whole(w) => w.source_line,
            EditOp::RemoveFile { source_line } => *source_line,
        }
    }

    /// Whether applying this edit to a missing file creates the file.
    pub fn can_create(&self) -> bool {
        match self {
            EditOp::SearchReplace(_) | EditOp::Whole(_) => true,
            EditOp::Anchor(a) => matches!(a.op, AnchorOp::SetFile { .. }),
            EditOp::Hunk(_) | EditOp::Chunk(_) | EditOp::RemoveFile { .. } => false,
        }
    }

    /// What sort of edit it is.
    pub fn kind(&self) -> crate::report::EditKind {
        match self {
            EditOp::SearchReplace(_) => crate::report::EditKind::Block,
            EditOp::Hunk(_) => crate::report::EditKind::Hunk,
            EditOp::Anchor(_) => crate::report::EditKind::Anchor,
            EditOp::Chunk(_) => crate::report::EditKind::Chunk,
            EditOp::Whole(_) => crate::report::EditKind::Whole,
            EditOp::RemoveFile { .. } => crate::report::EditKind::Remove,
        }
    }

    /// Resolves the edit against a document, through its format.
    pub fn resolve(
        &self,
        doc: &Document,
        ctx: &ResolveContext<'_>,
    ) -> Result<Resolution, EditError> {
        match self {
            EditOp::SearchReplace(b) => SearchReplace.resolve(b, doc, ctx),
            EditOp::Hunk(h) => UnifiedDiff.resolve(h, doc, ctx),
            EditOp::Anchor(a) => Hashline.resolve(a, doc, ctx),
            EditOp::Chunk(c) => ApplyPatch.resolve(c, doc, ctx),
            EditOp::Whole(w) => Whole.resolve(w, doc, ctx),
            // The engine deletes the file; the op only carries the report.
            EditOp::RemoveFile { .. } => Ok(Resolution::status(EditStatus::Applied)),
        }
    }
}

/// What resolving needs besides the edit and the document.
#[derive(Debug, Clone)]
pub struct ResolveContext<'a> {
    /// Whether the file exists (a missing file resolves against an empty document).
    pub exists: bool,
    /// Matcher options.
    pub matching: &'a MatchOptions,
    /// How far (in lines) the edits before this one in the same file were found
    /// from where they said they were: the best guess for this one's shift.
    pub offset: isize,
    /// Whether the document is known to be exactly the content the edit was
    /// written against (a git blob id matched), so stated line numbers are exact.
    pub verified: bool,
    /// The file as the model last saw it, when the caller knows (the agent's
    /// read): hashline anchors whose lines moved are relocated by its content.
    pub seen: Option<&'a Document>,
    /// The edits just before and after this one were found at the same offset
    /// (`offset`), so its stated position, shifted by it, can be trusted.
    pub bracketed: bool,
}

impl<'a> ResolveContext<'a> {
    /// A context for a file that exists, with no learned offset.
    pub fn new(matching: &'a MatchOptions) -> ResolveContext<'a> {
        ResolveContext {
            exists: true,
            matching,
            offset: 0,
            verified: false,
            seen: None,
            bracketed: false,
        }
    }
}

/// A located edit, ready to join the file's [`TextEdit`](crate::TextEdit).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// Applied, already applied, or noop.
    pub status: EditStatus,
    /// Line replacements (empty unless applied).
    pub pieces: Vec<Piece>,
    /// Whether the file should end with a newline afterwards, when the edit says.
    pub final_newline: Option<bool>,
    /// The ending the edit's own text used, for a file that has none to copy.
    pub eol: Option<crate::text::Eol>,
    /// How far (in lines) the edit was found from where it said it was.
    pub offset: Option<isize>,
    /// The tier that located the text (None when nothing was located, e.g. a new file).
    pub tier: Option<Tier>,
    /// Similarity of the located text.
    pub similarity: Option<f64>,
    /// 0-based original lines the edit concerns.
    pub lines: Option<Range<usize>>,
    /// What was done on the model's behalf.
    pub warnings: Vec<Warning>,
}

impl Resolution {
    pub(crate) fn status(status: EditStatus) -> Resolution {
        Resolution {
            status,
            pieces: Vec::new(),
            final_newline: None,
            eol: None,
            offset: None,
            tier: None,
            similarity: None,
            lines: None,
            warnings: Vec::new(),
        }
    }
}

/// The contract every edit format fulfils.
pub trait EditFormat {
    /// The format's own edit type.
    type Op;

    /// The format's name on the command line (`search-replace`, …).
    fn name(&self) -> &'static str;

    /// Parses model-written text. Prose around the edits is ignored.
    fn parse(&self, input: &str) -> Result<Patch, ParseError>;

    /// Parses the JSON arguments of the format's edit tool.
    fn parse_tool_call(&self, args: &serde_json::Value) -> Result<Patch, ParseError>;

    /// Locates one edit in `doc` through the cascade.
    fn resolve(
        &self,
        op: &Self::Op,
        doc: &Document,
        ctx: &ResolveContext<'_>,
    ) -> Result<Resolution, EditError>;

    /// Writes the change from `before` to `after` of `path` in this format's syntax.
    fn render(&self, path: &str, before: &str, after: &str) -> String;

    /// Shows a file (or `lines`, 0-based half-open) the way a model working in this format should see it.
    fn view(&self, doc: &Document, lines: Option<Range<usize>>) -> String;

    /// The model-facing instructions (from `edit-formats/`).
    fn instructions(&self) -> &'static str;
}

/// The formats lancet can apply, for choosing one at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Aider-style SEARCH/REPLACE blocks (and the `{path, old_string, new_string}` tool call).
    SearchReplace,
    /// Unified diffs (`diff -u`, `git diff`).
    UnifiedDiff,
    /// Hashline anchors: `LINE:HASH` references instead of quoted text.
    Hashline,
    /// Codex-style `*** Begin Patch` envelopes.
    ApplyPatch,
    /// The whole new file, fenced, with its path.
    Whole,
}

impl Format {
    /// Every format, in the order `lancet formats` lists them.
    pub const ALL: &'static [Format] = &[
        Format::SearchReplace,
        Format::UnifiedDiff,
        Format::Hashline,
        Format::ApplyPatch,
        Format::Whole,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Format::SearchReplace => SearchReplace.name(),
            Format::UnifiedDiff => UnifiedDiff.name(),
            Format::Hashline => Hashline.name(),
            Format::ApplyPatch => ApplyPatch.name(),
            Format::Whole => Whole.name(),
        }
    }

    /// Looks a format up by its command-line name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// One line on what the format is.
    pub fn summary(self) -> &'static str {
        match self {
            Format::SearchReplace => {
                "SEARCH/REPLACE blocks: the model quotes the lines to change and writes their replacement"
            }
            Format::UnifiedDiff => {
                "unified diffs (diff -u, git diff): hunks of context, removed and added lines"
            }
            Format::Hashline => {
                "hashline anchors: the model sees LINE:HASH|code and edits lines by anchor"
            }
            Format::ApplyPatch => {
                "Codex-style *** Begin Patch envelopes: add, update (with @@ anchors), move and delete files"
            }
            Format::Whole => {
                "whole files: the model writes the complete new content, fenced, with its path"
            }
        }
    }

    /// Guesses the format of model output, or `None` when none fits. When
    /// several fit, the one whose first marker comes first wins (a diff of a
    /// file about SEARCH/REPLACE blocks is still a diff).
    pub fn detect(input: &str) -> Option<Format> {
        if let Some(value) = json_object(input) {
            return tool_call_format(&value);
        }
        let found = [
            (search_replace::looks_like(input), Format::SearchReplace),
            (udiff::looks_like(input), Format::UnifiedDiff),
            (hashline::looks_like(input), Format::Hashline),
            (apply_patch::looks_like(input), Format::ApplyPatch),
        ];
        found
            .iter()
            .filter_map(|(at, f)| at.map(|at| (at, *f)))
            .min_by_key(|(at, _)| *at)
            .map(|(_, f)| f)
            // A fenced file with a path is the least specific shape: only when nothing else fits.
            .or_else(|| whole::looks_like(input).map(|_| Format::Whole))
    }

    /// Parses model text in this format.
    pub fn parse(self, input: &str) -> Result<Patch, ParseError> {
        self.parse_with(input, DiffOptions::default())
    }

    /// Parses model text in this format, with the diff options (`-p`, `-R`)
    /// for formats they concern.
    pub fn parse_with(self, input: &str, diff: DiffOptions) -> Result<Patch, ParseError> {
        // A JSON object is the format's tool-call arguments, pasted as input.
        if let Some(value) = json_object(input) {
            return match (self, diff.reverse || diff.strip.is_some()) {
                (Format::UnifiedDiff, true) => udiff::parse_tool_call_with(&value, diff),
                _ => self.parse_tool_call(&value),
            };
        }
        match self {
            Format::SearchReplace => SearchReplace.parse(input),
            Format::UnifiedDiff => udiff::parse_diff(input, diff),
            Format::Hashline => Hashline.parse(input),
            Format::ApplyPatch => ApplyPatch.parse(input),
            Format::Whole => Whole.parse(input),
        }
    }

    /// Parses tool-call arguments in this format.
    pub fn parse_tool_call(self, args: &serde_json::Value) -> Result<Patch, ParseError> {
        match self {
            Format::SearchReplace => SearchReplace.parse_tool_call(args),
            Format::UnifiedDiff => UnifiedDiff.parse_tool_call(args),
            Format::Hashline => Hashline.parse_tool_call(args),
            Format::ApplyPatch => ApplyPatch.parse_tool_call(args),
            Format::Whole => Whole.parse_tool_call(args),
        }
    }

    /// Renders a change in this format.
    pub fn render(self, path: &str, before: &str, after: &str) -> String {
        match self {
            Format::SearchReplace => SearchReplace.render(path, before, after),
            Format::UnifiedDiff => UnifiedDiff.render(path, before, after),
            Format::Hashline => Hashline.render(path, before, after),
            Format::ApplyPatch => ApplyPatch.render(path, before, after),
            Format::Whole => Whole.render(path, before, after),
        }
    }

    /// Shows a file as this format presents it.
    pub fn view(self, doc: &Document, lines: Option<Range<usize>>) -> String {
        match self {
            Format::SearchReplace => SearchReplace.view(doc, lines),
            Format::UnifiedDiff => UnifiedDiff.view(doc, lines),
            Format::Hashline => Hashline.view(doc, lines),
            Format::ApplyPatch => ApplyPatch.view(doc, lines),
            Format::Whole => Whole.view(doc, lines),
        }
    }

    /// The model-facing instructions.
    pub fn instructions(self) -> &'static str {
        match self {
            Format::SearchReplace => SearchReplace.instructions(),
            Format::UnifiedDiff => UnifiedDiff.instructions(),
            Format::Hashline => Hashline.instructions(),
            Format::ApplyPatch => ApplyPatch.instructions(),
            Format::Whole => Whole.instructions(),
        }
    }
}

/// A JSON object as the whole input: a tool call's arguments pasted on the command line.
fn json_object(input: &str) -> Option<serde_json::Value> {
    let t = input.trim();
    if !(t.starts_with('{') && t.ends_with('}')) {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(t)
        .ok()
        .filter(serde_json::Value::is_object)
}

/// Which format's tool call a JSON object is, by its keys.
fn tool_call_format(v: &serde_json::Value) -> Option<Format> {
    let has = |k: &str| v.get(k).is_some();
    let first_edit = v
        .get("edits")
        .and_then(|e| e.as_array())
        .and_then(|a| a.first());
    let text = ["input", "patch"]
        .iter()
        .find_map(|k| v.get(*k))
        .and_then(serde_json::Value::as_str);
    if has("old_string") || first_edit.is_some_and(|e| e.get("old_string").is_some()) {
        Some(Format::SearchReplace)
    } else if first_edit.is_some_and(|e| e.get("op").is_some()) {
        Some(Format::Hashline)
    } else if text.is_some_and(|t| apply_patch::looks_like(t).is_some()) {
        Some(Format::ApplyPatch)
    } else if has("diff") || text.is_some() {
        Some(Format::UnifiedDiff)
    } else if has("content") {
        Some(Format::Whole)
    } else {
        None
    }
}

/// Lines of a numbered view: `N | text` or `N:text`-free plain numbering, as `lancet view` prints.
pub(crate) fn numbered_view(doc: &Document, lines: Option<Range<usize>>) -> String {
    let range = lines.unwrap_or(0..doc.line_count());
    let end = range.end.min(doc.line_count());
    let width = end.to_string().len();
    let mut out = String::new();
    for i in range.start.min(end)..end {
        out.push_str(&format!("{:>width$} | {}\n", i + 1, doc.line(i)));
    }
    out
}
