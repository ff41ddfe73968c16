//! Outcomes as data: what happened to each edit and each file of one apply.
//!
//! These types are the engine's answer: per edit its status, tier, lines,
//! warnings and error; per file what happens to it; why input could not be
//! parsed ([`ParseError`]); and [`ReportJson`], the one serialisable shape of
//! `lancet apply --json` (DESIGN.md's contract), which the CLI, the agent's
//! events and the malformed-input report all print.
//!
//! Owns: outcomes as data — positions, tiers, candidates and error enums,
//! never prose. Does not own: words. The words for a model or a person come
//! from [`feedback`](crate::feedback) alone, which reads these types; this
//! module never calls it (the JSON shape takes its words as arguments).
//! Layering: it sits above the text model and the matcher (whose `Tier` and
//! `Candidate` it reports) and below everything that produces or words outcomes.

use std::ops::Range;

use serde::Serialize;

use crate::matcher::{Candidate, Tier};

/// What became of one edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EditStatus {
    /// Located and applied (or would be, in a dry run).
    Applied,
    /// The change is already in the file: nothing to do.
    AlreadyApplied,
    /// The edit changes nothing (e.g. identical SEARCH and REPLACE).
    Noop,
    /// The text to change was not found.
    NotFound,
    /// The text to change was found in more than one place.
    Ambiguous,
    /// The file changed since it was read.
    Stale,
    /// The edit overlaps another edit of the same input.
    Conflict,
    /// The edit would introduce a syntax error.
    SyntaxError,
    /// The edit is malformed or refused (placeholder, empty SEARCH on a non-empty file, …).
    Invalid,
}

impl EditStatus {
    /// Whether the edit is satisfied (applied, already applied, or nothing to do).
    pub fn is_ok(self) -> bool {
        matches!(
            self,
            EditStatus::Applied | EditStatus::AlreadyApplied | EditStatus::Noop
        )
    }
}

/// What sort of edit a report is about (it decides the words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum EditKind {
    /// A search/replace block or `old_string`/`new_string` edit.
    #[default]
    Block,
    /// A unified diff hunk.
    Hunk,
    /// A hashline anchor edit.
    Anchor,
    /// An apply_patch chunk.
    Chunk,
    /// A whole file's new content.
    Whole,
    /// A file deletion.
    Remove,
}

/// What became of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileStatus {
    /// Its content changes.
    Modified,
    /// It is created.
    Created,
    /// It is deleted.
    Deleted,
    /// It moves to another path.
    Renamed,
    /// Its edits changed nothing.
    Unchanged,
    /// At least one of its edits failed, or the file could not be used.
    Failed,
}

/// Something the engine did on the model's behalf that it should know about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Warning {
    /// SEARCH and REPLACE are identical.
    IdenticalBlock,
    /// Line-number prefixes echoed from a numbered view were removed.
    StrippedLineNumbers,
    /// The SEARCH text matched part of a line (or lines), not whole lines.
    PartialLineMatch {
        /// 0-based, half-open range of the lines it touched.
        lines: Range<usize>,
    },
    /// Several places matched; the line hint chose this one.
    ChosenByHint {
        /// The hint, 1-based.
        hint: usize,
    },
    /// The block was matched with its `...` elision lines, piece by piece.
    Elided {
        /// Number of pieces.
        pieces: usize,
    },
    /// A `=======` line inside the block was taken as file content.
    DividerInContent {
        /// 1-based input line of the divider that was used.
        line: usize,
    },
    /// The edit was matched against the file as changed by earlier edits (sequential mode).
    Sequential,
    /// The hunk was found this many lines from where its header put it.
    Offset {
        /// Found line minus stated line.
        lines: isize,
    },
    /// A hashline anchor's line had moved; it was found by its content.
    Relocated {
        /// 0-based line the anchor named.
        from: usize,
        /// 0-based line it was found at.
        to: usize,
    },
    /// The patch envelope was not as the format says; it was read anyway.
    LenientEnvelope {
        /// What was off.
        what: &'static str,
    },
    /// A whole-file rewrite wrote a lazy placeholder (under the truncation threshold).
    PlaceholderWritten {
        /// The placeholder line.
        text: String,
    },
    /// `LINE:HASH|` prefixes copied into the new lines were removed.
    StrippedAnchors,
    /// New lines that restated the lines around the edit were dropped.
    BoundaryEcho,
    /// The edit introduced syntax errors, applied anyway (`--syntax warn`).
    SyntaxBroken {
        /// The new errors.
        issues: Vec<SyntaxIssue>,
    },
    /// The file was not syntax-checked (too large for the guard).
    SyntaxSkipped,
    /// The edit applied, but its file was refused as a whole (another edit
    /// in it broke the syntax), so it was not written.
    HeldBack,
    /// The hunk applied with this many outer context lines ignored.
    Fuzz {
        /// Context lines dropped.
        dropped: usize,
    },
    /// An apply_patch `@@` line found nowhere in the file (not even as a
    /// typo) was passed over: the chunk was placed by its own lines.
    AnchorIgnored {
        /// The anchor as written, without `@@`.
        anchor: String,
    },
    /// A whole-file block under a bare name (`benchsuite`: no extension, no
    /// `/`) beside files with paths, where the root holds no file of that
    /// name: taken for an example, nothing was written for it.
    BareNameSkipped {
        /// The name above the fence.
        name: String,
        /// 1-based input line of the block's opening fence.
        line: usize,
    },
}

