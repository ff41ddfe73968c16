//! The agent's tools: `read`, `write`, `edit`, `bash`, `grep`, `glob`, `list`.
//!
//! [`Tools`] owns what the tools share: the [`Workspace`] every path goes
//! through (confinement), the chosen edit [`Format`], the [`Permissions`] and
//! the [`Prompter`] that answers their questions, and the **read records**:
//! for every file the model has read, its content hash and content then.
//! [`Tools::specs`] describes the tools to the model; [`Tools::call`] runs
//! one call and always returns a [`ToolOutcome`] — bad JSON, an unknown
//! tool, a refused path or a denied permission are results the model reads
//! (`is_error`), never a panic or an error that stops the loop.
//!
//! **Read-before-edit.** An edit is refused when a file it touches exists
//! and the model has not read it; when the file changed on disk since the
//! read, the engine refuses it as stale (the record's hash is its
//! [`ApplyOptions::expected_hashes`]) and the model is told what changed and
//! to read it again. lancet's own writes update the record's hash, so the
//! edit after an edit is not falsely stale (EDIT-SCENARIOS 48). The record's
//! *view* — what the model was shown — changes only with reads and writes:
//! it is the hashline snapshot ([`ApplyOptions::seen`]) that relocates
//! anchors whose lines moved since the model saw them.
//!
//! **Edits** go through the engine: the chosen format's tool-call form is
//! parsed by [`Format::parse_tool_call`], planned by [`plan`](crate::plan),
//! confirmed when the permissions ask (the question shows the diff), and
//! committed all or nothing. The model reads the engine's feedback words.
//!
//! **bash** runs `sh -c` in the root, in a process group of its own, with
//! stdin empty; on timeout the whole group gets SIGTERM, then SIGKILL. Output
//! (stdout and stderr interleaved as they arrive) is kept head and tail
//! within a byte budget, so a flood costs bounded memory.
//!
//! Owns: the tools' arguments and what they do. Does not own: the words the
//! model reads — descriptions, schemas, results, refusals — which live in
//! the agent's `words` module (the engine's own words come from
//! [`crate::feedback`]); the loop; or deciding what is allowed
//! ([`permissions`](super::permissions)).

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::permissions::{Answer, Decision, Denial, Permissions, Prompter, Question};
use super::types::ToolSpec;
use super::words;
use crate::format::render_unified;
use crate::report::{ApplyReport, EditError, FileReport, FileStatus};
use crate::workspace::{Change, Workspace, WorkspaceError, content_hash};
use crate::{ApplyOptions, Document, Format, ParseError, Patch, feedback};

/// Longest line `read`, `grep` show in full, in characters.
const MAX_LINE_CHARS: usize = 2000;
/// Longest line `grep` shows, in characters.
const GREP_LINE_CHARS: usize = 300;
/// Most matching lines `grep` returns.
pub(crate) const GREP_MAX: usize = 200;
/// Files larger than this are not searched by `grep`.
const GREP_MAX_FILE: u64 = 8 << 20;
/// Most paths `glob` returns.
pub(crate) const GLOB_MAX: usize = 500;
/// Most entries `list` returns.
pub(crate) const LIST_MAX: usize = 1000;
/// How long a command's output is still read after it exits (background
/// processes may hold the pipe open).
const DRAIN: Duration = Duration::from_millis(300);
/// How long a timed-out command gets between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(1000);
/// Most lines of a stale file's diff shown to the model.
const STALE_DIFF_LINES: usize = 40;
/// Most lines of fresh hashline anchors shown after an edit.
const FRESH_LINES: usize = 80;

/// How the tools behave. `Default` is `lancet run`'s default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolsConfig {
    /// The edit format (the `edit` tool's schema, and `read`'s view for hashline).
    pub format: Format,
    /// Text mode: no `edit` tool; the model writes edits in its reply
    /// ([`Tools::apply_text`]).
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
}

impl ToolOutcome {
    fn ok(content: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: content.into(),
            is_error: false,
            edit: None,
            refusal: None,
        }
    }

    fn error(content: impl Into<String>) -> ToolOutcome {
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

    fn from_name(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What the model has read of one file.
#[derive(Debug, Clone)]
struct Record {
    /// The content hash of the file as lancet last knew it (read or written).
    hash: u64,
    /// The content at `hash`.
    known: Document,
    /// The content the model was last shown (a read or its own write).
    view: Document,
}

/// The tools of one session.
pub struct Tools {
    ws: Workspace,
    config: ToolsConfig,
    permissions: Permissions,
    prompter: Box<dyn Prompter>,
    /// By absolute path, so `./a.rs` and `a.rs` are one file.
    read: HashMap<PathBuf, Record>,
}

impl std::fmt::Debug for Tools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tools")
            .field("root", &self.ws.root())
            .field("config", &self.config)
            .field("permissions", &self.permissions)
            .field("read", &self.read.len())
            .finish_non_exhaustive()
    }
}

impl Tools {
    /// Tools over `ws`, allowed by `permissions`, asking through `prompter`.
    pub fn new(
        ws: Workspace,
        config: ToolsConfig,
        permissions: Permissions,
        prompter: Box<dyn Prompter>,
    ) -> Tools {
        Tools {
            ws,
            config,
            permissions,
            prompter,
            read: HashMap::new(),
        }
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.ws
    }

    /// The configuration.
    pub fn config(&self) -> &ToolsConfig {
        &self.config
    }

