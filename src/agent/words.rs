//! Every word the agent writes for the model to read, in one place so a
//! change of wording is one diff and shows up as a snapshot diff to review.
//!
//! - the system prompt ([`system_prompt`], re-exported as
//!   [`run::system_prompt`](super::run::system_prompt));
//! - what the loop adds to the conversation (a recovered text call's result);
//! - what compaction says: the pruned-output note ([`PRUNED`], re-exported as
//!   [`context::PRUNED`](super::context::PRUNED)), the summary request and
//!   the restart after a summary;
//! - the tools' descriptions and argument schemas ([`spec`]), their results,
//!   refusals and errors;
//! - what the sandbox enforces (for the person), its paragraph of the system
//!   prompt, and the note on a command it probably stopped;
//! - for the person: the question asked before a call runs
//!   ([`confirmation`], re-exported as
//!   [`permissions::confirmation`](super::permissions::confirmation)), the
//!   command whole and every untrusted character escaped.
//!
//! Owns: the phrasing only. Does not own: when a message is said (the loop,
//! [`context`](super::context), [`tools`](super::tools)), or the engine's own
//! feedback on edits ([`crate::feedback`], which the edit tool passes on).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::permissions::{Denial, Layout, Question, for_terminal};
use super::sandbox::{DEVICES, Enforced, NetworkEnforced, SandboxMode, Unavailable};
use super::tools::types::{
    Background, GLOB_MAX, GREP_MAX, GREP_MAX_FILE, LIST_MAX, READ_WHOLE_MAX, Refusal, Run,
    STREAM_SCAN_MAX, Skipped, Special, Tool, ToolsConfig,
};
use super::types::{Role, ToolSpec};
use crate::Format;
use crate::workspace::WorkspaceError;

// ---------------------------------------------------------------------------
// The system prompt

/// The system prompt: the role, how to work, the edit format's instructions,
/// and the project's `AGENTS.md` when there is one.
pub fn system_prompt(instructions: &str, text_mode: bool, agents_md: Option<&str>) -> String {
    let mut out = String::from(
        "You are a coding agent working in a software project. Use the tools to read files, \
         search, run commands and make changes; read a file before you edit it. Make the \
         smallest change that does the task, check it (run the tests when there are any), \
         and when the task is done, answer with a short summary and no tool call.\n\n",
    );
    if text_mode {
        out.push_str(
            "To change a file, write the edit in your reply in the format below; it is \
             applied when your reply ends, and you are told the result.\n\n",
        );
    } else {
        out.push_str(
            "To change a file, call the `edit` tool; its input uses the format below.\n\n",
        );
    }
    out.push_str(instructions.trim_end());
    if let Some(agents) = agents_md.map(str::trim).filter(|a| !a.is_empty()) {
        out.push_str("\n\n# Project instructions (AGENTS.md)\n\n");
        out.push_str(agents);
    }
    out.push('\n');
    out
}

// ---------------------------------------------------------------------------
// The loop

/// A recovered text call's result, as a user message.
pub(crate) fn text_call_result(
    name: &str,
    arguments: &str,
    content: &str,
    is_error: bool,
) -> String {
    let (name, arguments) = (arg(name), arg(arguments));
    let status = if is_error { " failed" } else { "" };
    format!("Result of your `{name}` call {arguments}{status}:\n{content}")
}

// ---------------------------------------------------------------------------
// Compaction

/// What a pruned output says instead.
pub(crate) const PRUNED: &str =
    "[output pruned to save context; call the tool again if you need it]";

/// Opens the summary request, before the conversation as plain text.
pub(crate) const TRANSCRIPT_INTRO: &str = "Here is a coding session so far:\n\n";

/// Closes the summary request: the question.
pub(crate) const SUMMARY_QUESTION: &str = "\nThe conversation is too long to continue. \
    Summarise it for yourself so you can carry on: the task, what you found, the decisions you \
    made and why, every file you read or changed and its state now, and what remains to do. Be \
    concise; keep exact names, paths and commands.";

/// Who wrote a message, in the transcript.
fn who(role: Role) -> &'static str {
    match role {
        Role::User => "USER",
        Role::Assistant => "ASSISTANT",
    }
}

/// A transcript line: text someone wrote.
pub(crate) fn transcript_text(role: Role, text: &str) -> String {
    format!("{}: {text}", who(role))
}

/// A transcript line: a tool call (its arguments already clipped).
pub(crate) fn transcript_call(role: Role, name: &str, arguments: &str) -> String {
    format!("{} called {name} {arguments}", who(role))
}

/// A transcript line: a tool result (already clipped).
pub(crate) fn transcript_result(content: &str) -> String {
    format!("RESULT: {content}")
}

/// Text cut for the transcript: the part kept and how many bytes were cut.
pub(crate) fn clipped(kept: &str, more: usize) -> String {
    format!("{kept}… [{more} more bytes]")
}

/// The message the conversation restarts from after the task: the summary.
pub(crate) fn restart(summary: &str) -> String {
    format!(
        "Earlier work on this task was summarised to save context:\n\n{}\n\nContinue the task. \
         Read a file again before you edit it.",
        summary.trim()
    )
}

// ---------------------------------------------------------------------------
// The tools: arguments that are not what they should be

/// Longest argument a result echoes whole, in characters.
const ECHO_MAX: usize = 200;

/// An argument as a result echoes it: whole when short; else its start and
/// its size, so a 100 MB path costs the model a line, not 100 MB.
pub(crate) fn arg(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(ECHO_MAX) {
        None => Cow::Borrowed(s),
        Some((at, _)) => Cow::Owned(format!("{}… ({} bytes)", &s[..at], s.len())),
    }
}

/// A size as a person reads it: bytes, KiB, MiB or GiB.
pub(crate) fn size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            let whole = bytes / scale;
            let tenth = bytes % scale * 10 / scale;
            return if tenth == 0 || whole >= 100 {
                format!("{whole} {unit}")
            } else {
                format!("{whole}.{tenth} {unit}")
            };
        }
    }
    format!("{bytes} byte{}", if bytes == 1 { "" } else { "s" })
}

/// Why `bash` arguments with an empty command are invalid.
pub(crate) const EMPTY_COMMAND: &str = "`command` is empty";

/// Why arguments that are not JSON are invalid.
pub(crate) fn not_json(e: &serde_json::Error) -> String {
    format!("not valid JSON ({e})")
}

/// Why arguments that are JSON but not an object are invalid.
pub(crate) const NOT_AN_OBJECT: &str = "not a JSON object";

/// Why a count argument is invalid.
pub(crate) const NOT_A_COUNT: &str = "expected a whole number";

/// Why a yes/no argument is invalid.
pub(crate) const NOT_A_FLAG: &str = "expected true or false";

// ---------------------------------------------------------------------------
// The tools: descriptions, schemas, results, refusals and errors

/// A tool's description and argument schema.
pub(crate) fn spec(tool: Tool, c: &ToolsConfig) -> ToolSpec {
    let (description, parameters) = match tool {
        Tool::Read => (read_description(c), json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the project root."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based; default 1)."},
                "limit": {"type": "integer", "minimum": 1, "description": format!("Most lines to show (default and maximum {}).", c.read_lines)},
            },
            "required": ["path"],
        })),
        Tool::Write => (
            format!(
                "Create a new file with the given content (missing directories are created). It refuses a file that already exists: to change an existing file, read it and {}. `content` is the complete file text.",
                if c.text_mode { "write the edit in your reply" } else { "use edit" }
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "New file's path relative to the project root."},
                    "content": {"type": "string", "description": "The file's full content."},
                },
                "required": ["path", "content"],
            }),
        ),
        Tool::Edit => edit_spec(c.format),
        Tool::Bash => (
            format!(
                "Run a shell command with `sh -c` in the project root and return its output (stdout and stderr together; when long, the start and the end are kept) and exit code. Timeout: {} s unless `timeout_secs` says otherwise (at most {} s); on timeout the command and every process it started are killed, and when it returns, processes it left running in the background are stopped too (to try a server, start it, use it and stop it in one command). Stdin is empty, so nothing interactive works. Use it to build, test, run and inspect; use read, grep, glob and list to read and search files, and edit or write to change them.",
                c.bash_timeout.as_secs(),
                c.bash_max_timeout.as_secs()
            ),
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout_secs": {"type": "integer", "minimum": 1, "description": "Seconds before it is killed."},
                },
                "required": ["command"],
            }),
        ),
        Tool::Grep => (
            format!(
                "Search file contents under the project root with a regular expression (Rust regex syntax: escape ( [ {{ . * + ? | with \\ to match them literally). Files ignored by .gitignore, binary files and .git/ are skipped. Returns matching lines as `path:line: text`, at most {GREP_MAX}."
            ),
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression."},
                    "path": {"type": "string", "description": "File or directory to search (default: the whole project)."},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. `*.rs` (any depth) or `src/**/*.py`."},
                    "ignore_case": {"type": "boolean", "description": "Match without regard to case."},
                },
                "required": ["pattern"],
            }),
        ),
        Tool::Glob => (
            format!(
                "Find files by path pattern: `**` matches any directories, `*` any characters but `/`, `?` one character, `[abc]` and `{{a,b}}` alternatives. A pattern without `/` matches file names at any depth (`*.rs`). Returns paths relative to the project root, sorted, at most {GLOB_MAX}; files ignored by .gitignore are left out."
            ),
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob, e.g. `src/**/*.rs`."},
                    "path": {"type": "string", "description": "Directory to search under (default: the project root); the pattern is relative to it."},
                },
                "required": ["pattern"],
            }),
        ),
        Tool::List => (
            "List one directory's entries (default: the project root), sorted; directories end with `/`. Entries ignored by .gitignore are left out.".to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the project root."},
                },
            }),
        ),
    };
    ToolSpec {
        name: tool.name().to_owned(),
        description,
        parameters,
    }
}

fn read_description(c: &ToolsConfig) -> String {
    let prefix = if c.format == Format::Hashline {
        "`LINE:HASH|text`, where `LINE:HASH` (e.g. `12:ZPM`) is the anchor the edit tool takes"
    } else {
        "`N | text`, its line number"
    };
    format!(
        "Read a text file under the project root. Shows up to {} lines from `offset` (1-based, default 1), each prefixed with {prefix}; the prefix is not part of the file. When the file has more lines, the last line says how to read on. A file must be read before it is edited, and read again when it changed since.",
        c.read_lines
    )
}

/// The edit tool of `format`: its description and argument schema come with
/// the format's definition, from `edit-formats/<format>.tool.json` (reviewed
/// next to the format's prompt, and snapshot-tested below with the rest).
fn edit_spec(format: Format) -> (String, Value) {
    #[derive(serde::Deserialize)]
    struct EditTool {
        description: String,
        parameters: Value,
    }
    // Every format's file is parsed by `tool_specs` below, so the empty
    // fallback is never what a model sees.
    serde_json::from_str::<EditTool>(format.tool_spec())
        .map(|t| (t.description, t.parameters))
        .unwrap_or_default()
}

pub(crate) fn unknown_tool(name: &str, tools: &[&str]) -> String {
    let name = arg(name);
    format!(
        "There is no tool `{name}`. The tools are: {}.",
        tools.join(", ")
    )
}

pub(crate) fn no_edit_tool(format: Format) -> String {
    format!(
        "There is no edit tool in this session: write your edits in your reply, in the {} format as the instructions describe.",
        format.name()
    )
}

fn example(tool: Tool) -> &'static str {
    match tool {
        Tool::Read => r#"{"path": "src/main.rs", "offset": 1, "limit": 200}"#,
        Tool::Write => r#"{"path": "src/new.rs", "content": "fn main() {}\n"}"#,
        Tool::Edit => r#"the edit tool's schema"#,
        Tool::Bash => r#"{"command": "cargo test", "timeout_secs": 300}"#,
        Tool::Grep => r#"{"pattern": "fn main", "path": "src", "glob": "*.rs"}"#,
        Tool::Glob => r#"{"pattern": "src/**/*.rs"}"#,
        Tool::List => r#"{"path": "src"}"#,
    }
}

pub(crate) fn bad_arguments(tool: Tool, why: &str) -> String {
    let why = arg(why);
    format!(
        "The arguments for `{}` are invalid: {why}. Send a JSON object such as {}. Nothing was done.",
        tool.name(),
        example(tool)
    )
}

pub(crate) fn refused(tool: Tool, subject: &str, refusal: &Refusal) -> String {
    let subject = arg(subject);
    let what = format!("`{}` on `{subject}`", tool.name());
    stopped(
        &what,
        refusal,
        "This session is read-only: only read, grep, glob and list are available. Work with what you can read, and say what you would change.",
        None,
    )
}

/// What the model reads when the permissions stopped a call on `what`:
/// `read_only` says why read-only mode refuses it, `rule` names an allow
/// rule that would let it through.
fn stopped(what: &str, refusal: &Refusal, read_only: &str, rule: Option<&str>) -> String {
    match refusal {
        Refusal::Denied(Denial::ReadOnly) => format!("Permission denied: {what}. {read_only}"),
        Refusal::Denied(Denial::Unseen { rule }) => unseen(what, rule),
        Refusal::Denied(Denial::Destructive { what: why }) => format!(
            "Permission denied: {what} is always refused ({why}). Do not try it another way; find a safer command or leave it to the user."
        ),
        Refusal::Denied(d) => format!(
            "Permission denied: {what} ({d}). Do not retry it; continue without it or explain what you need."
        ),
        Refusal::Declined => format!(
            "The user declined {what}. Nothing was done. Do not retry it unchanged; continue another way or ask the user."
        ),
        Refusal::NoTerminal => {
            let example = rule.map(|r| format!(" such as `{r}`")).unwrap_or_default();
            format!(
                "Permission needed: {what} needs the user's confirmation, and there is no terminal to ask on, so it was refused and nothing was done. (The user can allow it by running with --yes or --permission auto, or with an allow rule{example}.)"
            )
        }
    }
}

fn unseen(what: &str, rule: &str) -> String {
    format!(
        "Permission denied: {what}. The program it starts is only decided as it runs (its name comes from a substitution, a variable, a pattern or a script read from stdin), so the rule `{rule}` cannot be checked against it. Name the program plainly if it is not one the rule forbids. The rules see through wrappers such as sudo, env, time, xargs and sh -c, but not through everything: the OS sandbox is what holds against the rest."
    )
}

/// A search's result, with how many files a `read` rule kept out of it.
pub(crate) fn hidden_by_rule(mut result: String, hidden: usize) -> String {
    if hidden == 0 {
        return result;
    }
    if !result.ends_with('\n') {
        result.push('\n');
    }
    let (files, them) = if hidden == 1 {
        ("1 file was", "it")
    } else {
        ("files were", "them")
    };
    let count = if hidden == 1 {
        String::new()
    } else {
        format!("{hidden} ")
    };
    let _ = write!(
        result,
        "[{count}{files} left out: a permission rule forbids reading {them}]"
    );
    result
}