/// A syntax error the edit introduced (0-based line and byte column in the new text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyntaxIssue {
    /// 0-based line.
    pub line: usize,
    /// 0-based byte column.
    pub column: usize,
    /// The parser's node kind: `ERROR`, or `MISSING x` for a token it had to invent.
    pub kind: String,
    /// The line as the edit would leave it.
    pub text: String,
}

/// What to do when an edit introduces a syntax error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SyntaxPolicy {
    /// Refuse the whole apply; nothing is written.
    #[default]
    Reject,
    /// Apply, and report the new errors.
    Warn,
    /// Do not check.
    Off,
}

/// Why a path was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathProblem {
    /// It leads outside the workspace root (`..`, a symlink).
    Outside,
    /// It is absolute.
    Absolute,
    /// It is empty or not a file path.
    Invalid,
    /// It is inside `.lancet/` or `.git/`.
    Reserved,
    /// It names a directory.
    Directory,
    /// It is lancet's own configuration file (`.lancet.toml`), which edits may not write.
    Config,
    /// It is not a regular file: a symlink (as the target of a write), a FIFO, a device, a socket.
    NotRegular {
        /// What is there.
        found: crate::workspace::FileKind,
    },
    /// The file is larger than the workspace reads.
    TooLarge {
        /// Its size in bytes.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The file has no write permission for its owner (`--force` writes it anyway).
    ReadOnly,
    /// The path is longer than any file system takes.
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
    /// A directory on the way was replaced while lancet was reading.
    Changed,
}