    /// The files the model has read (relative to the root, sorted).
    pub fn read_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.read.keys().map(|p| self.rel(p)).collect();
        paths.sort();
        paths
    }

    /// Forgets every read, so each file must be read again before it is
    /// edited (after the conversation was compacted and the contents are
    /// gone from the model's context).
    pub fn forget_reads(&mut self) {
        self.read.clear();
    }

    /// The tools the model may call: all seven, without `edit` in text mode.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let c = &self.config;
        Tool::ALL
            .into_iter()
            .filter(|t| !(c.text_mode && *t == Tool::Edit))
            .map(|t| words::spec(t, c))
            .collect()
    }

    /// Runs one tool call. `arguments` is the JSON text the model wrote.
    pub async fn call(&mut self, name: &str, arguments: &str) -> ToolOutcome {
        let tool = match Tool::from_name(name) {
            Some(Tool::Edit) if self.config.text_mode => {
                return ToolOutcome::error(words::no_edit_tool(self.config.format));
            }
            Some(t) => t,
            None => return ToolOutcome::error(words::unknown_tool(name, &self.tool_names())),
        };
        let args = match parse_args(arguments) {
            Ok(v) => v,
            Err(e) => return ToolOutcome::error(words::bad_arguments(tool, &e)),
        };
        match tool {
            Tool::Read => match typed(tool, args) {
                Ok(a) => self.read(a),
                Err(o) => *o,
            },
            Tool::Write => match typed(tool, args) {
                Ok(a) => self.write(a),
                Err(o) => *o,
            },
            Tool::Edit => match self.config.format.parse_tool_call(&args) {
                Ok(patch) => self.apply(&patch),
                Err(e) => {
                    ToolOutcome::error(feedback::parse_error(&e, Some(self.config.format.name())))
                }
            },
            Tool::Bash => match typed(tool, args) {
                Ok(a) => self.bash(a).await,
                Err(o) => *o,
            },
            Tool::Grep => match typed(tool, args) {
                Ok(a) => self.grep(a),
                Err(o) => *o,
            },
            Tool::Glob => match typed(tool, args) {
                Ok(a) => self.glob(a),
                Err(o) => *o,
            },
            Tool::List => match typed(tool, args) {
                Ok(a) => self.list(a),
                Err(o) => *o,
            },
        }
    }

    /// Applies the edits a text-mode reply holds, with the edit tool's checks
    /// (permissions, read-before-edit). `None` when the reply holds no edits.
    pub fn apply_text(&mut self, reply: &str) -> Option<ToolOutcome> {
        match self.config.format.parse(reply) {
            Ok(patch) => Some(self.apply(&patch)),
            Err(ParseError::NoEdits) => None,
            Err(e) => Some(ToolOutcome::error(feedback::parse_error(
                &e,
                Some(self.config.format.name()),
            ))),
        }
    }

    fn tool_names(&self) -> Vec<&'static str> {
        self.specs()
            .iter()
            .filter_map(|s| Tool::from_name(&s.name).map(Tool::name))
            .collect()
    }

    /// A path relative to the root, `/`-separated.
    fn rel(&self, abs: &Path) -> String {
        let rel = abs.strip_prefix(self.ws.root()).unwrap_or(abs);
        let s = rel.to_string_lossy().replace('\\', "/");
        if s.is_empty() { ".".to_owned() } else { s }
    }

    /// A directory argument: the root when absent or `.`, else confined.
    fn dir(&self, path: Option<&str>) -> Result<PathBuf, WorkspaceError> {
        match path.map(str::trim) {
            None | Some("" | "." | "./") => Ok(self.ws.root().to_path_buf()),
            Some(p) => self.ws.resolve(p),
        }
    }

    // -- permissions ----------------------------------------------------

    /// The strictest decision over every subject.
    fn decide(&self, tool: Tool, subjects: &[String]) -> Decision {
        subjects
            .iter()
            .map(|s| self.permissions.check(tool.name(), s))
            .fold(Decision::Allow, Decision::and)
    }

    /// Turns a decision into a go-ahead, asking the prompter when it says
    /// ask; a refusal is the outcome to return.
    fn settle(
        &mut self,
        decision: Decision,
        tool: Tool,
        subject: &str,
        detail: &str,
    ) -> Result<(), Box<ToolOutcome>> {
        let refusal = match decision {
            Decision::Allow => return Ok(()),
            Decision::Deny(d) => Refusal::Denied(d),
            Decision::Ask => {
                let question = Question {
                    tool: tool.name(),
                    subject,
                    detail,
                };
                match self.prompter.confirm(&question) {
                    Answer::Yes => return Ok(()),
                    Answer::No => Refusal::Declined,
                    Answer::NoTerminal => Refusal::NoTerminal,
                }
            }
        };
        Err(Box::new(refuse(tool, subject, refusal)))
    }

    /// Checks and asks at once (for calls whose detail is known up front).
    fn gate(&mut self, tool: Tool, subject: &str, detail: &str) -> Result<(), Box<ToolOutcome>> {
        let decision = self.decide(tool, &[subject.to_owned()]);
        self.settle(decision, tool, subject, detail)
    }

    // -- read, write, edit ----------------------------------------------

    fn read(&mut self, a: ReadArgs) -> ToolOutcome {
        if let Err(o) = self.gate(Tool::Read, &a.path, "") {
            return *o;
        }
        let abs = match self.ws.resolve(&a.path) {
            Ok(abs) => abs,
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &e)),
        };
        let state = match self.ws.read(&a.path) {
            Ok(Some(s)) => s,
            Ok(None) => return ToolOutcome::error(words::not_found(&a.path)),
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &e)),
        };
        let hash = state.hash;
        let doc = match Document::from_vec(state.bytes) {
            Ok(d) => d,
            Err(e) => return ToolOutcome::error(words::not_text(&a.path, &e)),
        };
        let total = doc.line_count();
        let limit = a
            .limit
            .unwrap_or(self.config.read_lines)
            .clamp(1, self.config.read_lines.max(1));
        let start = a.offset.unwrap_or(1).max(1) - 1;
        if total > 0 && start >= total {
            return ToolOutcome::error(words::past_end(&a.path, start + 1, total));
        }
        let end = (start + limit).min(total);
        let content = if total == 0 {
            words::empty_file(&a.path)
        } else {
            let mut view = cut_long_lines(&self.config.format.view(&doc, Some(start..end)));
            if start > 0 || end < total {
                view.push_str(&words::page(start + 1, end, total));
            }
            view
        };
        self.read.insert(
            abs,
            Record {
                hash,
                known: doc.clone(),
                view: doc,
            },
        );
        ToolOutcome::ok(content)
    }

    fn write(&mut self, a: WriteArgs) -> ToolOutcome {
        // Refusals that need no question come first.
        let decision = self.decide(Tool::Write, std::slice::from_ref(&a.path));
        if let Decision::Deny(d) = decision {
            return refuse(Tool::Write, &a.path, Refusal::Denied(d));
        }
        let abs = match self.ws.resolve(&a.path) {
            Ok(abs) => abs,
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &e)),
        };
        match self.ws.read(&a.path) {
            Ok(None) => {}
            Ok(Some(_)) => {
                return ToolOutcome::error(words::exists(&a.path, self.config.text_mode));
            }
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &e)),
        }
        let diff = render_unified(None, Some(&a.path), "", &a.content, 3);
        if let Err(o) = self.settle(decision, Tool::Write, &a.path, &diff) {
            return *o;
        }
        let bytes = a.content.into_bytes();
        let hash = content_hash(&bytes);
        let doc = Document::from_bytes(&bytes).unwrap_or_default();
        let lines = doc.line_count();
        let change = Change::Write {
            path: a.path.clone(),
            bytes,
            expected_hash: None,
            mode: None,
        };
        if let Err(e) = self.ws.commit(&[change]) {
            return ToolOutcome::error(words::write_failed(&a.path, &e));
        }
        self.read.insert(
            abs,
            Record {
                hash,
                known: doc.clone(),
                view: doc,
            },
        );
        let message = words::created(&a.path, lines);
        let report = ApplyReport {
            ok: true,
            written: true,
            files: vec![FileReport {
                path: a.path,
                new_path: None,
                status: FileStatus::Created,
                edits: Vec::new(),
                error: None,
                mode: None,
            }],
            notes: Vec::new(),
            message: message.clone(),
        };
        ToolOutcome {
            edit: Some(EditEvent {
                report_json: feedback::json_report(&report).to_value(),
                diff,
            }),
            ..ToolOutcome::ok(message)
        }
    }

    /// Plans, confirms and commits a parsed edit, read-before-edit enforced.
    fn apply(&mut self, patch: &Patch) -> ToolOutcome {
        let mut paths: Vec<String> = Vec::new();
        for c in &patch.changes {
            for p in c.path.iter().chain(c.rename_to.iter()) {
                if !paths.contains(p) {
                    paths.push(p.clone());
                }
            }
        }
        let decision = self.decide(Tool::Edit, &paths);
        let subject = paths.join(", ");
        if let Decision::Deny(d) = decision {
            return refuse(Tool::Edit, &subject, Refusal::Denied(d));
        }
        // Read-before-edit. A path the workspace refuses is left to the
        // engine, which words it for the model.
        let mut opts = self.config.apply.clone();
        let mut unread = Vec::new();
        for p in &paths {
            let Ok(abs) = self.ws.resolve(p) else {
                continue;
            };
            let exists = matches!(self.ws.read(p), Ok(Some(_)));
            match self.read.get(&abs) {
                Some(r) => {
                    opts.expected_hashes.insert(p.clone(), r.hash);
                    opts.seen.insert(p.clone(), r.view.clone());
                }
                None if exists => unread.push(p.clone()),
                None => {}
            }
        }
        if !unread.is_empty() {
            return ToolOutcome::error(words::not_read(&unread));
        }
        let planned = crate::plan(&self.ws, patch, &opts);
        let report = planned.report();
        if !planned.has_changes() {
            let mut content = report.message.clone();
            content.push_str(&self.stale_details(report));
            if content.trim().is_empty() {
                content = words::nothing_to_do();
            }
            return ToolOutcome {
                is_error: !report.ok,
                ..ToolOutcome::ok(content)
            };
        }
        let diff = planned.unified_diff(3);
        if let Err(o) = self.settle(decision, Tool::Edit, &subject, &diff) {
            return *o;
        }
        let before: HashMap<String, Document> = self.known_docs(&paths);
        let report = match planned.commit(&self.ws) {
            Ok(r) => r,
            Err(e) => return ToolOutcome::error(words::commit_failed(&e)),
        };
        self.after_write(&paths);
        let mut content = report.message.clone();
        if self.config.format == Format::Hashline {
            content.push_str(&self.fresh_anchors(&paths, &before));
        }
        ToolOutcome {
            is_error: !report.ok,
            edit: Some(EditEvent {
                report_json: feedback::json_report(&report).to_value(),
                diff,
            }),
            ..ToolOutcome::ok(content)
        }
    }

    /// The files' content as lancet last knew it, by path as written.
    fn known_docs(&self, paths: &[String]) -> HashMap<String, Document> {
        paths
            .iter()
            .filter_map(|p| {
                let abs = self.ws.resolve(p).ok()?;
                Some((p.clone(), self.read.get(&abs)?.known.clone()))
            })
            .collect()
    }

    /// Brings the read records up to date with what an edit wrote.
    fn after_write(&mut self, paths: &[String]) {
        for p in paths {
            let Ok(abs) = self.ws.resolve(p) else {
                continue;
            };
            let state = self.ws.read(p).ok().flatten();
            let doc = state
                .as_ref()
                .and_then(|s| Document::from_bytes(&s.bytes).ok());
            match (state, doc) {
                (Some(s), Some(doc)) => match self.read.get_mut(&abs) {
                    Some(r) => {
                        r.hash = s.hash;
                        r.known = doc;
                    }
                    // A file the edit created: the model wrote all of it.
                    None => {
                        self.read.insert(
                            abs,
                            Record {
                                hash: s.hash,
                                known: doc.clone(),
                                view: doc,
                            },
                        );
                    }
                },
                _ => {
                    self.read.remove(&abs);
                }
            }
        }
    }

    /// For each file the engine found stale: what changed on disk since the read.
    fn stale_details(&self, report: &ApplyReport) -> String {
        let mut out = String::new();
        for f in &report.files {
            let stale = matches!(f.error, Some(EditError::Stale))
                || f.edits
                    .iter()
                    .any(|e| matches!(e.error, Some(EditError::Stale)));
            if !stale {
                continue;
            }
            let Ok(abs) = self.ws.resolve(&f.path) else {
                continue;
            };
            let Some(record) = self.read.get(&abs) else {
                continue;
            };
            let now = match self.ws.read(&f.path) {
                Ok(Some(s)) => Document::from_vec(s.bytes).unwrap_or_default(),
                _ => Document::default(),
            };
            let diff = render_unified(
                Some(&f.path),
                Some(&f.path),
                record.known.text(),
                now.text(),
                1,
            );
            out.push_str(&words::stale_diff(&f.path, &diff, STALE_DIFF_LINES));
        }
        out
    }

    /// After a hashline edit: the changed lines with their new anchors.
    fn fresh_anchors(&self, paths: &[String], before: &HashMap<String, Document>) -> String {
        let mut out = String::new();
        let mut budget = FRESH_LINES;
        for p in paths {
            let Ok(Some(state)) = self.ws.read(p) else {
                continue;
            };
            let Ok(after) = Document::from_vec(state.bytes) else {
                continue;
            };
            let old = before.get(p).cloned().unwrap_or_default();
            let ranges = changed_ranges(&old, &after, 2);
            if ranges.is_empty() || budget == 0 {
                continue;
            }
            let mut shown = String::new();
            for r in ranges {
                let r = r.start..r.end.min(r.start + budget);
                budget -= r.len();
                if !shown.is_empty() {
                    shown.push_str("…\n");
                }
                shown.push_str(&cut_long_lines(&Format::Hashline.view(&after, Some(r))));
                if budget == 0 {
                    break;
                }
            }
            out.push_str(&words::fresh_anchors(p, &shown));
        }
        out
    }

    // -- bash -----------------------------------------------------------

    async fn bash(&mut self, a: BashArgs) -> ToolOutcome {
        let command = a.command.trim();
        if command.is_empty() {
            return ToolOutcome::error(words::bad_arguments(Tool::Bash, words::EMPTY_COMMAND));
        }
        if let Err(o) = self.gate(Tool::Bash, command, command) {
            return *o;
        }
        let timeout = a
            .timeout_secs
            .map_or(self.config.bash_timeout, Duration::from_secs)
            .min(self.config.bash_max_timeout)
            .max(Duration::from_secs(1));
        let run = run_command(command, self.ws.root(), timeout, self.config.max_output).await;
        match run {
            Ok(r) => {
                let is_error = r.timed_out;
                ToolOutcome {
                    is_error,
                    ..ToolOutcome::ok(words::bash_result(
                        &r,
                        timeout,
                        self.config.bash_max_timeout,
                    ))
                }
            }
            Err(e) => ToolOutcome::error(words::spawn_failed(&e)),
        }
    }

    // -- grep, glob, list -----------------------------------------------

    fn grep(&mut self, a: GrepArgs) -> ToolOutcome {
        let shown_path = a.path.clone().unwrap_or_else(|| ".".to_owned());
        if let Err(o) = self.gate(Tool::Grep, &shown_path, "") {
            return *o;
        }
        let re = match regex::RegexBuilder::new(&a.pattern)
            .case_insensitive(a.ignore_case.unwrap_or(false))
            .size_limit(10 << 20)
            .build()
        {
            Ok(re) => re,
            Err(e) => return ToolOutcome::error(words::bad_regex(&a.pattern, &e)),
        };
        let start = match self.dir(a.path.as_deref()) {
            Ok(p) => p,
            Err(e) => return ToolOutcome::error(words::path_error(&shown_path, &e)),
        };
        if !start.exists() {
            return ToolOutcome::error(words::not_found(&shown_path));
        }
        let filter = match a.glob.as_deref().map(PathFilter::new).transpose() {
            Ok(f) => f,
            Err(e) => {
                return ToolOutcome::error(words::bad_glob(a.glob.as_deref().unwrap_or(""), &e));
            }
        };
        let mut hits = Vec::new();
        let mut more = false;
        'files: for path in self.files_under(&start) {
            let rel = self.rel(&path);
            if filter.as_ref().is_some_and(|f| !f.matches(&rel)) {
                continue;
            }
            if !matches!(std::fs::metadata(&path), Ok(m) if m.len() <= GREP_MAX_FILE) {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if bytes[..bytes.len().min(8000)].contains(&0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (n, line) in text.split('\n').enumerate() {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if re.is_match(line) {
                    if hits.len() == GREP_MAX {
                        more = true;
                        break 'files;
                    }
                    hits.push(format!(
                        "{rel}:{}: {}",
                        n + 1,
                        cut_chars(line, GREP_LINE_CHARS)
                    ));
                }
            }
        }
        ToolOutcome::ok(words::grep_result(&a.pattern, &hits, more))
    }

    fn glob(&mut self, a: GlobArgs) -> ToolOutcome {
        if let Err(o) = self.gate(Tool::Glob, &a.pattern, "") {
            return *o;
        }
        let base_arg = a.path.clone().unwrap_or_else(|| ".".to_owned());
        let base = match self.dir(a.path.as_deref()) {
            Ok(p) => p,
            Err(e) => return ToolOutcome::error(words::path_error(&base_arg, &e)),
        };
        if !base.is_dir() {
            return ToolOutcome::error(words::not_a_directory(&base_arg));
        }
        let filter = match PathFilter::new(&a.pattern) {
            Ok(f) => f,
            Err(e) => return ToolOutcome::error(words::bad_glob(&a.pattern, &e)),
        };
        let mut found: Vec<String> = self
            .files_under(&base)
            .into_iter()
            .filter(|p| {
                let under_base = p.strip_prefix(&base).unwrap_or(p);
                filter.matches(&under_base.to_string_lossy().replace('\\', "/"))
            })
            .map(|p| self.rel(&p))
            .collect();
        found.sort();
        let more = found.len() > GLOB_MAX;
        found.truncate(GLOB_MAX);
        ToolOutcome::ok(words::glob_result(&a.pattern, &found, more))
    }

    fn list(&mut self, a: ListArgs) -> ToolOutcome {
        let shown = a.path.clone().unwrap_or_else(|| ".".to_owned());
        if let Err(o) = self.gate(Tool::List, &shown, "") {
            return *o;
        }
        let dir = match self.dir(a.path.as_deref()) {
            Ok(p) => p,
            Err(e) => return ToolOutcome::error(words::path_error(&shown, &e)),
        };
        if !dir.exists() {
            return ToolOutcome::error(words::not_found(&shown));
        }
        if !dir.is_dir() {
            return ToolOutcome::error(words::not_a_directory(&shown));
        }
        let mut entries: Vec<String> = walker(&dir)
            .max_depth(Some(1))
            .build()
            .flatten()
            .filter(|e| e.depth() == 1)
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    format!("{name}/")
                } else {
                    name
                }
            })
            .collect();
        entries.sort();
        let more = entries.len() > LIST_MAX;
        entries.truncate(LIST_MAX);
        ToolOutcome::ok(words::list_result(&self.rel(&dir), &entries, more))
    }

    /// Every file under `start` (or `start` itself), .gitignore respected,
    /// `.git/` and `.lancet/` left out, symlinks not followed.
    fn files_under(&self, start: &Path) -> Vec<PathBuf> {
        walker(start)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(ignore::DirEntry::into_path)
            .collect()
    }
}

