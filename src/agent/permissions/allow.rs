//! The read-only allowlist: the commands `ask` mode runs without asking.
//!
//! A command is on it when it only reads (`ls`, `cat`, `grep`, `find`
//! without actions, `git status`/`diff`/`log`/`show`, …) and writes no file.
//! Whatever is not recognised is not on it: the list errs towards asking.
//!
//! Owns: the list. Does not own: splitting the command line (`shell`) or the
//! order of the decision (the parent module).

use super::shell::Simple;

/// Whether a simple command only reads: `ls`, `cat`, `grep`, `find` without
/// actions, `git status`/`diff`/`log`/`show`, …, with no output redirected to
/// a file.
pub(super) fn read_only(s: &Simple) -> bool {
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
    use super::super::tests::rules;
    use super::super::*;

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
}
