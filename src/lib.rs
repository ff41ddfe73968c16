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
//! The crate root holds what an embedder needs: [`Format`] to parse model
//! output into a [`Patch`], [`plan`] and [`Plan::commit`] to apply it in a
//! [`Workspace`] (all files or none), [`apply_text`] to apply it to one
//! file's content in memory, [`ApplyOptions`], and the report types
//! ([`ApplyReport`], whose `--json` shape is [`ReportJson`]). The layers
//! below are public modules for those who need them:
//!
//! - [`Document`] keeps a file's bytes faithful (line endings per line, BOM,
//!   final newline); untouched lines are never re-encoded.
//! - [`matcher`] finds text through one cascade — exact → whitespace →
//!   indentation → Unicode → fuzzy — reports the tier it used, and refuses
//!   ambiguity.
//! - [`splice`] keeps the file's bytes on every line the edit does not change.
//! - [`edit`]'s `TextEdit` is sorted and disjoint by construction.
//! - [`report`] is outcomes as data; [`feedback`] is the only place that
//!   turns them into words.
//! - [`format`](mod@format) defines each format in one place (its module's definition:
//!   parse, tool-call parse, render, view, instructions) and resolves its edits.
//! - [`apply`] plans and commits; the workspace confines paths to a root and
//!   writes all files or none.
//!
//! Imports run one way, in that order (a test enforces it): text → matcher →
//! splice/edit → report → feedback → format → apply.
//!
//! Applying a model's reply to a file in a directory:
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
//!
//! Or to a file's content in memory (an editor buffer), in any format:
//!
//! ```
//! use lancet::{ApplyOptions, Format, apply_text};
//!
//! let diff = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n";
//! let out = apply_text(Format::UnifiedDiff, diff, "app.py", "def f():\n    return 1\n", &ApplyOptions::default())?;
//! assert_eq!(out.text.as_deref(), Some("def f():\n    return 2\n"));
//! # Ok::<(), lancet::ParseError>(())
//! ```

#![deny(missing_docs)]

#[cfg(feature = "agent")]
pub mod agent;
pub mod apply;
pub mod edit;
pub mod feedback;
pub mod format;
#[doc(hidden)]
pub mod invariants;
pub mod matcher;
pub mod report;
mod scan;
pub mod splice;
#[cfg(feature = "syntax")]
mod syntax;
mod text;
mod workspace;

pub use apply::{ApplyOptions, Plan, TextOutcome, apply_text, plan};
pub use format::{DiffOptions, Format, Patch};
pub use matcher::{MatchOptions, Tier};
pub use report::{
    ApplyReport, EditError, EditKind, EditReport, EditStatus, FileReport, FileStatus, ParseError,
    PathProblem, ReportJson, SyntaxIssue, SyntaxPolicy, Warning,
};
pub use text::{DecodeError, Document, Eol, line_hash};
pub use workspace::{
    Change, CommitOptions, CommitReceipt, FileKind, FileState, JournalProblem, MAX_FILE_BYTES,
    MAX_PATH_BYTES, StateDir, UndoReceipt, Workspace, WorkspaceError, WorkspaceLock, clip_path,
    content_hash, read_regular_file,
};
