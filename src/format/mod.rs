//! Edit formats: how a model writes a change. Each format is defined in one
//! place — its module's `FormatDef` — and everything else reads that.
//!
//! A format parses model text (or a tool call's JSON arguments) into a
//! [`Patch`]: per file, either format-specific edits ([`EditOp`]) or a
//! whole-file action (create, delete). Resolving an edit against a
//! [`Document`] goes through the matcher cascade and
//! [`splice`](crate::splice) and yields a [`Resolution`]: line replacements
//! plus what the report should say. A format also renders a change in its
//! own syntax (prompts, round-trip tests, the benchmark's simulated models),
//! shows a file the way a model working in it should see it, and supplies
//! the model-facing words kept under `edit-formats/`.
//!
//! Owns: parsing, resolving, rendering and viewing, per format, and the
//! dispatch from the closed [`Format`] enum (the runtime choice) to the
//! definitions, in one `match` (`Format::def`); and from [`EditOp`] to the
//! edit types, in another (`EditOp::edit`). Does not own: reading or
//! writing files (`apply` and the workspace), or words about outcomes
//! (feedback).
//!
//! Invariant: parsing never touches files; resolving is a pure function of
//! the edit, the document and the [`ResolveContext`].
//!
//! # Adding a format
//!
//! One module, one definition, its documents and its fixtures; the compiler
//! and the layout test name anything else.
//!
//! 1. `src/format/<name>.rs`: the parser (text, and tool-call arguments into
//!    a `#[derive(Deserialize)]` struct of `tool_args::Arg` fields), the
//!    edit type with its `FormatEdit` implementation (its kind, where it came
//!    from, how it resolves), the renderer, and `pub(crate) static DEF:
//!    FormatDef` holding all of it. Share what exists: `push_edit`,
//!    `udiff::ops_of` for ` `/`-`/`+` lines, `Candidate::from(&Match)`,
//!    `numbered_view`.
//! 2. A [`Format`] variant, its arm in `Format::def`, and its place in
//!    [`Format::ALL`]; an [`EditOp`] variant for the edit type and its arm in
//!    `EditOp::edit`. The two matches are exhaustive, so the compiler points
//!    at both. A new [`crate::EditKind`] only if the feedback's words
//!    differ from an existing kind's; then its entry in feedback's
//!    `kind_words` (exhaustive too).
//! 3. `edit-formats/<doc>.md` (the spec), `<doc>.prompt.md` (what the model
//!    is told, `FormatDef::instructions`) and `<doc>.tool.json` (the
//!    agent's edit tool: description and JSON schema, `FormatDef::tool`).
//! 4. `tests/fixtures/<doc>/{ok,err}/NNN_name/` cases. The layout test
//!    (`tests/integration/layout.rs`) fails until 3 and 4 exist for every
//!    format in [`Format::ALL`], and until every prompt under `edit-formats/`
//!    belongs to one.
//! 5. A round-trip property in `tests/integration/props.rs` (render → parse →
//!    apply gives the target) and a fuzz target (`fuzz/`).
//! 6. Prose that lists every format by hand, which no compiler checks: the
//!    unrecognised-input message in feedback's `parse_error` (its snapshot
//!    shows the change), `lancet run`'s unknown-format message
//!    (`src/bin/lancet/run.rs`), and the format lists in README.md and DESIGN.md.
//!
//! Everything else follows from the definition: `--format` and `lancet
//! formats` (the CLI reads [`Format::ALL`]), detection, the agent's edit
//! tool and its prompt, `lancet view`.

pub(crate) mod apply_patch;
pub(crate) mod hashline;
pub(crate) mod locate;
pub(crate) mod search_replace;
pub(crate) mod tool_args;
pub(crate) mod udiff;
pub(crate) mod whole;

use std::ops::Range;

use serde_json::Value;

use crate::matcher::{MatchOptions, Tier};
use crate::report::{EditError, EditKind, EditStatus, ParseError, Warning};
use crate::splice::Piece;
use crate::text::Document;

pub use apply_patch::Chunk;
pub use hashline::{Anchor, AnchorEdit, AnchorOp};
pub use search_replace::{Block, Split};
pub use udiff::{DiffOptions, Hunk, HunkLine, render_unified};
pub use whole::WholeFile;

// ------------------------------------------------------------------ one definition per format