// ---------------------------------------------------------------------------
// Words for the person

/// The question a person answers before a call runs: what it would do (the
/// diff, the command), then `Allow TOOL SUBJECT? [y/N] `. Everything from the
/// model or the workspace is shown with its control characters escaped
/// ([`for_terminal`]) and nothing is shortened: the command approved is the
/// command shown, whole.
pub fn confirmation(q: &Question<'_>) -> String {
    format!(
        "\n{}\nAllow {} {}? [y/N] ",
        for_terminal(q.detail.trim_end(), Layout::Block),
        for_terminal(q.tool, Layout::Line),
        for_terminal(q.subject, Layout::Line)
    )
}

pub(crate) fn path_error(path: &str, e: &WorkspaceError) -> String {
    let path = arg(path);
    match e {
        WorkspaceError::OutsideRoot { .. } => format!(
            "`{path}` is outside the project root; the tools only reach files under it. Use a path relative to the root."
        ),
        WorkspaceError::Absolute { .. } => format!(
            "`{path}` is an absolute path; use a path relative to the project root (e.g. `src/main.rs`)."
        ),
        WorkspaceError::Reserved { .. } => {
            format!("`{path}` is inside .git/ or .lancet/, which the tools do not touch.")
        }
        WorkspaceError::InvalidPath { .. } => format!("`{path}` is not a file path."),
        WorkspaceError::IsDirectory { .. } => {
            format!("`{path}` is a directory; use list to see what it holds.")
        }
        WorkspaceError::Io { source, .. } => format!("`{path}` could not be read: {source}."),
        other => format!("`{path}`: {}.", arg(&other.to_string())),
    }
}

pub(crate) fn not_found(path: &str) -> String {
    let path = arg(path);
    format!("`{path}` does not exist. Use list or glob to find the right path.")
}

pub(crate) fn not_a_directory(path: &str) -> String {
    let path = arg(path);
    format!("`{path}` is not a directory (use read for a file).")
}

pub(crate) fn not_text(path: &str, e: &crate::DecodeError) -> String {
    let path = arg(path);
    format!("`{path}` is not a text file lancet can show ({e}).")
}

pub(crate) fn not_regular(path: &str, kind: Special) -> String {
    let path = arg(path);
    let what = match kind {
        Special::Fifo => "a named pipe (FIFO)",
        Special::Device => "a device",
        Special::Socket => "a socket",
        Special::Other => "not a regular file",
    };
    format!("`{path}` is {what}; the tools read and write only regular files, so nothing was done.")
}

pub(crate) fn too_large_to_edit(path: &str, bytes: u64) -> String {
    let path = arg(path);
    format!(
        "`{path}` is {}, larger than the {} the edit tool works on; nothing was written. Change it with a command through bash (e.g. `sed -i`), or leave it to the user.",
        size(bytes),
        size(READ_WHOLE_MAX)
    )
}

/// The note after a page of a file too large to read whole; `more` when
/// the file goes on after the page.
pub(crate) fn page_streamed(first: usize, last: usize, bytes: u64, more: bool) -> String {
    let lines = if last == first {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    };
    let read_on = if more {
        format!("; read on with offset={}", last + 1)
    } else {
        String::new()
    };
    format!(
        "[{lines} of a {} file, too large to read whole: it is shown page by page, and the edit tool cannot change it{read_on}]\n",
        size(bytes)
    )
}

/// A page of a file too large to read whole stopped before its end: the
/// scan budget ran out (a very long line, or a far offset).
pub(crate) fn scan_stopped(path: &str, first: usize) -> String {
    let path = arg(path);
    format!(
        "[stopped after scanning {} of `{path}` from line {first}: for a file this large, use bash (e.g. `sed -n '100,200p' FILE`, `tail -n 50 FILE`, `cut -c1-200`)]\n",
        size(STREAM_SCAN_MAX)
    )
}

pub(crate) fn past_end(path: &str, offset: usize, total: usize) -> String {
    let path = arg(path);
    format!(
        "offset {offset} is past the end of `{path}`, which has {total} line{}.",
        if total == 1 { "" } else { "s" }
    )
}

pub(crate) fn empty_file(path: &str) -> String {
    let path = arg(path);
    format!("(`{path}` is empty)")
}

pub(crate) fn page(first: usize, last: usize, total: usize) -> String {
    if last < total {
        format!(
            "[lines {first}-{last} of {total}; read on with offset={}]\n",
            last + 1
        )
    } else {
        format!("[lines {first}-{last} of {total}]\n")
    }
}

pub(crate) fn line_cut(chars: usize) -> String {
    format!(" … [{chars} more characters cut]")
}

pub(crate) fn exists(path: &str, text_mode: bool) -> String {
    let path = arg(path);
    let how = if text_mode {
        "read it and write the edit in your reply"
    } else {
        "read it and use edit"
    };
    format!("`{path}` already exists; write only creates new files. To change it, {how}.")
}

pub(crate) fn created(path: &str, lines: usize) -> String {
    let path = arg(path);
    format!(
        "Created `{path}` ({lines} line{}).",
        if lines == 1 { "" } else { "s" }
    )
}

pub(crate) fn write_failed(path: &str, e: &WorkspaceError) -> String {
    let path = arg(path);
    match e {
        WorkspaceError::Stale { .. } => format!(
            "`{path}` appeared on disk while the file was being written; nothing was written. Read it, then edit it."
        ),
        WorkspaceError::Io { source, .. } => {
            format!("`{path}` could not be written: {source}. Nothing was written.")
        }
        other => path_error(&path, other),
    }
}

pub(crate) fn not_read(paths: &[String]) -> String {
    let list = paths
        .iter()
        .map(|p| format!("`{}`", arg(p)))
        .collect::<Vec<_>>()
        .join(", ");
    let (s, it) = if paths.len() == 1 {
        ("", "it")
    } else {
        ("s", "them")
    };
    format!(
        "Edit refused: you have not read {list} in this session (or read {it} before the conversation was compacted). Read the file{s} first, then make the edit against what you read. Nothing was written."
    )
}

pub(crate) fn nothing_to_do() -> String {
    "The edit changes nothing; nothing was written.".to_owned()
}

pub(crate) fn commit_failed(e: &WorkspaceError) -> String {
    match e {
        WorkspaceError::Stale { path } => format!(
            "`{}` changed on disk while the edit was waiting to be written; nothing was written. Read it again and redo the edit against its current content.",
            arg(path)
        ),
        WorkspaceError::Io { path, source } => format!(
            "Writing failed at {}: {source}. Nothing was written.",
            path.display()
        ),
        other => format!(
            "The edit could not be written: {}. Nothing was written.",
            arg(&other.to_string())
        ),
    }
}

pub(crate) fn stale_diff(path: &str, diff: &str, max_lines: usize) -> String {
    let path = arg(path);
    let lines: Vec<&str> = diff.lines().collect();
    let mut shown = lines[..lines.len().min(max_lines)].join("\n");
    if lines.len() > max_lines {
        let _ = write!(shown, "\n[… {} more diff lines]", lines.len() - max_lines);
    }
    format!("\n\nWhat changed in `{path}` since you read it:\n{shown}")
}

pub(crate) fn fresh_anchors(path: &str, view: &str) -> String {
    let path = arg(path);
    format!("\n\n`{path}` now reads, around the change (fresh anchors):\n{view}")
}

pub(crate) fn bash_result(r: &Run, timeout: Duration, max: Duration) -> String {
    let mut out = if r.output.is_empty() {
        "(no output)\n".to_owned()
    } else if r.output.ends_with('\n') {
        r.output.clone()
    } else {
        format!("{}\n", r.output)
    };
    let bg = &r.background;
    if r.timed_out {
        // "Every process" only when every process was seen to end.
        let what = if !bg.checked {
            "the command's process group was killed (processes that left it could not be checked)"
                .to_owned()
        } else if bg.survived > 0 {
            "the command was killed, but not every process it started".to_owned()
        } else if bg.ended > 0 {
            format!(
                "the command and every process it started ({} besides the shell) were killed",
                bg.ended
            )
        } else {
            "the command and every process it started were killed".to_owned()
        };
        let _ = write!(
            out,
            "[timed out after {} s: {what}. If it needs longer, pass timeout_secs (at most {} s).",
            timeout.as_secs(),
            max.as_secs()
        );
        if bg.checked && bg.survived == 0 {
            out.push_str(" Nothing a command starts outlives it: to try a server, start it, use it and stop it in one command.");
        }
        out.push(']');
        out.push_str(&survivors(bg));
        return out;
    }
    match (r.code, r.signal) {
        (Some(code), _) => {
            let _ = write!(out, "[exit code {code}]");
        }
        (None, Some(sig)) => {
            let _ = write!(out, "[killed by signal {sig}]");
        }
        (None, None) => out.push_str("[exit status unknown]"),
    }
    if r.lingering && bg.survived == 0 {
        out.push_str("\n[processes it started are still running in the background; their output is not shown]");
    }
    out.push_str(&background(bg));
    out
}

/// What became of the processes a command left running: nothing to say
/// when there were none.
fn background(bg: &Background) -> String {
    let mut out = String::new();
    if bg.ended > 0 {
        let (es, was) = if bg.ended == 1 {
            ("", "was")
        } else {
            ("es", "were")
        };
        let _ = write!(
            out,
            "\n[{} background process{es} it started {was} still running and {was} stopped: nothing a command starts outlives it]",
            bg.ended
        );
    }
    out.push_str(&survivors(bg));
    out
}

/// The processes that would not end, if any.
fn survivors(bg: &Background) -> String {
    match bg.survived {
        0 => String::new(),
        n => format!(
            "\n[{n} process{} it started could not be stopped and may still be running]",
            if n == 1 { "" } else { "es" }
        ),
    }
}

pub(crate) fn output_cut(bytes: usize) -> String {
    format!("\n[… {bytes} bytes cut …]\n")
}

pub(crate) fn spawn_failed(e: &std::io::Error) -> String {
    format!("The command could not be started: {e}.")
}

pub(crate) fn bad_regex(pattern: &str, e: &regex::Error) -> String {
    let e = e.to_string();
    let (pattern, e) = (arg(pattern), arg(&e));
    format!(
        "`{pattern}` is not a valid regular expression: {e}\nEscape ( [ {{ . * + ? | with \\ to match them literally."
    )
}

pub(crate) fn bad_glob(pattern: &str, e: &globset::Error) -> String {
    let pattern = arg(pattern);
    format!(
        "`{pattern}` is not a valid glob: {}.",
        arg(&e.kind().to_string())
    )
}

/// `grep`'s answer: the hits, whether there were more, and what it did not
/// search.
pub(crate) fn grep_result(pattern: &str, hits: &[String], more: bool, skipped: &Skipped) -> String {
    let pattern = arg(pattern);
    let mut out = if hits.is_empty() {
        format!("No matches for `{pattern}`.")
    } else {
        let mut out = hits.join("\n");
        out.push('\n');
        if more {
            let _ = write!(
                out,
                "[only the first {GREP_MAX} matches are shown: narrow the pattern, path or glob]"
            );
        }
        out
    };
    let files = |n: usize| {
        if n == 1 {
            ("file", "was")
        } else {
            ("files", "were")
        }
    };
    let mut notes = Vec::new();
    if skipped.large > 0 {
        let (f, was) = files(skipped.large);
        notes.push(format!(
            "[{} {f} larger than {} {was} not searched; search {} with bash (e.g. `grep -n PATTERN FILE`)]",
            skipped.large,
            size(GREP_MAX_FILE),
            if skipped.large == 1 { "it" } else { "them" }
        ));
    }
    if skipped.unreadable > 0 {
        let (f, was) = files(skipped.unreadable);
        notes.push(format!(
            "[{} {f} could not be read and {was} not searched]",
            skipped.unreadable
        ));
    }
    for note in notes {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&note);
    }
    out
}

pub(crate) fn glob_result(pattern: &str, paths: &[String], more: bool) -> String {
    let pattern = arg(pattern);
    if paths.is_empty() {
        return format!("No files match `{pattern}`.");
    }
    let mut out = paths.join("\n");
    out.push('\n');
    if more {
        let _ = write!(
            out,
            "[only the first {GLOB_MAX} paths are shown: narrow the pattern]"
        );
    }
    out
}

pub(crate) fn list_result(dir: &str, entries: &[String], more: bool) -> String {
    let dir = arg(dir);
    if entries.is_empty() {
        return format!("(`{dir}` is empty)");
    }
    let mut out = entries.join("\n");
    out.push('\n');
    if more {
        let _ = write!(out, "[only the first {LIST_MAX} entries are shown]");
    }
    out
}

// ---------------------------------------------------------------------------
// The sandbox

/// The writable paths worth naming: the devices every mode allows are left out.
fn sandbox_dirs(e: &Enforced) -> Vec<String> {
    e.writable
        .iter()
        .filter(|p| !DEVICES.iter().any(|d| Path::new(d) == p.as_path()))
        .map(|p| p.display().to_string())
        .collect()
}

/// One line for the person at start-up (and `lancet sandbox` without a
/// command): what holds.
pub(crate) fn sandbox_enforced(e: &Enforced) -> String {
    let Some(abi) = e.abi else {
        return "sandbox off: commands may write anywhere you can and use the network".to_owned();
    };
    let dirs = sandbox_dirs(e);
    let writes = if dirs.is_empty() {
        "no writes (but /dev/null and the terminal)".to_owned()
    } else {
        format!("writes only beneath {}", dirs.join(", "))
    };
    let network = match e.network {
        NetworkEnforced::Allowed => "network allowed".to_owned(),
        NetworkEnforced::Off {
            tcp: true,
            namespace: true,
        } => "no network (landlock TCP rules + a network namespace)".to_owned(),
        NetworkEnforced::Off {
            tcp: false,
            namespace: true,
        } => "no network (a network namespace)".to_owned(),
        NetworkEnforced::Off {
            tcp: true,
            namespace: false,
        } => "no TCP (landlock TCP rules; no network namespace could be made, so UDP still gets through)".to_owned(),
        NetworkEnforced::Off {
            tcp: false,
            namespace: false,
        } => format!(
            "network NOT restricted (landlock ABI {abi} has no network rules and no network namespace could be made)"
        ),
    };
    format!(
        "sandbox {} (landlock ABI {abi}): {writes}; {network}",
        e.mode.name()
    )
}

/// One line for the person when no sandbox holds.
pub(crate) fn sandbox_unavailable(why: &Unavailable) -> String {
    let reason = match why {
        Unavailable::Os { os } => format!("lancet's sandbox is Linux's Landlock, and this is {os}"),
        Unavailable::NotEnabled => {
            "the kernel has Landlock but it is not enabled (it must be in the lsm= boot parameter)"
                .to_owned()
        }
        Unavailable::NotInKernel => {
            "the kernel has no Landlock (Linux 5.13 or newer, built with CONFIG_SECURITY_LANDLOCK)"
                .to_owned()
        }
    };
    format!(
        "no sandbox is active on this system: {reason}; commands run with your full rights (the permission rules still apply)"
    )
}

