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
//! A rule is `tool` or `tool(pattern)` ([`Rule::parse`]): `bash(git push*)`,
//! `edit(src/**)`, `read(.env)`. Path patterns are globs over the path
//! relative to the root (`*` stops at `/`, `**` crosses it); command patterns
//! are globs over the command, where `*` matches anything. An `edit` rule also
//! covers `write`: both change files.
//!
//! Commands are not matched as raw text. [`check`](Permissions::check) splits
//! a command line into its simple commands — at `;`, `&&`, `||`, `|`, `&`,
//! newlines, `$(…)`, backticks and the script of `sh -c`/`eval` — removes
//! quotes, and strips wrappers (`sudo`, `env`, `nohup`, `timeout`, `xargs`,
//! variable assignments, …). Deny and ask rules and the destructive list
//! refuse when *any* simple command matches; allow rules and the allowlist
//! allow only when *every* one does, so `git status; rm -rf x` is not allowed
//! by `bash(git status*)`. The splitting is a careful approximation of the
//! shell, not a parser: where it errs, it errs towards asking or refusing.
//!
//! Asking is the caller's: a [`Prompter`] answers, and without a terminal the
//! CLI passes [`NoTerminal`], so `ask` fails closed.
//!
//! Owns: rules, modes, the destructive list and the read-only allowlist. Does
//! not own: running tools or wording refusals for the model (the tools do).

use std::fmt;
use std::sync::LazyLock;

use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;

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

/// Why a rule could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// Not `tool` or `tool(pattern)`.
    #[error("`{rule}` is not a rule: write `tool` or `tool(pattern)`")]
    Syntax {
        /// The rule as written.
        rule: String,
    },
    /// The pattern is not a valid glob.
    #[error("`{rule}`: bad pattern: {why}")]
    Pattern {
        /// The rule as written.
        rule: String,
        /// What the glob parser said.
        why: String,
    },
}

/// One permission rule: a tool, and optionally a pattern its subject must match.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    pattern: Option<(String, GlobMatcher)>,
}

impl Rule {
    /// Reads `tool` or `tool(pattern)`. Tool names are compared without
    /// case (`Bash(git push*)` is `bash(git push*)`); a trailing `:*` in a
    /// command pattern (Claude Code's prefix form, `npm run test:*`) means `*`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let syntax = || RuleError::Syntax {
            rule: text.to_owned(),
        };
        let (tool, pattern) = match text.split_once('(') {
            None => (text, None),
            Some((tool, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(syntax)?.trim();
                (tool.trim(), (!inner.is_empty()).then_some(inner))
            }
        };
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if tool.is_empty() || !tool.chars().all(valid) {
            return Err(syntax());
        }
        let tool = tool.to_ascii_lowercase();
        let pattern = match pattern {
            None | Some("*") | Some("**") => None,
            Some(p) => {
                let command = tool == "bash";
                let p = match p.strip_suffix(":*") {
                    Some(prefix) if command => format!("{prefix}*"),
                    _ if command => p.to_owned(),
                    _ => normalize_path(p),
                };
                let glob = GlobBuilder::new(&p)
                    // In a command `*` crosses `/` (`git push*` covers `git push origin a/b`).
                    .literal_separator(!command)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| RuleError::Pattern {
                        rule: text.to_owned(),
                        why: e.kind().to_string(),
                    })?;
                Some((p, glob.compile_matcher()))
            }
        };
        Ok(Rule {
            text: text.to_owned(),
            tool,
            pattern,
        })
    }

    /// The tool it concerns (lower case).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Its pattern, when it has one.
    pub fn pattern(&self) -> Option<&str> {
        self.pattern.as_ref().map(|(p, _)| p.as_str())
    }

    /// Whether it concerns `tool` (an `edit` rule covers `write` too).
    fn covers(&self, tool: &str) -> bool {
        self.tool == tool || (self.tool == "edit" && tool == "write")
    }

    /// Whether `subject` (already normalised) matches its pattern.
    fn matches(&self, subject: &str) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|(_, m)| m.is_match(subject))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Rule, RuleError> {
        Rule::parse(s)
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
                .map(|r| r.text.clone())
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

/// A path as rules see it: `/` separators, no `./`, `a/../b` as `b`.
fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.trim().split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

// ---------------------------------------------------------------------------
// Commands

/// One simple command of a command line: its words, quotes removed, and the
/// files its output is redirected to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Simple {
    words: Vec<String>,
    writes: Vec<String>,
}