/// Why an edit could not be applied: data for [`feedback`](crate::feedback).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The file to edit does not exist.
    #[error("file not found")]
    FileMissing,
    /// The file cannot be edited as text.
    #[error("file is not editable text: {0}")]
    Undecodable(#[from] crate::text::DecodeError),
    /// The file could not be read.
    #[error("file could not be read: {kind}")]
    Unreadable {
        /// What the operating system said.
        kind: std::io::ErrorKind,
    },
    /// The path is not allowed (outside the root, reserved, …).
    #[error("path refused: {why:?}")]
    PathRefused {
        /// Why.
        why: PathProblem,
    },
    /// The SEARCH text was not found.
    #[error("not found")]
    NotFound {
        /// Nearest places, best first.
        nearest: Vec<Candidate>,
        /// The fuzzy search stopped at its work budget.
        bounded: bool,
        /// The edit's text would be found once the edit with this index was applied.
        after_edit: Option<usize>,
    },
    /// The SEARCH text matched in several places.
    #[error("ambiguous")]
    Ambiguous {
        /// Tier at which the places matched.
        tier: Tier,
        /// The places.
        candidates: Vec<Candidate>,
    },
    /// A block with several `=======` lines can be split more than one way,
    /// and more than one way matches the file.
    #[error("ambiguous divider")]
    AmbiguousDivider {
        /// 1-based input lines of the dividers whose splits match.
        lines: Vec<usize>,
    },
    /// The number of matches differs from what the edit expected.
    #[error("expected {expected} matches, found {found}")]
    CountMismatch {
        /// Matches the edit asked for.
        expected: usize,
        /// Matches found.
        found: usize,
        /// Where.
        candidates: Vec<Candidate>,
    },
    /// Two edits touch the same lines.
    #[error("conflicts with edit {other}")]
    Conflict {
        /// The other edit's index.
        other: usize,
        /// 0-based lines both touch.
        lines: Range<usize>,
    },
    /// The file changed since it was read.
    #[error("stale")]
    Stale,
    /// REPLACE contains a lazy placeholder instead of code.
    #[error("lazy placeholder in replacement")]
    LazyPlaceholder {
        /// The placeholder line.
        text: String,
    },
    /// Empty SEARCH on a file that has content.
    #[error("empty search on a non-empty file")]
    EmptySearchOnExistingFile,
    /// SEARCH is only whitespace.
    #[error("whitespace-only search")]
    BlankSearch,
    /// SEARCH and REPLACE have different numbers of `...` elision lines.
    #[error("elision mismatch")]
    ElisionMismatch {
        /// `...` lines in SEARCH.
        search: usize,
        /// `...` lines in REPLACE.
        replace: usize,
    },
    /// An elided piece matched in several places, or not at all.
    #[error("elided piece {piece} not unique")]
    ElidedPiece {
        /// 0-based piece.
        piece: usize,
        /// What went wrong with it.
        inner: Box<EditError>,
    },
    /// The edit names no file and no default was given.
    #[error("no file named")]
    NoPath,
    /// The file would be created (or moved to), but it already exists.
    #[error("{path} already exists")]
    AlreadyExists {
        /// The path that exists.
        path: String,
    },
    /// The patch deletes the file, but the file holds more than the patch removes.
    #[error("deletion leaves {lines} lines")]
    DeleteLeavesContent {
        /// Lines left after the patch's hunks.
        lines: usize,
    },
    /// A hunk with no context and no removed lines, in a file that is not the
    /// diff's pre-image: its line number is the only clue, and it cannot be trusted.
    #[error("hunk cannot be placed")]
    Unplaceable,
    /// Hashline anchors whose lines changed since the model read the file.
    #[error("stale anchors")]
    StaleAnchors {
        /// The anchors as written (`LINE:HASH`).
        anchors: Vec<String>,
    },
    /// Hashline anchors that fit the file at more than one place since it
    /// moved, where nothing in the input tells which one is meant.
    #[error("ambiguous anchors")]
    AmbiguousAnchors {
        /// The anchors as written (`LINE:HASH`).
        anchors: Vec<String>,
        /// The 1-based lines where the edit's first anchor could stand now.
        lines: Vec<usize>,
    },
    /// An `@@` anchor line of an apply_patch chunk is not in the file (or its scope).
    #[error("anchor not found")]
    AnchorNotFound {
        /// The anchor text.
        anchor: String,
    },
    /// A whole-file rewrite that drops much of the file and holds placeholders.
    #[error("truncated rewrite")]
    Truncated {
        /// Lines of the file it removes.
        removed: usize,
        /// Lines the file has.
        total: usize,
        /// The first placeholder line.
        placeholder: String,
    },
    /// The edit would introduce syntax errors.
    #[error("syntax errors")]
    Syntax {
        /// The new errors.
        issues: Vec<SyntaxIssue>,
    },
    /// A range whose end comes before its start.
    #[error("anchor range reversed")]
    AnchorOrder {
        /// The start anchor.
        start: String,
        /// The end anchor.
        end: String,
    },
    /// The input changes the same path twice.
    #[error("{path} changed twice")]
    PathTwice {
        /// The path.
        path: String,
    },
    /// The destination of a move or rename is refused.
    #[error("destination {to} refused: {why:?}")]
    DestinationRefused {
        /// The destination as written.
        to: String,
        /// Why.
        why: PathProblem,
    },
    /// The file would be created under something that is not a directory.
    #[error("{parent} is not a directory")]
    ParentNotDirectory {
        /// The existing non-directory on the way, relative to the root.
        parent: String,
    },
}