/// What the restrictions are, in the model's terms.
fn sandbox_rules(mode: SandboxMode, network: bool) -> String {
    let writes = match mode {
        SandboxMode::ReadOnly => "can read any file but write none",
        _ => {
            "can read any file but write only inside the workspace and the temporary directories (/tmp)"
        }
    };
    if network {
        format!("{writes}; they may use the network")
    } else {
        format!(
            "{writes}, and have no network (downloads, package installs and connections to servers, even on localhost, fail)"
        )
    }
}

/// The system prompt's paragraph on the sandbox, to follow the prompt's last
/// line; empty when none holds.
pub(crate) fn sandbox_prompt(e: Option<&Enforced>) -> String {
    let Some(e) = e.filter(|e| e.abi.is_some() && e.mode != SandboxMode::Off) else {
        return String::new();
    };
    format!(
        "\nCommands you run with `bash` are sandboxed ({}): they {}. A command that fails with \"Permission denied\", \"Read-only file system\" or a network error was probably stopped by the sandbox; you cannot lift it, so do the task without it or tell the user what you needed.\n",
        e.mode.name(),
        sandbox_rules(e.mode, !e.network.restricted())
    )
}

/// Added to a failed command's result when its output looks like the
/// sandbox stopped it.
pub(crate) fn sandbox_denied(mode: SandboxMode, network: bool) -> String {
    let lift = match (mode, network) {
        (SandboxMode::ReadOnly, _) => {
            "run lancet with --sandbox workspace-write (or --sandbox off)"
        }
        (_, true) => {
            "add the directory to sandbox_writable in the configuration, or run lancet with --sandbox off"
        }
        (_, false) => {
            "add the directory to sandbox_writable or set sandbox_network = true in the configuration, or run lancet with --sandbox off"
        }
    };
    format!(
        "[The sandbox ({}) may have stopped this command: commands {}. You cannot change that yourself; if the user wants it allowed, they can {lift}.]",
        mode.name(),
        sandbox_rules(mode, network)
    )
}

// ---------------------------------------------------------------------------
// The benchmark (`lancet bench`): what a simulated model says, an imported
// task's instruction, why a job failed, and the summary table.

/// Why an EditEval task is not run.
pub(crate) fn bench_needs_numpy() -> String {
    "needs numpy, which a plain python3 does not have".to_owned()
}

/// An EditEval task's instruction: the data set's words and the file.
pub(crate) fn bench_editeval_instruction(instruction: &str, file: &str) -> String {
    format!(
        "{}\n\nThe code is in `{file}`. Change that file; do not create others.",
        instruction.trim()
    )
}

/// What a simulated model answers once its edit is made.
pub(crate) fn bench_sim_done() -> String {
    "Done: the change is made.".to_owned()
}

/// A job whose workspace could not be made.
pub(crate) fn bench_workspace_failed(e: &dyn std::fmt::Display) -> String {
    format!("the job's workspace could not be made: {e}")
}

/// A check that could not be started.
pub(crate) fn bench_check_failed_to_start(e: &std::io::Error) -> String {
    format!("the check could not be started: {e}")
}

/// A check that failed: its exit status and the end of its stderr.
pub(crate) fn bench_check_failed(code: Option<i32>, stderr: &str) -> String {
    let tail: Vec<&str> = stderr.trim_end().lines().rev().take(3).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    let status = code.map_or_else(|| "a signal".to_owned(), |c| format!("status {c}"));
    if tail.is_empty() {
        format!("the check ended with {status}")
    } else {
        format!("the check ended with {status}: {}", tail.join(" / "))
    }
}

/// A check that ran out of time.
pub(crate) fn bench_check_timed_out(limit: Duration) -> String {
    format!("the check did not finish within {} s", limit.as_secs())
}

/// The summary table: per model × format × mode, the pass rate with its
/// Wilson 95 % interval, mean tries, tokens, and failures by kind; then the
/// skipped tasks.
pub fn bench_table(summary: &super::bench::Summary) -> String {
    let head = [
        "model", "format", "mode", "pass", "95% CI", "tries", "tok in", "tok out", "failures",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|h| (*h).to_owned()).collect()];
    for r in &summary.rows {
        let failures: Vec<String> = r
            .failures
            .iter()
            .map(|(k, n)| format!("{} {n}", k.name()))
            .collect();
        rows.push(vec![
            r.model.clone(),
            r.format.clone(),
            r.mode.name().to_owned(),
            format!("{}/{} {:.1}%", r.passed, r.tasks, r.pass_rate * 100.0),
            format!("{:.1}–{:.1}%", r.wilson_95.0 * 100.0, r.wilson_95.1 * 100.0),
            format!("{:.2}", r.mean_tries),
            r.tokens_in.to_string(),
            r.tokens_out.to_string(),
            if failures.is_empty() {
                "-".to_owned()
            } else {
                failures.join(", ")
            },
        ]);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            let _ = writeln!(out, "{}", rule.join("  "));
        }
    }
    if !summary.skipped.is_empty() {
        let _ = writeln!(out, "\nskipped {} task(s):", summary.skipped.len());
        for s in &summary.skipped {
            let _ = writeln!(out, "  {} {}: {}", s.source, s.task, s.reason);
        }
    }
    out
}

#[cfg(test)]
mod bench_tests {
    //! The benchmark's words, rendered once each.

    use super::super::bench::{FailureKind, Mode, Record, Skipped, Summary};
    use super::*;

    fn record(format: &str, mode: Mode, failure: Option<FailureKind>) -> Record {
        Record {
            task: "t".into(),
            source: "s".into(),
            model: "sim:perfect".into(),
            format: format.into(),
            mode,
            pass: failure.is_none(),
            tries: 1,
            failure,
            tokens_in: 100,
            tokens_out: 20,
            cost: None,
            ms: 3,
            turns: 3,
            detail: None,
            wrong_place: false,
            tier: None,
            ending: None,
        }
    }

    #[test]
    fn bench_words() {
        let mut out = String::new();
        let put = |out: &mut String, title: &str, text: &str| {
            let _ = write!(out, "=== {title} ===\n{text}\n\n");
        };
        put(&mut out, "bench_needs_numpy", &bench_needs_numpy());
        put(
            &mut out,
            "bench_editeval_instruction",
            &bench_editeval_instruction("Make the function faster. ", "code.py"),
        );
        put(&mut out, "bench_sim_done", &bench_sim_done());
        put(
            &mut out,
            "bench_workspace_failed",
            &bench_workspace_failed(&"disk full"),
        );
        put(
            &mut out,
            "bench_check_failed_to_start",
            &bench_check_failed_to_start(&std::io::Error::other("no python3")),
        );
        put(
            &mut out,
            "bench_check_failed",
            &bench_check_failed(Some(1), "Traceback\n  File x\nAssertionError\n"),
        );
        put(
            &mut out,
            "bench_check_failed (signal, silent)",
            &bench_check_failed(None, ""),
        );
        put(
            &mut out,
            "bench_check_timed_out",
            &bench_check_timed_out(Duration::from_secs(60)),
        );
        let records = [
            record("search-replace", Mode::Tool, None),
            record("search-replace", Mode::Tool, Some(FailureKind::NotFound)),
            record("udiff", Mode::Text, Some(FailureKind::Parse)),
            record("udiff", Mode::Text, None),
            record("udiff", Mode::Text, Some(FailureKind::Parse)),
        ];
        let skipped = [Skipped {
            source: "editeval".into(),
            id: "EditEval/19".into(),
            reason: bench_needs_numpy(),
        }];
        put(
            &mut out,
            "bench_table",
            &bench_table(&Summary::of(&records, &skipped)),
        );
        insta::assert_snapshot!(out);
    }
}

// ---------------------------------------------------------------------------
// The benchmark's generated tasks (`mutate:DIR[:N]`): the bug report a
// mutated file's task gives the model, and the generation's figures.

#[cfg(feature = "syntax")]
use super::bench::mutate::{FlagUse, Place, SkippedFiles, Stats, Step, Symptom};

/// A generated task's instruction: a bug report naming the file, the
/// function and the symptom, never the line or the change.
#[cfg(feature = "syntax")]
pub(crate) fn bench_mutate_instruction(file: &str, place: &Place, symptom: &Symptom) -> String {
    let s = match place {
        Place::Function(name) => format!("`{name}`"),
        Place::Item(name) => format!("the value of `{name}`"),
        Place::TopLevel => "the code at the file's top level".to_owned(),
    };
    let pair = |l: &Option<String>, r: &Option<String>| match (l, r) {
        (Some(l), Some(r)) => Some((l.clone(), r.clone())),
        _ => None,
    };
    let report = match symptom {
        Symptom::Boundary {
            left,
            right,
            holds_when_equal,
        } => {
            let (holds, should) = if *holds_when_equal {
                ("holds", "it should not")
            } else {
                ("does not hold", "it should")
            };
            match pair(left, right) {
                Some((l, r)) => format!(
                    "{s} is off at a boundary: when `{l}` is exactly `{r}`, its comparison of the two {holds}, and at that point {should}."
                ),
                None => format!(
                    "{s} is off at a boundary: when the two sides of one of its comparisons are equal, the comparison {holds}, and at that point {should}."
                ),
            }
        }
        Symptom::Equality {
            left,
            right,
            acts_when_equal,
        } => match pair(left, right) {
            Some((l, r)) if *acts_when_equal => format!(
                "{s} has a test the wrong way round: it acts when `{l}` equals `{r}`, and it should act when they differ."
            ),
            Some((l, r)) => format!(
                "{s} has a test the wrong way round: it acts when `{l}` differs from `{r}`, and it should act when they are equal."
            ),
            None => format!(
                "{s} has a test the wrong way round: one of its equality checks gives the opposite answer."
            ),
        },
        Symptom::OffByOne { too_high } => format!(
            "{s} is off by one: a number in it is one too {}.",
            if *too_high { "high" } else { "low" }
        ),
        Symptom::Boolean { feeds } => match feeds {
            FlagUse::Argument(callee) => format!(
                "{s} passes the wrong flag to `{callee}`: a true/false value there is inverted."
            ),
            FlagUse::Assigned(target) => {
                format!("{s} sets `{target}` to the opposite of the true/false value it should.")
            }
            FlagUse::Returned => {
                format!("{s} returns the opposite true/false value in one of its cases.")
            }
            FlagUse::Other => format!("{s} has one true/false value inverted."),
        },
        Symptom::Guard { condition } => match condition {
            Some(c) => format!(
                "{s} no longer stops early when `{c}`: it carries on in that case as if nothing were wrong."
            ),
            None => format!(
                "{s} no longer stops early in a case where it must: the check that ended it there is missing."
            ),
        },
        Symptom::SwapArgs { callee } => {
            format!("{s} calls `{callee}` with two of its arguments in the wrong order.")
        }
        Symptom::SwapBranches { condition } => match condition {
            Some(c) => format!(
                "{s} does the opposite of what it should depending on `{c}`: what it does when that holds belongs to when it does not, and the other way round."
            ),
            None => format!(
                "{s} has the two branches of one of its `if`s the wrong way round: each does the other's work."
            ),
        },
        Symptom::Deleted { step } => match step {
            Step::Call(callee) => {
                format!("{s} skips a step: a call to `{callee}` that it needs is missing.")
            }
            Step::Update(target) => {
                format!("{s} skips a step: it no longer updates `{target}` where it must.")
            }
            Step::Other => format!("{s} skips a step that it needs."),
        },
        Symptom::Rename { used, meant } => {
            format!("{s} uses `{used}` in one place where it means `{meant}`.")
        }
    };
    format!("Bug report: in `{file}`, {report}\n\nFix the bug in `{file}`; change nothing else.")
}

