//! The tools' data: what the words module needs to phrase a description,
//! a result or a refusal, and what a call gives back — the configuration,
//! the closed set of tools, an outcome, a refusal, what a command did, and
//! the limits the descriptions quote.
//!
//! Owns: plain data and its constructors. Does not own: doing anything —
//! no file, process or permission logic lives here, so the words module
//! (`super::super::words`) depends on these types and never on the tools'
//! behaviour. Invariant: nothing here imports from the rest of `tools`.

use std::time::Duration;

use serde_json::Value;

use crate::agent::permissions::Denial;
use crate::{ApplyOptions, ApplyReport, Format, ParseError};

/// Most matching lines `grep` returns.
pub(crate) const GREP_MAX: usize = 200;
/// Most paths `glob` returns.
pub(crate) const GLOB_MAX: usize = 500;
/// Most entries `list` returns.
pub(crate) const LIST_MAX: usize = 1000;
/// Files larger than this are not searched by `grep` (the result counts them).
pub(crate) const GREP_MAX_FILE: u64 = 8 << 20;
/// Files up to this size are read whole (a [`Document`](crate::Document), a
/// read record, editable); larger ones are shown page by page and the edit
/// tool refuses them.
pub(crate) const READ_WHOLE_MAX: u64 = 16 << 20;
/// Most bytes one page of a file larger than [`READ_WHOLE_MAX`] scans, so
/// every read answers quickly, whatever the file or the offset.
pub(crate) const STREAM_SCAN_MAX: u64 = 64 << 20;

/// How the tools behave. `Default` is `lancet run`'s default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolsConfig {
    /// The edit format (the `edit` tool's schema, and `read`'s view for hashline).
    pub format: Format,
    /// Text mode: no `edit` tool; the model writes edits in its reply
    /// ([`Tools::apply_text`](super::Tools::apply_text)).
    pub text_mode: bool,
    /// Engine options for edits (matching, syntax policy, partial); the
    /// expected hashes and the seen files are filled in per call.
    pub apply: ApplyOptions,
    /// A command's timeout when the call gives none.
    pub bash_timeout: Duration,
    /// The longest timeout a call may ask for.
    pub bash_max_timeout: Duration,
    /// Most bytes of command output kept (half from the start, half from the end).
    pub max_output: usize,
    /// Lines `read` shows at most per call.
    pub read_lines: usize,
    /// The OS sandbox `bash` commands run in (`None`: none).
    pub sandbox: Option<crate::agent::sandbox::Sandbox>,
    /// The `task` tool's limits (`None`: no `task` tool, as in the benchmark).
    pub task: Option<crate::agent::task::TaskConfig>,
}

impl Default for ToolsConfig {
    fn default() -> ToolsConfig {
        ToolsConfig {
            format: Format::SearchReplace,
            text_mode: false,
            apply: ApplyOptions::default(),
            bash_timeout: Duration::from_secs(120),
            bash_max_timeout: Duration::from_secs(600),
            max_output: 30_000,
            read_lines: 2000,
            sandbox: None,
            task: None,
        }
    }
}

/// What one tool call gave.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// What the model reads.
    pub content: String,
    /// Whether the call failed (the model should change course).
    pub is_error: bool,
    /// The edit written, when the call wrote one (`edit`, `write`).
    pub edit: Option<EditEvent>,
    /// Why the permissions stopped the call, when they did. The loop stops a
    /// run on [`Refusal::NoTerminal`] (exit 1: "ask" without a terminal).
    pub refusal: Option<Refusal>,
    /// What an edit attempt (`edit`, or edits in a text-mode reply) came
    /// to, as data; `None` for every other call.
    pub attempt: Option<EditAttempt>,
}

/// What one edit attempt came to, as data: the benchmark counts failures by
/// it (never by the words the model reads).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EditAttempt {
    /// The edit could not be read in the format.
    Unparsed(ParseError),
    /// Stopped before the engine planned it: a permission, a path that is not
    /// a regular file or is too large, a file not read first, or a commit
    /// that failed.
    Refused,
    /// The engine planned it: its report (`written` says whether files were
    /// written; `ok` whether every edit was satisfied).
    Planned(Box<ApplyReport>),
    /// The model's reply was cut off at its token limit in the middle of the
    /// edit (a call's arguments, or a text-mode reply holding edit syntax),
    /// so it was neither parsed nor applied.
    CutOff,
}

impl ToolOutcome {
    pub(crate) fn ok(content: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: false,
            edit: None,
            refusal: None,
            attempt: None,
        }
    }

    pub(crate) fn error(content: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            is_error: true,
            ..ToolOutcome::ok(content)
        }
    }
}

/// An edit that was written, for the person and the JSON event stream.
#[derive(Debug, Clone, PartialEq)]
pub struct EditEvent {
    /// The engine's report, as `lancet apply --json` prints it.
    pub report_json: Value,
    /// The unified diff of what was written.
    pub diff: String,
}

/// Why the permissions stopped a call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A rule, the mode or the destructive list refused it.
    Denied(Denial),
    /// The person said no.
    Declined,
    /// It needed a confirmation and nobody could be asked.
    NoTerminal,
}

/// The tools, as one closed set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tool {
    Read,
    Write,
    Edit,
    Bash,
    Grep,
    Glob,
    List,
}

impl Tool {
    pub(crate) const ALL: [Tool; 7] = [
        Tool::Read,
        Tool::Write,
        Tool::Edit,
        Tool::Bash,
        Tool::Grep,
        Tool::Glob,
        Tool::List,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Tool::Read => "read",
            Tool::Write => "write",
            Tool::Edit => "edit",
            Tool::Bash => "bash",
            Tool::Grep => "grep",
            Tool::Glob => "glob",
            Tool::List => "list",
        }
    }

    pub(crate) fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What a command did.
#[derive(Debug)]
pub(crate) struct Run {
    /// What it wrote (stdout and stderr interleaved, cut to the budget).
    pub(crate) output: String,
    /// The exit code; `None` when a signal ended it.
    pub(crate) code: Option<i32>,
    /// The signal that ended it, if one did.
    pub(crate) signal: Option<i32>,
    /// Whether the timeout ended it.
    pub(crate) timed_out: bool,
    /// Processes it left in the background still held its output open.
    pub(crate) lingering: bool,
    /// What ending the processes it left behind found.
    pub(crate) background: Background,
}

/// The processes a command left running when it ended or timed out, and
/// what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Background {
    /// Whether lancet could see every process the command started (Linux:
    /// through `/proc`); elsewhere only its process group was signalled, and
    /// processes that left the group could not be checked.
    pub(crate) checked: bool,
    /// Processes other than the shell that were still running and were ended.
    pub(crate) ended: usize,
    /// Processes that were signalled and are still alive (another user's, or
    /// stuck in the kernel).
    pub(crate) survived: usize,
}

/// A path that is neither a regular file nor a directory: the tools refuse
/// it before opening it (a FIFO would block for ever, a device may never end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    /// A named pipe.
    Fifo,
    /// A character or block device.
    Device,
    /// A Unix socket.
    Socket,
    /// Anything else that is not a regular file (a symlink swapped in
    /// between the check and the open, for one).
    Other,
}

/// What `grep` did not search, so the result can say so.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Skipped {
    /// Files larger than [`GREP_MAX_FILE`].
    pub(crate) large: usize,
    /// Files that could not be opened or read (permissions, vanished, or
    /// replaced by something that is not a regular file).
    pub(crate) unreadable: usize,
}