impl From<crate::matcher::MatchError> for EditError {
    fn from(e: crate::matcher::MatchError) -> EditError {
        use crate::matcher::MatchError;
        match e {
            MatchError::NotFound { nearest, bounded } => EditError::NotFound {
                nearest,
                bounded,
                after_edit: None,
            },
            MatchError::Ambiguous { tier, candidates } => EditError::Ambiguous { tier, candidates },
            MatchError::EmptyNeedle => EditError::BlankSearch,
        }
    }
}

impl EditError {
    /// The status this error reports as.
    pub fn status(&self) -> EditStatus {
        match self {
            EditError::NotFound { .. }
            | EditError::FileMissing
            | EditError::AnchorNotFound { .. } => EditStatus::NotFound,
            EditError::DeleteLeavesContent { .. } => EditStatus::Conflict,
            EditError::Ambiguous { .. }
            | EditError::CountMismatch { .. }
            | EditError::AmbiguousDivider { .. } => EditStatus::Ambiguous,
            EditError::Conflict { .. } => EditStatus::Conflict,
            EditError::Stale
            | EditError::StaleAnchors { .. }
            | EditError::AmbiguousAnchors { .. } => EditStatus::Stale,
            EditError::Syntax { .. } => EditStatus::SyntaxError,
            EditError::AnchorOrder { .. } => EditStatus::Invalid,
            EditError::ElidedPiece { inner, .. } => inner.status(),
            EditError::Undecodable(_)
            | EditError::Unreadable { .. }
            | EditError::PathRefused { .. }
            | EditError::LazyPlaceholder { .. }
            | EditError::Truncated { .. }
            | EditError::EmptySearchOnExistingFile
            | EditError::BlankSearch
            | EditError::ElisionMismatch { .. }
            | EditError::NoPath
            | EditError::AlreadyExists { .. }
            | EditError::PathTwice { .. }
            | EditError::DestinationRefused { .. }
            | EditError::ParentNotDirectory { .. } => EditStatus::Invalid,
            EditError::Unplaceable => EditStatus::NotFound,
        }
    }

    /// Candidates worth showing, if any.
    pub fn candidates(&self) -> &[Candidate] {
        match self {
            EditError::NotFound { nearest, .. } => nearest,
            EditError::Ambiguous { candidates, .. }
            | EditError::CountMismatch { candidates, .. } => candidates,
            EditError::ElidedPiece { inner, .. } => inner.candidates(),
            _ => &[],
        }
    }
}

/// The outcome of one edit.
#[derive(Debug, Clone, PartialEq)]
pub struct EditReport {
    /// 0-based index of the edit in the input.
    pub index: usize,
    /// What sort of edit it is.
    pub kind: EditKind,
    /// 1-based line of the input where the edit starts (0 when not from text).
    pub source_line: usize,
    /// What happened.
    pub status: EditStatus,
    /// The tier that located it.
    pub tier: Option<Tier>,
    /// Similarity of the located text (1.0 unless fuzzy).
    pub similarity: Option<f64>,
    /// 0-based, half-open range of original lines it touches.
    pub lines: Option<Range<usize>>,
    /// What the engine did on the model's behalf.
    pub warnings: Vec<Warning>,
    /// Why it failed.
    pub error: Option<EditError>,
}

impl EditReport {
    /// A report for edit `index` (input line `source_line`), not yet resolved.
    pub fn new(index: usize, source_line: usize) -> EditReport {
        EditReport {
            index,
            kind: EditKind::Block,
            source_line,
            status: EditStatus::Applied,
            tier: None,
            similarity: None,
            lines: None,
            warnings: Vec::new(),
            error: None,
        }
    }

    pub(crate) fn fail(&mut self, error: EditError) {
        self.status = error.status();
        self.error = Some(error);
    }
}