impl Simple {
    /// The command as rules and the destructive list see it: words joined by
    /// one space, then its output redirections.
    fn text(&self) -> String {
        let mut t = self.words.join(" ");
        for w in &self.writes {
            t.push_str(" > ");
            t.push_str(w);
        }
        t
    }
}

/// How deep `sh -c` and `eval` scripts are followed.
const MAX_DEPTH: usize = 3;

/// The simple commands of a command line, wrappers stripped, scripts of
/// `sh -c` and `eval` followed.
fn simple_commands(cmd: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    collect(cmd, 0, &mut out);
    out
}

fn collect(cmd: &str, depth: usize, out: &mut Vec<Simple>) {
    for mut s in lex(cmd) {
        strip_wrappers(&mut s.words);
        if s.words.is_empty() && s.writes.is_empty() {
            continue;
        }
        if depth < MAX_DEPTH {
            if let Some(script) = inner_script(&s.words) {
                collect(&script, depth + 1, out);
            }
        }
        out.push(s);
    }
}

/// The script a shell runs: `sh -c SCRIPT`, `bash -lc SCRIPT`, `eval WORDS`.
fn inner_script(words: &[String]) -> Option<String> {
    let first = words.first()?.as_str();
    if first == "eval" {
        return Some(words[1..].join(" "));
    }
    if !matches!(
        first,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "busybox"
    ) {
        return None;
    }
    let mut rest = words[1..].iter();
    if first == "busybox" {
        rest.next().filter(|w| w.as_str() == "sh")?;
    }
    let flag = |w: &&String| w.starts_with('-') && !w.starts_with("--") && w.contains('c');
    rest.by_ref().find(flag)?;
    rest.find(|w| !w.starts_with('-')).cloned()
}

/// Removes what runs another command (`sudo`, `env`, `nohup`, …), shell
/// keywords and leading variable assignments, and reduces the command to its
/// file name (`/bin/rm` → `rm`).
fn strip_wrappers(words: &mut Vec<String>) {
    static ASSIGNMENT: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*=").ok());
    let is_assignment = |w: &str| ASSIGNMENT.as_ref().is_some_and(|r| r.is_match(w));
    // Short options of the wrappers that take a value in the next word.
    let takes_value = |wrapper: &str, flag: &str| match wrapper {
        "sudo" => matches!(
            flag,
            "-u" | "-g" | "-C" | "-D" | "-h" | "-p" | "-r" | "-t" | "-U"
        ),
        "env" => matches!(flag, "-u" | "-C" | "-S"),
        "nice" => flag == "-n",
        "timeout" => matches!(flag, "-s" | "-k"),
        "xargs" => matches!(flag, "-n" | "-I" | "-P" | "-d" | "-L" | "-s" | "-E" | "-a"),
        "doas" => flag == "-u",
        "ionice" => matches!(flag, "-c" | "-n" | "-p"),
        "stdbuf" => matches!(flag, "-i" | "-o" | "-e"),
        _ => false,
    };
    let mut i = 0;
    while let Some(w) = words.get(i).map(String::as_str) {
        let name = w.rsplit('/').next().unwrap_or(w);
        match name {
            _ if is_assignment(w) => i += 1,
            "!" | "{" | "}" | "if" | "then" | "else" | "elif" | "fi" | "do" | "done" | "while"
            | "until" | "time" | "command" | "builtin" | "exec" | "nohup" => i += 1,
            "sudo" | "doas" | "env" | "nice" | "timeout" | "xargs" | "ionice" | "stdbuf" => {
                let wrapper = name.to_owned();
                i += 1;
                while let Some(w) = words.get(i) {
                    if w.starts_with('-') {
                        let skip = if takes_value(&wrapper, w) { 2 } else { 1 };
                        i += skip;
                    } else if wrapper == "env" && is_assignment(w) {
                        i += 1;
                    } else {
                        break;
                    }
                }
                // `timeout 10 cmd`: the duration goes too.
                if wrapper == "timeout" && i < words.len() {
                    i += 1;
                }
            }
            _ => break,
        }
    }
    words.drain(..i.min(words.len()));
    if let Some(first) = words.first_mut() {
        if let Some(name) = first.rsplit('/').next().filter(|n| !n.is_empty()) {
            *first = name.to_owned();
        }
    }
}