/// The source files a tree held but the generator left out, as a clause
/// (empty when none).
#[cfg(feature = "syntax")]
fn bench_mutate_skipped(s: &SkippedFiles) -> String {
    let parts: Vec<String> = [
        (s.large, "larger than 256 KiB"),
        (s.not_utf8, "not UTF-8"),
        (s.unparsable, "with syntax errors"),
        (s.unreadable, "not regular files or unreadable"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("; source files left out: {}", parts.join(", "))
    }
}

/// A tree with nothing to mutate.
#[cfg(feature = "syntax")]
pub(crate) fn bench_mutate_no_sources(skipped: &SkippedFiles) -> String {
    format!(
        "no Python (.py) or Rust (.rs) file to mutate (hidden, target/, node_modules/ and vendored directories are not searched){}",
        bench_mutate_skipped(skipped)
    )
}

/// What a generation made, for the person (one line).
#[cfg(feature = "syntax")]
pub fn bench_mutate_generated(spec: &str, asked: usize, stats: &Stats) -> String {
    let made: usize = stats.per_operator.values().sum();
    let r = &stats.rejected;
    let mut line = format!(
        "{spec}: {made} tasks from {} files ({} sites; rejected {} unchanged, {} unparsable, {} ambiguous, {} duplicate{})",
        stats.files,
        stats.sites,
        r.unchanged,
        r.unparsable,
        r.ambiguous,
        r.duplicate,
        bench_mutate_skipped(&stats.skipped)
    );
    if made < asked {
        let _ = write!(
            line,
            "; fewer than the {asked} asked for: the tree has no more valid sites"
        );
    }
    line
}

#[cfg(all(test, feature = "syntax"))]
mod bench_mutate_tests {
    //! The generated tasks' words, every symptom once.

    use std::fmt::Write as _;

    use super::super::bench::mutate::{
        FlagUse, Operator, Place, Rejected, SkippedFiles, Stats, Step, Symptom,
    };
    use super::{bench_mutate_generated, bench_mutate_instruction, bench_mutate_no_sources};

    #[test]
    fn bench_mutate_words() {
        let mut out = String::new();
        let q = |s: &str| Some(s.to_owned());
        let f = Place::Function("Header::parse".into());
        let cases: Vec<(&str, Place, Symptom)> = vec![
            (
                "boundary, holds",
                f.clone(),
                Symptom::Boundary {
                    left: q("len"),
                    right: q("limit"),
                    holds_when_equal: true,
                },
            ),
            (
                "boundary, no longer holds, long sides",
                f.clone(),
                Symptom::Boundary {
                    left: None,
                    right: q("limit"),
                    holds_when_equal: false,
                },
            ),
            (
                "equality, acts when equal",
                f.clone(),
                Symptom::Equality {
                    left: q("kind"),
                    right: q("Kind::Eof"),
                    acts_when_equal: true,
                },
            ),
            (
                "equality, acts when different",
                f.clone(),
                Symptom::Equality {
                    left: q("a"),
                    right: q("b"),
                    acts_when_equal: false,
                },
            ),
            (
                "equality, long sides",
                f.clone(),
                Symptom::Equality {
                    left: None,
                    right: None,
                    acts_when_equal: false,
                },
            ),
            (
                "off by one, item",
                Place::Item("MAX_DEPTH".into()),
                Symptom::OffByOne { too_high: true },
            ),
            (
                "off by one, top level",
                Place::TopLevel,
                Symptom::OffByOne { too_high: false },
            ),
            (
                "boolean, argument",
                f.clone(),
                Symptom::Boolean {
                    feeds: FlagUse::Argument("open".into()),
                },
            ),
            (
                "boolean, assigned",
                f.clone(),
                Symptom::Boolean {
                    feeds: FlagUse::Assigned("self.done".into()),
                },
            ),
            (
                "boolean, returned",
                f.clone(),
                Symptom::Boolean {
                    feeds: FlagUse::Returned,
                },
            ),
            (
                "boolean, other",
                f.clone(),
                Symptom::Boolean {
                    feeds: FlagUse::Other,
                },
            ),
            (
                "guard",
                f.clone(),
                Symptom::Guard {
                    condition: q("x is None"),
                },
            ),
            ("guard, long", f.clone(), Symptom::Guard { condition: None }),
            (
                "swap args",
                f.clone(),
                Symptom::SwapArgs {
                    callee: "copy".into(),
                },
            ),
            (
                "swap branches",
                f.clone(),
                Symptom::SwapBranches {
                    condition: q("self.strict"),
                },
            ),
            (
                "swap branches, long",
                f.clone(),
                Symptom::SwapBranches { condition: None },
            ),
            (
                "deleted call",
                f.clone(),
                Symptom::Deleted {
                    step: Step::Call("flush".into()),
                },
            ),
            (
                "deleted update",
                f.clone(),
                Symptom::Deleted {
                    step: Step::Update("count".into()),
                },
            ),
            (
                "deleted other",
                f.clone(),
                Symptom::Deleted { step: Step::Other },
            ),
            (
                "rename",
                f,
                Symptom::Rename {
                    used: "lo".into(),
                    meant: "hi".into(),
                },
            ),
        ];
        for (title, place, symptom) in &cases {
            let _ = write!(
                out,
                "=== {title} ===\n{}\n\n",
                bench_mutate_instruction("src/header.rs", place, symptom)
            );
        }
        let skipped = SkippedFiles {
            large: 1,
            not_utf8: 0,
            unparsable: 2,
            unreadable: 0,
        };
        let _ = write!(
            out,
            "=== bench_mutate_no_sources ===\n{}\n\n=== bench_mutate_no_sources (none skipped) ===\n{}\n\n",
            bench_mutate_no_sources(&skipped),
            bench_mutate_no_sources(&SkippedFiles::default())
        );
        let stats = Stats {
            files: 12,
            skipped,
            sites: 840,
            rejected: Rejected {
                unchanged: 3,
                unparsable: 1,
                ambiguous: 7,
                duplicate: 0,
            },
            per_operator: [(Operator::Comparison, 2), (Operator::Guard, 1)].into(),
        };
        let _ = write!(
            out,
            "=== bench_mutate_generated ===\n{}\n\n=== bench_mutate_generated (fewer) ===\n{}\n",
            bench_mutate_generated("mutate:src", 3, &stats),
            bench_mutate_generated("mutate:src:10", 10, &stats)
        );
        insta::assert_snapshot!(out);
    }
}

#[cfg(test)]
mod tests {
    //! Every message rendered at least once, with representative inputs: a
    //! change of wording is a snapshot diff to review (`cargo insta review`).

    use std::io;
    use std::path::PathBuf;

    use super::*;
    use crate::DecodeError;

    /// Appends one titled message to a snapshot text.
    fn put(out: &mut String, title: &str, text: &str) {
        let _ = write!(out, "=== {title} ===\n{text}\n\n");
    }

    fn io_error(path: &str) -> WorkspaceError {
        WorkspaceError::Io {
            path: PathBuf::from(path),
            source: io::Error::other("disk full"),
        }
    }

    fn run(output: &str, code: Option<i32>, signal: Option<i32>) -> Run {
        Run {
            output: output.to_owned(),
            code,
            signal,
            timed_out: false,
            lingering: false,
            background: Background {
                checked: true,
                ..Background::default()
            },
        }
    }

    #[test]
    fn prompt_and_loop() {
        let mut out = String::new();
        put(
            &mut out,
            "system_prompt (edit tool, AGENTS.md)",
            &system_prompt(
                "<the format's instructions>\n",
                false,
                Some("Run `make test` before you finish.\n"),
            ),
        );
        put(
            &mut out,
            "system_prompt (text mode, no AGENTS.md)",
            &system_prompt("<the format's instructions>", true, Some("  \n")),
        );
        put(
            &mut out,
            "text_call_result (ok)",
            &text_call_result("read", r#"{"path": "a.py"}"#, "1 | x = 1", false),
        );
        put(
            &mut out,
            "text_call_result (failed)",
            &text_call_result("bash", r#"{"command": "make"}"#, "[exit code 2]", true),
        );
        insta::assert_snapshot!(out);
    }

    #[test]
    fn compaction() {
        let mut out = String::new();
        put(&mut out, "PRUNED", PRUNED);
        let mut request = String::from(TRANSCRIPT_INTRO);
        for line in [
            transcript_text(Role::User, "fix the parser"),
            transcript_text(Role::Assistant, "Reading it."),
            transcript_call(
                Role::Assistant,
                "read",
                &clipped(r#"{"path": "src/par"#, 12),
            ),
            transcript_result("1 | fn parse() {}"),
        ] {
            request.push_str(&line);
            request.push('\n');
        }
        request.push_str(SUMMARY_QUESTION);
        put(&mut out, "summary request", &request);
        put(
            &mut out,
            "restart",
            &restart("  Found the bug in parse().\n"),
        );
        insta::assert_snapshot!(out);
    }

    #[test]
    fn tool_specs() {
        let default = ToolsConfig::default();
        let mut specs: Vec<ToolSpec> = Tool::ALL.into_iter().map(|t| spec(t, &default)).collect();
        for &format in Format::ALL {
            let c = ToolsConfig {
                format,
                ..ToolsConfig::default()
            };
            if format != default.format {
                specs.push(spec(Tool::Edit, &c));
            }
            if format == Format::Hashline {
                specs.push(spec(Tool::Read, &c));
            }
        }
        let text_mode = ToolsConfig {
            text_mode: true,
            ..ToolsConfig::default()
        };
        specs.push(spec(Tool::Write, &text_mode));
        let json = serde_json::to_string_pretty(&specs).unwrap_or_default();
        insta::assert_snapshot!(json);
    }

    #[test]
    fn tool_results() {
        let mut out = String::new();
        let o = &mut out;
        // Arguments.
        put(o, "EMPTY_COMMAND", EMPTY_COMMAND);
        let bad_json = serde_json::from_str::<Value>("{oops").unwrap_err();
        put(o, "not_json", &not_json(&bad_json));
        put(o, "NOT_AN_OBJECT", NOT_AN_OBJECT);
        put(o, "NOT_A_COUNT", NOT_A_COUNT);
        put(o, "NOT_A_FLAG", NOT_A_FLAG);
        put(
            o,
            "unknown_tool",
            &unknown_tool("frobnicate", &["read", "write", "edit", "bash"]),
        );
        put(o, "no_edit_tool", &no_edit_tool(Format::UnifiedDiff));
        for tool in Tool::ALL {
            put(
                o,
                &format!("bad_arguments ({})", tool.name()),
                &bad_arguments(tool, "missing field `path`"),
            );
        }
        // Refusals.
        for (kind, refusal) in [
            ("read-only", Refusal::Denied(Denial::ReadOnly)),
            (
                "destructive",
                Refusal::Denied(Denial::Destructive {
                    what: "delete everything",
                }),
            ),
            (
                "rule",
                Refusal::Denied(Denial::Rule {
                    rule: "bash(git push:*)".to_owned(),
                }),
            ),
            ("declined", Refusal::Declined),
            ("no terminal", Refusal::NoTerminal),
        ] {
            put(
                o,
                &format!("refused ({kind})"),
                &refused(Tool::Bash, "git push", &refusal),
            );
        }
        // Paths.
        let p = |s: &str| s.to_owned();
        for (kind, e) in [
            ("outside", WorkspaceError::OutsideRoot { path: p("../x") }),
            ("absolute", WorkspaceError::Absolute { path: p("/etc/x") }),
            ("reserved", WorkspaceError::Reserved { path: p(".git/x") }),
            ("invalid", WorkspaceError::InvalidPath { path: p("a\0b") }),
            ("directory", WorkspaceError::IsDirectory { path: p("src") }),
            ("io", io_error("/project/src/a.rs")),
            ("other", WorkspaceError::NothingToUndo),
        ] {
            put(o, &format!("path_error ({kind})"), &path_error("x", &e));
        }
        put(o, "not_found", &not_found("src/mian.rs"));
        put(o, "not_a_directory", &not_a_directory("README.md"));
        put(
            o,
            "not_text",
            &not_text("logo.png", &DecodeError::Binary { offset: 3 }),
        );
        put(o, "past_end (1 line)", &past_end("a.py", 5, 1));
        put(o, "past_end (lines)", &past_end("a.py", 50, 12));
        put(o, "empty_file", &empty_file("a.py"));
        put(o, "page (more)", &page(1, 2000, 5400));
        put(o, "page (last)", &page(2001, 5400, 5400));
        put(
            o,
            "line_cut",
            &format!("{}{}", "x".repeat(10), line_cut(1234)),
        );
        // write and edit.
        put(o, "exists (edit tool)", &exists("a.py", false));
        put(o, "exists (text mode)", &exists("a.py", true));
        put(o, "created (1 line)", &created("a.py", 1));
        put(o, "created (lines)", &created("a.py", 12));
        put(
            o,
            "write_failed (stale)",
            &write_failed("a.py", &WorkspaceError::Stale { path: p("a.py") }),
        );
        put(
            o,
            "write_failed (io)",
            &write_failed("a.py", &io_error("/project/a.py")),
        );
        put(
            o,
            "write_failed (other)",
            &write_failed("a.py", &WorkspaceError::Reserved { path: p("a.py") }),
        );
        put(o, "not_read (1)", &not_read(&[p("a.py")]));
        put(o, "not_read (2)", &not_read(&[p("a.py"), p("b.py")]));
        put(o, "nothing_to_do", &nothing_to_do());
        put(
            o,
            "commit_failed (stale)",
            &commit_failed(&WorkspaceError::Stale { path: p("a.py") }),
        );
        put(
            o,
            "commit_failed (io)",
            &commit_failed(&io_error("/project/a.py")),
        );
        put(
            o,
            "commit_failed (other)",
            &commit_failed(&WorkspaceError::DuplicatePath { path: p("a.py") }),
        );
        let diff = "@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n y = 3\n";
        put(o, "stale_diff (short)", &stale_diff("a.py", diff, 40));
        put(o, "stale_diff (cut)", &stale_diff("a.py", diff, 2));
        put(
            o,
            "fresh_anchors",
            &fresh_anchors("a.py", "1:ZPM|x = 2\n2:KQB|y = 3\n"),
        );
        // bash.
        let (t, max) = (Duration::from_secs(120), Duration::from_secs(600));
        put(
            o,
            "bash_result (exit code)",
            &bash_result(&run("ok\n", Some(0), None), t, max),
        );
        put(
            o,
            "bash_result (no output)",
            &bash_result(&run("", Some(1), None), t, max),
        );
        put(
            o,
            "bash_result (signal, no final newline)",
            &bash_result(&run("partial", None, Some(9)), t, max),
        );
        put(
            o,
            "bash_result (unknown)",
            &bash_result(&run("x\n", None, None), t, max),
        );
        let mut lingering = run("started\n", Some(0), None);
        lingering.lingering = true;
        put(
            o,
            "bash_result (lingering)",
            &bash_result(&lingering, t, max),
        );
        let mut timed_out = run("started\n", None, Some(9));
        timed_out.timed_out = true;
        put(
            o,
            "bash_result (timed out)",
            &bash_result(&timed_out, t, max),
        );
        put(o, "output_cut", &format!("head{}tail", output_cut(16)));
        put(
            o,
            "spawn_failed",
            &spawn_failed(&io::Error::new(io::ErrorKind::NotFound, "sh not found")),
        );
        // grep, glob, list.
        // Built at run time: clippy rejects an invalid regex literal.
        let pattern = String::from("fn (");
        let e = regex::Regex::new(&pattern).unwrap_err();
        put(o, "bad_regex", &bad_regex(&pattern, &e));
        let e = globset::Glob::new("src/[").unwrap_err();
        put(o, "bad_glob", &bad_glob("src/[", &e));
        let hits = [p("src/a.rs:1: fn needle() {}"), p("src/b.py:3: needle = 1")];
        let none = Skipped::default();
        put(
            o,
            "grep_result (none)",
            &grep_result("needle", &[], false, &none),
        );
        put(
            o,
            "grep_result (hits)",
            &grep_result("needle", &hits, false, &none),
        );
        put(
            o,
            "grep_result (more)",
            &grep_result("needle", &hits, true, &none),
        );
        let paths = [p("src/main.rs"), p("src/util/mod.rs")];
        put(o, "glob_result (none)", &glob_result("*.zig", &[], false));
        put(
            o,
            "glob_result (paths)",
            &glob_result("**/*.rs", &paths, false),
        );
        put(
            o,
            "glob_result (more)",
            &glob_result("**/*.rs", &paths, true),
        );
        let entries = [p("README.md"), p("src/")];
        put(o, "list_result (empty)", &list_result("empty", &[], false));
        put(
            o,
            "list_result (entries)",
            &list_result(".", &entries, false),
        );
        put(o, "list_result (more)", &list_result(".", &entries, true));
        insta::assert_snapshot!(out);
    }

    #[test]
    fn sandbox_words() {
        let mut out = String::new();
        let o = &mut out;
        let enforced = |mode, writable: &[&str], network| Enforced {
            mode,
            abi: Some(6),
            writable: writable.iter().map(PathBuf::from).collect(),
            network,
        };
        let ws = ["/home/me/proj", "/tmp", "/var/tmp", "/dev/null", "/dev/tty"];
        let off = |tcp, namespace| NetworkEnforced::Off { tcp, namespace };
        let cases = [
            (
                "both",
                enforced(SandboxMode::WorkspaceWrite, &ws, off(true, true)),
            ),
            (
                "namespace only",
                enforced(SandboxMode::WorkspaceWrite, &ws, off(false, true)),
            ),
            (
                "tcp only",
                enforced(SandboxMode::WorkspaceWrite, &ws, off(true, false)),
            ),
            (
                "no network rule",
                enforced(SandboxMode::WorkspaceWrite, &ws, off(false, false)),
            ),
            (
                "network allowed",
                enforced(SandboxMode::WorkspaceWrite, &ws, NetworkEnforced::Allowed),
            ),
            (
                "read-only",
                enforced(SandboxMode::ReadOnly, &["/dev/null"], off(true, true)),
            ),
        ];
        for (title, e) in &cases {
            put(
                o,
                &format!("sandbox_enforced ({title})"),
                &sandbox_enforced(e),
            );
        }
        let none = Enforced {
            mode: SandboxMode::Off,
            abi: None,
            writable: Vec::new(),
            network: NetworkEnforced::Allowed,
        };
        put(o, "sandbox_enforced (off)", &sandbox_enforced(&none));
        for why in [
            Unavailable::Os {
                os: "macos".to_owned(),
            },
            Unavailable::NotEnabled,
            Unavailable::NotInKernel,
        ] {
            put(
                o,
                &format!("sandbox_unavailable ({why:?})"),
                &sandbox_unavailable(&why),
            );
        }
        put(
            o,
            "sandbox_prompt (workspace-write)",
            &sandbox_prompt(Some(&cases[0].1)),
        );
        put(
            o,
            "sandbox_prompt (network allowed)",
            &sandbox_prompt(Some(&cases[4].1)),
        );
        put(
            o,
            "sandbox_prompt (read-only)",
            &sandbox_prompt(Some(&cases[5].1)),
        );
        put(o, "sandbox_prompt (off)", &sandbox_prompt(Some(&none)));
        put(o, "sandbox_prompt (none)", &sandbox_prompt(None));
        for (mode, network) in [
            (SandboxMode::WorkspaceWrite, false),
            (SandboxMode::WorkspaceWrite, true),
            (SandboxMode::ReadOnly, false),
        ] {
            put(
                o,
                &format!("sandbox_denied ({}, network {network})", mode.name()),
                &sandbox_denied(mode, network),
            );
        }
        insta::assert_snapshot!(out);
    }

    #[test]
    fn permission_words() {
        let mut out = String::new();
        let o = &mut out;
        put(
            o,
            "refused (unseen)",
            &refused(
                Tool::Bash,
                "$(echo curl) http://x",
                &Refusal::Denied(Denial::Unseen {
                    rule: "bash(curl*)".to_owned(),
                }),
            ),
        );
        put(
            o,
            "hidden_by_rule (1)",
            &hidden_by_rule("src/a.rs:1: key\n".to_owned(), 1),
        );
        put(
            o,
            "hidden_by_rule (3, no matches)",
            &hidden_by_rule("No matches for `key`.".to_owned(), 3),
        );
        put(
            o,
            "confirmation (spoofed command)",
            &confirmation(&Question {
                tool: "bash",
                subject: "rm -rf ~/x #\r\x1b[2Kls -la",
                detail: "rm -rf ~/x #\r\x1b[2Kls -la",
            }),
        );
        put(
            o,
            "confirmation (edit)",
            &confirmation(&Question {
                tool: "edit",
                subject: "src/a\u{202e}sr.rs",
                detail: "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-a\r\n+\tb\x1b[1A\r\n",
            }),
        );
        insta::assert_snapshot!(out);
    }

    /// The words of item 7 (special files), 16 (nothing outlives a
    /// command) and 18 (bounded work): refusals, page notes, what grep
    /// skipped, what became of background processes, capped echoes.
    #[test]
    fn limits_and_processes() {
        let mut out = String::new();
        let o = &mut out;
        // Echoes.
        put(o, "arg (short)", &arg("src/main.rs"));
        let long = format!("{}.rs", "é".repeat(300));
        put(o, "arg (long)", &arg(&long));
        put(o, "not_found (long path)", &not_found(&long));
        put(
            o,
            "refused (long command)",
            &refused(Tool::Bash, &long, &Refusal::NoTerminal),
        );
        put(
            o,
            "unknown_tool (long name)",
            &unknown_tool(&long, &["read"]),
        );
        for bytes in [
            0,
            1,
            1023,
            1024,
            1536,
            9 << 20,
            (1 << 30) + (1 << 29),
            300 << 30,
        ] {
            put(o, &format!("size ({bytes})"), &size(bytes));
        }
        // Special files.
        for (kind, special) in [
            ("fifo", Special::Fifo),
            ("device", Special::Device),
            ("socket", Special::Socket),
            ("other", Special::Other),
        ] {
            put(
                o,
                &format!("not_regular ({kind})"),
                &not_regular("logs/pipe", special),
            );
        }
        // Large files.
        put(
            o,
            "too_large_to_edit",
            &too_large_to_edit("huge.log", 1 << 30),
        );
        put(
            o,
            "page_streamed (more)",
            &page_streamed(1, 2000, 1 << 30, true),
        );
        put(
            o,
            "page_streamed (end)",
            &page_streamed(4001, 4100, 20 << 20, false),
        );
        put(
            o,
            "page_streamed (one line)",
            &page_streamed(7, 7, 20 << 20, true),
        );
        put(o, "scan_stopped", &scan_stopped("huge.log", 2001));
        // grep's skipped files.
        let hits = ["src/a.rs:1: fn needle() {}".to_owned()];
        for (kind, large, unreadable) in [
            ("one large", 1, 0),
            ("both", 3, 2),
            ("one unreadable", 0, 1),
        ] {
            let skipped = Skipped { large, unreadable };
            put(
                o,
                &format!("grep_result (none, {kind})"),
                &grep_result("needle", &[], false, &skipped),
            );
            put(
                o,
                &format!("grep_result (hits, {kind})"),
                &grep_result("needle", &hits, false, &skipped),
            );
        }
        put(
            o,
            "grep_result (more, skipped)",
            &grep_result(
                "needle",
                &hits,
                true,
                &Skipped {
                    large: 1,
                    unreadable: 0,
                },
            ),
        );
        // Background processes.
        let (t, max) = (Duration::from_secs(120), Duration::from_secs(600));
        let with = |timed_out: bool, checked: bool, ended: usize, survived: usize| {
            let mut r = run("started\n", (!timed_out).then_some(0), None);
            r.timed_out = timed_out;
            r.background = Background {
                checked,
                ended,
                survived,
            };
            bash_result(&r, t, max)
        };
        put(o, "bash_result (ended 1)", &with(false, true, 1, 0));
        put(o, "bash_result (ended 3)", &with(false, true, 3, 0));
        put(
            o,
            "bash_result (ended 2, survived 1)",
            &with(false, true, 2, 1),
        );
        put(o, "bash_result (survived 2)", &with(false, true, 0, 2));
        put(
            o,
            "bash_result (timed out, ended 2)",
            &with(true, true, 2, 0),
        );
        put(
            o,
            "bash_result (timed out, survived 1)",
            &with(true, true, 1, 1),
        );
        put(
            o,
            "bash_result (timed out, unchecked)",
            &with(true, false, 0, 0),
        );
        insta::assert_snapshot!(out);
    }
}

// ---------------------------------------------------------------------------
// The benchmark's verdicts and report (`lancet bench`, `bench report`,
// report.html, `--recommend`): words a person reads.

/// One verdict: the best format of a model and mode, and whether the
/// runner-up is distinguishable from it.
pub(crate) fn bench_verdict(v: &super::bench::paired::Verdict) -> String {
    let pct = |r: f64| format!("{:.1}%", r * 100.0);
    let head = format!(
        "{} ({}): {} {}",
        v.model,
        v.mode.name(),
        v.best,
        pct(v.best_pass_rate)
    );
    match (&v.runner_up, v.runner_up_pass_rate, &v.test) {
        (Some(other), Some(rate), Some(t)) => format!(
            "{head}, {} {other} {} (p = {:.3}; {} task(s) only {} passed, {} only {other})",
            if t.distinguishable {
                "better than"
            } else {
                "not distinguishable from"
            },
            pct(rate),
            t.p_value,
            t.only_a,
            v.best,
            t.only_b,
        ),
        _ => format!("{head}, the only format measured"),
    }
}

/// The verdicts after the summary table, and the wrong-place count when it
/// is not zero.
pub fn bench_verdicts(verdicts: &[super::bench::paired::Verdict], wrong_place: u64) -> String {
    let mut out = String::new();
    if !verdicts.is_empty() {
        let _ = writeln!(
            out,
            "\nbest format per model (exact McNemar test against the runner-up; distinguishable when p < 0.05):"
        );
        for v in verdicts {
            let _ = writeln!(out, "  {}", bench_verdict(v));
        }
    }
    if wrong_place > 0 {
        let _ = writeln!(
            out,
            "\n{wrong_place} result(s) changed code the task leaves alone (an edit written to a wrong place): see report.html"
        );
    }
    out
}

/// `bench report`: the same job found twice with different outcomes.
pub fn bench_conflict(c: &super::bench::shard::Conflict) -> String {
    let outcome = |r: &super::bench::Record| match r.failure {
        None if r.pass => "passed".to_owned(),
        None => "failed".to_owned(),
        Some(k) => format!("failed ({})", k.name()),
    };
    format!(
        "{} / {} / {} / {} {}: {} in one result set, {} in another; the first is kept",
        c.kept.source,
        c.kept.task,
        c.kept.model,
        c.kept.format,
        c.kept.mode.name(),
        outcome(&c.kept),
        outcome(&c.dropped),
    )
}

/// `--recommend`: the reason written into models.toml for a model's entry.
pub fn bench_recommend_reason(r: &super::bench::paired::Recommendation, date: &str) -> String {
    let arm = |s: &super::bench::paired::Standing| {
        format!(
            "{} ({}) {}/{} = {:.1}%, {:.0} tokens/task",
            s.format,
            s.mode.name(),
            s.passed,
            s.tasks,
            s.pass_rate * 100.0,
            s.tokens_per_task
        )
    };
    let why = match &r.runner_up {
        None => format!("only {} measured", arm(&r.best)),
        Some((other, t)) if r.distinguishable => format!(
            "{} beats the runner-up {} (exact McNemar p = {:.3} on {} common tasks)",
            arm(&r.best),
            arm(other),
            t.p_value,
            t.common
        ),
        Some((other, t)) if r.choice == r.best => format!(
            "{} is not distinguishable from the runner-up {} (exact McNemar p = {:.3} on {} common tasks) and costs no more tokens",
            arm(&r.best),
            arm(other),
            t.p_value,
            t.common
        ),
        Some((other, t)) if r.choice == *other => format!(
            "{} is not distinguishable from the best, {} (exact McNemar p = {:.3} on {} common tasks), and costs fewer tokens",
            arm(other),
            arm(&r.best),
            t.p_value,
            t.common
        ),
        Some((other, t)) => format!(
            "{} costs the fewest tokens of the formats not distinguishable from the best, {} (runner-up {}: exact McNemar p = {:.3} on {} common tasks)",
            arm(&r.choice),
            arm(&r.best),
            arm(other),
            t.p_value,
            t.common
        ),
    };
    format!("lancet bench {date}: {why}.")
}

/// `--recommend` on a simulated or replayed model: nothing is written for it.
pub fn bench_recommend_not_real(model: &str) -> String {
    format!("{model} is not a real model: no models.toml entry is written for it")
}

/// `--recommend` on a model that passed nothing: no evidence for any format.
pub fn bench_recommend_no_pass(model: &str) -> String {
    format!("{model} passed no task in any format: no models.toml entry is written for it")
}

/// `--recommend`: what was written.
pub fn bench_recommended(pattern: &str, format: &str, mode: &str, path: &Path) -> String {
    format!(
        "recommended {format} ({mode}) for {pattern} in {}",
        path.display()
    )
}

/// The opening of a models.toml that `--recommend` creates.
pub fn bench_models_header() -> String {
    "# Edit formats measured by `lancet bench --recommend`: lancet run reads this\n\
     # file before its built-in table, and the first entry whose pattern matches\n\
     # the model name wins (see edit-formats/models.toml for the format).\n"
        .to_owned()
}

/// What report.html says, piece by piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReportText {
    /// The page title.
    Title,
    /// What the page is, for someone who never saw lancet.
    Intro,
    /// Under the heatmap's heading.
    HeatmapTitle,
    /// How to read it.
    HeatmapNote,
    /// The verdicts' heading.
    VerdictTitle,
    /// How the test works.
    VerdictNote,
    /// The scatter's heading.
    ScatterTitle,
    /// How to read it.
    ScatterNote,
    /// The failure bars' heading.
    FailuresTitle,
    /// How to read them.
    FailuresNote,
    /// The detail table's heading.
    DetailsTitle,
    /// Skipped tasks' heading.
    SkippedTitle,
    /// Merge conflicts' heading.
    ConflictsTitle,
    /// No result was written to a wrong place.
    NoWrongPlace,
    /// The run was interrupted.
    Interrupted,
    /// The page's script failed (shown only then).
    ScriptFailed,
}

impl ReportText {
    /// The words.
    pub(crate) fn text(self) -> &'static str {
        match self {
            ReportText::Title => "Which edit format works best for each model",
            ReportText::Intro => {
                "An AI coding agent changes files by writing edits in some format: search and replace blocks, unified diffs, line-addressed \"hashline\" edits, whole files, or Codex's apply_patch. The same model can do much better in one format than another. This benchmark gave each model the same tasks in each format; lancet applied every edit, and a task passed when the files came out exactly as expected (or the task's own test passed). The model could try again after lancet's feedback, a set number of times."
            }
            ReportText::HeatmapTitle => "Pass rate by model and format",
            ReportText::HeatmapNote => {
                "Each cell: the share of tasks passed, how many of how many, and the 95% Wilson interval, the range the true rate probably lies in. With few tasks the range is wide, so two cells whose ranges overlap may not differ at all."
            }
            ReportText::VerdictTitle => "Is the best format really better?",
            ReportText::VerdictNote => {
                "For each model, the best format against the runner-up, on the same tasks. Only the tasks where one passed and the other failed say anything about which is better; the exact McNemar test asks how likely a split at least that lopsided would be if both were equally good. Below 0.05 the difference is called real; otherwise it is not distinguishable from chance."
            }
            ReportText::ScatterTitle => "Tokens spent against pass rate",
            ReportText::ScatterNote => {
                "One dot per model and format: across, the mean tokens (prompt and reply) per task; up, the pass rate. Up and to the left is better: more tasks passed for fewer tokens."
            }
            ReportText::FailuresTitle => "Why tasks failed, by format",
            ReportText::FailuresNote => {
                "Failed tasks of every model, by the reason the last attempt failed."
            }
            ReportText::DetailsTitle => "Every figure",
            ReportText::SkippedTitle => "Tasks not run",
            ReportText::ConflictsTitle => {
                "Jobs found twice with different outcomes (the first is counted)"
            }
            ReportText::NoWrongPlace => {
                "No edit was written to a wrong place: every change landed where the task expected one."
            }
            ReportText::Interrupted => {
                "This run was interrupted: the figures cover only the tasks that finished."
            }
            ReportText::ScriptFailed => "This page's script failed:",
        }
    }
}

/// report.html's warning when results changed code the task leaves alone.
pub(crate) fn bench_html_wrong_place(n: u64) -> String {
    format!(
        "{n} result(s) changed code the task leaves alone: an edit written to a wrong place. This must never happen: an edit engine that cannot find the text it was told to change should refuse, not change something else. The rows below with a count under \"wrong place\" show where."
    )
}

/// report.html's line under the title: what the figures rest on.
pub(crate) fn bench_html_counts(records: usize, models: usize, formats: usize) -> String {
    format!("{records} results: {models} model(s), {formats} format(s).")
}

/// What a failure kind means, for a legend.
pub(crate) fn bench_kind_meaning(kind: super::bench::FailureKind) -> &'static str {
    use super::bench::FailureKind as K;
    match kind {
        K::Parse => "the edit could not be read in the format",
        K::NotFound => "the text to change was not in the file",
        K::Ambiguous => "the text to change was in the file more than once",
        K::Stale => "the edit was made against an older version of the file",
        K::Syntax => "the edit would have broken the file's syntax",
        K::WrongResult => "the edit applied, but the result was wrong",
        K::NoEdit => "the model never tried an edit",
        K::Provider => "the model's service failed",
        K::Timeout => "the task ran out of time",
        K::CheckFailed => "the task's own test failed",
    }
}

#[cfg(test)]
mod bench_report_tests {
    //! The verdicts', report's and recommendation's words, rendered once each.

    use super::super::bench::paired::{self, Recommendation};
    use super::super::bench::shard::Conflict;
    use super::super::bench::{FailureKind, Mode, Record};
    use super::*;

    fn rec(task: usize, format: &str, pass: bool, tokens: u64) -> Record {
        Record {
            task: format!("t{task}"),
            source: "tasks".into(),
            model: "gpt-x".into(),
            format: format.into(),
            mode: Mode::Tool,
            pass,
            tries: 1,
            failure: (!pass).then_some(FailureKind::NotFound),
            tokens_in: tokens,
            tokens_out: 10,
            cost: None,
            ms: 3,
            turns: 2,
            detail: None,
            wrong_place: false,
            tier: None,
            ending: None,
        }
    }

    /// hashline passes `h`, udiff `u` of 10 tasks (the first ones).
    fn runs(h: usize, u: usize) -> Vec<Record> {
        (0..10)
            .flat_map(|i| [rec(i, "hashline", i < h, 900), rec(i, "udiff", i < u, 400)])
            .collect()
    }

    fn recommendation(records: &[Record]) -> Recommendation {
        paired::recommend(records).remove(0)
    }

    #[test]
    fn bench_report_words() {
        let mut out = String::new();
        let put = |out: &mut String, title: &str, text: &str| {
            let _ = write!(out, "=== {title} ===\n{text}\n\n");
        };
        let clear = runs(10, 2);
        let noise = runs(9, 8);
        let mut verdicts = paired::verdicts(&clear);
        let mut one = runs(5, 0);
        one.retain(|r| r.format == "hashline");
        verdicts.extend(paired::verdicts(&one));
        put(&mut out, "bench_verdicts", &bench_verdicts(&verdicts, 0));
        put(
            &mut out,
            "bench_verdicts (noise, wrong place)",
            &bench_verdicts(&paired::verdicts(&noise), 2),
        );
        put(
            &mut out,
            "bench_conflict",
            &bench_conflict(&Conflict {
                kept: rec(1, "udiff", true, 5),
                dropped: rec(1, "udiff", false, 5),
            }),
        );
        put(
            &mut out,
            "bench_recommend_reason (distinguishable)",
            &bench_recommend_reason(&recommendation(&clear), "2026-12-02"),
        );
        put(
            &mut out,
            "bench_recommend_reason (noise: the cheaper)",
            &bench_recommend_reason(&recommendation(&noise), "2026-12-02"),
        );
        put(
            &mut out,
            "bench_recommend_reason (one format)",
            &bench_recommend_reason(&recommendation(&one), "2026-12-02"),
        );
        put(
            &mut out,
            "bench_recommend_not_real",
            &bench_recommend_not_real("sim:perfect"),
        );
        put(
            &mut out,
            "bench_recommend_no_pass",
            &bench_recommend_no_pass("gpt-x"),
        );
        put(
            &mut out,
            "bench_recommended",
            &bench_recommended("gpt-x", "udiff", "tool", Path::new("models.toml")),
        );
        put(&mut out, "bench_models_header", &bench_models_header());
        use ReportText as T;
        for t in [
            T::Title,
            T::Intro,
            T::HeatmapTitle,
            T::HeatmapNote,
            T::VerdictTitle,
            T::VerdictNote,
            T::ScatterTitle,
            T::ScatterNote,
            T::FailuresTitle,
            T::FailuresNote,
            T::DetailsTitle,
            T::SkippedTitle,
            T::ConflictsTitle,
            T::NoWrongPlace,
            T::Interrupted,
            T::ScriptFailed,
        ] {
            put(&mut out, &format!("ReportText::{t:?}"), t.text());
        }
        put(
            &mut out,
            "bench_html_wrong_place",
            &bench_html_wrong_place(3),
        );
        put(&mut out, "bench_html_counts", &bench_html_counts(80, 2, 5));
        for k in FailureKind::ALL {
            put(
                &mut out,
                &format!("bench_kind_meaning ({})", k.name()),
                bench_kind_meaning(*k),
            );
        }
        insta::assert_snapshot!(out);
    }
}

// ---------------------------------------------------------------------------
// The benchmark's replays (`replay:DIR`): why a job has no recorded answer.

/// A replay asked for a turn past the end of its recording.
pub(crate) fn bench_replay_exhausted() -> String {
    "the recording has no more turns: the replayed run went further than the recorded one"
        .to_owned()
}

/// A job the replayed directory has no transcript for.
pub(crate) fn bench_replay_missing(dir: &std::path::Path, key: &super::bench::Key) -> String {
    format!(
        "no transcript in {} for task {} ({}), format {}, mode {}",
        dir.display(),
        key.task,
        key.source,
        key.format,
        key.mode.name()
    )
}

/// A job the replayed directory has transcripts of several models for.
pub(crate) fn bench_replay_several(
    dir: &std::path::Path,
    key: &super::bench::Key,
    models: &[&str],
) -> String {
    format!(
        "{} holds transcripts of {} models for task {} ({}), format {}, mode {}: {}; replay a directory of one model's run",
        dir.display(),
        models.len(),
        key.task,
        key.source,
        key.format,
        key.mode.name(),
        models.join(", ")
    )
}

/// A transcript that cannot be read.
pub(crate) fn bench_replay_unreadable(path: &std::path::Path, e: &std::io::Error) -> String {
    format!("the transcript {} cannot be read: {e}", path.display())
}

#[cfg(test)]
mod bench_replay_tests {
    //! The replay's words, rendered once each.

    use super::super::bench::{Key, Mode};
    use super::*;

    #[test]
    fn bench_replay_words() {
        let key = Key {
            task: "operator-flip-equality-001".to_owned(),
            source: "react-edit".to_owned(),
            model: "replay:runs/a".to_owned(),
            format: "udiff".to_owned(),
            mode: Mode::Text,
        };
        let dir = std::path::Path::new("runs/a");
        let out = [
            ("bench_replay_exhausted", bench_replay_exhausted()),
            ("bench_replay_missing", bench_replay_missing(dir, &key)),
            (
                "bench_replay_several",
                bench_replay_several(dir, &key, &["sim:perfect", "openai:gpt-4o"]),
            ),
            (
                "bench_replay_unreadable",
                bench_replay_unreadable(
                    std::path::Path::new("runs/a/transcripts/x.jsonl"),
                    &std::io::Error::other("permission denied"),
                ),
            ),
        ]
        .iter()
        .map(|(k, v)| format!("## {k}\n{v}\n"))
        .collect::<Vec<_>>()
        .join("\n");
        insta::assert_snapshot!(out);
    }
}

// ---------------------------------------------------------------------------
// The benchmark's progress bar (`lancet bench` on a terminal).

/// The bar's `indicatif` template: jobs done / total, the bar, the rate
/// (`{rate}`: jobs a second, one decimal), the time left, then the message
/// ([`bench_bar_message`]) cut to the terminal's width.
pub fn bench_bar_template() -> &'static str {
    "{pos}/{len} jobs [{bar:24}] {rate} jobs/s · ETA {eta} · {wide_msg}"
}

