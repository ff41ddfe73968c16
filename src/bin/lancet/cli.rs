//! The command line, as DESIGN.md's contract fixes it (clap derive).
//!
//! Only parsing lives here; `main.rs` runs the commands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use lancet::Format;

/// Applies edits written by language models to source files.
#[derive(Debug, Parser)]
#[command(name = "lancet", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Apply edits (search/replace blocks, …) to the files they name.
    Apply(ApplyArgs),
    /// Show a file the way an edit format presents it to a model.
    View(ViewArgs),
    /// Print the unified diff of two files (exit 0: same, 1: different).
    Diff(DiffArgs),
    /// Revert the last apply in a root.
    Undo(UndoArgs),
    /// List the edit formats, or print one format's model instructions.
    Formats(FormatsArgs),
    /// The agent: a model works on the task with tools, in this root.
    #[cfg(feature = "agent")]
    Run(crate::run::RunArgs),
}

/// The formats named by the contract; not every one is in every build yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatChoice {
    Auto,
    SearchReplace,
    Udiff,
    Hashline,
    Whole,
    ApplyPatch,
}

impl FormatChoice {
    pub(crate) fn name(self) -> &'static str {
        match self {
            FormatChoice::Auto => "auto",
            FormatChoice::SearchReplace => "search-replace",
            FormatChoice::Udiff => "udiff",
            FormatChoice::Hashline => "hashline",
            FormatChoice::Whole => "whole",
            FormatChoice::ApplyPatch => "apply-patch",
        }
    }

    /// The library format (`None` for auto).
    pub(crate) fn available(self) -> Option<Format> {
        match self {
            FormatChoice::SearchReplace => Some(Format::SearchReplace),
            FormatChoice::Udiff => Some(Format::UnifiedDiff),
            FormatChoice::Hashline => Some(Format::Hashline),
            FormatChoice::ApplyPatch => Some(Format::ApplyPatch),
            FormatChoice::Whole => Some(Format::Whole),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MaxTier {
    Exact,
    Whitespace,
    Indent,
    Unicode,
    Fuzzy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SyntaxPolicy {
    Reject,
    Warn,
    Off,
}

#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
    /// A file of edits; '-' or absent: standard input.
    pub(crate) input: Option<PathBuf>,
    /// The edit format (auto: detect it from the input).
    #[arg(short, long, value_enum, default_value = "auto")]
    pub(crate) format: FormatChoice,
    /// Workspace root; every path resolves inside it.
    #[arg(short = 'C', long, default_value = ".")]
    pub(crate) root: PathBuf,
    /// Target for input that names no file (bare blocks, whole file).
    #[arg(long, value_name = "PATH")]
    pub(crate) file: Option<String>,
    /// Strip N leading path components (unified diffs; default: a/ b/ detected).
    #[arg(short = 'p', long, value_name = "N")]
    pub(crate) strip: Option<usize>,
    /// Print the unified diff of what would change; write nothing.
    #[arg(short = 'n', long)]
    pub(crate) dry_run: bool,
    /// Write nothing; report by exit status only.
    #[arg(long, conflicts_with = "dry_run")]
    pub(crate) check: bool,
    /// Print one JSON report instead of the human summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// Loosest matching tier allowed.
    #[arg(long, value_enum, default_value = "fuzzy")]
    pub(crate) max_tier: MaxTier,
    /// Apply what applies and skip what fails (default: all or nothing).
    #[arg(long)]
    pub(crate) partial: bool,
    /// What to do when an edit introduces a syntax error (needs the `syntax` feature).
    #[arg(long, value_enum)]
    pub(crate) syntax: Option<SyntaxPolicy>,
    /// Apply a unified diff in reverse.
    #[arg(short = 'R', long)]
    pub(crate) reverse: bool,
    /// Write files that are read-only (no write permission for their owner).
    #[arg(long)]
    pub(crate) force: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ViewArgs {
    /// The file to show.
    pub(crate) file: PathBuf,
    /// The format whose view to use.
    #[arg(short, long, value_enum, default_value = "search-replace")]
    pub(crate) format: FormatChoice,
    /// Only lines A:B (1-based, inclusive; A: or :B open-ended).
    #[arg(long, value_name = "A:B")]
    pub(crate) lines: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The old file.
    pub(crate) old: PathBuf,
    /// The new file.
    pub(crate) new: PathBuf,
    /// Lines of context.
    #[arg(short = 'U', long = "unified", default_value_t = 3, value_name = "N")]
    pub(crate) context: usize,
}

#[derive(Debug, Args)]
pub(crate) struct UndoArgs {
    /// Workspace root.
    #[arg(short = 'C', long, default_value = ".")]
    pub(crate) root: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct FormatsArgs {
    /// A format whose model instructions to print.
    pub(crate) name: Option<String>,
}
