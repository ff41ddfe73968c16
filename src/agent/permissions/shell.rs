//! Splitting a command line into simple commands, the way rules see them.
//!
//! Commands are not matched as raw text. [`parse`] splits a command line into
//! its simple commands — at `;`, `&&`, `||`, `|`, `&`, newlines, `$(…)`,
//! backticks, `<(…)`/`>(…)`, here-documents, and the scripts of `sh -c`,
//! `eval`, `env -S`, `watch` and `find -exec` — and yields for each what the
//! rules and the allowlist need: its leading **assignments** (`VAR=value`),
//! the **wrappers** it runs under (`sudo`, `env`, `time -p`, `timeout 5`,
//! `xargs`, …), its **words** with quotes removed, what the shell works out
//! in each word only when it runs (variables, substitutions, `~`, patterns: a
//! [`Mark`]), its **redirections** with their operator, and how many
//! **substitutions** it holds. A command whose name is only known when it
//! runs (`$(echo curl) x`, `$X y`, `/bin/c?rl`, a shell reading its script
//! from stdin) is **opaque**: no rule can tell what it is.
//!
//! This is a careful approximation of the shell, not the shell. Where it is
//! unsure it says so ([`Line::unparsed`], [`Simple::opaque`]) and its callers
//! then ask or refuse, never allow.
//!
//! Owns: the lexing and the unwrapping. Does not own: what a command may do
//! (the rules, the destructive list and the allowlist decide that).

/// What the shell works out in a word only when it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Mark {
    /// A parameter, command, arithmetic or ANSI-C expansion: `$X`, `${X}`,
    /// `$(…)`, backticks, `$'…'`.
    pub(super) expands: bool,
    /// An unquoted `~` that the shell replaces by a home directory.
    pub(super) tilde: bool,
    /// An unquoted pattern: `*`, `?`, `[…]`.
    pub(super) pattern: bool,
    /// An unquoted brace expansion (`{a,b}`, `{1..3}`): one word becomes several.
    pub(super) brace: bool,
    /// Some of it was quoted or escaped.
    pub(super) quoted: bool,
}

/// A redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// `<`, and `<&word` when the word is no descriptor.
    In,
    /// `>` and `>|`.
    Out,
    /// `>>`.
    Append,
    /// `<>`: opened for reading and writing.
    ReadWrite,
    /// `&>`, and `>&word` when the word is no descriptor.
    Both,
    /// `&>>`.
    BothAppend,
    /// `<&N`, `<&-`: another descriptor, no file.
    DupIn,
    /// `>&N`, `>&-`: another descriptor, no file.
    DupOut,
    /// `<<` (`<<-` strips leading tabs): a here-document.
    HereDoc {
        /// `<<-`.
        strip_tabs: bool,
    },
    /// `<<<`: a here-string.
    HereString,
}

impl Op {
    /// Whether the target is a file opened for writing.
    pub(super) fn writes(self) -> bool {
        matches!(
            self,
            Op::Out | Op::Append | Op::ReadWrite | Op::Both | Op::BothAppend
        )
    }

    /// Whether the target is a file opened for reading.
    pub(super) fn reads(self) -> bool {
        matches!(self, Op::In | Op::ReadWrite)
    }
}

/// One redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Redirection {
    /// The descriptor written before the operator (`2>`), if any.
    pub(super) fd: Option<u32>,
    /// The operator.
    pub(super) op: Op,
    /// Its target: a file, a descriptor, or a here-document's delimiter.
    pub(super) target: String,
    /// What the shell works out in the target.
    pub(super) mark: Mark,
}