/// The bar's message: passes so far, and the job that finished last (its
/// source last: a long path is what the terminal's width cuts).
pub fn bench_bar_message(passed: usize, last: &super::bench::Key) -> String {
    format!(
        "{passed} passed · last: {} {} {} {} ({})",
        last.task,
        last.model,
        last.format,
        last.mode.name(),
        last.source
    )
}

#[cfg(test)]
mod bench_bar_tests {
    //! The progress bar's words, rendered once each.

    use super::super::bench::{Key, Mode};
    use super::*;

    #[test]
    fn bench_bar_words() {
        let key = Key {
            task: "operator-flip-equality-001".to_owned(),
            source: "react-edit".to_owned(),
            model: "openai:gpt-4o".to_owned(),
            format: "udiff".to_owned(),
            mode: Mode::Tool,
        };
        let out = [
            ("bench_bar_template", bench_bar_template().to_owned()),
            ("bench_bar_message", bench_bar_message(17, &key)),
        ]
        .iter()
        .map(|(k, v)| format!("## {k}\n{v}\n"))
        .collect::<Vec<_>>()
        .join("\n");
        insta::assert_snapshot!(out);
    }
}

// ---------------------------------------------------------------------------
// Honest endings: a reply cut off at `max_tokens`, a reply that loops, a
// text-mode reply without an edit

