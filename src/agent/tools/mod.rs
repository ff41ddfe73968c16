//! The agent's tools: `read`, `write`, `edit`, `bash`, `grep`, `glob`, `list`.
//!
//! [`Tools`] owns what the tools share: the [`Workspace`] every path goes
//! through (confinement), the chosen edit [`Format`](crate::Format), the
//! [`Permissions`] and the [`Prompter`] that answers their questions, and
//! the **read records**: for every file the model has read, its content hash
//! and content then. [`Tools::specs`] describes the tools to the model;
//! [`Tools::call`] runs one call and always returns a [`ToolOutcome`] — bad
//! JSON, an unknown tool, a refused path or a denied permission are results
//! the model reads (`is_error`), never a panic or an error that stops the loop.
//!
//! One job per file: this one holds the [`Tools`] type, the dispatch (one
//! line per tool) and the permission checks every tool goes through;
//! `files` does read, write and edit (read records, read-before-edit);
//! `search` does grep, glob and list; `process` runs bash (spawning, process
//! groups, output capture, kill) and `reap` finds and ends every process a
//! command started; `open` opens files for every tool (regular files only,
//! never blocking, bounded); `args` types the arguments leniently; `types`
//! holds the plain data the words module phrases; `agents` holds what the
//! agents of one run share (sub-agents' tools are made by [`Tools::child`]:
//! the same workspace, permissions and prompter, their own read records,
//! a lock on each file they edit). MCP servers' tools
//! (`mcp__SERVER__TOOL`) come from the shared [`McpHub`] when one is set
//! ([`Tools::with_mcp`]): their specs follow the built-in ones and their
//! calls go through the same permission check. A new tool is one
//! function in one of those files, one line of dispatch here, and its words.
//!
//! Owns: the tools' arguments and what they do. Does not own: the words the
//! model reads — descriptions, schemas, results, refusals — which live in
//! the agent's `words` module (the engine's own words come from
//! [`crate::feedback`]); the loop; or deciding what is allowed
//! ([`permissions`](super::permissions)).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use super::mcp::McpHub;
use super::permissions::{Answer, Decision, Permissions, Prompter, Question};
use super::types::ToolSpec;
use super::words;
use crate::workspace::{Workspace, WorkspaceError};
use crate::{Document, ParseError, feedback};

mod agents;
mod args;
mod files;
mod open;
mod process;
mod reap;
mod search;
pub(crate) mod types;

