//! lancet: applies edits written by language models to source files.
//!
//! The pipeline every format shares:
//!
//! ```text
//! model text ──parse──▶ Patch ──resolve(doc)──▶ TextEdit ──apply──▶ new text ──workspace──▶ disk
//!    (no IO)          (locate via the cascade;       (pure, shared)           (all files or none)
//!                      ambiguity = error)
//! ```
//!
//! - [`Document`] keeps a file's bytes faithful (line endings per line, BOM,
//!   final newline); untouched lines are never re-encoded.
//! - The [matcher](locate) finds text through one cascade — exact →
//!   whitespace → indentation → Unicode → fuzzy — reports the tier it used,
//!   and refuses ambiguity.
//! - [`splice`](mod@splice) keeps the file's bytes on every line the edit does not change.
//! - [`TextEdit`] is sorted and disjoint by construction.
//! - [`Format`] / [`EditFormat`] parse model output and resolve it.
//! - [`feedback`] is the only place that turns outcomes into words.
//! - [`Workspace`] confines paths to a root and writes all files or none.
//!
//! A minimal use:
//!
//! ```
//! use lancet::{ApplyOptions, Format, Workspace, plan};
//! # let dir = std::env::temp_dir().join(format!("lancet-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir).unwrap();
//! std::fs::write(dir.join("app.py"), "def f():\n    return 1\n").unwrap();
//! let ws = Workspace::open(&dir).unwrap();
//! let patch = Format::SearchReplace
//!     .parse("app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n")
//!     .unwrap();
//! let report = plan(&ws, &patch, &ApplyOptions::default()).commit(&ws).unwrap();
//! assert!(report.ok);
//! assert_eq!(std::fs::read_to_string(dir.join("app.py")).unwrap(), "def f():\n    return 2\n");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

#![deny(missing_docs)]

#[cfg(feature = "agent")]
pub mod agent;
mod apply;
mod edit;
pub mod feedback;
mod format;
#[doc(hidden)]
pub mod invariants;
mod matcher;
mod report;
pub mod splice;
#[cfg(feature = "syntax")]
mod syntax;
mod text;
mod workspace;

pub use apply::{ApplyOptions, Plan, hash_of, plan, resolve_file};
pub use edit::{Conflict, Replacement, TextEdit, TextEditBuilder};
pub use format::{
    Action, Anchor, AnchorEdit, AnchorOp, ApplyPatch, Block, Chunk, DiffOptions, EditFormat,
    EditOp, FileChange, Format, Hashline, Hunk, HunkLine, ParseError, Patch, Resolution,
    ResolveContext, SearchReplace, Split, UnifiedDiff, Whole, WholeFile, line_hash, render_unified,
};
pub use matcher::{
    Candidate, Match, MatchError, MatchOptions, Tier, locate, locate_all, pick_by_hint,
};
pub use report::{
    ApplyReport, EditError, EditKind, EditReport, EditStatus, FileReport, FileStatus, PathProblem,
    SyntaxIssue, SyntaxPolicy, Warning,
};
pub use text::{DecodeError, Document, Eol};
pub use workspace::{
    Change, CommitOptions, CommitReceipt, FileKind, FileState, JournalProblem, MAX_FILE_BYTES,
    MAX_PATH_BYTES, StateDir, UndoReceipt, Workspace, WorkspaceError, WorkspaceLock, clip_path,
    content_hash, read_regular_file,
};