/// To the model: a tool call of its reply was cut off at the reply's token
/// limit, so it was not run.
pub(crate) fn call_cut_off(name: &str, max_tokens: u32) -> String {
    format!(
        "Your reply was cut off at its limit of {max_tokens} tokens in the middle of this \
         `{name}` call, so the call was not run. Take a smaller step: split a large edit \
         into several small ones, and keep the text around your calls short."
    )
}

/// To the model: a text-mode reply holding an edit was cut off at the token
/// limit, so nothing in it was applied.
pub(crate) fn edit_cut_off(max_tokens: u32) -> String {
    format!(
        "Your reply was cut off at its limit of {max_tokens} tokens, so the edit in it may be \
         incomplete and nothing was applied. Write a smaller edit: change a few lines at a \
         time, quote only the lines the change needs, and keep the text around it short."
    )
}

/// For the person (and the JSON event stream): a text-mode reply without an
/// edit, when the run has changed nothing yet.
pub(crate) const NO_EDIT_WARNING: &str =
    "the reply holds no edit and nothing has been changed yet (text mode)";

/// For the person: why a run ended on a reply cut off at `max_tokens`.
pub fn ending_truncated(max_tokens: u32) -> String {
    format!(
        "stopped: the model's reply was cut off at its limit of {max_tokens} tokens \
         (raise max_tokens in the configuration, or ask for a smaller step)"
    )
}

/// For the person: why a run ended on a reply stopped by the repetition guard.
pub fn ending_looping(chunk: &str, repeats: usize) -> String {
    let mut shown: String = chunk.trim().chars().take(60).collect();
    if shown.len() < chunk.trim().len() {
        shown.push('…');
    }
    let shown = for_terminal(&shown, Layout::Line);
    format!(
        "stopped: the model's reply was looping (`{shown}` {repeats} times in a row; \
         loop_repeats in the configuration sets how many copies stop a reply)"
    )
}

#[cfg(test)]
mod ending_tests {
    //! The honest endings' words, in a snapshot of their own.

    use super::*;

    #[test]
    fn ending_words() {
        let mut out = String::new();
        for (title, text) in [
            ("call_cut_off", call_cut_off("edit", 256)),
            ("edit_cut_off", edit_cut_off(256)),
            ("NO_EDIT_WARNING", NO_EDIT_WARNING.to_owned()),
            ("ending_truncated", ending_truncated(256)),
            (
                "ending_looping",
                ending_looping("I will fix the bug now.\x1b[2J ", 14),
            ),
        ] {
            let _ = write!(out, "=== {title} ===\n{text}\n\n");
        }
        insta::assert_snapshot!(out);
    }
}

// ---------------------------------------------------------------------------
// Words of the interactive session (`lancet` on a terminal)

/// The interactive session's words, re-exported as
/// [`session::words`](super::session::words) for the binary.
pub mod session {
    use super::*;

    /// The session's slash commands and what each does, in `/help`'s order
    /// (completion offers the names; the README's table is this list).
    pub const SESSION_COMMANDS: &[(&str, &str)] = &[
        ("/help", "this list, and the keys"),
        ("/model NAME", "talk to another model from the next turn on"),
        ("/format NAME", "another edit format from the next turn on"),
        (
            "/mode MODE",
            "read-only, ask or auto: what runs without asking",
        ),
        ("/diff", "everything lancet's edits changed in this session"),
        (
            "/undo",
            "revert the last edit (the journal `lancet undo` uses)",
        ),
        (
            "/compact",
            "drop all but the last two of your turns (trimmed, not summarised)",
        ),
        ("/cost", "tokens and cost of this session"),
        ("/clear", "start a new conversation (a new transcript)"),
        ("/resume", "continue the last transcript of this project"),
        (
            "/exit",
            "leave (so do Ctrl-D, and Ctrl-C twice at an empty prompt)",
        ),
    ];

    /// The session's keys, for `/help` and the README.
    pub const SESSION_KEYS: &[(&str, &str)] = &[
        ("Enter", "send the line"),
        (
            "Alt-Enter, or a trailing \\",
            "a new line in the same message",
        ),
        ("Ctrl-R", "search the history (this project's)"),
        ("Tab", "complete a slash command or a path in the project"),
        (
            "Ctrl-C",
            "stop the turn (the model and any command); at an empty prompt, twice: leave",
        ),
        ("Ctrl-D", "leave"),
    ];

    /// `/help`.
    pub fn session_help() -> String {
        let mut out = String::from("Commands:\n");
        for (name, what) in SESSION_COMMANDS {
            let _ = writeln!(out, "  {name:<14} {what}");
        }
        out.push_str("Keys:\n");
        for (key, what) in SESSION_KEYS {
            let _ = writeln!(out, "  {key:<27} {what}");
        }
        out.push_str("Anything else is a message to the model, on the same conversation.\n");
        out
    }

    /// The first lines of a session.
    pub fn session_banner(model: &str, format: &str, mode: &str, root: &Path) -> String {
        format!(
            "lancet session in {} — model {model}, format {format}, mode {mode}\n/help for commands and keys; Ctrl-D leaves.\n",
            for_terminal(&root.display().to_string(), Layout::Line)
        )
    }