/// Where the lexer is.
enum Frame {
    /// Inside `"…"`.
    Double,
    /// Inside `$(…)`, `<(…)` or `>(…)`, with the `(` nesting inside it and
    /// the command it interrupted.
    Subst { depth: usize, outer: Builder },
    /// Inside backticks, with the command they interrupted.
    Backtick { outer: Builder },
}

/// The simple command being read.
#[derive(Default)]
struct Builder {
    simple: Simple,
    word: String,
    /// A word has started (an empty `""` is a word).
    started: bool,
    /// The next word is an output redirection's target (`Some(true)`) or an
    /// input's (`Some(false)`).
    redirect: Option<bool>,
}

impl Builder {
    fn end_word(&mut self) {
        if !self.started {
            return;
        }
        let word = std::mem::take(&mut self.word);
        self.started = false;
        match self.redirect.take() {
            Some(true) => self.simple.writes.push(word),
            Some(false) => {}
            None => self.simple.words.push(word),
        }
    }

    fn push(&mut self, c: char) {
        self.word.push(c);
        self.started = true;
    }

    /// Ends the simple command, adding it to `out`.
    fn end(&mut self, out: &mut Vec<Simple>) {
        self.end_word();
        self.redirect = None;
        let s = std::mem::take(&mut self.simple);
        if !s.words.is_empty() || !s.writes.is_empty() {
            out.push(s);
        }
    }
}

/// Splits a command line into simple commands, quotes removed. Output
/// redirected to `/dev/null` or to another descriptor is no write.
fn lex(cmd: &str) -> Vec<Simple> {
    let mut out = Vec::new();
    let mut b = Builder::default();
    let mut stack: Vec<Frame> = Vec::new();
    let chars: Vec<char> = cmd.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let in_double = matches!(stack.last(), Some(Frame::Double));
        // Substitutions are live everywhere but in single quotes.
        if (c == '$' || ((c == '<' || c == '>') && !in_double)) && next == Some('(') {
            // Inside quotes the word goes on after the substitution.
            if !in_double {
                b.end_word();
            }
            let outer = std::mem::take(&mut b);
            stack.push(Frame::Subst { depth: 0, outer });
            i += 2;
            continue;
        }
        if c == '`' {
            if let Some(Frame::Backtick { .. }) = stack.last() {
                if let Some(Frame::Backtick { outer }) = stack.pop() {
                    b.end(&mut out);
                    b = outer;
                }
            } else {
                if !in_double {
                    b.end_word();
                }
                let outer = std::mem::take(&mut b);
                stack.push(Frame::Backtick { outer });
            }
            i += 1;
            continue;
        }
        if in_double {
            match c {
                '"' => {
                    stack.pop();
                }
                '\\' if matches!(next, Some('"' | '\\' | '$' | '`' | '\n')) => {
                    if next != Some('\n') {
                        b.push(next.unwrap_or('\\'));
                    }
                    i += 1;
                }
                _ => b.push(c),
            }
            i += 1;
            continue;
        }
        match c {
            '\'' => {
                b.started = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    b.word.push(chars[i]);
                    i += 1;
                }
            }
            '"' => {
                b.started = true;
                stack.push(Frame::Double);
            }
            '\\' => {
                if let Some(n) = next {
                    if n != '\n' {
                        b.push(n);
                    }
                    i += 1;
                }
            }
            '#' if !b.started => {
                while i + 1 < chars.len() && chars[i + 1] != '\n' {
                    i += 1;
                }
            }
            ' ' | '\t' => b.end_word(),
            '(' => {
                if let Some(Frame::Subst { depth, .. }) = stack.last_mut() {
                    *depth += 1;
                }
                b.end(&mut out);
            }
            ')' => match stack.last_mut() {
                Some(Frame::Subst { depth, .. }) if *depth > 0 => {
                    *depth -= 1;
                    b.end(&mut out);
                }
                Some(Frame::Subst { .. }) => {
                    if let Some(Frame::Subst { outer, .. }) = stack.pop() {
                        b.end(&mut out);
                        b = outer;
                    }
                }
                _ => b.end(&mut out),
            },
            '&' if next == Some('>') => {
                // `&>file`: stdout and stderr to a file.
                b.end_word();
                i += 1;
                if chars.get(i + 1) == Some(&'>') {
                    i += 1;
                }
                b.redirect = Some(true);
            }
            ';' | '&' | '|' | '\n' => b.end(&mut out),
            '>' | '<' => {
                // A descriptor number right before the operator is not an argument.
                if b.started && !b.word.is_empty() && b.word.chars().all(|d| d.is_ascii_digit()) {
                    b.word.clear();
                    b.started = false;
                }
                b.end_word();
                let output = c == '>';
                while matches!(chars.get(i + 1), Some('>' | '<' | '|')) {
                    i += 1;
                }
                if chars.get(i + 1) == Some(&'&') {
                    // `2>&1`, `>&-`: duplicating a descriptor writes no file.
                    i += 1;
                    while matches!(chars.get(i + 1), Some(d) if d.is_ascii_digit() || *d == '-') {
                        i += 1;
                    }
                    if matches!(
                        chars.get(i + 1),
                        None | Some(' ' | '\t' | ';' | '|' | '&' | '\n' | ')')
                    ) {
                        i += 1;
                        continue;
                    }
                }
                b.redirect = Some(output);
            }
            _ => b.push(c),
        }
        i += 1;
    }
    // Unclosed quotes or substitutions: keep what was read.
    while let Some(frame) = stack.pop() {
        match frame {
            Frame::Double => {}
            Frame::Subst { outer, .. } | Frame::Backtick { outer } => {
                b.end(&mut out);
                b = outer;
            }
        }
    }
    b.end(&mut out);
    for s in &mut out {
        s.writes.retain(|w| w != "/dev/null");
    }
    out
}