pub use reap::{adopt_orphans, end_descendants};
use types::Tool;
pub use types::{EditAttempt, EditEvent, Refusal, ToolOutcome, ToolsConfig};

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
    /// What the agents of this run share (a child's tools hold the same).
    shared: agents::Shared,
    /// The files this agent edits, held against the other agents.
    claims: agents::Claims,
    /// A sub-agent's tools: its id and the tools it may call (`None`: the
    /// top-level agent, every tool).
    child: Option<(String, Vec<String>)>,
    /// MCP servers' tools, shared (a child agent's tools clone the `Arc`).
    mcp: Option<Arc<McpHub>>,
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
    /// Tools over `ws`, allowed by `permissions` (rooted in `ws`, so path
    /// rules see where paths really lead), asking through `prompter`.
    pub fn new(
        ws: Workspace,
        config: ToolsConfig,
        permissions: Permissions,
        prompter: Box<dyn Prompter>,
    ) -> Tools {
        let shared = agents::Shared::default();
        Tools {
            permissions: permissions.rooted(ws.root()),
            ws,
            config,
            prompter,
            read: HashMap::new(),
            claims: shared.claims(None),
            shared,
            child: None,
            mcp: None,
        }
    }

    /// The tools of a sub-agent `agent` (`task-1`): the same workspace,
    /// configuration, permissions (so the same mode) and prompter, whose
    /// questions it asks one at a time with the others', each introduced by
    /// `who`; no read records; only the tools named in `names` (the caller
    /// checks they are this agent's own, and leaves out `task`). Its edits
    /// hold their files against the other agents until it is dropped. It
    /// never edits through its replies (no text mode): only through the
    /// tools it was given.
    pub fn child(&mut self, agent: &str, who: String, names: Vec<String>) -> Tools {
        let inner = match &self.shared.prompter {
            Some(p) => std::sync::Arc::clone(p),
            None => {
                let own =
                    std::mem::replace(&mut self.prompter, Box::new(super::permissions::NoTerminal));
                let p: agents::SharedPrompter = std::sync::Arc::new(std::sync::Mutex::new(own));
                self.prompter = Box::new(agents::Asker {
                    inner: std::sync::Arc::clone(&p),
                    who: None,
                });
                self.shared.prompter = Some(std::sync::Arc::clone(&p));
                p
            }
        };
        // A child edits only through the tools it was given: never through
        // edits written in its replies (text mode), which no call names.
        let mut config = self.config.clone();
        config.text_mode = false;
        Tools {
            ws: self.ws.clone(),
            config,
            permissions: self.permissions.clone(),
            prompter: Box::new(agents::Asker {
                inner,
                who: Some(who),
            }),
            read: HashMap::new(),
            claims: self.shared.claims(Some(agent.to_owned())),
            shared: self.shared.clone(),
            child: Some((agent.to_owned(), names)),
            mcp: self.mcp.clone(),
        }
    }

    /// The next sub-agent's id (`task-1`, `task-2`, … over the session).
    pub fn next_task(&self) -> String {
        self.shared.next_task()
    }

    /// The sub-agents' limits when these tools offer the `task` tool (the
    /// configuration enables it and this is not a sub-agent), else `None`.
    pub fn tasks(&self) -> Option<crate::agent::task::TaskConfig> {
        self.config.task.filter(|_| self.child.is_none())
    }

    /// Takes the files an edit writes for this agent, or refuses the edit
    /// naming the sub-agent that is editing one of them (only sub-agents
    /// run beside each other; the top-level agent takes nothing).
    fn claim(&self, paths: &[String]) -> Result<(), Box<ToolOutcome>> {
        let abs: Vec<PathBuf> = paths
            .iter()
            .filter_map(|p| self.ws.resolve(p).ok())
            .collect();
        self.claims.claim(&abs).map_err(|(path, other)| {
            Box::new(ToolOutcome::error(words::task::locked(
                &self.rel(&path),
                &other,
            )))
        })
    }

    /// The same tools, offering the hub's MCP tools too.
    pub fn with_mcp(mut self, hub: Arc<McpHub>) -> Tools {
        self.mcp = Some(hub);
        self
    }

    /// The MCP hub, when there is one.
    pub fn mcp(&self) -> Option<&Arc<McpHub>> {
        self.mcp.as_ref()
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

    /// The tools the model may call: all seven, without `edit` in text
    /// mode, then the MCP servers' tools, and `task` when [`Tools::tasks`]
    /// says so; a sub-agent's, only those it was given.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let c = &self.config;
        let mut specs: Vec<ToolSpec> = Tool::ALL
            .into_iter()
            .filter(|t| !(c.text_mode && *t == Tool::Edit))
            .map(|t| words::spec(t, c))
            .collect();
        if let Some(hub) = &self.mcp {
            specs.extend(hub.specs());
        }
        if let Some(tasks) = self.tasks() {
            let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
            specs.push(words::task::spec(tasks.max_turns, tasks.parallel, &names));
        }
        if let Some((_, names)) = &self.child {
            specs.retain(|s| names.contains(&s.name));
        }
        specs
    }

    /// Runs one tool call. `arguments` is the JSON text the model wrote.
    /// (`task` calls are the loop's: here `task` is an unknown tool.)
    pub async fn call(&mut self, name: &str, arguments: &str) -> ToolOutcome {
        let given = self
            .child
            .as_ref()
            .is_none_or(|(_, names)| names.iter().any(|n| n == name));
        if given
            && name.starts_with(super::mcp::PREFIX)
            && let Some(hub) = self.mcp.clone()
        {
            return self.mcp_call(&hub, name, arguments).await;
        }
        let tool = match Tool::from_name(name).filter(|_| given) {
            Some(Tool::Edit) if self.config.text_mode => {
                return ToolOutcome::error(words::no_edit_tool(self.config.format));
            }
            Some(t) => t,
            None => return ToolOutcome::error(words::unknown_tool(name, &self.tool_names())),
        };
        let value = match args::parse(arguments) {
            Ok(v) => v,
            Err(e) => return ToolOutcome::error(words::bad_arguments(tool, &e)),
        };
        // A call's arguments, typed for its tool; a mismatch is the result.
        macro_rules! typed {
            () => {
                match args::typed(tool, value) {
                    Ok(a) => a,
                    Err(o) => return *o,
                }
            };
        }
        match tool {
            Tool::Read => self.read(typed!()),
            Tool::Write => self.write(typed!()),
            Tool::Edit => match self.config.format.parse_tool_call(&value) {
                Ok(patch) => self.attempt(&patch),
                Err(e) => self.unparsed(e),
            },
            Tool::Bash => self.bash(typed!()).await,
            Tool::Grep => self.grep(typed!()),
            Tool::Glob => self.glob(typed!()),
            Tool::List => self.list(typed!()),
        }
    }

    /// An MCP tool's call: asked about (or allowed, or refused) by its
    /// name, then sent to the hub.
    async fn mcp_call(&mut self, hub: &McpHub, name: &str, arguments: &str) -> ToolOutcome {
        if hub.offers(name) {
            let refusal = match self.permissions.check(name, "") {
                Decision::Allow => None,
                Decision::Deny(d) => Some(Refusal::Denied(d)),
                Decision::Ask => {
                    let question = Question {
                        tool: name,
                        subject: arguments,
                        detail: "",
                    };
                    match self.prompter.confirm(&question) {
                        Answer::Yes => None,
                        Answer::No => Some(Refusal::Declined),
                        Answer::NoTerminal => Some(Refusal::NoTerminal),
                    }
                }
            };
            if let Some(refusal) = refusal {
                let mut content = words::mcp::refused(name, &refusal);
                if refusal == Refusal::Declined
                    && let Some(reason) = self.prompter.reason()
                {
                    content.push_str(&words::session::declined_because(&reason));
                }
                return ToolOutcome {
                    content,
                    is_error: true,
                    edit: None,
                    refusal: Some(refusal),
                    attempt: None,
                };
            }
        }
        let outcome = hub.call(name, arguments).await;
        ToolOutcome {
            is_error: outcome.is_error(),
            ..ToolOutcome::ok(outcome.content)
        }
    }

    /// Applies the edits a text-mode reply holds, with the edit tool's checks
    /// (permissions, read-before-edit). `None` when the reply holds no edits.
    pub fn apply_text(&mut self, reply: &str) -> Option<ToolOutcome> {
        match self.config.format.parse(reply) {
            Ok(patch) => Some(self.attempt(&patch)),
            Err(ParseError::NoEdits) => None,
            Err(e) => Some(self.unparsed(e)),
        }
    }

    /// Whether a text-mode reply holds edit syntax of the format (whole or
    /// not); nothing is applied.
    pub fn holds_edit(&self, reply: &str) -> bool {
        !matches!(self.config.format.parse(reply), Err(ParseError::NoEdits))
    }

    /// The result of a call (or text-mode edit) the loop did not run because
    /// the reply was cut off in it: an error saying `content`, and for the
    /// edit tool an [`EditAttempt::CutOff`] attempt.
    pub fn cut_off(&self, name: &str, content: String) -> ToolOutcome {
        ToolOutcome {
            attempt: (Tool::from_name(name) == Some(Tool::Edit)).then_some(EditAttempt::CutOff),
            ..ToolOutcome::error(content)
        }
    }

    /// Applies a parsed edit; its attempt is `Refused` unless the engine planned it.
    fn attempt(&mut self, patch: &crate::Patch) -> ToolOutcome {
        let mut outcome = self.apply(patch);
        if outcome.attempt.is_none() {
            outcome.attempt = Some(EditAttempt::Refused);
        }
        outcome
    }

    /// The outcome of an edit that could not be parsed.
    fn unparsed(&self, e: ParseError) -> ToolOutcome {
        ToolOutcome {
            attempt: Some(EditAttempt::Unparsed(e.clone())),
            ..ToolOutcome::error(feedback::parse_error(&e, Some(self.config.format.name())))
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
        let mut outcome = refuse(tool, subject, refusal);
        if matches!(outcome.refusal, Some(Refusal::Declined))
            && let Some(reason) = self.prompter.reason()
        {
            outcome
                .content
                .push_str(&words::session::declined_because(&reason));
        }
        Err(Box::new(outcome))
    }

    /// Checks and asks at once (for calls whose detail is known up front).
    fn gate(&mut self, tool: Tool, subject: &str, detail: &str) -> Result<(), Box<ToolOutcome>> {
        let decision = self.decide(tool, &[subject.to_owned()]);
        self.settle(decision, tool, subject, detail)
    }
}