    /// An unknown slash command, and what exists.
    pub fn session_unknown_command(name: &str) -> String {
        let names: Vec<&str> = SESSION_COMMANDS
            .iter()
            .map(|(n, _)| n.split(' ').next().unwrap_or(n))
            .collect();
        format!(
            "There is no command `{}`. The commands are: {}.",
            for_terminal(name, Layout::Line),
            names.join(" ")
        )
    }

    /// A slash command given the wrong argument: what it takes.
    pub fn session_usage(command: &str, takes: &str) -> String {
        format!("{command} takes {takes}.")
    }

    /// The first Ctrl-C at an empty prompt.
    pub const SESSION_CTRL_C_AGAIN: &str = "(Ctrl-C again, or Ctrl-D, to leave)";

    /// Ctrl-C stopped a turn.
    pub const SESSION_TURN_STOPPED: &str =
        "stopped: the turn was interrupted (the conversation is kept; type to go on)";

    /// What the model reads in the conversation where a turn was cut short by
    /// the person (recorded as its own reply, so the next message follows it).
    pub fn session_interrupted(partial: &str) -> String {
        let partial = partial.trim_end();
        if partial.is_empty() {
            "[The user interrupted this turn (Ctrl-C) before the reply was finished; any command that was running was stopped.]".to_owned()
        } else {
            format!(
                "{partial}\n\n[The user interrupted this turn (Ctrl-C) here; any command that was running was stopped.]"
            )
        }
    }

    /// The model reads this after a refusal, when the person said why.
    pub fn declined_because(reason: &str) -> String {
        format!(" The user's reason: {}", reason.trim())
    }

    /// The question before a call runs in the session's `ask` mode (after the
    /// diff or the command, shown whole): the four answers, and what "always"
    /// would allow (`rule`, in the permission rules' syntax).
    pub fn session_question(tool: &str, subject: &str, rule: &str) -> String {
        format!(
            "Allow {} {}?  [y]es  [n]o  [s]ession: always {rule} here  [p]roject: always {rule} in this project > ",
            for_terminal(tool, Layout::Line),
            for_terminal(subject, Layout::Line),
        )
    }

    /// Asked after a "no".
    pub const SESSION_REASON: &str = "Why not? (sent to the model; Enter for no reason) > ";

    /// An answer to the question that is none of the four.
    pub const SESSION_ANSWER_AGAIN: &str = "Answer y, n, s or p.";

    /// "Always for this project" could not be kept.
    pub fn session_not_remembered(file: &Path, why: &str) -> String {
        format!(
            "allowed for this session only: {} could not be written ({why})",
            file.display()
        )
    }

    /// "Always for this project" was kept.
    pub fn session_remembered(rule: &str, file: &Path) -> String {
        format!(
            "`{rule}` is allowed in this project from now on (kept in {}, outside the project)",
            file.display()
        )
    }

    /// The line after each turn: model, format, mode, tokens, context use, cost.
    pub fn session_status(
        model: &str,
        format: &str,
        mode: &str,
        tokens: (u64, u64),
        context: Option<(u64, u64)>,
        cost: Option<f64>,
    ) -> String {
        let mut out = format!(
            "{model} · {format} · {mode} · {} in, {} out",
            tokens.0, tokens.1
        );
        match context {
            Some((used, window)) if window > 0 => {
                let _ = write!(out, " · context {}%", used.saturating_mul(100) / window);
            }
            _ => out.push_str(" · context ?"),
        }
        match cost {
            Some(c) => {
                let _ = write!(out, " · ${c:.4}");
            }
            None => out.push_str(" · cost ?"),
        }
        out
    }

    /// `/cost`.
    pub fn session_cost(turns: u32, tokens: (u64, u64), cost: Option<f64>) -> String {
        let cost = cost.map_or_else(
            || "no price for this model in models.toml".to_owned(),
            |c| format!("${c:.4}"),
        );
        format!(
            "this session: {turns} model turn{}, {} tokens in, {} out, {cost}",
            if turns == 1 { "" } else { "s" },
            tokens.0,
            tokens.1
        )
    }

    /// What a slash command changed, or found.
    pub fn session_changed(what: &str, value: &str) -> String {
        format!("{what} is now {}", for_terminal(value, Layout::Line))
    }

    /// `/diff` with nothing to show.
    pub const SESSION_NO_DIFF: &str =
        "No file was changed by an edit in this session (commands the model ran are not tracked).";

    /// `/undo` said what it restored.
    pub fn session_undone(restored: &[String], removed: &[String]) -> String {
        let mut out = String::from("undone:");
        for p in restored {
            let _ = write!(out, " restored {}", for_terminal(p, Layout::Line));
        }
        for p in removed {
            let _ = write!(out, " removed {}", for_terminal(p, Layout::Line));
        }
        out
    }

    /// `/compact`: how much was dropped.
    pub fn session_compacted(dropped: usize, kept: usize) -> String {
        if dropped == 0 {
            format!("nothing to compact: the conversation is {kept} messages")
        } else {
            format!("compacted: {dropped} earlier messages dropped, {kept} kept")
        }
    }

    /// What the model reads in place of the messages `/compact` dropped.
    pub fn session_compact_note(dropped: usize, first_task: &str) -> String {
        format!(
            "[The user compacted this conversation: {dropped} earlier messages were dropped. The session's first task was:]\n{first_task}\n[The conversation goes on from here.]"
        )
    }

    /// `/clear`.
    pub const SESSION_CLEARED: &str = "a new conversation (the last one stays in its transcript)";

    /// `/resume`.
    pub fn session_resumed(id: &str, messages: usize) -> String {
        format!("continuing session {id} ({messages} messages)")
    }

    /// `/resume` with no transcript.
    pub const SESSION_NOTHING_TO_RESUME: &str = "There is no earlier session in this project.";

    /// An edit applied as the person just approved it (its diff was shown
    /// with the question).
    pub const SESSION_APPLIED_AS_SHOWN: &str = "  ✓ applied as shown above";

    /// The loop made room in the context during a turn: `summarised` when
    /// earlier turns were summarised, else how many tokens of old tool
    /// output were pruned.
    pub fn session_context_compacted(summarised: bool, pruned: u64) -> String {
        if summarised {
            "[context compacted: earlier turns summarised]".to_owned()
        } else {
            format!("[context compacted: old tool outputs pruned, ~{pruned} tokens]")
        }
    }

    /// The model's reply stopped at the token limit.
    pub fn session_cut_off(max_tokens: u32) -> String {
        format!("[the reply was cut off at {max_tokens} tokens]")
    }

    /// A warning from the loop (e.g. a text-mode reply without an edit).
    pub fn session_warning(warning: &str) -> String {
        format!("[warning: {warning}]")
    }

    #[cfg(test)]
    mod session_tests {
        //! The interactive session's words, in a snapshot of their own.

        use super::*;

        #[test]
        fn session_words() {
            let mut out = String::new();
            for (title, text) in [
                ("help", session_help()),
                (
                    "banner",
                    session_banner("m", "search-replace", "ask", Path::new("/p")),
                ),
                ("unknown", session_unknown_command("/frob\x1b[2J")),
                ("usage", session_usage("/mode", "read-only, ask or auto")),
                ("again", SESSION_CTRL_C_AGAIN.to_owned()),
                ("stopped", SESSION_TURN_STOPPED.to_owned()),
                ("interrupted (empty)", session_interrupted("")),
                (
                    "interrupted",
                    session_interrupted("I will run the tests.\n"),
                ),
                ("declined", declined_because(" use the fixture instead ")),
                (
                    "question",
                    session_question("bash", "cargo test", "bash(cargo test *)"),
                ),
                ("reason", SESSION_REASON.to_owned()),
                ("answer again", SESSION_ANSWER_AGAIN.to_owned()),
                (
                    "not remembered",
                    session_not_remembered(Path::new("/h/.config/lancet/session.toml"), "denied"),
                ),
                (
                    "remembered",
                    session_remembered("edit", Path::new("/h/.config/lancet/session.toml")),
                ),
                (
                    "status",
                    session_status(
                        "m",
                        "udiff",
                        "auto",
                        (1200, 34),
                        Some((1200, 8000)),
                        Some(0.0123),
                    ),
                ),
                (
                    "status unknown",
                    session_status("m", "udiff", "auto", (1, 2), None, None),
                ),
                ("cost", session_cost(3, (10, 20), None)),
                ("changed", session_changed("the model", "gpt-x")),
                ("no diff", SESSION_NO_DIFF.to_owned()),
                (
                    "undone",
                    session_undone(&["a.rs".to_owned()], &["new.rs".to_owned()]),
                ),
                ("compacted", session_compacted(6, 4)),
                ("compacted nothing", session_compacted(0, 2)),
                ("compact note", session_compact_note(6, "fix the bug")),
                ("cleared", SESSION_CLEARED.to_owned()),
                ("resumed", session_resumed("0001-00002", 5)),
                ("nothing to resume", SESSION_NOTHING_TO_RESUME.to_owned()),
                ("context summarised", session_context_compacted(true, 0)),
                ("context pruned", session_context_compacted(false, 1200)),
                ("cut off", session_cut_off(8192)),
                ("applied as shown", SESSION_APPLIED_AS_SHOWN.to_owned()),
                (
                    "warning",
                    session_warning("the reply holds no edit, and nothing was changed"),
                ),
            ] {
                let _ = write!(out, "=== {title} ===\n{text}\n\n");
            }
            insta::assert_snapshot!(out);
        }
    }
}

// ---------------------------------------------------------------------------
/// Sub-agents (the `task` tool): its description and schema, the note a
/// child's system prompt ends with, what a child's call comes back as, the
/// refusals, and the lines a person sees for a child's activity.
pub(crate) mod task {
    use super::*;

    /// The tools a child gets when the call names none: read-only ones.
    pub(crate) const DEFAULT_TOOLS: [&str; 4] = ["read", "grep", "glob", "list"];

    /// The `task` tool: its description and argument schema. `max_turns`
    /// and `parallel` are the configured limits; `tools` the tools a child
    /// may be given (the caller's own, without `task`).
    pub(crate) fn spec(max_turns: u32, parallel: usize, tools: &[&str]) -> ToolSpec {
        let tools: Vec<&str> = tools.iter().copied().filter(|t| *t != "task").collect();
        ToolSpec {
            name: "task".to_owned(),
            description: format!(
                "Delegate a self-contained side task (a search, an investigation, a focused change) to a sub-agent. It starts with a fresh context: the same instructions and project notes you have, and your `prompt` as its only message — it does not see this conversation, so say everything it needs (files, names, what to return). It works with its own tools and returns only its final answer, which comes back as this call's result; your context stays small. Several task calls in one reply run at the same time (up to {parallel} at once), so delegate independent searches together. Its tools: {} by default (read-only); name others in `tools` if it must change files (only tools you have). It may take at most {max_turns} turns.",
                DEFAULT_TOOLS.join(", ")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A short title for the task (3-8 words), shown to the user."},
                    "prompt": {"type": "string", "description": "The whole task for the sub-agent: what to do, where to look, and what its answer must contain."},
                    "tools": {"type": "array", "items": {"type": "string", "enum": tools}, "description": format!("The tools it may use (default: {}).", DEFAULT_TOOLS.join(", "))},
                    "max_turns": {"type": "integer", "minimum": 1, "maximum": max_turns, "description": format!("Its turn limit (at most {max_turns}, the default).")},
                },
                "required": ["description", "prompt"],
            }),
        }
    }

    /// What a child's system prompt ends with.
    pub(crate) fn child_note(agent: &str) -> String {
        format!(
            "\n\n# You are a sub-agent ({agent})\n\nAnother agent delegated the task in the user message to you; it sees only your final answer. Do the task with your tools, then answer once, concisely: the findings it asked for, with exact paths, line numbers and names. Do not ask questions: nobody can answer them.\n"
        )
    }

    /// The line that introduces a child's question to the person.
    pub(crate) fn asked_by(agent: &str, description: &str) -> String {
        format!(
            "[asked by sub-agent {agent}: {}]",
            for_terminal(description, Layout::Line)
        )
    }

    /// A call whose arguments are not the tool's: what is wrong.
    pub(crate) fn bad_arguments(problem: &str) -> String {
        format!(
            "The task call's arguments are not valid ({problem}). It takes `description` and `prompt` (strings), optionally `tools` (a list of tool names) and `max_turns` (a number). No sub-agent was started."
        )
    }

    /// A call naming tools the caller cannot give.
    pub(crate) fn bad_tools(unknown: &[String], allowed: &[&str]) -> String {
        let unknown: Vec<String> = unknown.iter().map(|t| format!("`{}`", arg(t))).collect();
        format!(
            "A sub-agent cannot be given {}: it may only have tools you have, and never `task`. Choose from: {}. No sub-agent was started.",
            unknown.join(", "),
            allowed.join(", ")
        )
    }

    /// An edit refused because another sub-agent is editing the file.
    pub(crate) fn locked(path: &str, other: &str) -> String {
        format!(
            "Edit refused: `{path}` is being edited by another sub-agent ({other}) running at the same time; it holds the file until it finishes. Nothing was written. Leave this file to it, or report what you would change in your answer."
        )
    }

    /// A long answer cut in the middle: what was kept around the cut.
    pub(crate) fn cut(head: &str, cut_bytes: usize, tail: &str) -> String {
        format!("{head}\n[… {cut_bytes} bytes of the sub-agent's answer cut here …]\n{tail}")
    }

    /// A child that answered: its answer (or a note when it was empty).
    pub(crate) fn answered(answer: &str) -> String {
        if answer.trim().is_empty() {
            "(The sub-agent finished without writing an answer.)".to_owned()
        } else {
            answer.to_owned()
        }
    }

    /// What a child wrote last, after the reason it stopped.
    fn with_said(why: String, said: &str) -> String {
        if said.trim().is_empty() {
            format!("{why} It had written nothing yet.")
        } else {
            format!("{why} What it had written last:\n\n{}", said.trim_end())
        }
    }

    /// A child stopped at its turn limit.
    pub(crate) fn turn_limit(turns: u32, said: &str) -> String {
        with_said(
            format!(
                "The sub-agent stopped at its turn limit ({turns} turn{}) without finishing.",
                if turns == 1 { "" } else { "s" }
            ),
            said,
        )
    }

    /// A child whose reply the repetition guard stopped, or that repeated
    /// the same failing call.
    pub(crate) fn looping(said: &str) -> String {
        with_said(
            "The sub-agent was stopped: it was repeating itself.".to_owned(),
            said,
        )
    }

    /// A child whose last reply was cut off at `max_tokens`.
    pub(crate) fn truncated(said: &str) -> String {
        with_said(
            "The sub-agent's last reply was cut off at the token limit, before it answered."
                .to_owned(),
            said,
        )
    }

    /// A child that needed a confirmation nobody could give.
    pub(crate) fn no_terminal(said: &str) -> String {
        with_said(
            "The sub-agent stopped: a call it made needed the user's confirmation and there is no terminal to ask on.".to_owned(),
            said,
        )
    }

    /// A child asked to stop.
    pub(crate) fn stopped(said: &str) -> String {
        with_said("The sub-agent was stopped.".to_owned(), said)
    }

    /// A child whose model requests failed.
    pub(crate) fn provider_failed(error: &str, said: &str) -> String {
        with_said(
            format!("The sub-agent stopped: its model request failed ({error})."),
            said,
        )
    }

    // -- for the person -------------------------------------------------

    /// A child started (`lancet run`, the session).
    pub fn started_line(agent: &str, description: &str) -> String {
        format!(
            "▸ {agent} started: {}",
            for_terminal(description, Layout::Line)
        )
    }

    /// One tool call of a child, on one line.
    pub fn call_line(agent: &str, name: &str, arguments: &str) -> String {
        let mut args: String = arguments.chars().take(80).collect();
        if args.len() < arguments.len() {
            args.push('…');
        }
        format!(
            "  {agent} → {} {}",
            for_terminal(name, Layout::Line),
            for_terminal(&args, Layout::Line)
        )
    }

    /// A child finished: how, in how many turns, at what cost in tokens.
    pub fn ended_line(agent: &str, ending: &str, turns: u32, tokens: (u64, u64)) -> String {
        format!(
            "◂ {agent} {ending} — {turns} turn{}, {} tokens in, {} out",
            if turns == 1 { "" } else { "s" },
            tokens.0,
            tokens.1
        )
    }

    #[cfg(test)]
    mod task_tests {
        use super::*;

        #[test]
        fn task_words() {
            let spec = spec(
                25,
                4,
                &["read", "write", "edit", "bash", "grep", "glob", "list"],
            );
            let mut out = format!(
                "=== spec ===\n{}\n{}\n\n",
                spec.description,
                serde_json::to_string_pretty(&spec.parameters).unwrap_or_default()
            );
            for (title, text) in [
                ("child note", child_note("task-1")),
                ("asked by", asked_by("task-2", "find the\x1b[31m parser")),
                ("bad arguments", bad_arguments("missing field `prompt`")),
                (
                    "bad tools",
                    bad_tools(&["task".to_owned(), "frob".to_owned()], &["read", "grep"]),
                ),
                ("locked", locked("src/a.rs", "task-1")),
                ("cut", cut("first part", 12_345, "last part")),
                ("answered", answered("`parse` is in src/parse.rs:12.")),
                ("answered empty", answered("  \n")),
                ("turn limit", turn_limit(3, "I looked at src/ so far.")),
                ("turn limit, nothing", turn_limit(1, "")),
                ("looping", looping("again again")),
                ("truncated", truncated("")),
                ("no terminal", no_terminal("")),
                ("stopped", stopped("")),
                ("provider failed", provider_failed("server error 500", "")),
                ("started", started_line("task-1", "find the parser")),
                (
                    "call",
                    call_line(
                        "task-1",
                        "grep",
                        &format!("{{\"pattern\": \"{}\"}}", "x".repeat(100)),
                    ),
                ),
                ("ended", ended_line("task-1", "answered", 2, (20, 10))),
                (
                    "ended one turn",
                    ended_line("task-2", "max_turns", 1, (10, 5)),
                ),
            ] {
                let _ = write!(out, "=== {title} ===\n{text}\n\n");
            }
            insta::assert_snapshot!(out);
        }
    }
}