/// One simple command of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Simple {
    /// `VAR=value` words before the command, and those `env` or `sudo` set.
    pub(super) assignments: Vec<String>,
    /// The wrappers it runs under, by name (`sudo`, `env`, `timeout`, …).
    pub(super) wrappers: Vec<String>,
    /// Its words: quotes removed, wrappers stripped, the name reduced to its
    /// file name (`/bin/rm` → `rm`). A substitution adds nothing to the word
    /// it is in (its commands are simple commands of their own); a variable
    /// stays as written (`$HOME`).
    pub(super) words: Vec<String>,
    /// What each word holds, word for word.
    pub(super) marks: Vec<Mark>,
    /// Its redirections, in order.
    pub(super) redirections: Vec<Redirection>,
    /// The files its output goes to (`>`, `>>`, `>|`, `<>`, `&>`, `>&file`),
    /// `/dev/null` aside.
    pub(super) writes: Vec<String>,
    /// How many `$(…)`, backticks, `<(…)` and `>(…)` it holds, here-document
    /// bodies included.
    pub(super) substitutions: usize,
    /// Its name is only known when it runs: no rule can tell what it is.
    pub(super) opaque: bool,
    /// Its words before unwrapping: assignments, wrappers and their options.
    pub(super) written: Vec<String>,
}

impl Simple {
    /// The command as rules and the destructive list see it: words joined by
    /// one space, then its output redirections.
    pub(super) fn text(&self) -> String {
        with_writes(self.words.join(" "), &self.writes)
    }

    /// The command as written, assignments and wrappers included.
    pub(super) fn written_text(&self) -> String {
        with_writes(self.written.join(" "), &self.writes)
    }

    /// Its name, when it has one.
    pub(super) fn name(&self) -> Option<&str> {
        self.words.first().map(String::as_str)
    }
}

fn with_writes(mut t: String, writes: &[String]) -> String {
    for w in writes {
        t.push_str(" > ");
        t.push_str(w);
    }
    t
}

/// A command line, split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Line {
    /// Its simple commands, those inside substitutions and scripts first.
    pub(super) commands: Vec<Simple>,
    /// Something in it was not understood: an unclosed quote, substitution
    /// or here-document, an operator without its target, a control
    /// character, scripts nested too deep.
    pub(super) unparsed: bool,
}

/// How deep `sh -c`, `eval` and `find -exec` are followed.
const MAX_DEPTH: usize = 3;

/// Splits a command line into its simple commands, wrappers stripped,
/// scripts followed.
pub(super) fn parse(cmd: &str) -> Line {
    let mut line = Line::default();
    collect(cmd, 0, &mut line);
    line
}

/// The simple commands of a command line.
#[cfg(test)]
pub(super) fn simple_commands(cmd: &str) -> Vec<Simple> {
    parse(cmd).commands
}

fn collect(cmd: &str, depth: usize, line: &mut Line) {
    let mut lexer = Lexer::new(cmd);
    lexer.run(false);
    line.unparsed |= lexer.unparsed;
    for s in lexer.out {
        finish(s, depth, line);
    }
}

/// Unwraps one lexed command, follows what it runs, and adds it to the line.
fn finish(mut s: Simple, depth: usize, line: &mut Line) {
    let split = unwrap(&mut s);
    for inner in nested(&s, split) {
        match inner {
            Nested::Script(script) if depth < MAX_DEPTH => collect(&script, depth + 1, line),
            Nested::Argv(words, marks) if depth < MAX_DEPTH => {
                let inner = Simple {
                    written: words.clone(),
                    words,
                    marks,
                    ..Simple::default()
                };
                finish(inner, depth + 1, line);
            }
            Nested::Unseen => s.opaque = true,
            // Too deep to follow: as good as unseen.
            _ => {
                s.opaque = true;
                line.unparsed = true;
            }
        }
    }
    // A wrapper alone (`env`, `sudo`) is kept: rules see it as written.
    let empty = s.written.is_empty() && s.redirections.is_empty();
    if !empty || s.opaque {
        line.commands.push(s);
    }
}

/// What a command runs besides itself.
enum Nested {
    /// A script: `sh -c SCRIPT`, `eval WORDS`, `env -S STRING`, `watch CMD`.
    Script(String),
    /// An argument vector: `find -exec CMD ;`.
    Argv(Vec<String>, Vec<Mark>),
    /// Something it runs that cannot be seen: a script computed when it runs,
    /// or read from stdin.
    Unseen,
}

