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
//! 2. A matching **deny** rule refuses.
//! 3. **Read-only mode** refuses every tool but `read`, `grep`, `glob`, `list`.
//! 4. A matching **ask** rule asks (even in `auto` mode: the rule was written
//!    to be asked).
//! 5. A matching **allow** rule allows.
//! 6. Otherwise the mode decides: `auto` allows; `ask` allows the read tools
//!    and `bash` commands on the read-only allowlist, and asks for the rest.
//!
//! The parts live beside this file: the rule syntax and matching (`rules`),
//! splitting a command line into simple commands (`shell`), the
//! always-refused list (`destructive`) and the read-only allowlist (`allow`).
//! Deny and ask rules and the destructive list refuse when *any* simple
//! command matches; allow rules and the allowlist allow only when *every* one
//! does, so `git status; rm -rf x` is not allowed by `bash(git status*)`.
//!
//! Asking is the caller's: a [`Prompter`] answers, and without a terminal the
//! CLI passes [`NoTerminal`], so `ask` fails closed.
//!
//! Owns: modes, the order of the decision, and what a question and its
//! answer are. Does not own: running tools or wording refusals for the model
//! (the tools and the agent's words do).

mod allow;
mod destructive;
mod rules;
mod shell;

pub use destructive::DESTRUCTIVE;
pub use rules::{Rule, RuleError};

use allow::read_only;
use destructive::destructive;
use rules::normalize_path;
use shell::{Simple, simple_commands};

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

/// A mode and three rule lists.
#[derive(Debug, Clone, Default)]
pub struct Permissions {
    mode: Mode,
    deny: Vec<Rule>,
    ask: Vec<Rule>,
    allow: Vec<Rule>,
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

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether `tool` may run on `subject` (see the module docs for the order).
    pub fn check(&self, tool: &str, subject: &str) -> Decision {
        let tool = tool.to_ascii_lowercase();
        let tool = tool.as_str();
        // What rules are matched against: the simple commands, or the path.
        let (whole, parts) = if tool == "bash" {
            let commands = simple_commands(subject);
            if let Some(what) = destructive(subject, &commands) {
                return Decision::Deny(Denial::Destructive { what });
            }
            let parts: Vec<String> = commands.iter().map(Simple::text).collect();
            (parts.join(" ; "), Some((commands, parts)))
        } else if tool == "glob" {
            (subject.trim().to_owned(), None)
        } else {
            (normalize_path(subject), None)
        };
        let texts: Vec<&str> = match &parts {
            Some((_, parts)) => parts.iter().map(String::as_str).collect(),
            None => vec![whole.as_str()],
        };
        let any = |list: &[Rule]| {
            list.iter()
                .find(|r| {
                    r.covers(tool) && (r.matches(&whole) || texts.iter().any(|t| r.matches(t)))
                })
                .map(|r| r.to_string())
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
        // An empty command has no simple commands; it must not be allowed vacuously.
        let all = |list: &[Rule]| {
            !texts.is_empty()
                && texts
                    .iter()
                    .all(|t| list.iter().any(|r| r.covers(tool) && r.matches(t)))
        };
        if all(&self.allow) {
            return Decision::Allow;
        }
        match self.mode {
            Mode::Auto => Decision::Allow,
            _ if read_tool => Decision::Allow,
            _ => match &parts {
                Some((commands, _)) if !commands.is_empty() && commands.iter().all(read_only) => {
                    Decision::Allow
                }
                _ => Decision::Ask,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn rules(list: &[&str]) -> Vec<Rule> {
        list.iter().map(|r| Rule::parse(r).unwrap()).collect()
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
}