/// The outcome of a call the permissions stopped.
fn refuse(tool: Tool, subject: &str, refusal: Refusal) -> ToolOutcome {
    ToolOutcome {
        content: words::refused(tool, subject, &refusal),
        is_error: true,
        edit: None,
        refusal: Some(refusal),
    }
}

/// A directory walk as the search tools do it.
fn walker(start: &Path) -> ignore::WalkBuilder {
    let mut w = ignore::WalkBuilder::new(start);
    // Hidden files (`.github/`, `.env.example`) are project files too; a
    // project need not be a git repository for its .gitignore to count.
    w.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| !matches!(e.file_name().to_str(), Some(".git" | ".lancet")));
    w
}

/// A glob over relative paths; one without `/` matches file names at any depth.
struct PathFilter {
    matcher: globset::GlobMatcher,
    name_only: bool,
}

impl PathFilter {
    fn new(pattern: &str) -> Result<PathFilter, globset::Error> {
        let pattern = pattern.trim();
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let matcher = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()?
            .compile_matcher();
        Ok(PathFilter {
            matcher,
            name_only: !pattern.contains('/'),
        })
    }

    fn matches(&self, rel: &str) -> bool {
        let subject = if self.name_only {
            rel.rsplit('/').next().unwrap_or(rel)
        } else {
            rel
        };
        self.matcher.is_match(subject)
    }
}

