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
//!   refusals and errors.
//!
//! Owns: the phrasing only. Does not own: when a message is said (the loop,
//! [`context`](super::context), [`tools`](super::tools)), or the engine's own
//! feedback on edits ([`crate::feedback`], which the edit tool passes on).

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Value, json};

use super::permissions::Denial;
use super::tools::{GLOB_MAX, GREP_MAX, LIST_MAX, Refusal, Run, Tool, ToolsConfig};
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
    let status = if is_error { " failed" } else { "" };
    format!("Result of your `{name}` call {arguments}{status}:\n{content}")
}

// ---------------------------------------------------------------------------
// Compaction

/// What a pruned output says instead.
pub const PRUNED: &str = "[output pruned to save context; call the tool again if you need it]";

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
                "Run a shell command with `sh -c` in the project root and return its output (stdout and stderr together; when long, the start and the end are kept) and exit code. Timeout: {} s unless `timeout_secs` says otherwise (at most {} s); on timeout the command and every process it started are killed. Stdin is empty, so nothing interactive works. Use it to build, test, run and inspect; use read, grep, glob and list to read and search files, and edit or write to change them.",
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
    format!(
        "The arguments for `{}` are invalid: {why}. Send a JSON object such as {}. Nothing was done.",
        tool.name(),
        example(tool)
    )
}

pub(crate) fn refused(tool: Tool, subject: &str, refusal: &Refusal) -> String {
    let what = format!("`{}` on `{subject}`", tool.name());
    match refusal {
        Refusal::Denied(Denial::ReadOnly) => format!(
            "Permission denied: {what}. This session is read-only: only read, grep, glob and list are available. Work with what you can read, and say what you would change."
        ),
        Refusal::Denied(Denial::Destructive { what: why }) => format!(
            "Permission denied: {what} is always refused ({why}). Do not try it another way; find a safer command or leave it to the user."
        ),
        Refusal::Denied(d) => format!(
            "Permission denied: {what} ({d}). Do not retry it; continue without it or explain what you need."
        ),
        Refusal::Declined => format!(
            "The user declined {what}. Nothing was done. Do not retry it unchanged; continue another way or ask the user."
        ),
        Refusal::NoTerminal => format!(
            "Permission needed: {what} needs the user's confirmation, and there is no terminal to ask on, so it was refused and nothing was done. (The user can allow it by running with --yes or --permission auto, or with an allow rule.)"
        ),
    }
}

pub(crate) fn path_error(path: &str, e: &WorkspaceError) -> String {
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
        other => format!("`{path}`: {other}."),
    }
}

pub(crate) fn not_found(path: &str) -> String {
    format!("`{path}` does not exist. Use list or glob to find the right path.")
}

pub(crate) fn not_a_directory(path: &str) -> String {
    format!("`{path}` is not a directory (use read for a file).")
}

pub(crate) fn not_text(path: &str, e: &crate::DecodeError) -> String {
    format!("`{path}` is not a text file lancet can show ({e}).")
}

pub(crate) fn past_end(path: &str, offset: usize, total: usize) -> String {
    format!(
        "offset {offset} is past the end of `{path}`, which has {total} line{}.",
        if total == 1 { "" } else { "s" }
    )
}

pub(crate) fn empty_file(path: &str) -> String {
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
    let how = if text_mode {
        "read it and write the edit in your reply"
    } else {
        "read it and use edit"
    };
    format!("`{path}` already exists; write only creates new files. To change it, {how}.")
}

pub(crate) fn created(path: &str, lines: usize) -> String {
    format!(
        "Created `{path}` ({lines} line{}).",
        if lines == 1 { "" } else { "s" }
    )
}

pub(crate) fn write_failed(path: &str, e: &WorkspaceError) -> String {
    match e {
        WorkspaceError::Stale { .. } => format!(
            "`{path}` appeared on disk while the file was being written; nothing was written. Read it, then edit it."
        ),
        WorkspaceError::Io { source, .. } => {
            format!("`{path}` could not be written: {source}. Nothing was written.")
        }
        other => path_error(path, other),
    }
}

pub(crate) fn not_read(paths: &[String]) -> String {
    let list = paths
        .iter()
        .map(|p| format!("`{p}`"))
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
            "`{path}` changed on disk while the edit was waiting to be written; nothing was written. Read it again and redo the edit against its current content."
        ),
        WorkspaceError::Io { path, source } => format!(
            "Writing failed at {}: {source}. Nothing was written.",
            path.display()
        ),
        other => format!("The edit could not be written: {other}. Nothing was written."),
    }
}

pub(crate) fn stale_diff(path: &str, diff: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = diff.lines().collect();
    let mut shown = lines[..lines.len().min(max_lines)].join("\n");
    if lines.len() > max_lines {
        let _ = write!(shown, "\n[… {} more diff lines]", lines.len() - max_lines);
    }
    format!("\n\nWhat changed in `{path}` since you read it:\n{shown}")
}

pub(crate) fn fresh_anchors(path: &str, view: &str) -> String {
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
    if r.timed_out {
        let _ = write!(
            out,
            "[timed out after {} s: the command and every process it started were killed. If it needs longer, pass timeout_secs (at most {} s); start servers in the background with their output sent to a file.]",
            timeout.as_secs(),
            max.as_secs()
        );
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
    if r.lingering {
        out.push_str("\n[processes it started are still running in the background; their output is not shown]");
    }
    out
}

pub(crate) fn output_cut(bytes: usize) -> String {
    format!("\n[… {bytes} bytes cut …]\n")
}

pub(crate) fn spawn_failed(e: &std::io::Error) -> String {
    format!("The command could not be started: {e}.")
}

pub(crate) fn bad_regex(pattern: &str, e: &regex::Error) -> String {
    format!(
        "`{pattern}` is not a valid regular expression: {e}\nEscape ( [ {{ . * + ? | with \\ to match them literally."
    )
}

pub(crate) fn bad_glob(pattern: &str, e: &globset::Error) -> String {
    format!("`{pattern}` is not a valid glob: {}.", e.kind())
}

pub(crate) fn grep_result(pattern: &str, hits: &[String], more: bool) -> String {
    if hits.is_empty() {
        return format!("No matches for `{pattern}`.");
    }
    let mut out = hits.join("\n");
    out.push('\n');
    if more {
        let _ = write!(
            out,
            "[only the first {GREP_MAX} matches are shown: narrow the pattern, path or glob]"
        );
    }
    out
}

pub(crate) fn glob_result(pattern: &str, paths: &[String], more: bool) -> String {
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
        put(o, "grep_result (none)", &grep_result("needle", &[], false));
        put(
            o,
            "grep_result (hits)",
            &grep_result("needle", &hits, false),
        );
        put(o, "grep_result (more)", &grep_result("needle", &hits, true));
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
}
