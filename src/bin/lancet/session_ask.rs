//! The session's questions in `ask` mode: the edit's diff (coloured) or the
//! command (whole) first, then four answers — yes, no (with an optional
//! reason the model reads), always in this session, always in this project.
//!
//! "Always" is a permission rule (`edit`, `bash(cargo test *)`): the tool,
//! or for a command its prefix (the program and its subcommand). It only
//! ever answers a question the permissions asked, so deny rules, the
//! destructive list and read-only mode still hold; and it never answers one
//! that an `ask` rule asked about a command the mode alone would allow (the
//! person wrote that rule to be asked). Project answers are kept in the
//! user's own `session.toml` beside `config.toml`, keyed by the project's
//! canonical root (as `trust.rs` keys trust), never in the repository.
//!
//! While a question waits, Ctrl-C (seen through the session's flag) answers
//! no, so an interrupted turn never runs what was being asked about.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lancet::agent::permissions::{
    Answer, Decision, Effect, Layout, Mode, Permissions, Prompter, Question, Rule, for_terminal,
};
use lancet::agent::session::words;

use crate::{markdown, style, trust};

/// The "always" answers given so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct Always {
    rules: Vec<Rule>,
}

impl Always {
    /// The rules kept for the project at `root` in the user's file.
    pub(crate) fn for_project(root: &Path) -> Always {
        let Some(file) = file() else {
            return Always::default();
        };
        let Ok(text) = std::fs::read_to_string(file) else {
            return Always::default();
        };
        Always {
            rules: project_rules(&text, root),
        }
    }

    /// Whether an "always" answer covers this question (see the module docs).
    fn covers(&self, root: &Path, q: &Question<'_>) -> bool {
        if self.rules.is_empty() {
            return false;
        }
        let bare = Permissions::new(Mode::Ask).rooted(root);
        let with = bare.clone().with(Effect::Allow, self.rules.iter().cloned());
        bare.check(q.tool, q.subject) != Decision::Allow
            && with.check(q.tool, q.subject) == Decision::Allow
    }
}

/// The user's file of project answers: `session.toml` beside `config.toml`.
pub(crate) fn file() -> Option<PathBuf> {
    trust::user_config().map(|c| c.with_file_name("session.toml"))
}

/// The rules of `text`'s `[[project]]` entries for `root`.
fn project_rules(text: &str, root: &Path) -> Vec<Rule> {
    #[derive(serde::Deserialize)]
    struct Entry {
        root: PathBuf,
        #[serde(default)]
        allow: Vec<String>,
    }
    #[derive(serde::Deserialize)]
    struct File {
        #[serde(default)]
        project: Vec<Entry>,
    }
    let Ok(file) = toml::from_str::<File>(text) else {
        return Vec::new();
    };
    file.project
        .into_iter()
        .filter(|e| e.root == root)
        .flat_map(|e| e.allow)
        .filter_map(|r| r.parse().ok())
        .collect()
}

/// Appends `rule` for `root` to the user's file (replaced atomically, 0600).
fn remember(path: &Path, root: &Path, rule: &str) -> std::io::Result<()> {
    let root = root.to_str().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "the project's path is not UTF-8",
        )
    })?;
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = target
        .parent()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no directory"))?;
    trust::create_private_dir(dir)?;
    let mut text = match std::fs::read_to_string(&target) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "[[project]]\nroot = {}\nallow = [{}]\n",
        toml::Value::String(root.to_owned()),
        toml::Value::String(rule.to_owned())
    ));
    let temp = dir.join(format!(".session.toml.{}", std::process::id()));
    let written =
        trust::write_private(&temp, text.as_bytes()).and_then(|()| std::fs::rename(&temp, &target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// What "always" would allow for this question: the tool, or for a command
/// its prefix (program and subcommand), as rules.
pub(crate) fn always_rules(tool: &str, subject: &str) -> Vec<String> {
    if tool != "bash" {
        return vec![tool.to_owned()];
    }
    let mut words = subject.split_whitespace();
    let mut prefix: Vec<&str> = words.next().into_iter().collect();
    if let Some(sub) = words.next()
        && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        && !sub.starts_with('-')
    {
        prefix.push(sub);
    }
    let prefix = prefix.join(" ");
    let plain = |s: &str| !s.contains(['*', '?', '[', ']', '{', '}', '(', ')', '\\']);
    if prefix.is_empty() || !plain(&prefix) || !plain(subject) {
        // Only this very command (patterns cannot say it): no "always".
        return Vec::new();
    }
    vec![format!("bash({prefix})"), format!("bash({prefix} *)")]
}

/// The diff of the last edit the person approved after seeing it in a
/// question (shared by the prompter, which sets it, and the session's
/// output, which then shows the applied edit in one line, not twice).
#[derive(Debug, Clone, Default)]
pub(crate) struct Approved(Arc<Mutex<Option<String>>>);

impl Approved {
    fn set(&self, diff: Option<&str>) {
        if let Ok(mut d) = self.0.lock() {
            *d = diff.map(str::to_owned);
        }
    }

    /// Whether `diff` is the one just approved (forgotten once asked).
    pub(crate) fn take_if_shown(&self, diff: &str) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|mut d| d.take())
            .is_some_and(|d| d.trim_end() == diff.trim_end())
    }
}

/// The session's prompter.
pub(crate) struct Asker {
    pub(crate) root: PathBuf,
    /// Shared with the session: its tools are rebuilt on `/mode`.
    pub(crate) session: Arc<Mutex<Always>>,
    pub(crate) project: Always,
    /// Set by Ctrl-C.
    pub(crate) cut: Arc<AtomicBool>,
    approved: Approved,
    reason: Option<String>,
}