/// Everything lancet knows about one format, in one place: each format module
/// has exactly one, `DEF`, and [`Format::def`] is the only way to it.
pub(crate) struct FormatDef {
    /// Its command-line name (`--format`, `lancet formats`, `models.toml`).
    pub(crate) name: &'static str,
    /// One line on what it is (`lancet formats`).
    pub(crate) summary: &'static str,
    /// What a model is told about it: `edit-formats/<doc>.prompt.md`.
    pub(crate) instructions: &'static str,
    /// The agent's edit tool for it, as JSON text `{"description", "parameters"}`:
    /// `edit-formats/<doc>.tool.json`.
    pub(crate) tool: &'static str,
    /// Where model text first looks like this format (0-based line), if anywhere.
    pub(crate) detect: fn(&str) -> Option<usize>,
    /// Detection takes this format only when no other fits (the least specific shape).
    pub(crate) detect_last: bool,
    /// Whether a JSON object is this format's tool-call arguments.
    pub(crate) detect_tool_call: fn(&Value) -> bool,
    /// When several formats claim a JSON object, the lowest rank wins: the
    /// format whose keys say most (`old_string`) before the generic ones (`content`).
    pub(crate) tool_call_rank: u8,
    /// Parses model text (the diff options concern only formats that read diffs).
    pub(crate) parse: fn(&str, DiffOptions) -> Result<Patch, ParseError>,
    /// Parses the edit tool's JSON arguments.
    pub(crate) parse_tool_call: fn(&Value, DiffOptions) -> Result<Patch, ParseError>,
    /// Writes the change from `before` to `after` of `path` in its own syntax.
    pub(crate) render: fn(path: &str, before: &str, after: &str) -> String,
    /// Shows a file (or `lines`, 0-based half-open) as a model working in it should see it.
    pub(crate) view: fn(&Document, Option<Range<usize>>) -> String,
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

    /// The format's definition: the one place the enum meets the formats.
    pub(crate) fn def(self) -> &'static FormatDef {
        match self {
            Format::SearchReplace => &search_replace::DEF,
            Format::UnifiedDiff => &udiff::DEF,
            Format::Hashline => &hashline::DEF,
            Format::ApplyPatch => &apply_patch::DEF,
            Format::Whole => &whole::DEF,
        }
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// Looks a format up by its command-line name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// One line on what the format is.
    pub fn summary(self) -> &'static str {
        self.def().summary
    }

    /// The model-facing instructions (from `edit-formats/`).
    pub fn instructions(self) -> &'static str {
        self.def().instructions
    }

    /// The agent's edit tool in this format, as JSON text: `{"description":
    /// …, "parameters": <JSON schema of the arguments>}` (from `edit-formats/`).
    pub fn tool_spec(self) -> &'static str {
        self.def().tool
    }

    /// Guesses the format of model output, or `None` when none fits. When
    /// several fit, the one whose first marker comes first wins (a diff of a
    /// file about SEARCH/REPLACE blocks is still a diff); a fenced file with a
    /// path fits only when nothing else does. A JSON object is taken for tool-call
    /// arguments, and the format whose keys it has is chosen.
    pub fn detect(input: &str) -> Option<Format> {
        if let Some(value) = json_object(input) {
            return Format::ALL
                .iter()
                .filter(|f| (f.def().detect_tool_call)(&value))
                .min_by_key(|f| f.def().tool_call_rank)
                .copied();
        }
        // The earliest look wins, a `detect_last` format only when no other
        // fits, and a tie goes to the first in `ALL`. So once a format looks
        // like itself on the first line, or any format other than a last one
        // fits, the formats after it that cannot win are not asked: each
        // detector reads the whole input when it finds nothing (five of them
        // were 13 % of applying a 1,000-hunk diff).
        let mut best: Option<((bool, usize), Format)> = None;
        for f in Format::ALL {
            let last = f.def().detect_last;
            if let Some(((best_last, at), _)) = best
                && !best_last
                && (at == 0 || last)
            {
                continue;
            }
            if let Some(at) = (f.def().detect)(input) {
                let key = (last, at);
                if best.is_none_or(|(b, _)| key < b) {
                    best = Some((key, *f));
                }
            }
        }
        best.map(|(_, f)| f)
    }

    /// Parses model text in this format.
    pub fn parse(self, input: &str) -> Result<Patch, ParseError> {
        self.parse_with(input, DiffOptions::default())
    }

    /// Parses model text in this format, with the diff options (`-p`, `-R`)
    /// for formats they concern.
    pub fn parse_with(self, input: &str, diff: DiffOptions) -> Result<Patch, ParseError> {
        // A JSON object is the format's tool-call arguments, pasted as input.
        match json_object(input) {
            Some(value) => (self.def().parse_tool_call)(&value, diff),
            None => (self.def().parse)(input, diff),
        }
    }

    /// Parses tool-call arguments in this format.
    pub fn parse_tool_call(self, args: &Value) -> Result<Patch, ParseError> {
        (self.def().parse_tool_call)(args, DiffOptions::default())
    }

    /// Writes the change from `before` to `after` of `path` in this format's syntax.
    pub fn render(self, path: &str, before: &str, after: &str) -> String {
        (self.def().render)(path, before, after)
    }

    /// Shows a file (or `lines`, 0-based half-open) as this format presents it to a model.
    pub fn view(self, doc: &Document, lines: Option<Range<usize>>) -> String {
        (self.def().view)(doc, lines)
    }
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
    RemoveFile(Removal),
}

