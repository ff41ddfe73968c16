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

pub(crate) mod search_replace;

use std::ops::Range;

use crate::matcher::{MatchOptions, Tier};
use crate::report::{EditError, EditStatus, Warning};
use crate::splice::Piece;
use crate::text::Document;

pub use search_replace::{Block, SearchReplace};

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
    /// `--format auto` could not tell which format the input is.
    #[error("unrecognised input")]
    Unrecognised,
}

/// What one file should undergo.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Action {
    /// Apply edits to its text (for search/replace, an empty SEARCH creates a missing file).
    Edit(Vec<EditOp>),
}

/// The changes a patch makes to one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileChange {
    /// Path relative to the root as the model wrote it; `None` when the input names no file.
    pub path: Option<String>,
    /// What to do.
    pub action: Action,
}

/// Parsed model output: file changes in input order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Patch {
    /// The changes. Several may name the same file; they are applied together.
    pub changes: Vec<FileChange>,
}

impl Patch {
    /// Every edit of every file, in input order.
    pub fn ops(&self) -> Vec<&EditOp> {
        self.changes
            .iter()
            .flat_map(|c| match &c.action {
                Action::Edit(ops) => ops.iter(),
            })
            .collect()
    }

    /// Number of edits (the unit that [`EditReport::index`](crate::EditReport::index) counts).
    pub fn edit_count(&self) -> usize {
        self.changes
            .iter()
            .map(|c| match &c.action {
                Action::Edit(ops) => ops.len(),
            })
            .sum()
    }
}

/// One format-specific edit of one file.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EditOp {
    /// A search/replace block.
    SearchReplace(Block),
}

impl EditOp {
    /// 1-based input line the edit starts on (0 when it came from JSON).
    pub fn source_line(&self) -> usize {
        match self {
            EditOp::SearchReplace(b) => b.source_line,
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
}

impl Format {
    /// Every format, in the order `lancet formats` lists them.
    pub const ALL: &'static [Format] = &[Format::SearchReplace];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Format::SearchReplace => SearchReplace.name(),
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
        }
    }

    /// Guesses the format of model output, or `None` when none fits.
    pub fn detect(input: &str) -> Option<Format> {
        if search_replace::looks_like(input) || looks_like_tool_json(input) {
            return Some(Format::SearchReplace);
        }
        None
    }

    /// Parses model text in this format.
    pub fn parse(self, input: &str) -> Result<Patch, ParseError> {
        match self {
            Format::SearchReplace => {
                if looks_like_tool_json(input) {
                    let value: serde_json::Value =
                        serde_json::from_str(input.trim()).map_err(|_| {
                            ParseError::BadArguments {
                                field: "json".into(),
                                expected: "a JSON object",
                            }
                        })?;
                    SearchReplace.parse_tool_call(&value)
                } else {
                    SearchReplace.parse(input)
                }
            }
        }
    }

    /// Parses tool-call arguments in this format.
    pub fn parse_tool_call(self, args: &serde_json::Value) -> Result<Patch, ParseError> {
        match self {
            Format::SearchReplace => SearchReplace.parse_tool_call(args),
        }
    }

    /// Renders a change in this format.
    pub fn render(self, path: &str, before: &str, after: &str) -> String {
        match self {
            Format::SearchReplace => SearchReplace.render(path, before, after),
        }
    }

    /// Shows a file as this format presents it.
    pub fn view(self, doc: &Document, lines: Option<Range<usize>>) -> String {
        match self {
            Format::SearchReplace => SearchReplace.view(doc, lines),
        }
    }

    /// The model-facing instructions.
    pub fn instructions(self) -> &'static str {
        match self {
            Format::SearchReplace => SearchReplace.instructions(),
        }
    }
}

/// A JSON object as the whole input: the tool-call form pasted on the command line.
fn looks_like_tool_json(input: &str) -> bool {
    let t = input.trim();
    t.starts_with('{')
        && t.ends_with('}')
        && ["\"path\"", "\"file_path\"", "\"filePath\""]
            .iter()
            .any(|k| t.contains(k))
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