/// The shells whose `-c` script is followed.
const SHELLS: [&str; 8] = ["sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"];

fn nested(s: &Simple, split: Option<(String, Mark)>) -> Vec<Nested> {
    let script = |text: String, mark: Mark| {
        if mark.expands {
            Nested::Unseen
        } else {
            Nested::Script(text)
        }
    };
    let mut out = Vec::new();
    if let Some((text, mark)) = split {
        out.push(script(text, mark));
    }
    let any_expands = |marks: &[Mark]| Mark {
        expands: marks.iter().any(|m| m.expands),
        ..Mark::default()
    };
    if s.wrappers.last().is_some_and(|w| w == "watch") && !s.words.is_empty() {
        // `watch` runs its words, as written, with `sh -c`.
        let words = &s.written[s.written.len().saturating_sub(s.words.len())..];
        out.push(script(words.join(" "), any_expands(&s.marks)));
    }
    let Some(name) = s.name() else {
        return out;
    };
    match name {
        "eval" => out.push(script(s.words[1..].join(" "), any_expands(&s.marks[1..]))),
        // `trap SCRIPT SIGNAL…` runs the script later.
        "trap" => {
            if let Some(i) = (1..s.words.len()).find(|&i| !s.words[i].starts_with('-')) {
                out.push(script(s.words[i].clone(), s.marks[i]));
            }
        }
        _ if SHELLS.contains(&name) => out.extend(shell_script(&s.words, &s.marks)),
        "find" => {
            let mut i = 1;
            while i < s.words.len() {
                if matches!(s.words[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let start = i + 1;
                    let end = s.words[start..]
                        .iter()
                        .position(|w| w == ";" || w == "+")
                        .map_or(s.words.len(), |p| start + p);
                    let words = s.words[start..end].to_vec();
                    // `-exec {} ;` runs whatever file was found.
                    if words.first().is_some_and(|w| w.contains("{}")) {
                        out.push(Nested::Unseen);
                    } else {
                        out.push(Nested::Argv(words, s.marks[start..end].to_vec()));
                    }
                    i = end;
                }
                i += 1;
            }
        }
        _ => {}
    }
    out
}

/// What a shell runs: its `-c` script; nothing seen for a script file (like
/// any program's own input); unseen when it reads its script from stdin.
fn shell_script(words: &[String], marks: &[Mark]) -> Option<Nested> {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        if w == "--" || w == "-" {
            i += 1;
            break;
        }
        let short = (w.starts_with('-') || w.starts_with('+')) && !w.starts_with("--");
        if short && w.contains('c') {
            let script = (i + 1..words.len()).find(|&j| !words[j].starts_with('-'));
            return Some(match script {
                Some(j) if !marks[j].expands => Nested::Script(words[j].clone()),
                _ => Nested::Unseen,
            });
        }
        if short && w.contains('s') {
            return Some(Nested::Unseen);
        }
        if !w.starts_with('-') && !w.starts_with('+') {
            break;
        }
        let takes_value = matches!(
            w.as_str(),
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file"
        );
        i += if takes_value { 2 } else { 1 };
    }
    (i >= words.len()).then_some(Nested::Unseen)
}

/// A command that runs another: the options that take a value in the next
/// word, how many words follow the options before the command, and whether
/// `VAR=value` words may come among them.
struct Wrapper {
    short: &'static [&'static str],
    long: &'static [&'static str],
    positional: usize,
    assignments: bool,
}