/// The new-document line ranges a change touched, widened by `context` and merged.
fn changed_ranges(old: &Document, new: &Document, context: usize) -> Vec<Range<usize>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out: Vec<Range<usize>> = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
        let (tag, _, new_range) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        let r = new_range.start.saturating_sub(context)..(new_range.end + context).min(b.len());
        if r.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Cuts lines longer than [`MAX_LINE_CHARS`].
fn cut_long_lines(view: &str) -> String {
    let mut out = String::with_capacity(view.len());
    for line in view.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.push_str(&cut_chars(body, MAX_LINE_CHARS));
        out.push_str(nl);
    }
    out
}

/// `s`, or its first `max` characters and how many were cut.
fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            format!("{}{}", &s[..at], words::line_cut(rest))
        }
    }
}

// ---------------------------------------------------------------------------
// Arguments

fn parse_args(arguments: &str) -> Result<Value, String> {
    let t = arguments.trim();
    if t.is_empty() {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_str(t).map_err(|e| words::not_json(&e))?;
    // Some models send the arguments object encoded once more, as a JSON string.
    if let Value::String(s) = &v {
        if let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s) {
            return Ok(inner);
        }
    }
    if v.is_object() {
        Ok(v)
    } else {
        Err(words::NOT_AN_OBJECT.to_owned())
    }
}

fn typed<T: DeserializeOwned>(tool: Tool, args: Value) -> Result<T, Box<ToolOutcome>> {
    serde_json::from_value(args).map_err(|e| {
        Box::new(ToolOutcome::error(words::bad_arguments(
            tool,
            &e.to_string(),
        )))
    })
}

/// A whole number, also when a model writes it as a string (`"10"`).
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let bad = || D::Error::custom(words::NOT_A_COUNT);
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1e15)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(bad),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

fn count_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    count(d).map(|n| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
}

/// true or false, also as a string.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(D::Error::custom(words::NOT_A_FLAG)),
    }
}

#[derive(Deserialize)]
struct ReadArgs {
    #[serde(alias = "file_path", alias = "filePath")]
    path: String,
    #[serde(default, deserialize_with = "count_usize")]
    offset: Option<usize>,
    #[serde(default, deserialize_with = "count_usize")]
    limit: Option<usize>,
}

