//! Splitting a command line into simple commands, the way rules see them.
//!
//! Commands are not matched as raw text. [`simple_commands`] splits a command
//! line into its simple commands — at `;`, `&&`, `||`, `|`, `&`, newlines,
//! `$(…)`, backticks and the script of `sh -c`/`eval` — removes quotes, and
//! strips wrappers (`sudo`, `env`, `nohup`, `timeout`, `xargs`, variable
//! assignments, …). The splitting is a careful approximation of the shell,
//! not a parser: where it errs, it errs towards asking or refusing.
//!
//! Owns: the lexing and the unwrapping. Does not own: what a command may do
//! (the rules, the destructive list and the allowlist decide that).

use std::sync::LazyLock;

use regex::Regex;

/// One simple command of a command line: its words, quotes removed, and the
/// files its output is redirected to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Simple {
    pub(super) words: Vec<String>,
    pub(super) writes: Vec<String>,
}

impl Simple {
    /// The command as rules and the destructive list see it: words joined by
    /// one space, then its output redirections.
    pub(super) fn text(&self) -> String {
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
pub(super) fn simple_commands(cmd: &str) -> Vec<Simple> {
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
