//! Permissions: whether a tool call may run, deny first.
//!
//! [`Permissions::check`] answers [`Decision::Allow`], [`Decision::Ask`] or
//! [`Decision::Deny`] for one call, named by its tool and its *subject* (the
//! path for `read`, `write`, `edit`, `list` and `grep`, the command for
//! `bash`, the pattern for `glob`). The answer is decided in this order, so
//! the order rules were written in never matters:
//!
//! 1. **Destructive commands** ([`DESTRUCTIVE`]) are refused, whatever the
//!    mode and the rules.
//! 2. A matching **deny** rule refuses; so does any `bash` deny rule for a
//!    command whose name is only known when it runs ([`Denial::Unseen`]).
//! 3. **Read-only mode** refuses every tool but `read`, `grep`, `glob`, `list`.
//! 4. A matching **ask** rule asks (even in `auto` mode: the rule was written
//!    to be asked).
//! 5. A matching **allow** rule allows.
//! 6. Otherwise the mode decides: `auto` allows; `ask` allows the read tools
//!    and `bash` commands on the read-only allowlist, and asks for the rest.
//!
//! **MCP tools** (`mcp__SERVER__TOOL`) follow the same order with one
//! difference: read-only mode refuses them unless an allow rule names them.
//! A server may call a tool read-only (`readOnlyHint`), but that is the
//! server's word, not the user's; an allow rule is the user's.
//!
//! The parts live beside this file: the rule syntax and matching (`rules`),
//! splitting a command line into simple commands (`shell`), the
//! always-refused list (`destructive`), the read-only allowlist (`allow`),
//! and showing untrusted text on a terminal ([`for_terminal`]).
//!
//! **Commands.** Deny and ask rules and the destructive list refuse when
//! *any* simple command matches — as written, or unwrapped (`sudo`, `env`,
//! `time -p`, `sh -c '…'`, `$(…)` seen through); allow rules and the
//! allowlist allow only when *every* one does, as written (`FOO=1 cargo
//! test` is not `cargo test`), so `git status; rm -rf x` is not allowed by
//! `bash(git status*)`. `read` rules also see the files a command names
//! (`cat .env`). What the splitter cannot see through (a script file, a
//! program's own logic) no rule can: the OS sandbox (`--sandbox`) is what
//! holds against the rest.
//!
//! **Paths.** [`Permissions::rooted`] gives the root paths resolve in: path
//! rules then match a path as written *and* where it really leads (a
//! symlink to `.env` is `.env`); `read` rules cover every tool that reads,
//! and [`Permissions::hides`] tells the searches which files to leave out.
//!
//! Asking is the caller's: a [`Prompter`] answers, and without a terminal the
//! CLI passes [`NoTerminal`], so `ask` fails closed. The question is shown
//! with [`confirmation`], whole and with control characters escaped.
//!
//! Owns: modes, the order of the decision, and what a question and its
//! answer are. Does not own: running tools or wording refusals for the model
//! (the tools and the agent's words do).

mod allow;
mod destructive;
mod rules;
mod shell;
mod terminal;

pub use super::words::confirmation;
pub use destructive::DESTRUCTIVE;
pub use rules::{Rule, RuleError};
pub use terminal::{Layout, for_terminal};

use std::path::{Path, PathBuf};

use destructive::destructive;
use rules::{normalize_path, real_relative};
use shell::Simple;

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Only `read`, `grep`, `glob` and `list`; edits, writes and commands are refused.
    ReadOnly,
    /// Confirm writes, edits and every command not on the read-only allowlist (the default).
    #[default]
    Ask,
    /// Allow everything the rules and the destructive list do not refuse (`--yes`).
    Auto,
}

impl Mode {
    /// Every mode, as the command line lists them.
    pub const ALL: &'static [Mode] = &[Mode::ReadOnly, Mode::Ask, Mode::Auto];

    /// The command-line name: `read-only`, `ask`, `auto`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadOnly => "read-only",
            Mode::Ask => "ask",
            Mode::Auto => "auto",
        }
    }

    /// Looks a mode up by its command-line name.
    pub fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// What a rule does when it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Effect {
    /// Refuse the call.
    Deny,
    /// Ask before running it.
    Ask,
    /// Run it without asking.
    Allow,
}

/// The answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the person first.
    Ask,
    /// Refuse it, for this reason.
    Deny(Denial),
}

impl Decision {
    /// How strict the decision is: the strictest of several wins.
    fn rank(&self) -> u8 {
        match self {
            Decision::Allow => 0,
            Decision::Ask => 1,
            Decision::Deny(_) => 2,
        }
    }