// ---------------------------------------------------------------------------
// Destructive commands

/// Commands refused whatever the mode and the rules: `(what, patterns)`. A
/// simple command is refused when every pattern matches its text (words
/// joined by one space, wrappers such as `sudo` stripped), and none of the
/// `unless` patterns does. Kept short on purpose: it is a seatbelt for
/// catastrophes, not a sandbox. It cannot see through variables (`rm -rf
/// $DIR`), and `git push --force` without a branch is not caught (the branch
/// it pushes is not in the command).
pub const DESTRUCTIVE: &[(&str, &[&str], &[&str])] = &[
    (
        "rm -r of /, /*, ~ or $HOME",
        &[
            r"^rm( |$)",
            r" (-[A-Za-z]*[rR][A-Za-z]*|--recursive)( |$)",
            r" (/+|/+\*|~/?|~/\*|\$HOME/?|\$\{HOME\}/?|\$HOME/\*)( |$)",
        ],
        &[],
    ),
    (
        "mkfs (formats a filesystem)",
        &[r"^mkfs(\.[A-Za-z0-9]+)?( |$)"],
        &[],
    ),
    (
        "dd onto a device",
        &[r"^dd( |$)", r" of=/dev/"],
        &[r" of=/dev/(null|zero|stdout|stderr|fd/)"],
    ),
    (
        "shutdown or reboot",
        &[
            r"^(shutdown|reboot|halt|poweroff|systemctl (poweroff|reboot|halt|kexec)|init [06])( |$)",
        ],
        &[],
    ),
    (
        "recursive chmod or chown of / or ~",
        &[
            r"^(chmod|chown|chgrp)( |$)",
            r" (-[A-Za-z]*R[A-Za-z]*|--recursive)( |$)",
            r" (/+|/+\*|~/?|\$HOME/?)( |$)",
        ],
        &[],
    ),
    (
        "force push to main or master",
        &[
            r"^git( |$)",
            r" push( |$)",
            r" (--force|--force-with-lease|-[A-Za-z]*f[A-Za-z]*)(=[^ ]*)?( |$)",
            r" (\S+:)?(refs/heads/)?(main|master)( |$)",
        ],
        &[],
    ),
    (
        "force push to main or master",
        &[
            r"^git( |$)",
            r" push( |$)",
            r" \+(\S+:)?(refs/heads/)?(main|master)( |$)",
        ],
        &[],
    ),
    (
        "writing to a disk device",
        &[r" > /dev/(sd|hd|nvme|vd|xvd|mmcblk|disk)"],
        &[],
    ),
];