/// The outcome for one file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileReport {
    /// The path as the input named it (relative to the root).
    pub path: String,
    /// The new path, for a rename.
    pub new_path: Option<String>,
    /// What happens to the file.
    pub status: FileStatus,
    /// Its edits, in input order.
    pub edits: Vec<EditReport>,
    /// A file-level error (missing, binary, outside the root).
    pub error: Option<EditError>,
    /// The file's new mode, when it changes.
    pub mode: Option<u32>,
}

/// The outcome of one apply.
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyReport {
    /// Every edit is satisfied.
    pub ok: bool,
    /// Files were written.
    pub written: bool,
    /// Per file, in the order the input first names them.
    pub files: Vec<FileReport>,
    /// What the parser forgave in the input as a whole.
    pub notes: Vec<Warning>,
    /// The same text a model would be shown.
    pub message: String,
}

impl ApplyReport {
    /// All edit reports, in input order.
    pub fn edits(&self) -> impl Iterator<Item = &EditReport> + '_ {
        let mut all: Vec<&EditReport> = self.files.iter().flat_map(|f| f.edits.iter()).collect();
        all.sort_by_key(|e| e.index);
        all.into_iter()
    }
}

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
    /// A unified diff's last hunk that ends, at the end of the input, short
    /// of the lines its header counts, in a way wrong counts do not explain:
    /// the reply was cut off mid-hunk.
    #[error(
        "line {line}: hunk cut off ({read_old}/{stated_old} old, {read_new}/{stated_new} new lines)"
    )]
    TruncatedHunk {
        /// Line of the hunk header.
        line: usize,
        /// Old lines the header counts.
        stated_old: usize,
        /// New lines the header counts.
        stated_new: usize,
        /// Old lines the body holds.
        read_old: usize,
        /// New lines the body holds.
        read_new: usize,
    },
    /// An apply_patch envelope without `*** End Patch` whose input ends in a
    /// chunk that changes nothing or ends on a removed line: cut off.
    #[error("line {line}: chunk cut off at the end of the input")]
    TruncatedChunk {
        /// Line where the chunk starts.
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
    /// A whole file's fence closed early by a line of its own content (a run
    /// of backticks at least as long as the fence); the fence meant to close
    /// it then opens a block that never closes.
    #[error("line {closed_by}: fence opened at line {open} closed early")]
    FenceClosedEarly {
        /// The line of the file's opening fence.
        open: usize,
        /// The content line that closed it.
        closed_by: usize,
        /// The opening fence's length.
        fence: usize,
        /// A fence length no content line can close.
        needed: usize,
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

// ------------------------------------------------------------------ the `--json` shape

/// `lancet apply --json`'s object, DESIGN.md's contract: an [`ApplyReport`] as
/// a program reads it. Lines are 1-based and inclusive, similarities rounded
/// to three decimals, warnings and errors in words. The words are passed in
/// ([`ReportJson::new`]); [`feedback::json_report`](crate::feedback::json_report)
/// is the one caller that has them, so this module stays data.
///
/// The field order is the contract's: serialised with `serde_json`'s
/// `preserve_order`, the text is stable for scripts that diff it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ReportJson {
    /// Every edit is satisfied.
    pub ok: bool,
    /// Files were written.
    pub written: bool,
    /// Per file, in the order the input first names them.
    pub files: Vec<FileJson>,
    /// The same text a model would be shown.
    pub message: String,
    /// The unified diff of what would change (`--dry-run --json`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// One file of a [`ReportJson`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FileJson {
    /// The path as the input named it.
    pub path: String,
    /// The new path, for a rename.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_path: Option<String>,
    /// What happens to the file.
    pub status: FileStatus,
    /// The file's new mode, in octal (`"755"`), when it changes.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "octal")]
    pub mode: Option<u32>,
    /// Its edits, in input order.
    pub edits: Vec<EditJson>,
}

/// One edit of a [`FileJson`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct EditJson {
    /// 0-based index of the edit in the input.
    pub index: usize,
    /// What happened.
    pub status: EditStatus,
    /// The tier that located it.
    pub tier: Option<Tier>,
    /// Similarity of the located text, to three decimals.
    pub similarity: Option<f64>,
    /// 1-based first and last line it touches (an insertion: the line it goes before).
    pub lines: Option<[usize; 2]>,
    /// What the engine did on the model's behalf, in words.
    pub warnings: Vec<String>,
    /// Syntax errors the edit introduced, refused or written anyway.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub syntax: Vec<SyntaxJson>,
    /// Why it failed, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The places a failed edit nearly matched, or matched more than once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateJson>,
}