/// MCP servers: the lines a tool result is made of, the errors of a call the
/// model reads, the notes a person reads at start-up, and `lancet mcp list`.
pub(crate) mod mcp {
    use std::fmt::Display;
    use std::time::Duration;

    use super::arg;
    use crate::agent::mcp::{ServerReport, State};
    use crate::agent::tools::Refusal;

    /// An image in a result (the model gets the line, not the bytes).
    pub(crate) fn image(mime: &str, bytes: usize) -> String {
        format!("[image: {mime}, {bytes} bytes]")
    }

    /// Audio in a result.
    pub(crate) fn audio(mime: &str, bytes: usize) -> String {
        format!("[audio: {mime}, {bytes} bytes]")
    }

    /// A link to a resource.
    pub(crate) fn resource_link(
        name: &str,
        uri: &str,
        mime: Option<&str>,
        description: Option<&str>,
    ) -> String {
        let mut line = format!("[resource link: {name} <{uri}>");
        if let Some(m) = mime {
            line.push_str(&format!(" ({m})"));
        }
        line.push(']');
        if let Some(d) = description.map(str::trim).filter(|d| !d.is_empty()) {
            line.push_str(&format!(" {d}"));
        }
        line
    }

    /// An embedded text resource: a header line, then its text.
    pub(crate) fn embedded_text(uri: &str, mime: Option<&str>, text: &str) -> String {
        match mime {
            Some(m) => format!("[resource: {uri} ({m})]\n{text}"),
            None => format!("[resource: {uri}]\n{text}"),
        }
    }

    /// An embedded binary resource.
    pub(crate) fn embedded_blob(uri: &str, mime: Option<&str>, bytes: usize) -> String {
        format!(
            "[resource: {uri}, {}, {bytes} bytes]",
            mime.unwrap_or("binary")
        )
    }

    /// A kind of content lancet does not know.
    pub(crate) fn unknown_content() -> String {
        "[content of a kind lancet cannot show]".to_owned()
    }

    /// A result with nothing in it.
    pub(crate) fn empty_result() -> String {
        "(the tool returned nothing)".to_owned()
    }

    /// The description the model reads: the server's, and whose it is.
    pub(crate) fn description(server: &str, description: &str) -> String {
        let d = description.trim();
        if d.is_empty() {
            format!("(MCP server `{server}`)")
        } else {
            format!("{d} (MCP server `{server}`)")
        }
    }

    /// A name the model called that no server offers.
    pub(crate) fn unknown_tool(name: &str, offered: &[&str]) -> String {
        if offered.is_empty() {
            format!(
                "There is no MCP tool `{}`: no MCP server offers any tool now.",
                arg(name)
            )
        } else {
            format!(
                "There is no MCP tool `{}`. The MCP tools are: {}.",
                arg(name),
                offered.join(", ")
            )
        }
    }

    /// Arguments that are not a JSON object.
    pub(crate) fn bad_arguments(name: &str, why: &str) -> String {
        format!(
            "The arguments of `{name}` could not be read: {why}. Send one JSON object matching the tool's schema."
        )
    }

    /// Why arguments are not usable.
    pub(crate) fn not_an_object() -> String {
        "not a JSON object".to_owned()
    }

    /// The server answered the call with a JSON-RPC error.
    pub(crate) fn refused_by_server(server: &str, tool: &str, why: &str) -> String {
        format!(
            "The MCP server `{server}` refused the call to `{tool}`: {}",
            arg(why)
        )
    }

    /// A call that did not answer in time.
    pub(crate) fn timed_out(name: &str, after: Duration) -> String {
        format!(
            "`{name}` did not answer within {} s, so the call was cancelled; whether it did anything is unknown. Try a smaller request, or go on without it.",
            after.as_secs_f64()
        )
    }

    /// The server went away during the call.
    pub(crate) fn died(server: &str, why: &str) -> String {
        format!(
            "The MCP server `{server}` stopped during the call ({why}); whether the call did anything is unknown. It is started again on the next call."
        )
    }

    /// The server could not be reached.
    pub(crate) fn unavailable(server: &str, why: &str) -> String {
        format!("The MCP server `{server}` is not available: {why}")
    }

    /// A server switched off.
    pub(crate) fn disabled() -> String {
        "it is disabled in the configuration (enabled = false)".to_owned()
    }

    /// A server that stopped.
    pub(crate) fn stopped() -> String {
        "it stopped; it is started again on the next call".to_owned()
    }

    /// An answer that is not a tool result.
    pub(crate) fn unexpected_answer() -> String {
        "it answered with something that is not a tool result".to_owned()
    }

    /// No server of that name (`lancet mcp call`).
    pub(crate) fn no_server(server: &str) -> String {
        format!("There is no MCP server `{server}` in the configuration.")
    }

    /// The program could not be started.
    pub(crate) fn spawn_failed(command: &str, e: &std::io::Error) -> String {
        format!("`{command}` could not be started: {e}")
    }

    /// The handshake failed.
    pub(crate) fn init_failed(e: &impl Display) -> String {
        format!("the MCP handshake failed: {e}")
    }

    /// Listing the tools failed.
    pub(crate) fn list_failed(e: &impl Display) -> String {
        format!("listing its tools failed: {e}")
    }

    /// Start-up took too long.
    pub(crate) fn start_timed_out(limit: Duration) -> String {
        format!(
            "it did not start and list its tools within {} s (startup_timeout)",
            limit.as_secs_f64()
        )
    }

    /// A header that HTTP cannot carry.
    pub(crate) fn bad_header(name: &str) -> String {
        format!("the header `{}` is not a valid HTTP header", arg(name))
    }

    /// `why`, with the last lines the server wrote on stderr.
    pub(crate) fn with_stderr(why: &str, lines: &[String]) -> String {
        let lines: Vec<&str> = lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect();
        let last = &lines[lines.len().saturating_sub(5)..];
        if last.is_empty() {
            why.to_owned()
        } else {
            format!("{why}; its stderr ended: {}", last.join(" | "))
        }
    }

    /// For the person, once at start-up: a server left out (one line,
    /// whatever the error it quotes holds).
    pub(crate) fn not_started(server: &str, why: &str) -> String {
        let why: Vec<&str> = why.split_whitespace().collect();
        format!(
            "MCP server `{server}` is left out of this session: {}",
            why.join(" ")
        )
    }

    /// For the person, once: two tools with one name.
    pub(crate) fn collision(name: &str, first: (&str, &str), second: (&str, &str)) -> String {
        format!(
            "MCP tool `{}` of server `{}` is not offered: its name `{name}` is already `{}` of `{}` (names are cut to 64 letters, digits, `-` and `_`)",
            second.1, second.0, first.1, first.0
        )
    }

    /// A call the permissions stopped.
    pub(crate) fn refused(name: &str, refusal: &Refusal) -> String {
        super::stopped(
            &format!("`{name}`"),
            refusal,
            "This session is read-only, and an MCP tool may change things outside lancet's view, so it runs only when an allow rule names it. Work without it, and say what you would do.",
            Some(name),
        )
    }

    /// `lancet mcp list`: each server, its state, its tools.
    pub(crate) fn list(servers: &[ServerReport]) -> String {
        if servers.is_empty() {
            return "No MCP servers are configured (add [mcp.servers.NAME] to ~/.config/lancet/config.toml or .lancet.toml).".to_owned();
        }
        let mut out = String::new();
        for s in servers {
            let state = match &s.state {
                State::Connected => {
                    let n = s.tools.len();
                    format!(
                        "connected, {n} tool{} (offered as mcp__{}__TOOL)",
                        if n == 1 { "" } else { "s" },
                        s.name
                    )
                }
                State::Starting => "not started".to_owned(),
                State::Disabled => "disabled".to_owned(),
                State::Failed(why) => format!("failed: {why}"),
            };
            out.push_str(&format!("{}: {state}\n", s.name));
            if s.state == State::Connected {
                let width = s.tools.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
                for (name, description) in &s.tools {
                    let line = format!("  {name:width$}  {description}");
                    out.push_str(line.trim_end());
                    out.push('\n');
                }
            }
        }
        out.pop();
        out
    }

    #[cfg(test)]
    mod mcp_tests {
        use super::*;
        use crate::agent::permissions::Denial;

        #[test]
        fn mcp_words() {
            let servers = vec![
                ServerReport {
                    name: "everything".into(),
                    state: State::Connected,
                    tools: vec![
                        ("echo".into(), "Echoes back the input string".into()),
                        ("get-sum".into(), "Returns the sum of two numbers".into()),
                    ],
                },
                ServerReport {
                    name: "off".into(),
                    state: State::Disabled,
                    tools: vec![],
                },
                ServerReport {
                    name: "py".into(),
                    state: State::Failed(with_stderr(
                        &spawn_failed(
                            "python3",
                            &std::io::Error::from(std::io::ErrorKind::NotFound),
                        ),
                        &["Traceback".into(), "ImportError: mcp".into()],
                    )),
                    tools: vec![],
                },
            ];
            let words = [
                ("image", image("image/png", 68)),
                ("audio", audio("audio/wav", 1024)),
                (
                    "resource_link",
                    resource_link("a.txt", "file:///a.txt", Some("text/plain"), Some("A file")),
                ),
                (
                    "embedded_text",
                    embedded_text("file:///b", Some("text/plain"), "bee"),
                ),
                ("embedded_blob", embedded_blob("file:///c", None, 12)),
                ("unknown_content", unknown_content()),
                ("empty_result", empty_result()),
                ("description", description("everything", "Adds.\n")),
                (
                    "unknown_tool",
                    unknown_tool("mcp__x__y", &["mcp__everything__echo"]),
                ),
                ("unknown_tool_none", unknown_tool("mcp__x__y", &[])),
                (
                    "bad_arguments",
                    bad_arguments("mcp__a__b", &not_an_object()),
                ),
                (
                    "refused_by_server",
                    refused_by_server("a", "b", "Unknown tool: b"),
                ),
                (
                    "timed_out",
                    timed_out("mcp__a__b", Duration::from_millis(1500)),
                ),
                ("died", died("a", "Transport closed")),
                ("unavailable", unavailable("a", &disabled())),
                ("stopped", stopped()),
                ("unexpected_answer", unexpected_answer()),
                ("no_server", no_server("a")),
                ("init_failed", init_failed(&"connection closed")),
                ("list_failed", list_failed(&"Transport closed")),
                ("start_timed_out", start_timed_out(Duration::from_secs(30))),
                ("bad_header", bad_header("bad name")),
                ("not_started", not_started("a", "why,\n  on two lines")),
                (
                    "collision",
                    collision("mcp__a__b_c", ("a", "b.c"), ("a", "b c")),
                ),
                (
                    "refused_read_only",
                    refused("mcp__a__b", &Refusal::Denied(Denial::ReadOnly)),
                ),
                (
                    "refused_rule",
                    refused(
                        "mcp__a__b",
                        &Refusal::Denied(Denial::Rule {
                            rule: "mcp__a__*".into(),
                        }),
                    ),
                ),
                ("refused_declined", refused("mcp__a__b", &Refusal::Declined)),
                (
                    "refused_no_terminal",
                    refused("mcp__a__b", &Refusal::NoTerminal),
                ),
                ("list", list(&servers)),
                ("list_empty", list(&[])),
            ];
            let mut out = String::new();
            for (name, text) in words {
                out.push_str(&format!("--- {name}\n{text}\n"));
            }
            insta::assert_snapshot!(out);
        }
    }
}