/// The fork bomb's name for the list.
const FORK_BOMB: &str = "fork bomb";

/// One [`DESTRUCTIVE`] entry, compiled: what, all of, none of.
type Compiled = (&'static str, Vec<Regex>, Vec<Regex>);

/// The destructive list, compiled.
static COMPILED: LazyLock<Vec<Compiled>> = LazyLock::new(|| {
    let compile = |ps: &[&str]| ps.iter().filter_map(|p| Regex::new(p).ok()).collect();
    DESTRUCTIVE
        .iter()
        .map(|(what, all, unless)| (*what, compile(all), compile(unless)))
        .collect()
});

/// What makes a command destructive, if anything.
fn destructive(raw: &str, commands: &[Simple]) -> Option<&'static str> {
    if fork_bomb(raw) {
        return Some(FORK_BOMB);
    }
    commands.iter().find_map(|s| {
        let text = s.text();
        COMPILED.iter().find_map(|(what, all, unless)| {
            let hit =
                all.iter().all(|r| r.is_match(&text)) && !unless.iter().any(|r| r.is_match(&text));
            hit.then_some(*what)
        })
    })
}

/// `name(){ name|name& };name` (the classic is `:(){ :|:& };:`), spaces aside.
fn fork_bomb(raw: &str) -> bool {
    let s: String = raw.chars().filter(|c| !c.is_whitespace()).collect();
    s.match_indices("(){").any(|(at, _)| {
        let name: String = s[..at]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        !name.is_empty() && s[at..].contains(&format!("{name}|{name}&"))
    })
}

// ---------------------------------------------------------------------------
// The read-only allowlist