impl Asker {
    pub(crate) fn new(
        root: PathBuf,
        session: Arc<Mutex<Always>>,
        cut: Arc<AtomicBool>,
        approved: Approved,
    ) -> Asker {
        let project = Always::for_project(&root);
        Asker {
            root,
            session,
            project,
            cut,
            approved,
            reason: None,
        }
    }

    fn allow_in_session(&self, rules: &[String]) {
        if let Ok(mut s) = self.session.lock() {
            s.rules.extend(rules.iter().filter_map(|r| r.parse().ok()));
        }
    }

    /// A line from the terminal, or `None` on Ctrl-C or end of input.
    fn line(&self, prompt: &str) -> Option<String> {
        let mut err = std::io::stderr();
        let _ = write!(err, "{prompt}");
        let _ = err.flush();
        loop {
            if self.cut.load(Ordering::SeqCst) {
                return None;
            }
            if ready() {
                break;
            }
        }
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim().to_owned()),
        }
    }
}

/// Whether stdin has a line to read (waits up to 100 ms, so Ctrl-C is seen).
#[cfg(unix)]
fn ready() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec::try_from(Duration::from_millis(100)).ok();
    matches!(poll(&mut fds, timeout.as_ref()), Ok(n) if n > 0)
}

#[cfg(not(unix))]
fn ready() -> bool {
    std::thread::sleep(Duration::from_millis(1));
    true
}

impl Prompter for Asker {
    fn confirm(&mut self, q: &Question<'_>) -> Answer {
        self.reason = None;
        let session = self.session.lock().is_ok_and(|s| s.covers(&self.root, q));
        if session || self.project.covers(&self.root, q) {
            self.approved.set(None);
            return Answer::Yes;
        }
        let answer = self.ask(q);
        let seen = matches!(answer, Answer::Yes) && q.tool != "bash";
        self.approved.set(seen.then_some(q.detail));
        answer
    }

    fn reason(&mut self) -> Option<String> {
        self.reason.take()
    }
}

impl Asker {
    /// Shows the edit's diff or the command and asks.
    fn ask(&mut self, q: &Question<'_>) -> Answer {
        let detail = q.detail.trim_end();
        let shown = if q.tool == "bash" {
            style::paint(
                style::NOTICE,
                &format!("$ {}", for_terminal(detail, Layout::Block)),
            )
        } else {
            markdown::diff(detail)
        };
        anstream::eprintln!("\n{}", shown.trim_end());
        let rules = always_rules(q.tool, q.subject);
        let shown_rule = rules
            .last()
            .cloned()
            .unwrap_or_else(|| "(this command only)".into());
        let question = words::session_question(q.tool, q.subject, &shown_rule);
        loop {
            let Some(answer) = self.line(&style::paint(style::NOTICE, &question)) else {
                return Answer::No;
            };
            match answer.to_ascii_lowercase().as_str() {
                "y" | "yes" => return Answer::Yes,
                "n" | "no" | "" => {
                    self.reason = self.line(words::SESSION_REASON).filter(|r| !r.is_empty());
                    return Answer::No;
                }
                "s" | "session" => {
                    self.allow_in_session(&rules);
                    return Answer::Yes;
                }
                "p" | "project" => {
                    self.allow_in_session(&rules);
                    match file() {
                        Some(f) => {
                            let kept = rules.iter().try_for_each(|r| remember(&f, &self.root, r));
                            let said = match kept {
                                Ok(()) => words::session_remembered(&shown_rule, &f),
                                Err(e) => words::session_not_remembered(&f, &e.to_string()),
                            };
                            anstream::eprintln!("{}", style::paint(style::NOTICE, &said));
                        }
                        None => anstream::eprintln!(
                            "{}",
                            style::paint(
                                style::NOTICE,
                                &words::session_not_remembered(Path::new("~"), "no HOME")
                            )
                        ),
                    }
                    return Answer::Yes;
                }
                _ => anstream::eprintln!("{}", words::SESSION_ANSWER_AGAIN),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_is_the_tool_or_the_commands_prefix() {
        assert_eq!(always_rules("edit", "a.rs"), ["edit"]);
        assert_eq!(
            always_rules("bash", "cargo test --lib x"),
            ["bash(cargo test)", "bash(cargo test *)"]
        );
        assert_eq!(always_rules("bash", "ls -la"), ["bash(ls)", "bash(ls *)"]);
        // A pattern character cannot be said in a rule: no "always".
        assert!(always_rules("bash", "rm *.o").is_empty());
    }

    #[test]
    fn always_covers_only_every_part_of_a_command() {
        let dir = tempfile::tempdir().unwrap();
        let always = Always {
            rules: vec![
                "bash(cargo test)".parse().unwrap(),
                "bash(cargo test *)".parse().unwrap(),
            ],
        };
        let q = |subject| Question {
            tool: "bash",
            subject,
            detail: "",
        };
        assert!(always.covers(dir.path(), &q("cargo test --lib")));
        assert!(!always.covers(dir.path(), &q("cargo test; curl x | sh")));
        assert!(!always.covers(dir.path(), &q("cargo build")));
    }

    #[test]
    fn project_answers_are_keyed_by_root() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("lancet").join("session.toml");
        remember(&f, Path::new("/p/one"), "edit").unwrap();
        remember(&f, Path::new("/p/two"), "bash(make)").unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        let one = project_rules(&text, Path::new("/p/one"));
        assert_eq!(one.len(), 1);
        assert_eq!(project_rules(&text, Path::new("/p/three")).len(), 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&f).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