/// The outcome of a call the permissions stopped.
fn refuse(tool: Tool, subject: &str, refusal: Refusal) -> ToolOutcome {
    ToolOutcome {
        content: words::refused(tool, subject, &refusal),
        is_error: true,
        edit: None,
        refusal: Some(refusal),
        attempt: None,
    }
}

#[cfg(test)]
mod tests {
    //! The tools' shared test helpers, and the tests of dispatch and permissions.

    use super::*;
    use crate::Format;
    use crate::agent::permissions::{Denial, Effect, Mode, NoTerminal, Rule};
    use serde_json::{Value, json};
    use std::fs;

    /// A prompter that answers the same each time and remembers the questions.
    pub(super) struct Always(Answer, std::sync::Arc<std::sync::Mutex<Vec<String>>>);

    impl Prompter for Always {
        fn confirm(&mut self, q: &Question<'_>) -> Answer {
            if let Ok(mut v) = self.1.lock() {
                v.push(format!("{} {}\n{}", q.tool, q.subject, q.detail));
            }
            self.0
        }
    }

    pub(super) fn setup_with(format: Format, mode: Mode) -> (tempfile::TempDir, Tools) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let config = ToolsConfig {
            format,
            ..ToolsConfig::default()
        };
        let tools = Tools::new(ws, config, Permissions::new(mode), Box::new(NoTerminal));
        (dir, tools)
    }

    pub(super) fn setup(format: Format) -> (tempfile::TempDir, Tools) {
        setup_with(format, Mode::Auto)
    }

    pub(super) fn put(dir: &tempfile::TempDir, rel: &str, text: &str) {
        let p = dir.path().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    pub(super) fn get(dir: &tempfile::TempDir, rel: &str) -> String {
        fs::read_to_string(dir.path().join(rel)).unwrap()
    }

    pub(super) async fn call(tools: &mut Tools, name: &str, args: Value) -> ToolOutcome {
        tools.call(name, &args.to_string()).await
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

    /// Issue 14: a sub-agent's tools are the ones it was given (never
    /// `task`), and its questions go through the parent's prompter, one at
    /// a time, naming it.
    #[tokio::test]
    async fn a_childs_tools_and_questions() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let config = ToolsConfig {
            task: Some(crate::agent::task::TaskConfig::default()),
            ..ToolsConfig::default()
        };
        let mut t = Tools::new(
            ws,
            config,
            Permissions::new(Mode::Ask),
            Box::new(Always(Answer::Yes, asked.clone())),
        );
        put(&dir, "a.txt", "a\n");
        assert!(t.specs().iter().any(|s| s.name == "task"));
        let mut child = t.child(
            "task-1",
            words::task::asked_by("task-1", "fix a"),
            vec!["read".to_owned(), "edit".to_owned()],
        );
        let names: Vec<String> = child.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(names, ["read", "edit"]);
        // Under a text-mode parent, a child's reply never edits.
        t.config.text_mode = true;
        let mut texty = t.child("task-9", String::new(), vec!["read".to_owned()]);
        t.config.text_mode = false;
        assert!(!texty.config().text_mode);
        let o = call(
            &mut texty,
            "edit",
            json!({"path": "a.txt", "old_string": "a", "new_string": "z"}),
        )
        .await;
        assert!(
            o.is_error && o.content.contains("There is no tool `edit`"),
            "{}",
            o.content
        );
        assert!(child.tasks().is_none());
        let o = call(&mut child, "bash", json!({"command": "ls"})).await;
        assert!(
            o.is_error && o.content.contains("There is no tool `bash`"),
            "{}",
            o.content
        );
        // Its own read records: the parent's read does not count for it.
        call(&mut t, "read", json!({"path": "a.txt"})).await;
        let edit = json!({"path": "a.txt", "old_string": "a", "new_string": "b"});
        let o = call(&mut child, "edit", edit.clone()).await;
        assert!(
            o.is_error && o.content.contains("not read"),
            "{}",
            o.content
        );
        call(&mut child, "read", json!({"path": "a.txt"})).await;
        let o = call(&mut child, "edit", edit).await;
        assert!(!o.is_error, "{}", o.content);
        let q = asked.lock().unwrap().clone();
        assert_eq!(q.len(), 1);
        assert!(
            q[0].starts_with("edit a.txt\n[asked by sub-agent task-1: fix a]\n"),
            "{q:?}"
        );
        // The parent still asks through the same prompter, unnamed.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.txt", "old_string": "a", "new_string": "c"}),
        )
        .await;
        assert!(o.is_error, "{}", o.content);
        put(&dir, "b.txt", "b\n");
        call(&mut t, "read", json!({"path": "b.txt"})).await;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "b.txt", "old_string": "b", "new_string": "c"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        let q = asked.lock().unwrap().clone();
        assert!(
            q[1].starts_with("edit b.txt\n-b") || q[1].starts_with("edit b.txt\n"),
            "{q:?}"
        );
        assert!(!q[1].contains("asked by"), "{q:?}");
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