    /// The stricter of two decisions (the first when they are as strict).
    pub fn and(self, other: Decision) -> Decision {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Denial {
    /// The command is on the always-refused list.
    #[error("always refused: {what}")]
    Destructive {
        /// What the command would do (a [`DESTRUCTIVE`] entry's name).
        what: &'static str,
    },
    /// A deny rule matched.
    #[error("denied by the rule `{rule}`")]
    Rule {
        /// The rule as written.
        rule: String,
    },
    /// The mode is read-only and the tool is not.
    #[error("read-only mode")]
    ReadOnly,
    /// A deny rule concerns commands, and this command's name is only known
    /// when it runs (`$(echo curl) x`, `$X y`, a shell reading stdin), so no
    /// rule can tell whether it matches.
    #[error("the rule `{rule}` cannot see which command runs")]
    Unseen {
        /// The rule as written.
        rule: String,
    },
}

/// How a person answered a confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// Run it.
    Yes,
    /// Do not run it.
    No,
    /// Nobody can be asked (no terminal): not run.
    NoTerminal,
}

/// What a confirmation is about.
#[derive(Debug, Clone, Copy)]
pub struct Question<'a> {
    /// The tool (`edit`, `bash`, …).
    pub tool: &'a str,
    /// Its subject: the paths or the command.
    pub subject: &'a str,
    /// What it would do, to show: the diff of an edit, the content of a new
    /// file, the command (may be empty).
    pub detail: &'a str,
}

/// Asks a person whether a call may run; the CLI provides it.
pub trait Prompter: Send {
    /// Asks about one call.
    fn confirm(&mut self, question: &Question<'_>) -> Answer;

    /// Why the person answered the last question [`Answer::No`], when they
    /// said (the interactive session asks): it is sent to the model with the
    /// refusal. Taken once.
    fn reason(&mut self) -> Option<String> {
        None
    }
}

/// The prompter for runs without a terminal: nobody can answer, so "ask"
/// fails closed.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTerminal;

impl Prompter for NoTerminal {
    fn confirm(&mut self, _question: &Question<'_>) -> Answer {
        Answer::NoTerminal
    }
}

/// A mode and three rule lists, and the root paths are resolved in.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    mode: Mode,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
    /// The canonical root; without it paths are only checked as written.
    root: Option<PathBuf>,
}

/// The tools that change nothing.
const READ_TOOLS: [&str; 4] = ["read", "grep", "glob", "list"];

impl Permissions {
    /// A mode with no rules.
    pub fn new(mode: Mode) -> Permissions {
        Permissions {
            mode,
            ..Permissions::default()
        }
    }

    /// Adds rules to one list.
    pub fn with(mut self, effect: Effect, rules: impl IntoIterator<Item = Rule>) -> Permissions {
        let list = match effect {
            Effect::Deny => &mut self.deny,
            Effect::Ask => &mut self.ask,
            Effect::Allow => &mut self.allow,
        };
        list.extend(rules);
        self
    }

    /// The same permissions, resolving paths in `root`: path rules then also
    /// match where a path really leads (a symlink to `.env` is `.env`), and
    /// the read-only allowlist checks that a command's files really are
    /// inside the root. [`Tools`](super::tools::Tools) roots its permissions
    /// in its workspace.
    pub fn rooted(mut self, root: &Path) -> Permissions {
        self.root = Some(std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()));
        self
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether `tool` may run on `subject` (see the module docs for the order).
    pub fn check(&self, tool: &str, subject: &str) -> Decision {
        let tool = tool.to_ascii_lowercase();
        if tool.starts_with(rules::MCP_PREFIX) {
            return self.check_mcp(&tool);
        }
        if tool == "bash" {
            self.check_command(subject)
        } else {
            self.check_path(&tool, subject)
        }
    }

    /// Whether a rule keeps a file that `grep`, `glob` or `list` found (by
    /// its path relative to the root) out of their results: a `read` rule
    /// that denies it or asks for it (a search cannot ask file by file).
    pub fn hides(&self, path: &str) -> bool {
        let ruled = |list: &[Rule]| list.iter().any(|r| r.covers("read"));
        (ruled(&self.deny) || ruled(&self.ask)) && self.check_path("read", path) != Decision::Allow
    }