fn wrapper(name: &str) -> Option<Wrapper> {
    let w = |short, long| Wrapper {
        short,
        long,
        positional: 0,
        assignments: false,
    };
    Some(match name {
        "sudo" => Wrapper {
            assignments: true,
            ..w(
                &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"],
                &[
                    "--user",
                    "--group",
                    "--close-from",
                    "--chdir",
                    "--host",
                    "--prompt",
                    "--role",
                    "--type",
                    "--other-user",
                    "--command-timeout",
                ],
            )
        },
        "env" => Wrapper {
            assignments: true,
            ..w(&["-u", "-C"], &["--unset", "--chdir"])
        },
        "timeout" => Wrapper {
            positional: 1,
            ..w(&["-s", "-k"], &["--signal", "--kill-after"])
        },
        "doas" => w(&["-u", "-C"], &[]),
        "nice" => w(&["-n"], &["--adjustment"]),
        "xargs" => w(
            &["-n", "-I", "-P", "-d", "-L", "-s", "-E", "-a"],
            &[
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--max-lines",
                "--max-chars",
                "--arg-file",
                "--eof",
            ],
        ),
        "ionice" => w(&["-c", "-n", "-p", "-P", "-u"], &["--class", "--classdata"]),
        "stdbuf" => w(&["-i", "-o", "-e"], &["--input", "--output", "--error"]),
        "time" => w(&["-f", "-o"], &["--format", "--output"]),
        "exec" => w(&["-a"], &[]),
        "watch" => w(&["-n", "-q"], &["--interval", "--equexit"]),
        "setsid" | "nohup" | "command" | "builtin" | "busybox" | "coproc" => w(&[], &[]),
        _ => return None,
    })
}

/// Shell keywords that may stand before a command.
const KEYWORDS: [&str; 12] = [
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
];