/// A request to delete a file, whatever it holds: the engine deletes it, and
/// this edit stands for the deletion in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Removal {
    /// 1-based input line of the request (0 for JSON).
    pub source_line: usize,
}

/// What the engine asks of one format's edit type ([`Block`], [`Hunk`], …):
/// implemented once per format, next to the type, and reached through
/// [`EditOp::edit`].
pub(crate) trait FormatEdit {
    /// What sort of edit it is (it decides the words of the report).
    fn kind(&self) -> EditKind;

    /// 1-based input line the edit starts on (0 when it came from JSON).
    fn source_line(&self) -> usize;

    /// Whether applying it to a missing file creates the file.
    fn can_create(&self) -> bool {
        false
    }

    /// Locates the edit in `doc` through the cascade.
    fn resolve(&self, doc: &Document, ctx: &ResolveContext<'_>) -> Result<Resolution, EditError>;
}

impl FormatEdit for Removal {
    fn kind(&self) -> EditKind {
        EditKind::Remove
    }

    fn source_line(&self) -> usize {
        self.source_line
    }

    fn resolve(&self, _: &Document, _: &ResolveContext<'_>) -> Result<Resolution, EditError> {
        // The engine deletes the file; the edit only carries the report.
        Ok(Resolution::status(EditStatus::Applied))
    }
}

impl EditOp {
    /// The format's edit inside: the one place the enum meets the edit types.
    fn edit(&self) -> &dyn FormatEdit {
        match self {
            EditOp::SearchReplace(b) => b,
            EditOp::Hunk(h) => h,
            EditOp::Anchor(a) => a,
            EditOp::Chunk(c) => c,
            EditOp::Whole(w) => w,
            EditOp::RemoveFile(r) => r,
        }
    }

    /// 1-based input line the edit starts on (0 when it came from JSON).
    pub fn source_line(&self) -> usize {
        self.edit().source_line()
    }

    /// Whether applying this edit to a missing file creates the file.
    pub fn can_create(&self) -> bool {
        self.edit().can_create()
    }

    /// What sort of edit it is.
    pub fn kind(&self) -> EditKind {
        self.edit().kind()
    }

    /// Resolves the edit against a document, through its format.
    pub fn resolve(
        &self,
        doc: &Document,
        ctx: &ResolveContext<'_>,
    ) -> Result<Resolution, EditError> {
        self.edit().resolve(doc, ctx)
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

/// A located edit, ready to join the file's [`TextEdit`](crate::edit::TextEdit).
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

/// Appends an edit to a patch's changes, merging it into the last change when
/// that edits the same file (consecutive blocks naming one file are one change).
pub(crate) fn push_edit(changes: &mut Vec<FileChange>, path: Option<String>, op: EditOp) {
    if let Some(last) = changes.last_mut()
        && let (true, Action::Edit(ops)) = (last.path == path, &mut last.action)
    {
        ops.push(op);
        return;
    }
    changes.push(FileChange::edit(path, vec![op]));
}

/// Drops a BOM the model copied into the first of its lines: the document
/// keeps the file's BOM apart from its lines, so a copied one would be
/// written twice.
pub(crate) fn strip_bom(lines: &mut [String]) {
    if let Some(first) = lines.first_mut()
        && let Some(rest) = first.strip_prefix('\u{feff}')
    {
        *first = rest.to_owned();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every fixture's edit text, and pairs of them joined (so that two
    /// formats fit one input, at different lines or at the same one).
    fn inputs() -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut dirs = vec![root];
        let mut texts = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.file_name().is_some_and(|n| n == "edit.txt") {
                    texts.push(std::fs::read_to_string(&path).unwrap());
                }
            }
        }
        texts.sort();
        let mut out = texts.clone();
        for (i, a) in texts.iter().enumerate().step_by(7) {
            for b in texts.iter().skip(i % 5).step_by(37) {
                out.push(format!("{a}{b}"));
                out.push(format!("{b}\n{a}"));
            }
        }
        out.extend(["", "\n", "plain text\n", "--- a\n+++ b\n"].map(String::from));
        out
    }

    /// `detect` asks formats in turn and stops asking those that can no
    /// longer win; it picks what asking all of them and taking the least
    /// (`detect_last`, line) key, the first on a tie, picks.
    #[test]
    fn detect_picks_what_asking_every_format_picks() {
        let every = |input: &str| {
            Format::ALL
                .iter()
                .filter_map(|f| (f.def().detect)(input).map(|at| ((f.def().detect_last, at), *f)))
                .min_by_key(|(key, _)| *key)
                .map(|(_, f)| f)
        };
        let inputs = inputs();
        assert!(inputs.len() > 500, "{} inputs", inputs.len());
        for input in &inputs {
            assert_eq!(Format::detect(input), every(input), "{input:?}");
        }
    }
}