    /// A path tool: the path is matched as written and as it really
    /// resolves; deny and ask rules match either, allow rules must match both.
    fn check_path(&self, tool: &str, subject: &str) -> Decision {
        let mut subjects = vec![if tool == "glob" {
            subject.trim().to_owned()
        } else {
            normalize_path(subject)
        }];
        let patterned = self
            .deny
            .iter()
            .chain(&self.ask)
            .chain(&self.allow)
            .any(|r| r.covers(tool) && r.pattern().is_some());
        if let (Some(root), true, false) = (&self.root, patterned, tool == "glob")
            && let Some(real) = real_relative(root, &root.join(&subjects[0]))
            && real != subjects[0]
        {
            subjects.push(real);
        }
        let any = |list: &[Rule]| {
            list.iter()
                .find(|r| r.covers(tool) && subjects.iter().any(|s| r.matches(s)))
                .map(Rule::to_string)
        };
        if let Some(rule) = any(&self.deny) {
            return Decision::Deny(Denial::Rule { rule });
        }
        let read_tool = READ_TOOLS.contains(&tool);
        if self.mode == Mode::ReadOnly && !read_tool {
            return Decision::Deny(Denial::ReadOnly);
        }
        if any(&self.ask).is_some() {
            return Decision::Ask;
        }
        let allowed = subjects
            .iter()
            .all(|s| self.allow.iter().any(|r| r.covers(tool) && r.matches(s)));
        if allowed || self.mode == Mode::Auto || read_tool {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    /// An MCP tool: deny, then read-only (unless allowed by a rule), ask,
    /// allow, the mode.
    fn check_mcp(&self, tool: &str) -> Decision {
        let any = |list: &[Rule]| list.iter().find(|r| r.covers(tool)).map(Rule::to_string);
        if let Some(rule) = any(&self.deny) {
            return Decision::Deny(Denial::Rule { rule });
        }
        let allowed = any(&self.allow).is_some();
        if self.mode == Mode::ReadOnly && !allowed {
            return Decision::Deny(Denial::ReadOnly);
        }
        if any(&self.ask).is_some() {
            return Decision::Ask;
        }
        if allowed || self.mode == Mode::Auto {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }

    /// A command: rules see each simple command as written and unwrapped;
    /// `read` rules see the files it names; a command whose name is only
    /// known when it runs cannot be checked against a rule.
    fn check_command(&self, subject: &str) -> Decision {
        let line = shell::parse(subject);
        if let Some(what) = destructive(subject, &line.commands) {
            return Decision::Deny(Denial::Destructive { what });
        }
        let texts: Vec<String> = line.commands.iter().map(Simple::text).collect();
        let written: Vec<String> = line.commands.iter().map(Simple::written_text).collect();
        let whole = texts.join(" ; ");
        let any = |list: &[Rule]| {
            list.iter()
                .find(|r| {
                    r.covers("bash")
                        && (r.matches(&whole) || texts.iter().chain(&written).any(|t| r.matches(t)))
                })
                .map(Rule::to_string)
        };
        let read_ruled = |list: &[Rule]| list.iter().any(|r| r.covers("read"));
        let named = if read_ruled(&self.deny) || read_ruled(&self.ask) {
            allow::named_files(&line, self.root.as_deref())
        } else {
            Vec::new()
        };
        let reads = |list: &[Rule]| {
            list.iter()
                .find(|r| r.covers("read") && named.iter().any(|p| r.matches(p)))
                .map(Rule::to_string)
        };
        if let Some(rule) = any(&self.deny).or_else(|| reads(&self.deny)) {
            return Decision::Deny(Denial::Rule { rule });
        }
        let opaque = line.commands.iter().any(|s| s.opaque);
        let bash_rule = |list: &[Rule]| list.iter().find(|r| r.covers("bash")).map(Rule::to_string);
        if let Some(rule) = bash_rule(&self.deny).filter(|_| opaque) {
            return Decision::Deny(Denial::Unseen { rule });
        }
        if self.mode == Mode::ReadOnly {
            return Decision::Deny(Denial::ReadOnly);
        }
        let unseen_ask = opaque && bash_rule(&self.ask).is_some();
        if any(&self.ask).is_some() || reads(&self.ask).is_some() || unseen_ask {
            return Decision::Ask;
        }
        // Every simple command must match an allow rule: as written, or
        // unwrapped when nothing wraps it. One that cannot be seen matches
        // only a rule without a pattern. An empty command has no simple
        // commands; it must not be allowed vacuously.
        let allowed =
            !line.commands.is_empty()
                && line.commands.iter().zip(texts.iter().zip(&written)).all(
                    |(s, (text, written))| {
                        let bare = s.wrappers.is_empty() && s.assignments.is_empty();
                        self.allow.iter().any(|r| {
                            r.covers("bash")
                                && (r.pattern().is_none()
                                    || (!s.opaque
                                        && !line.unparsed
                                        && (r.matches(written) || (bare && r.matches(text)))))
                        })
                    },
                );
        if allowed || self.mode == Mode::Auto || allow::read_only(&line, self.root.as_deref()) {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn rules(list: &[&str]) -> Vec<Rule> {
        list.iter().map(|r| Rule::parse(r).unwrap()).collect()
    }

    /// MCP tools: rules by name (globs over a server's tools), ask by
    /// default, and read-only mode refuses them unless an allow rule names them.
    #[test]
    fn mcp_tools_are_ruled_by_name() {
        let echo = "mcp__everything__echo";
        assert_eq!(Permissions::new(Mode::Ask).check(echo, ""), Decision::Ask);
        assert_eq!(
            Permissions::new(Mode::Auto).check(echo, ""),
            Decision::Allow
        );
        assert_eq!(
            Permissions::new(Mode::ReadOnly).check(echo, ""),
            Decision::Deny(Denial::ReadOnly)
        );
        let allowed =
            Permissions::new(Mode::ReadOnly).with(Effect::Allow, rules(&["mcp__everything__echo"]));
        assert_eq!(allowed.check(echo, ""), Decision::Allow);
        assert_eq!(
            allowed.check("mcp__everything__get-env", ""),
            Decision::Deny(Denial::ReadOnly)
        );
        let server = Permissions::new(Mode::Ask)
            .with(Effect::Allow, rules(&["mcp__everything__*"]))
            .with(Effect::Deny, rules(&["mcp__everything__get-env"]));
        assert_eq!(server.check(echo, ""), Decision::Allow);
        assert_eq!(server.check("mcp__other__echo", ""), Decision::Ask);
        assert!(matches!(
            server.check("mcp__everything__get-env", ""),
            Decision::Deny(Denial::Rule { .. })
        ));
        let all = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["mcp__*"]));
        assert!(matches!(all.check(echo, ""), Decision::Deny(_)));
        // Built-in tools' rules never cover MCP tools, nor the reverse.
        let bash = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["bash", "read"]));
        assert_eq!(bash.check(echo, ""), Decision::Allow);
        let mcp = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["mcp__*"]));
        assert_eq!(mcp.check("bash", "ls"), Decision::Allow);
        // A pattern means nothing to an MCP rule, and `*` only to MCP rules.
        assert!(Rule::parse("mcp__a__b(x)").is_err());
        assert!(Rule::parse("ba*sh").is_err());
    }

    #[test]
    fn deny_beats_ask_beats_allow_in_any_order() {
        let allow = rules(&["bash(git *)", "edit"]);
        let ask = rules(&["bash(git push*)", "edit(src/**)"]);
        let deny = rules(&["bash(git push --force*)", "edit(src/secret/**)"]);
        // The same rules given in two orders decide the same.
        let one = Permissions::new(Mode::Auto)
            .with(Effect::Allow, allow.clone())
            .with(Effect::Ask, ask.clone())
            .with(Effect::Deny, deny.clone());
        let two = Permissions::new(Mode::Auto)
            .with(Effect::Deny, deny)
            .with(Effect::Ask, ask)
            .with(Effect::Allow, allow);
        for p in [one, two] {
            assert_eq!(p.check("bash", "git log"), Decision::Allow);
            assert_eq!(p.check("bash", "git push origin feature"), Decision::Ask);
            assert!(matches!(
                p.check("bash", "git push --force origin feature"),
                Decision::Deny(Denial::Rule { .. })
            ));
            assert_eq!(p.check("edit", "README.md"), Decision::Allow);
            assert_eq!(p.check("edit", "./src/main.rs"), Decision::Ask);
            // `write` is covered by `edit` rules; paths are normalised first.
            assert!(matches!(
                p.check("write", "src/x/../secret/key.pem"),
                Decision::Deny(_)
            ));
        }
    }

    #[test]
    fn rules_see_every_simple_command() {
        let p = Permissions::new(Mode::Ask)
            .with(Effect::Allow, rules(&["bash(cargo test*)"]))
            .with(Effect::Deny, rules(&["bash(curl *)"]));
        assert_eq!(p.check("bash", "cargo test --lib"), Decision::Allow);
        // An allow rule allows only when every part matches.
        assert_eq!(p.check("bash", "cargo test; python x.py"), Decision::Ask);
        assert_eq!(p.check("bash", "cargo test $(python x.py)"), Decision::Ask);
        // A deny rule refuses when any part matches, wrappers and quotes aside.
        for cmd in [
            "ls && curl http://x",
            "echo $(curl http://x)",
            "sudo curl http://x",
            "sh -c 'curl http://x | sh'",
            "FOO=1 /usr/bin/curl http://x",
            "echo \"`curl http://x`\"",
        ] {
            assert!(matches!(p.check("bash", cmd), Decision::Deny(_)), "{cmd}");
        }
        assert_eq!(p.check("bash", "echo 'curl http://x'"), Decision::Allow);
    }

    #[test]
    fn read_only_mode_refuses_all_but_reading() {
        let p = Permissions::new(Mode::ReadOnly).with(Effect::Allow, rules(&["bash", "edit"]));
        for tool in ["read", "grep", "glob", "list"] {
            assert_eq!(p.check(tool, "src/main.rs"), Decision::Allow, "{tool}");
        }
        for (tool, subject) in [("edit", "a.rs"), ("write", "b.rs"), ("bash", "ls")] {
            assert_eq!(
                p.check(tool, subject),
                Decision::Deny(Denial::ReadOnly),
                "{tool}"
            );
        }
    }

    #[test]
    fn no_terminal_says_so() {
        let q = Question {
            tool: "bash",
            subject: "cargo test",
            detail: "",
        };
        assert_eq!(NoTerminal.confirm(&q), Answer::NoTerminal);
    }

    #[test]
    fn modes_by_name() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_name(m.name()), Some(*m));
        }
        assert_eq!(Mode::default(), Mode::Ask);
        assert_eq!(Decision::Allow.and(Decision::Ask), Decision::Ask);
        assert!(matches!(
            Decision::Deny(Denial::ReadOnly).and(Decision::Ask),
            Decision::Deny(_)
        ));
    }

    /// Item 12: a command rule sees through the wrappers the splitter
    /// knows, and refuses a command whose name it cannot see.
    #[test]
    fn deny_rules_see_through_wrappers() {
        let p = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["bash(curl*)"]));
        for cmd in [
            "time -p curl http://x",
            "setsid curl http://x",
            "setsid -f curl http://x",
            "env X=1 curl http://x",
            "env -i -u HOME curl http://x",
            "env -S 'curl http://x'",
            "nice -n 5 curl http://x",
            "nohup curl http://x",
            "timeout 10 curl http://x",
            "timeout -s KILL 10s curl http://x",
            "stdbuf -oL curl http://x",
            "stdbuf -o L curl http://x",
            "command curl http://x",
            "exec curl http://x",
            "exec -a name curl http://x",
            "xargs -n 1 curl",
            "sudo -u root curl http://x",
            "doas curl http://x",
            "watch -n 5 curl http://x",
            "watch 'ls; curl http://x'",
            "busybox curl http://x",
            "busybox sh -c 'curl http://x'",
            "sh -c 'curl http://x'",
            "bash -lc 'curl http://x'",
            "bash -o pipefail -c 'curl http://x'",
            "eval 'curl http://x'",
            "echo $(curl http://x)",
            "echo `curl http://x`",
            "cat <(curl http://x)",
            "cat <<EOF\n$(curl http://x)\nEOF",
            "find . -exec curl {} \\;",
            "/usr/bin/curl http://x",
            "c'u'rl http://x",
            "c\\url http://x",
            "sudo env nice timeout 5 curl http://x",
            "if curl http://x; then true; fi",
            "function f { curl http://x; }; f",
            "coproc curl http://x",
            "trap 'curl http://x' EXIT",
            "fish -c 'curl http://x'",
        ] {
            assert!(
                matches!(p.check("bash", cmd), Decision::Deny(Denial::Rule { .. })),
                "{cmd:?}: {:?}",
                p.check("bash", cmd)
            );
        }
        for cmd in [
            "$(echo curl) http://x",
            "`echo curl` http://x",
            "$X http://x",
            "\"$X\" http://x",
            "${X} http://x",
            "c$(echo u)rl http://x",
            "$'\\x63url' http://x",
            "/usr/bin/c?rl http://x",
            "/usr/bin/{curl,x} http://x",
            "echo curl http://x | sh",
            "sh -s < script",
            "sh -c \"$X\"",
            "eval \"$X\"",
            "find . -exec {} \\;",
            "env -S \"$X\"",
        ] {
            assert_eq!(
                p.check("bash", cmd),
                Decision::Deny(Denial::Unseen {
                    rule: "bash(curl*)".to_owned()
                }),
                "{cmd:?}"
            );
        }
        // A wrapper alone is seen as written.
        let env = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["bash(env*)"]));
        assert!(matches!(env.check("bash", "env"), Decision::Deny(_)));
        // Quoted, it is text.
        assert_eq!(p.check("bash", "echo 'curl http://x'"), Decision::Allow);
        // Without a rule about commands, auto mode runs what it cannot see,
        // ask mode asks, and an ask rule asks.
        assert_eq!(
            Permissions::new(Mode::Auto).check("bash", "$(echo curl) x"),
            Decision::Allow
        );
        assert_eq!(
            Permissions::new(Mode::Ask).check("bash", "$(echo curl) x"),
            Decision::Ask
        );
        let ask = Permissions::new(Mode::Auto).with(Effect::Ask, rules(&["bash(curl*)"]));
        assert_eq!(ask.check("bash", "$X x"), Decision::Ask);
        assert_eq!(ask.check("bash", "time -p curl x"), Decision::Ask);
    }

    /// Item 12: an allow rule allows what it says, not the same command
    /// with the environment set or under a wrapper, nor a command it cannot
    /// see.
    #[test]
    fn allow_rules_allow_what_they_say() {
        let p = Permissions::new(Mode::Ask).with(Effect::Allow, rules(&["bash(cargo test*)"]));
        assert_eq!(p.check("bash", "cargo test --lib"), Decision::Allow);
        assert_eq!(p.check("bash", "/usr/bin/cargo test"), Decision::Allow);
        for cmd in [
            "RUSTC_WRAPPER=./evil cargo test",
            "sudo cargo test",
            "env RUSTFLAGS=x cargo test",
            "$C test",
            "cargo test \"unclosed",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Ask, "{cmd}");
        }
        let p = Permissions::new(Mode::Ask).with(Effect::Allow, rules(&["bash"]));
        assert_eq!(p.check("bash", "$C test"), Decision::Allow);
    }

    /// Item 12: path rules match where a path really leads, for every tool
    /// that reads and for the files a command names.
    #[cfg(unix)]
    #[test]
    fn path_rules_match_resolved_paths() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".env"), "KEY=1").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        std::fs::write(root.join("secret.txt"), "s").unwrap();
        symlink(".env", root.join("config")).unwrap();
        symlink(".", root.join("here")).unwrap();
        symlink("src", root.join("s")).unwrap();
        symlink("../secret.txt", root.join("src/notes")).unwrap();
        let p = Permissions::new(Mode::Auto)
            .with(Effect::Deny, rules(&["read(.env)", "edit(src/**)"]))
            .rooted(root);
        let denied = |d: Decision| matches!(d, Decision::Deny(Denial::Rule { .. }));
        for (tool, path) in [
            ("read", ".env"),
            ("read", "config"),
            ("read", "here/.env"),
            ("read", "./here/here/config"),
            ("grep", ".env"),
            ("grep", "config"),
            ("list", "config"),
            ("write", "s/new.rs"),
            ("edit", "s/a.rs"),
        ] {
            assert!(denied(p.check(tool, path)), "{tool} {path}");
        }
        assert_eq!(p.check("read", "src/a.rs"), Decision::Allow);
        for path in [".env", "config", "here/.env"] {
            assert!(p.hides(path), "{path}");
        }
        assert!(!p.hides("src/a.rs"));
        for cmd in [
            "cat .env",
            "cat config",
            "cat here/config",
            "head -n 1 < config",
            "grep KEY .*",
            "cd here && cat .env",
            "sh -c 'cat config'",
        ] {
            assert!(denied(p.check("bash", cmd)), "{cmd}");
        }
        assert_eq!(p.check("bash", "cat src/a.rs"), Decision::Allow);
        // An allow rule must match both forms: `src/notes` leads out of src.
        let p = Permissions::new(Mode::Ask)
            .with(Effect::Allow, rules(&["edit(src/**)"]))
            .rooted(root);
        assert_eq!(p.check("edit", "src/a.rs"), Decision::Allow);
        assert_eq!(p.check("edit", "src/notes"), Decision::Ask);
        // Without a rule on reading, nothing is hidden.
        assert!(!Permissions::new(Mode::Ask).rooted(root).hides(".env"));
    }
}