/// `NAME=value` (or `NAME+=value`).
fn is_assignment(w: &str) -> bool {
    let Some(eq) = w.find('=') else {
        return false;
    };
    let name = w[..eq].strip_suffix('+').unwrap_or(&w[..eq]);
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The last path component (`/bin/rm` → `rm`).
fn file_name(w: &str) -> &str {
    w.rsplit('/').next().filter(|n| !n.is_empty()).unwrap_or(w)
}

/// Strips keywords, leading assignments and wrappers off a simple command,
/// recording them, and reduces its name to a file name. Returns the script
/// given to `env -S`, if any.
fn unwrap(s: &mut Simple) -> Option<(String, Mark)> {
    s.written = s.words.clone();
    let mut split = None;
    let mut i = 0;
    while let Some(word) = s.words.get(i) {
        let name = file_name(word);
        if is_assignment(word) {
            s.assignments.push(word.clone());
            i += 1;
            continue;
        }
        if KEYWORDS.contains(&name) {
            i += 1;
            continue;
        }
        // `function NAME { …`: the body's first command follows.
        if name == "function" {
            i += 2;
            continue;
        }
        let Some(spec) = wrapper(name) else {
            break;
        };
        let env = name == "env";
        s.wrappers.push(name.to_owned());
        i += 1;
        while let Some(w) = s.words.get(i) {
            if w == "--" {
                i += 1;
                break;
            }
            if spec.assignments && is_assignment(w) {
                s.assignments.push(w.clone());
                i += 1;
                continue;
            }
            if !w.starts_with('-') || w == "-" {
                break;
            }
            // `env -S STRING` splits STRING into a command of its own.
            if env && (w == "-S" || w == "--split-string") {
                split = s.words.get(i + 1).cloned().zip(s.marks.get(i + 1).copied());
                i += 2;
                continue;
            }
            if env {
                let value = w
                    .strip_prefix("--split-string=")
                    .or_else(|| w.strip_prefix("-S"));
                if let Some(value) = value {
                    split = Some((value.to_owned(), s.marks[i]));
                    i += 1;
                    continue;
                }
            }
            let takes_value = spec.short.contains(&w.as_str()) || spec.long.contains(&w.as_str());
            i += if takes_value { 2 } else { 1 };
        }
        i += spec.positional;
    }
    let i = i.min(s.words.len());
    s.words.drain(..i);
    s.marks.drain(..i);
    if let Some(first) = s.words.first_mut() {
        *first = file_name(first).to_owned();
    }
    if let Some(m) = s.marks.first() {
        s.opaque |= m.expands || m.pattern || m.brace;
    }
    split
}

// ---------------------------------------------------------------------------
// The lexer

/// Where the lexer is.
enum Frame {
    /// Inside `"…"`.
    Double,
    /// A here-document's body: like `"…"`, but `"` is an ordinary character.
    Body,
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
    mark: Mark,
    /// A word has started (an empty `""` is a word).
    started: bool,
    /// Unquoted `*` or `?`, `[`, `{` in the word: whether they make a
    /// pattern is decided when the word ends.
    star: bool,
    bracket: bool,
    brace: bool,
    /// The next word is the target of this redirection.
    redirect: Option<(Option<u32>, Op)>,
    /// Here-documents this command opened: delimiter, `<<-`, literal body.
    heredocs: Vec<(String, bool, bool)>,
}

impl Builder {
    fn push(&mut self, c: char) {
        self.word.push(c);
        self.started = true;
    }

    fn end_word(&mut self) {
        if !self.started {
            return;
        }
        let word = std::mem::take(&mut self.word);
        let mut mark = std::mem::take(&mut self.mark);
        mark.pattern = self.star || (self.bracket && word.contains(']'));
        mark.brace = self.brace && (word.contains(',') || word.contains(".."));
        (self.started, self.star, self.bracket, self.brace) = (false, false, false, false);
        let Some((fd, op)) = self.redirect.take() else {
            self.simple.words.push(word);
            self.simple.marks.push(mark);
            return;
        };
        let op = match op {
            Op::DupOut if !is_fd(&word) => Op::Both,
            Op::DupIn if !is_fd(&word) => Op::In,
            op => op,
        };
        if let Op::HereDoc { strip_tabs } = op {
            self.heredocs.push((word.clone(), strip_tabs, mark.quoted));
        }
        if op.writes() && word != "/dev/null" {
            self.simple.writes.push(word.clone());
        }
        self.simple.redirections.push(Redirection {
            fd,
            op,
            target: word,
            mark,
        });
    }
}

/// `1`, `2-`, `-`: a descriptor (to duplicate, move or close), not a file.
fn is_fd(w: &str) -> bool {
    let digits = w.strip_suffix('-').unwrap_or(w);
    w == "-" || (!digits.is_empty() && digits.chars().all(|d| d.is_ascii_digit()))
}

/// A here-document waiting for the end of its line.
struct Heredoc {
    /// The command it belongs to, in `out`.
    at: usize,
    delimiter: String,
    strip_tabs: bool,
    /// The delimiter was quoted: the body is literal text.
    literal: bool,
}

struct Lexer {
    chars: Vec<char>,
    out: Vec<Simple>,
    unparsed: bool,
    /// Substitutions opened.
    opened: usize,
    pending: Vec<Heredoc>,
}

impl Lexer {
    fn new(text: &str) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            out: Vec::new(),
            unparsed: false,
            opened: 0,
            pending: Vec::new(),
        }
    }

    /// Ends the simple command being read, adding it to `out`.
    fn end(&mut self, b: &mut Builder) {
        b.end_word();
        if b.redirect.take().is_some() {
            // An operator without its target.
            self.unparsed = true;
        }
        let s = std::mem::take(&mut b.simple);
        let heredocs = std::mem::take(&mut b.heredocs);
        if s.words.is_empty() && s.redirections.is_empty() {
            return;
        }
        let at = self.out.len();
        self.out.push(s);
        for (delimiter, strip_tabs, literal) in heredocs {
            self.pending.push(Heredoc {
                at,
                delimiter,
                strip_tabs,
                literal,
            });
        }
    }

    /// Opens a substitution in the word being read: its commands are read
    /// by a builder of their own.
    fn open(&mut self, b: &mut Builder) -> Builder {
        b.mark.expands = true;
        b.started = true;
        b.simple.substitutions += 1;
        self.opened += 1;
        std::mem::take(b)
    }

    /// Reads the text; `body` reads it as a here-document's body, whose
    /// text is no command (only its substitutions are).
    fn run(&mut self, body: bool) {
        let chars = std::mem::take(&mut self.chars);
        let mut b = Builder::default();
        let mut stack: Vec<Frame> = Vec::new();
        if body {
            stack.push(Frame::Body);
        }
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            let top_body = matches!(stack.last(), Some(Frame::Body));
            let quoted = top_body || matches!(stack.last(), Some(Frame::Double));
            if c.is_control() && c != '\t' && c != '\n' {
                self.unparsed = true;
            }
            // Substitutions are live everywhere but in single quotes.
            if (c == '$' && next == Some('('))
                || ((c == '<' || c == '>') && next == Some('(') && !quoted)
            {
                let outer = self.open(&mut b);
                stack.push(Frame::Subst { depth: 0, outer });
                i += 2;
                continue;
            }
            if c == '`' {
                if let Some(Frame::Backtick { .. }) = stack.last() {
                    if let Some(Frame::Backtick { outer }) = stack.pop() {
                        self.end(&mut b);
                        b = outer;
                    }
                } else {
                    let outer = self.open(&mut b);
                    stack.push(Frame::Backtick { outer });
                }
                i += 1;
                continue;
            }
            if c == '$' {
                i += dollar(&chars[i..], &mut b, quoted, &mut self.unparsed);
                continue;
            }
            if quoted {
                match c {
                    '"' if !top_body => {
                        stack.pop();
                    }
                    '\\' if matches!(next, Some('\\' | '$' | '`' | '\n'))
                        || (next == Some('"') && !top_body) =>
                    {
                        if let Some(n) = next.filter(|n| *n != '\n') {
                            b.push(n);
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
                    b.mark.quoted = true;
                    i += 1;
                    while i < chars.len() && chars[i] != '\'' {
                        b.word.push(chars[i]);
                        i += 1;
                    }
                    if i >= chars.len() {
                        self.unparsed = true;
                    }
                }
                '"' => {
                    b.started = true;
                    b.mark.quoted = true;
                    stack.push(Frame::Double);
                }
                '\\' => {
                    if let Some(n) = next {
                        if n != '\n' {
                            b.push(n);
                            b.mark.quoted = true;
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
                    self.end(&mut b);
                }
                ')' => match stack.last_mut() {
                    Some(Frame::Subst { depth, .. }) if *depth > 0 => {
                        *depth -= 1;
                        self.end(&mut b);
                    }
                    Some(Frame::Subst { .. }) => {
                        if let Some(Frame::Subst { outer, .. }) = stack.pop() {
                            self.end(&mut b);
                            b = outer;
                        }
                    }
                    _ => self.end(&mut b),
                },
                '&' if next == Some('>') => {
                    b.end_word();
                    let append = chars.get(i + 2) == Some(&'>');
                    b.redirect = Some((None, if append { Op::BothAppend } else { Op::Both }));
                    i += if append { 3 } else { 2 };
                    continue;
                }
                '\n' => {
                    self.end(&mut b);
                    i = self.bodies(&chars, i + 1);
                    continue;
                }
                ';' | '&' | '|' => self.end(&mut b),
                '<' | '>' => {
                    i += self.redirect(&chars[i..], &mut b);
                    continue;
                }
                '~' => {
                    if !b.started || b.word.ends_with(['=', ':']) {
                        b.mark.tilde = true;
                    }
                    b.push(c);
                }
                '*' | '?' => {
                    b.star = true;
                    b.push(c);
                }
                '[' => {
                    b.bracket = true;
                    b.push(c);
                }
                '{' => {
                    b.brace = true;
                    b.push(c);
                }
                _ => b.push(c),
            }
            i += 1;
        }
        // Unclosed quotes or substitutions: keep what was read.
        while let Some(frame) = stack.pop() {
            match frame {
                Frame::Body => {}
                Frame::Double => self.unparsed = true,
                Frame::Subst { outer, .. } | Frame::Backtick { outer } => {
                    self.unparsed = true;
                    self.end(&mut b);
                    b = outer;
                }
            }
        }
        if !body {
            self.end(&mut b);
        }
        if !self.pending.is_empty() {
            // A here-document without a body.
            self.unparsed = true;
            self.pending.clear();
        }
    }

    /// Reads a redirection operator at the start of `chars`; returns its length.
    fn redirect(&mut self, chars: &[char], b: &mut Builder) -> usize {
        // A number right before the operator is the descriptor it redirects.
        let fd = if b.redirect.is_none()
            && !b.mark.quoted
            && !b.word.is_empty()
            && b.word.chars().all(|d| d.is_ascii_digit())
        {
            let fd = b.word.parse().ok();
            b.word.clear();
            (b.started, b.mark) = (false, Mark::default());
            fd
        } else {
            b.end_word();
            None
        };
        let (op, len) = match (chars[0], chars.get(1), chars.get(2)) {
            ('<', Some('<'), Some('<')) => (Op::HereString, 3),
            ('<', Some('<'), Some('-')) => (Op::HereDoc { strip_tabs: true }, 3),
            ('<', Some('<'), _) => (Op::HereDoc { strip_tabs: false }, 2),
            ('<', Some('>'), _) => (Op::ReadWrite, 2),
            ('<', Some('&'), _) => (Op::DupIn, 2),
            ('<', _, _) => (Op::In, 1),
            ('>', Some('>'), _) => (Op::Append, 2),
            ('>', Some('|'), _) => (Op::Out, 2),
            ('>', Some('&'), _) => (Op::DupOut, 2),
            _ => (Op::Out, 1),
        };
        if b.redirect.is_some() {
            // Two operators in a row.
            self.unparsed = true;
        }
        b.redirect = Some((fd, op));
        len
    }

    /// Reads the bodies of the here-documents opened on the line that just
    /// ended, from `i`; returns where the next line starts. A body whose
    /// delimiter was not quoted is read for its substitutions, which run.
    fn bodies(&mut self, chars: &[char], mut i: usize) -> usize {
        for h in std::mem::take(&mut self.pending) {
            let mut text = String::new();
            let mut closed = false;
            while i < chars.len() {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '\n')
                    .map_or(chars.len(), |p| i + p);
                let line: String = chars[i..end].iter().collect();
                i = (end + 1).min(chars.len());
                let bare = if h.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if bare == h.delimiter {
                    closed = true;
                    break;
                }
                text.push_str(&line);
                text.push('\n');
            }
            self.unparsed |= !closed;
            if h.literal {
                continue;
            }
            let mut inner = Lexer::new(&text);
            inner.run(true);
            self.unparsed |= inner.unparsed;
            if let Some(owner) = self.out.get_mut(h.at) {
                owner.substitutions += inner.opened;
            }
            self.out.extend(inner.out);
        }
        i
    }
}

/// Reads a `$` at the start of `chars` into the word; returns how many
/// characters it took. `$(` is handled by the caller.
fn dollar(chars: &[char], b: &mut Builder, quoted: bool, unparsed: &mut bool) -> usize {
    match chars.get(1).copied() {
        Some('{') => {
            // `${…}` as written, nested braces included.
            b.mark.expands = true;
            let mut depth = 0;
            for (n, &c) in chars.iter().enumerate() {
                b.push(c);
                match c {
                    '{' => depth += 1,
                    '}' if depth == 1 => return n + 1,
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            *unparsed = true;
            chars.len()
        }
        Some('\'') if !quoted => {
            // `$'…'`: its escapes make any text (`$'\x63url'` is `curl`).
            b.mark.expands = true;
            b.mark.quoted = true;
            b.started = true;
            let mut n = 2;
            while n < chars.len() && chars[n] != '\'' {
                if chars[n] == '\\' && n + 1 < chars.len() {
                    b.word.push(chars[n]);
                    n += 1;
                }
                b.word.push(chars[n]);
                n += 1;
            }
            if n >= chars.len() {
                *unparsed = true;
            }
            (n + 1).min(chars.len())
        }
        // `$"…"`: a translated string; the quote is read next.
        Some('"') if !quoted => {
            b.mark.expands = true;
            1
        }
        Some(c) if c.is_ascii_alphanumeric() || "_@*#?-$!".contains(c) => {
            b.mark.expands = true;
            b.push('$');
            1
        }
        _ => {
            b.push('$');
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<Vec<String>> {
        simple_commands(cmd).into_iter().map(|s| s.words).collect()
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
}