/// Whether a simple command only reads: `ls`, `cat`, `grep`, `find` without
/// actions, `git status`/`diff`/`log`/`show`, …, with no output redirected to
/// a file.
fn read_only(s: &Simple) -> bool {
    if !s.writes.is_empty() {
        return false;
    }
    let Some(first) = s.words.first() else {
        return false;
    };
    let args = &s.words[1..];
    match first.as_str() {
        "ls" | "cat" | "pwd" | "head" | "tail" | "wc" | "grep" | "egrep" | "fgrep" | "echo"
        | "which" | "file" | "stat" | "tree" | "du" | "df" | "true" | "basename" | "dirname"
        | "realpath" | "cd" => true,
        // `--pre` runs a program on every file.
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "git" => {
            // Global options could configure a program to run (`-c diff.external=…`):
            // only `-C DIR` and `--no-pager` are accepted before the subcommand.
            let mut rest = args.iter();
            let sub = loop {
                match rest.next().map(String::as_str) {
                    Some("-C") => {
                        rest.next();
                    }
                    Some("--no-pager") => {}
                    other => break other,
                }
            };
            let safe_sub = matches!(
                sub,
                Some("status" | "diff" | "log" | "show" | "ls-files" | "rev-parse" | "blame")
            );
            safe_sub && !rest.any(|a| a.starts_with("--output") || a.starts_with("--ext-diff"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(list: &[&str]) -> Vec<Rule> {
        list.iter().map(|r| Rule::parse(r).unwrap()).collect()
    }

    fn words(cmd: &str) -> Vec<Vec<String>> {
        simple_commands(cmd).into_iter().map(|s| s.words).collect()
    }

    #[test]
    fn rules_parse() {
        let r = Rule::parse("Bash(git push*)").unwrap();
        assert_eq!((r.tool(), r.pattern()), ("bash", Some("git push*")));
        assert_eq!(r.to_string(), "Bash(git push*)");
        assert_eq!(Rule::parse("edit").unwrap().pattern(), None);
        assert_eq!(Rule::parse("bash(*)").unwrap().pattern(), None);
        assert_eq!(
            Rule::parse("bash(npm run test:*)").unwrap().pattern(),
            Some("npm run test*")
        );
        assert_eq!(
            Rule::parse("edit(./src/**)").unwrap().pattern(),
            Some("src/**")
        );
        for bad in ["", "bash(", "(x)", "ba sh", "bash(x)y"] {
            assert!(
                matches!(Rule::parse(bad), Err(RuleError::Syntax { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            Rule::parse("edit(src/[)"),
            Err(RuleError::Pattern { .. })
        ));
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
    fn ask_mode_allowlist() {
        let p = Permissions::new(Mode::Ask);
        for cmd in [
            "ls -la",
            "cat src/main.rs | head -20",
            "git status",
            "git diff HEAD~1 -- src",
            "git -C sub log --oneline",
            "grep -rn foo src 2>/dev/null",
            "rg foo 2>&1 | wc -l",
            "find . -name '*.rs'",
            "cd src && ls",
            "pwd",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Allow, "{cmd}");
        }
        for cmd in [
            "cargo test",
            "cat a > b",
            "echo hi >> notes.txt",
            "find . -name '*.o' -delete",
            "find . -exec rm {} ;",
            "git push",
            "git -c diff.external=x diff",
            "git diff --output=x",
            "rg --pre sh foo",
            "ls $(rm x)",
            "",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Ask, "{cmd}");
        }
        assert_eq!(p.check("edit", "a.rs"), Decision::Ask);
        assert_eq!(p.check("write", "a.rs"), Decision::Ask);
        assert_eq!(p.check("read", "a.rs"), Decision::Allow);
        // An ask rule asks even for a read, and even in auto mode.
        let p = Permissions::new(Mode::Auto).with(Effect::Ask, rules(&["read(.env)"]));
        assert_eq!(p.check("read", ".env"), Decision::Ask);
        assert_eq!(p.check("read", "src/.env"), Decision::Allow);
    }

    #[test]
    fn destructive_commands_are_refused_in_auto_mode() {
        let p = Permissions::new(Mode::Auto).with(Effect::Allow, rules(&["bash"]));
        for cmd in [
            "rm -rf /",
            "rm -rf /*",
            "rm -fr ~",
            "rm -r -f $HOME",
            "rm --recursive --force /",
            "rm / -rf",
            "sudo rm -rf --no-preserve-root /",
            "cd /tmp; rm -rf ~/",
            "ls && /bin/rm -Rf \"$HOME\"",
            "echo $(rm -rf /)",
            "bash -c 'rm -rf /'",
            "mkfs.ext4 /dev/sda1",
            "dd if=/dev/zero of=/dev/sda bs=1M",
            ":(){ :|:& };:",
            "bomb(){ bomb|bomb& }; bomb",
            "shutdown -h now",
            "sudo reboot",
            "chmod -R 777 /",
            "git push --force origin main",
            "git push -f origin master",
            "git push origin +main",
            "git push --force-with-lease origin HEAD:main",
            "cat image > /dev/sda",
        ] {
            assert!(
                matches!(
                    p.check("bash", cmd),
                    Decision::Deny(Denial::Destructive { .. })
                ),
                "{cmd}"
            );
        }
        for cmd in [
            "rm -rf target",
            "rm -rf ./build /tmp/x",
            "rm -f /",
            "echo 'rm -rf /'",
            "dd if=/dev/zero of=/dev/null count=1",
            "git push origin main",
            "git push --force origin feature",
            "chmod -R 755 src",
            "ls 2>/dev/null",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Allow, "{cmd}");
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
    fn lexing() {
        assert_eq!(
            words("a 'b c' \"d $(e f) g\" h\\ i | j"),
            [vec!["e", "f"], vec!["a", "b c", "d  g", "h i"], vec!["j"]]
        );
        assert_eq!(words("sudo -u root env A=1 nice -n 5 ls"), [vec!["ls"]]);
        assert_eq!(words("timeout 10 xargs -n 1 rm"), [vec!["rm"]]);
        assert_eq!(words("x # comment ; rm"), [vec!["x"]]);
        let s = &simple_commands("cmd 2>&1 >out.txt 2>/dev/null")[0];
        assert_eq!(
            (s.words.clone(), s.writes.clone()),
            (vec!["cmd".to_owned()], vec!["out.txt".to_owned()])
        );
        assert_eq!(simple_commands("cmd &>log")[0].writes, ["log"]);
        assert_eq!(words("diff <(ls a) <(ls b)").len(), 3);
        // Unclosed quotes keep what was read.
        assert_eq!(words("echo \"a b"), [vec!["echo", "a b"]]);
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