/// A syntax error in an [`EditJson`]: 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SyntaxJson {
    /// 1-based line in the new text.
    pub line: usize,
    /// 1-based byte column.
    pub column: usize,
    /// The parser's node kind (`ERROR`, `MISSING x`).
    pub kind: String,
}

/// A candidate place in an [`EditJson`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CandidateJson {
    /// 1-based first and last line.
    pub lines: [usize; 2],
    /// Similarity, to three decimals.
    pub similarity: f64,
}

impl ReportJson {
    /// The shape of `report`, with each edit's words from `words(path, edit)`:
    /// its warnings and, when it failed, its error.
    pub fn new(
        report: &ApplyReport,
        mut words: impl FnMut(&str, &EditReport) -> (Vec<String>, Option<String>),
    ) -> ReportJson {
        let files = report
            .files
            .iter()
            .map(|f| FileJson {
                path: f.path.clone(),
                new_path: f.new_path.clone(),
                status: f.status,
                mode: f.mode,
                edits: f
                    .edits
                    .iter()
                    .map(|e| {
                        let (warnings, error) = words(&f.path, e);
                        EditJson::new(e, warnings, error)
                    })
                    .collect(),
            })
            .collect();
        ReportJson {
            ok: report.ok,
            written: report.written,
            files,
            message: report.message.clone(),
            diff: None,
        }
    }

    /// The report for input that could not be parsed: nothing applied, nothing
    /// written, and `message` saying why.
    pub fn malformed(message: String) -> ReportJson {
        ReportJson {
            ok: false,
            written: false,
            files: Vec::new(),
            message,
            diff: None,
        }
    }

    /// The report with the dry run's unified diff.
    pub fn with_diff(mut self, diff: String) -> ReportJson {
        self.diff = Some(diff);
        self
    }

    /// As a JSON value (for a stream of events that embeds it).
    pub fn to_value(&self) -> serde_json::Value {
        // Strings, numbers, lists and string-keyed objects always serialise.
        serde_json::to_value(self).unwrap_or_default()
    }
}

impl std::fmt::Display for ReportJson {
    /// The report on one line, as `lancet apply --json` prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

impl EditJson {
    fn new(e: &EditReport, warnings: Vec<String>, error: Option<String>) -> EditJson {
        // New syntax errors, refused (the error) or written anyway (a warning).
        let refused = e.error.iter().filter_map(|err| match err {
            EditError::Syntax { issues } => Some(issues),
            _ => None,
        });
        let written = e.warnings.iter().filter_map(|w| match w {
            Warning::SyntaxBroken { issues } => Some(issues),
            _ => None,
        });
        let syntax = refused
            .chain(written)
            .flatten()
            .map(|i| SyntaxJson {
                line: i.line + 1,
                column: i.column + 1,
                kind: i.kind.clone(),
            })
            .collect();
        let candidates = e
            .error
            .as_ref()
            .map(|err| {
                err.candidates()
                    .iter()
                    .map(|c| CandidateJson {
                        lines: one_based(&c.range),
                        similarity: thousandths(c.similarity),
                    })
                    .collect()
            })
            .unwrap_or_default();
        EditJson {
            index: e.index,
            status: e.status,
            tier: e.tier,
            similarity: e.similarity.map(thousandths),
            lines: e.lines.as_ref().map(one_based),
            warnings,
            syntax,
            error,
            candidates,
        }
    }
}

/// 1-based, inclusive, as people and models count lines; an insertion point
/// (empty range) shows the line it goes before.
fn one_based(r: &Range<usize>) -> [usize; 2] {
    [r.start + 1, r.end.max(r.start + 1)]
}

fn thousandths(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A mode as `git` writes it: octal digits.
fn octal<S: serde::Serializer>(mode: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
    match mode {
        Some(m) => s.serialize_str(&format!("{m:o}")),
        None => s.serialize_none(),
    }
}