#[derive(Deserialize)]
struct WriteArgs {
    #[serde(alias = "file_path", alias = "filePath")]
    path: String,
    content: String,
}

#[derive(Deserialize)]
struct BashArgs {
    #[serde(alias = "cmd")]
    command: String,
    #[serde(default, alias = "timeout", deserialize_with = "count")]
    timeout_secs: Option<u64>,
}

#[derive(Deserialize)]
struct GrepArgs {
    #[serde(alias = "regex", alias = "query")]
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default, alias = "include")]
    glob: Option<String>,
    #[serde(default, deserialize_with = "flag")]
    ignore_case: Option<bool>,
}

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    path: Option<String>,
}

// ---------------------------------------------------------------------------
// Running commands

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
}

/// The first and last bytes of a stream, within a budget.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
    half: usize,
}

impl Capture {
    fn new(max: usize) -> Capture {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            half: (max / 2).max(1),
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.half.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.half {
            bytes = &bytes[bytes.len() - self.half..];
            self.tail.clear();
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(self.half);
        self.tail.drain(..over);
    }

    fn render(self) -> String {
        let kept = self.head.len() + self.tail.len();
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if kept >= self.total {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        // Cut on character boundaries, so no replacement characters appear at the cut.
        let valid = match std::str::from_utf8(&head) {
            Ok(_) => head.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => head.len(),
        };
        head.truncate(valid);
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        tail.drain(..skip);
        let cut = self.total - head.len() - tail.len();
        format!(
            "{}{}{}",
            String::from_utf8_lossy(&head),
            words::output_cut(cut),
            String::from_utf8_lossy(&tail)
        )
    }
}

/// Reads some bytes; `None` at the end (or on an error). Pends forever once
/// the stream is gone, so a `select!` branch on it stays quiet.
async fn read_some<R: AsyncRead + Unpin>(r: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match r {
        Some(r) => match r.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

async fn run_command(
    command: &str,
    root: &Path,
    timeout: Duration,
    max_output: usize,
) -> std::io::Result<Run> {
    use tokio::time::{Instant, sleep_until};
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Nothing can page or prompt: there is no terminal to answer.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true);
    // A group of its own, so a timeout can end everything the command started.
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    // If this call is abandoned (Ctrl-C ends the run mid-command), the whole
    // group goes with it, not only the shell.
    let mut guard = GroupGuard(pid);
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let mut cap = Capture::new(max_output);
    let (mut b1, mut b2) = (vec![0u8; 8192], vec![0u8; 8192]);
    let deadline = Instant::now() + timeout;
    let mut status = None;
    let mut until = deadline;
    loop {
        if status.is_some() && out.is_none() && err.is_none() {
            break;
        }
        tokio::select! {
            n = read_some(&mut out, &mut b1) => match n {
                Some(n) => cap.push(&b1[..n]),
                None => out = None,
            },
            n = read_some(&mut err, &mut b2) => match n {
                Some(n) => cap.push(&b2[..n]),
                None => err = None,
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                until = deadline.min(Instant::now() + DRAIN);
            }
            () = sleep_until(until) => break,
        }
    }
    let timed_out = status.is_none();
    if timed_out {
        kill_group(pid, &mut child).await;
        status = child.try_wait().ok().flatten();
        // What the group wrote while it was being killed.
        let until = Instant::now() + Duration::from_millis(200);
        while out.is_some() || err.is_some() {
            tokio::select! {
                n = read_some(&mut out, &mut b1) => match n {
                    Some(n) => cap.push(&b1[..n]),
                    None => out = None,
                },
                n = read_some(&mut err, &mut b2) => match n {
                    Some(n) => cap.push(&b2[..n]),
                    None => err = None,
                },
                () = sleep_until(until) => break,
            }
        }
    }
    let lingering = !timed_out && (out.is_some() || err.is_some());
    guard.0 = None;
    #[cfg(unix)]
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    #[cfg(not(unix))]
    let signal = None;
    Ok(Run {
        output: cap.render(),
        code: status.and_then(|s| s.code()),
        signal,
        timed_out,
        lingering,
    })
}

/// Kills a command's process group when dropped armed (its pid set).
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Ends a command and everything in its process group: SIGTERM, a grace
/// period, then SIGKILL (to the group, whether or not the shell is gone:
/// its children may ignore SIGTERM).
async fn kill_group(pid: Option<u32>, child: &mut tokio::process::Child) {
    #[cfg(unix)]
    if let Some(pid) = pid {
        signal_group("TERM", pid).await;
        let _ = tokio::time::timeout(GRACE, child.wait()).await;
        signal_group("KILL", pid).await;
    }
    #[cfg(not(unix))]
    let _ = pid;
    let _ = child.start_kill();
    let _ = tokio::time::timeout(GRACE, child.wait()).await;
}

/// `kill -s SIG -- -PGID`: the standard `kill` utility, since signals to a
/// group need no more than that and the crate forbids `unsafe` (no libc).
/// Where there is no `kill` program, the shell's built-in one does it.
#[cfg(unix)]
async fn signal_group(signal: &str, pgid: u32) {
    let group = format!("-{pgid}");
    let run = |program: &str, args: &[&str]| {
        let mut c = tokio::process::Command::new(program);
        c.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let direct = run("kill", &["-s", signal, "--", &group]).status().await;
    if direct.is_err() {
        let script = format!("kill -s {signal} -- {group}");
        let _ = run("sh", &["-c", &script]).status().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::permissions::{Effect, Mode, NoTerminal, Rule};
    use std::fs;

    /// A prompter that answers the same each time and remembers the questions.
    struct Always(Answer, std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl Prompter for Always {
        fn confirm(&mut self, q: &Question<'_>) -> Answer {
            if let Ok(mut v) = self.1.lock() {
                v.push(format!("{} {}\n{}", q.tool, q.subject, q.detail));
            }
            self.0
        }
    }

    fn setup_with(format: Format, mode: Mode) -> (tempfile::TempDir, Tools) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let config = ToolsConfig {
            format,
            ..ToolsConfig::default()
        };
        let tools = Tools::new(ws, config, Permissions::new(mode), Box::new(NoTerminal));
        (dir, tools)
    }

    fn setup(format: Format) -> (tempfile::TempDir, Tools) {
        setup_with(format, Mode::Auto)
    }

    fn put(dir: &tempfile::TempDir, rel: &str, text: &str) {
        let p = dir.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn get(dir: &tempfile::TempDir, rel: &str) -> String {
        fs::read_to_string(dir.path().join(rel)).unwrap()
    }

    async fn call(tools: &mut Tools, name: &str, args: Value) -> ToolOutcome {
        tools.call(name, &args.to_string()).await
    }

    #[tokio::test]
    async fn read_pages_and_numbers() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let text: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        put(&dir, "f.txt", &text);
        t.config.read_lines = 10;
        let o = call(&mut t, "read", json!({"path": "f.txt"})).await;
        assert!(!o.is_error);
        assert!(
            o.content.starts_with(" 1 | line 1\n 2 | line 2\n"),
            "{}",
            o.content
        );
        assert!(
            o.content
                .ends_with("[lines 1-10 of 25; read on with offset=11]\n")
        );
        let o = call(
            &mut t,
            "read",
            json!({"path": "./f.txt", "offset": "21", "limit": 99}),
        )
        .await;
        assert_eq!(
            o.content,
            "21 | line 21\n22 | line 22\n23 | line 23\n24 | line 24\n25 | line 25\n[lines 21-25 of 25]\n"
        );
        let o = call(&mut t, "read", json!({"path": "f.txt", "offset": 26})).await;
        assert!(
            o.is_error && o.content.contains("past the end"),
            "{}",
            o.content
        );
        let o = call(&mut t, "read", json!({"path": "missing.txt"})).await;
        assert!(o.is_error && o.content.contains("does not exist"));
        put(&dir, "empty", "");
        let o = call(&mut t, "read", json!({"path": "empty"})).await;
        assert!(!o.is_error && o.content.contains("empty"));
        // The whole file in one page says nothing about pages.
        t.config.read_lines = 2000;
        let o = call(&mut t, "read", json!({"file_path": "f.txt"})).await;
        assert!(o.content.ends_with("25 | line 25\n"));
    }

    #[tokio::test]
    async fn read_shows_hashline_view() {
        let (dir, mut t) = setup(Format::Hashline);
        put(&dir, "a.py", "def f():\n    return 1\n");
        let o = call(&mut t, "read", json!({"path": "a.py"})).await;
        let want = format!(
            "1:{}|def f():\n2:{}|    return 1\n",
            crate::line_hash("def f():"),
            crate::line_hash("    return 1")
        );
        assert_eq!(o.content, want);
        assert!(
            t.specs()
                .iter()
                .any(|s| s.name == "read" && s.description.contains("LINE:HASH"))
        );
    }

    #[tokio::test]
    async fn write_creates_and_refuses_existing() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let o = call(
            &mut t,
            "write",
            json!({"path": "new/a.txt", "content": "one\ntwo\n"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "new/a.txt"), "one\ntwo\n");
        let edit = o.edit.unwrap();
        assert_eq!(edit.report_json["files"][0]["status"], "created");
        assert!(edit.diff.contains("+++ b/new/a.txt") && edit.diff.contains("+two"));
        let o = call(
            &mut t,
            "write",
            json!({"path": "new/a.txt", "content": "x"}),
        )
        .await;
        assert!(
            o.is_error && o.content.contains("use edit"),
            "{}",
            o.content
        );
        assert_eq!(get(&dir, "new/a.txt"), "one\ntwo\n");
        // Written counts as read: it can be edited at once.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "new/a.txt", "old_string": "two", "new_string": "2"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "new/a.txt"), "one\n2\n");
    }

    #[tokio::test]
    async fn read_before_edit() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "a.py", "x = 1\ny = 2\n");
        let edit = json!({"path": "a.py", "old_string": "x = 1", "new_string": "x = 10"});
        // Not read: refused.
        let o = call(&mut t, "edit", edit.clone()).await;
        assert!(
            o.is_error && o.content.contains("have not read `a.py`"),
            "{}",
            o.content
        );
        assert_eq!(get(&dir, "a.py"), "x = 1\ny = 2\n");
        // Read, then changed by someone else: stale, with what changed.
        call(&mut t, "read", json!({"path": "a.py"})).await;
        put(&dir, "a.py", "x = 1\ny = 3\n");
        let o = call(&mut t, "edit", edit.clone()).await;
        assert!(
            o.is_error && o.content.contains("Read it again"),
            "{}",
            o.content
        );
        assert!(o.content.contains("+y = 3"), "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "x = 1\ny = 3\n");
        // Read again: applied, with its diff and report.
        call(&mut t, "read", json!({"path": "a.py"})).await;
        let o = call(&mut t, "edit", edit).await;
        assert!(!o.is_error, "{}", o.content);
        let ev = o.edit.unwrap();
        assert!(ev.diff.contains("-x = 1\n+x = 10\n"), "{}", ev.diff);
        assert_eq!(ev.report_json["ok"], true);
        assert_eq!(get(&dir, "a.py"), "x = 10\ny = 3\n");
        // lancet's own edit updated the record: the next edit is not stale.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "old_string": "y = 3", "new_string": "y = 30"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "x = 10\ny = 30\n");
        // Forgetting (after compaction) requires a new read.
        t.forget_reads();
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "old_string": "y = 30", "new_string": "y = 4"}),
        )
        .await;
        assert!(o.is_error);
    }

    #[tokio::test]
    async fn edit_search_replace_forms() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
        call(&mut t, "read", json!({"path": "a.rs"})).await;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.rs", "edits": [
                {"old_string": "fn a() {}", "new_string": "fn a() { 1 }"},
                {"old_string": "fn c() {}", "new_string": "fn c() { 3 }"},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.rs"), "fn a() { 1 }\nfn b() {}\nfn c() { 3 }\n");
        // A failed edit writes nothing and gives the engine's words.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.rs", "old_string": "fn zzz() {}", "new_string": "x"}),
        )
        .await;
        assert!(o.is_error && o.edit.is_none());
        assert!(o.content.contains("Nothing was written"), "{}", o.content);
        // Malformed arguments, as text or as fields.
        let o = t.call("edit", "{\"path\": ").await;
        assert!(
            o.is_error && o.content.contains("not valid JSON"),
            "{}",
            o.content
        );
        let o = call(&mut t, "edit", json!({"path": "a.rs", "old_string": 3})).await;
        assert!(
            o.is_error && o.content.contains("old_string"),
            "{}",
            o.content
        );
        // Creating a file through the edit tool needs no read.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "b.rs", "old_string": "", "new_string": "fn b() {}\n"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "b.rs"), "fn b() {}\n");
    }

    #[tokio::test]
    async fn edit_hashline_form() {
        let (dir, mut t) = setup(Format::Hashline);
        put(&dir, "a.py", "a = 1\nb = 2\nc = 3\n");
        call(&mut t, "read", json!({"path": "a.py"})).await;
        let anchor = |n: usize, line: &str| format!("{n}:{}", crate::line_hash(line));
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "edits": [
                {"op": "replace", "start": anchor(2, "b = 2"), "lines": ["b = 20"]},
                {"op": "insert_after", "anchor": anchor(3, "c = 3"), "lines": ["d = 4"]},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "a = 1\nb = 20\nc = 3\nd = 4\n");
        assert!(o.content.contains("fresh anchors"), "{}", o.content);
        assert!(o.content.contains(&format!("{}|d = 4", anchor(4, "d = 4"))));
        // The next edit uses the line numbers of the first read: line 1 is
        // where it was; a shifted line relocates through the read's view.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "edits": [
                {"op": "delete", "start": anchor(1, "a = 1")},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "b = 20\nc = 3\nd = 4\n");
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "edits": [
                {"op": "replace", "start": anchor(3, "c = 3"), "lines": ["c = 30"]},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "b = 20\nc = 30\nd = 4\n");
    }

    #[tokio::test]
    async fn edit_udiff_apply_patch_and_whole_forms() {
        let (dir, mut t) = setup(Format::UnifiedDiff);
        put(&dir, "a.txt", "one\ntwo\nthree\n");
        call(&mut t, "read", json!({"path": "a.txt"})).await;
        let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n";
        let o = call(&mut t, "edit", json!({"diff": diff})).await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.txt"), "one\n2\nthree\n");

        t.config.format = Format::ApplyPatch;
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-2\n+two\n*** End Patch\n";
        let o = call(&mut t, "edit", json!({"input": patch})).await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.txt"), "one\ntwo\nthree\n");

        t.config.format = Format::Whole;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.txt", "content": "1\n2\n3\n"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.txt"), "1\n2\n3\n");
        assert_eq!(
            t.specs()
                .iter()
                .find(|s| s.name == "edit")
                .unwrap()
                .parameters["required"],
            json!(["path", "content"])
        );
    }

    #[tokio::test]
    async fn paths_cannot_escape() {
        let outer = tempfile::tempdir().unwrap();
        fs::write(outer.path().join("secret"), "s\n").unwrap();
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "a.txt", "a\n");
        let escape = format!(
            "../{}/secret",
            outer.path().file_name().unwrap().to_string_lossy()
        );
        let abs = outer.path().join("secret").to_string_lossy().into_owned();
        for p in [escape.as_str(), abs.as_str(), ".git/config"] {
            let o = call(&mut t, "read", json!({"path": p})).await;
            assert!(o.is_error, "{p}: {}", o.content);
            let o = call(&mut t, "write", json!({"path": p, "content": "x"})).await;
            assert!(o.is_error, "{p}: {}", o.content);
            let o = call(
                &mut t,
                "edit",
                json!({"path": p, "old_string": "s", "new_string": "x"}),
            )
            .await;
            assert!(o.is_error, "{p}: {}", o.content);
        }
        let o = call(&mut t, "read", json!({"path": "../x"})).await;
        assert!(
            o.content.contains("outside the project root"),
            "{}",
            o.content
        );
        let o = call(&mut t, "list", json!({"path": ".."})).await;
        assert!(o.is_error);
        assert_eq!(
            fs::read_to_string(outer.path().join("secret")).unwrap(),
            "s\n"
        );
        assert!(!dir.path().join(".git").exists());
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn bash_runs_in_root_and_reports_exit() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "here.txt", "");
        let o = call(
            &mut t,
            "bash",
            json!({"command": "ls; echo err >&2; exit 3"}),
        )
        .await;
        assert!(!o.is_error);
        assert!(
            o.content.contains("here.txt") && o.content.contains("err"),
            "{}",
            o.content
        );
        assert!(o.content.ends_with("[exit code 3]"), "{}", o.content);
        let o = call(&mut t, "bash", json!({"command": "  "})).await;
        assert!(o.is_error);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn bash_timeout_kills_the_group() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let o = call(
            &mut t,
            "bash",
            json!({"command": "echo started; sleep 100 & echo $! > bg.pid; sleep 100", "timeout_secs": 1}),
        )
        .await;
        assert!(o.is_error, "{}", o.content);
        assert!(o.content.contains("started") && o.content.contains("timed out after 1 s"));
        let pid = get(&dir, "bg.pid").trim().to_owned();
        assert!(dies(&pid), "background child {pid} survived the timeout");
    }

    /// Whether process `pid` is gone (or a zombie waiting for a parent that
    /// does not reap) within 2.5 s.
    #[cfg(target_os = "linux")]
    fn dies(pid: &str) -> bool {
        let alive = || {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| !r.trim_start().starts_with('Z'))
                })
        };
        for _ in 0..50 {
            if !alive() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Ctrl-C drops the run mid-command: the command's whole group ends too.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn an_abandoned_command_takes_its_group_with_it() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let call = t.call(
            "bash",
            r#"{"command": "sleep 100 & echo $! > bg.pid; sleep 100"}"#,
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(500), call)
                .await
                .is_err()
        );
        let pid = get(&dir, "bg.pid").trim().to_owned();
        assert!(
            dies(&pid),
            "background child {pid} survived its abandoned command"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn bash_output_is_cut_head_and_tail() {
        let (_dir, mut t) = setup(Format::SearchReplace);
        t.config.max_output = 1000;
        let o = call(&mut t, "bash", json!({"command": "seq 1 100000"})).await;
        assert!(o.content.starts_with("1\n2\n3\n"), "{}", o.content);
        assert!(
            o.content.contains("99999\n100000\n[exit code 0]"),
            "{}",
            o.content
        );
        assert!(o.content.contains(" bytes cut …]"));
        assert!(o.content.len() < 1200, "{}", o.content.len());
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qrstuvwxyz"] {
            c.push(chunk);
        }
        assert_eq!(c.render(), "abcde\n[… 16 bytes cut …]\nvwxyz");
        let mut c = Capture::new(10);
        c.push(b"short");
        assert_eq!(c.render(), "short");
        // A multi-byte character at the cut is dropped whole.
        let mut c = Capture::new(6);
        c.push("aaéé".as_bytes());
        c.push(b"0123456789zz");
        assert_eq!(c.render(), "aa\n[… 13 bytes cut …]\n9zz");
    }

    #[tokio::test]
    async fn grep_respects_gitignore() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, ".gitignore", "target/\n*.log\n");
        put(&dir, "src/a.rs", "fn needle() {}\nfn other() {}\n");
        put(&dir, "src/b.py", "needle = 1\n");
        put(&dir, "target/gen.rs", "fn needle() {}\n");
        put(&dir, "run.log", "needle\n");
        put(&dir, ".hidden/c.rs", "// needle\n");
        let o = call(&mut t, "grep", json!({"pattern": "needle"})).await;
        assert_eq!(
            o.content,
            ".hidden/c.rs:1: // needle\nsrc/a.rs:1: fn needle() {}\nsrc/b.py:1: needle = 1\n"
        );
        let o = call(
            &mut t,
            "grep",
            json!({"pattern": "NEEDLE", "glob": "*.rs", "ignore_case": true, "path": "src"}),
        )
        .await;
        assert_eq!(o.content, "src/a.rs:1: fn needle() {}\n");
        let o = call(&mut t, "grep", json!({"pattern": "fn ("})).await;
        assert!(o.is_error && o.content.contains("not a valid regular expression"));
        let o = call(&mut t, "grep", json!({"pattern": "absent"})).await;
        assert!(!o.is_error && o.content.starts_with("No matches"));
    }

    #[tokio::test]
    async fn glob_and_list() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, ".gitignore", "target/\n");
        put(&dir, "src/main.rs", "");
        put(&dir, "src/util/mod.rs", "");
        put(&dir, "README.md", "");
        put(&dir, "target/x.rs", "");
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        put(&dir, ".git/HEAD.rs", "");
        let o = call(&mut t, "glob", json!({"pattern": "**/*.rs"})).await;
        assert_eq!(o.content, "src/main.rs\nsrc/util/mod.rs\n");
        let o = call(&mut t, "glob", json!({"pattern": "*.rs"})).await;
        assert_eq!(o.content, "src/main.rs\nsrc/util/mod.rs\n");
        let o = call(&mut t, "glob", json!({"pattern": "src/*.rs"})).await;
        assert_eq!(o.content, "src/main.rs\n");
        let o = call(
            &mut t,
            "glob",
            json!({"pattern": "*.rs", "path": "src/util"}),
        )
        .await;
        assert_eq!(o.content, "src/util/mod.rs\n");
        let o = call(&mut t, "glob", json!({"pattern": "*.zig"})).await;
        assert!(o.content.starts_with("No files match"));
        let o = call(&mut t, "list", json!({})).await;
        assert_eq!(o.content, ".gitignore\nREADME.md\nsrc/\n");
        let o = t.call("list", "").await;
        assert_eq!(o.content, ".gitignore\nREADME.md\nsrc/\n");
        let o = call(&mut t, "list", json!({"path": "src"})).await;
        assert_eq!(o.content, "main.rs\nutil/\n");
        let o = call(&mut t, "list", json!({"path": "README.md"})).await;
        assert!(o.is_error);
    }

    #[tokio::test]
    async fn arguments_and_unknown_tools() {
        let (_dir, mut t) = setup(Format::SearchReplace);
        let o = t.call("frobnicate", "{}").await;
        assert!(
            o.is_error
                && o.content
                    .contains("read, write, edit, bash, grep, glob, list")
        );
        let o = t.call("read", "[1]").await;
        assert!(o.is_error && o.content.contains("not a JSON object"));
        let o = t.call("read", "{}").await;
        assert!(
            o.is_error && o.content.contains("missing field `path`"),
            "{}",
            o.content
        );
        // Arguments encoded twice are read.
        let o = t
            .call("list", &json!(json!({"path": "."}).to_string()).to_string())
            .await;
        assert!(!o.is_error, "{}", o.content);
        // Text mode has no edit tool.
        t.config.text_mode = true;
        assert!(t.specs().iter().all(|s| s.name != "edit"));
        let o = t.call("edit", "{}").await;
        assert!(o.is_error && o.content.contains("write your edits in your reply"));
    }

    #[tokio::test]
    async fn text_mode_applies_reply_edits() {
        let (dir, mut t) = setup(Format::SearchReplace);
        t.config.text_mode = true;
        put(&dir, "a.py", "x = 1\n");
        let reply = "Here:\n\na.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n";
        let o = t.apply_text(reply).unwrap();
        assert!(o.is_error, "not read yet: {}", o.content);
        call(&mut t, "read", json!({"path": "a.py"})).await;
        let o = t.apply_text(reply).unwrap();
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "x = 2\n");
        assert!(t.apply_text("no edits here").is_none());
    }

    #[tokio::test]
    async fn read_only_mode() {
        let (dir, mut t) = setup_with(Format::SearchReplace, Mode::ReadOnly);
        put(&dir, "a.txt", "a\n");
        assert!(
            !call(&mut t, "read", json!({"path": "a.txt"}))
                .await
                .is_error
        );
        assert!(!call(&mut t, "list", json!({})).await.is_error);
        for (tool, args) in [
            ("write", json!({"path": "b.txt", "content": "b"})),
            (
                "edit",
                json!({"path": "a.txt", "old_string": "a", "new_string": "b"}),
            ),
            ("bash", json!({"command": "ls"})),
        ] {
            let o = call(&mut t, tool, args).await;
            assert!(
                o.is_error && o.content.contains("read-only"),
                "{tool}: {}",
                o.content
            );
            assert_eq!(o.refusal, Some(Refusal::Denied(Denial::ReadOnly)));
        }
        assert_eq!(get(&dir, "a.txt"), "a\n");
        assert!(!dir.path().join("b.txt").exists());
    }

    #[tokio::test]
    async fn ask_without_a_terminal_fails_closed() {
        let (dir, mut t) = setup_with(Format::SearchReplace, Mode::Ask);
        put(&dir, "a.txt", "a\n");
        call(&mut t, "read", json!({"path": "a.txt"})).await;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(o.is_error && o.content.contains("--yes"), "{}", o.content);
        assert_eq!(o.refusal, Some(Refusal::NoTerminal));
        assert_eq!(get(&dir, "a.txt"), "a\n");
        let o = call(&mut t, "bash", json!({"command": "touch made"})).await;
        assert_eq!(o.refusal, Some(Refusal::NoTerminal));
        assert!(!dir.path().join("made").exists());
        // Read-only commands need no question.
        let o = call(&mut t, "bash", json!({"command": "ls"})).await;
        assert!(!o.is_error && o.content.contains("a.txt"), "{}", o.content);
    }

    #[tokio::test]
    async fn ask_shows_the_diff_and_obeys() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let perms = Permissions::new(Mode::Ask)
            .with(Effect::Deny, [Rule::parse("edit(secret/**)").unwrap()]);
        let mut t = Tools::new(
            ws,
            ToolsConfig::default(),
            perms,
            Box::new(Always(Answer::Yes, asked.clone())),
        );
        put(&dir, "a.txt", "a\n");
        put(&dir, "secret/k", "k\n");
        call(&mut t, "read", json!({"path": "a.txt"})).await;
        call(&mut t, "read", json!({"path": "secret/k"})).await;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        let q = asked.lock().unwrap().clone();
        assert_eq!(q.len(), 1);
        assert!(
            q[0].starts_with("edit a.txt\n") && q[0].contains("-a\n+b"),
            "{q:?}"
        );
        // Deny rules refuse without asking.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "secret/k", "old_string": "k", "new_string": "x"}),
        )
        .await;
        assert!(matches!(
            o.refusal,
            Some(Refusal::Denied(Denial::Rule { .. }))
        ));
        assert_eq!(asked.lock().unwrap().len(), 1);
        // A "no" writes nothing.
        t.prompter = Box::new(Always(Answer::No, asked.clone()));
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.txt", "old_string": "b", "new_string": "c"}),
        )
        .await;
        assert_eq!(o.refusal, Some(Refusal::Declined));
        assert_eq!(get(&dir, "a.txt"), "b\n");
    }

    #[tokio::test]
    async fn destructive_refused_in_auto_mode() {
        let (_dir, mut t) = setup(Format::SearchReplace);
        let o = call(&mut t, "bash", json!({"command": "sudo rm -rf /"})).await;
        assert!(
            o.is_error && o.content.contains("always refused"),
            "{}",
            o.content
        );
        assert!(matches!(
            o.refusal,
            Some(Refusal::Denied(Denial::Destructive { .. }))
        ));
    }

    #[test]
    fn tools_and_calls_are_send() {
        fn send<T: Send>(_: &T) {}
        let (_dir, mut t) = setup(Format::SearchReplace);
        send(&t);
        send(&t.call("bash", r#"{"command": "true"}"#));
    }

    #[test]
    fn words_snapshots() {
        insta::assert_snapshot!(
            words::not_read(&["a.py".to_owned()]),
            @"Edit refused: you have not read `a.py` in this session (or read it before the conversation was compacted). Read the file first, then make the edit against what you read. Nothing was written."
        );
        insta::assert_snapshot!(
            words::refused(Tool::Bash, "cargo test", &Refusal::NoTerminal),
            @"Permission needed: `bash` on `cargo test` needs the user's confirmation, and there is no terminal to ask on, so it was refused and nothing was done. (The user can allow it by running with --yes or --permission auto, or with an allow rule.)"
        );
        insta::assert_snapshot!(words::page(1, 2000, 5400), @"[lines 1-2000 of 5400; read on with offset=2001]");
    }
}
