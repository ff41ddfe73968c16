//! The read-only allowlist: the commands `ask` mode runs without asking.
//!
//! A command line is on it when every simple command only reads, and only
//! inside the root: a command on the list (`ls`, `cat`, `grep`, `find`
//! without actions, `git status`/`diff`/`log`/`show`, …) with none of the
//! flags that make it run a program, write a file or follow symlinks out;
//! with no assignment (`GIT_EXTERNAL_DIFF=… git diff`), no wrapper (`sudo`,
//! `xargs`), no substitution, no variable, no output or read-write
//! redirection but to `/dev/null`; and with every word that may name a file —
//! operands, `--opt=value`, `< file` — inside the root as written *and* as
//! it really resolves (`~`, absolute paths, `..` out and symlinks out ask).
//! Patterns are expanded the way the shell would, and each match checked.
//! `git` is on it only while the repository's own configuration names no
//! program git could run (`core.fsmonitor`, `diff.external`, a textconv or
//! filter driver, an include, …): a hostile repository configures those.
//!
//! Whatever is not recognised is not on it: the list errs towards asking.
//!
//! Owns: the list, and which words of a command name files ([`named_files`],
//! which the read rules see too). Does not own: splitting the command line
//! (`shell`) or the order of the decision (the parent module).

use std::io::Read as _;
use std::path::Path;

use globset::GlobBuilder;

use super::rules::{normalize_path, real, real_relative};
use super::shell::{Line, Mark, Op, Simple};

/// Whether every simple command of a line only reads inside the root (see
/// the module docs). Without a root only what is written is checked.
pub(super) fn read_only(line: &Line, root: Option<&Path>) -> bool {
    if line.unparsed || !line.commands.iter().any(|s| s.name().is_some()) {
        return false;
    }
    let Some(bases) = bases(line) else {
        return false;
    };
    line.commands.iter().all(|s| reads_only(s, &bases, root))
}

/// The directories relative paths are read from, relative to the root: the
/// root, and where the line's one `cd` goes. `None` when a `cd` cannot be
/// followed (no directory, `-`, several of them).
fn bases(line: &Line) -> Option<Vec<String>> {
    let mut cds = line.commands.iter().filter(|s| s.name() == Some("cd"));
    let Some(cd) = cds.next() else {
        return Some(vec![String::new()]);
    };
    if cds.next().is_some() {
        return None;
    }
    let dirs: Vec<&String> = cd.words[1..]
        .iter()
        .filter(|w| !w.starts_with('-'))
        .collect();
    match dirs.as_slice() {
        [dir] => Some(vec![String::new(), (*dir).clone()]),
        _ => None,
    }
}

/// `dir/word`, unless the word is absolute (then it stays so).
fn join(dir: &str, word: &str) -> String {
    if dir.is_empty() || word.starts_with('/') {
        word.to_owned()
    } else {
        format!("{dir}/{word}")
    }
}

fn reads_only(s: &Simple, bases: &[String], root: Option<&Path>) -> bool {
    if s.opaque
        || s.substitutions > 0
        || !s.assignments.is_empty()
        || !s.wrappers.is_empty()
        || !s.writes.is_empty()
    {
        return false;
    }
    let inside_all = |word: &str, mark: Mark| bases.iter().all(|b| inside(root, b, word, mark));
    let redirections_read_inside = s.redirections.iter().all(|r| match r.op {
        Op::DupIn | Op::DupOut | Op::HereDoc { .. } | Op::HereString => true,
        Op::In => inside_all(&r.target, r.mark),
        // Writes (`writes` holds all but those to /dev/null).
        _ => r.target == "/dev/null",
    });
    if !redirections_read_inside {
        return false;
    }
    // Redirections alone (`{ …; } < file`): checked above.
    let Some(name) = s.name() else {
        return true;
    };
    if s.marks.iter().any(|m| m.expands) {
        return false;
    }
    let Some(plan) = command(name, &s.words[1..]) else {
        return false;
    };
    let marks = &s.marks[1..];
    let paths_inside = plan
        .paths
        .iter()
        .all(|(i, word)| inside_all(word, marks[*i]));
    let git_quiet = match (&plan.git_dir, root) {
        (Some(dir), Some(root)) => bases.iter().all(|b| git_quiet(root, &join(b, dir))),
        _ => true,
    };
    paths_inside && git_quiet
}

/// What an allowed command reads: the words that may name files (index in
/// the arguments, path to check), and for `git`, the directory it runs in.
struct Plan {
    paths: Vec<(usize, String)>,
    git_dir: Option<String>,
}

/// Whether `arg` is one of the short flags (alone or in a cluster such as
/// `-la`) or long options (alone or with `=value`).
fn is_flag(arg: &str, short: &[char], long: &[&str]) -> bool {
    let long_hit = long.iter().any(|l| {
        arg.strip_prefix(l)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
    });
    let cluster = arg.strip_prefix('-').filter(|c| !c.starts_with('-'));
    long_hit || cluster.is_some_and(|c| c.chars().any(|f| short.contains(&f)))
}

/// The allowlist proper: `None` when the command is not on it (or uses a
/// flag that runs a program, writes, or follows symlinks out).
fn command(name: &str, args: &[String]) -> Option<Plan> {
    let any = |short: &[char], long: &[&str]| args.iter().any(|a| is_flag(a, short, long));
    let refused = match name {
        // Their arguments are text, not files.
        "echo" | "true" | "pwd" | "which" | "basename" | "dirname" => {
            return Some(Plan {
                paths: Vec::new(),
                git_dir: None,
            });
        }
        "cat" | "head" | "tail" | "stat" | "realpath" | "df" | "cd" => false,
        "ls" => any(&['L'], &["--dereference"]),
        "wc" => any(&[], &["--files0-from"]),
        "du" => any(&['L'], &["--dereference", "--files0-from"]),
        "file" => any(&['f', 'C'], &["--files-from", "--compile"]),
        "tree" => any(&['l', 'o'], &["--fromfile"]),
        "grep" | "egrep" | "fgrep" => any(&['R'], &["--dereference-recursive"]),
        // `--pre` and `--hostname-bin` run programs; `-L` follows symlinks.
        "rg" => any(
            &['L'],
            &["--follow", "--pre", "--pre-glob", "--hostname-bin"],
        ),
        "find" => args.iter().any(|a| {
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
                    | "-L"
                    | "-H"
                    | "-follow"
                    | "-files0-from"
            )
        }),
        "git" => return git(args),
        _ => return None,
    };
    if refused {
        return None;
    }
    let grep = matches!(name, "grep" | "egrep" | "fgrep" | "rg");
    Some(Plan {
        paths: operands(args, grep)?,
        git_dir: None,
    })
}

/// `git` with a subcommand that only reads. Global options could configure a
/// program to run (`-c diff.external=…`): only `-C DIR` and `--no-pager` are
/// accepted before the subcommand.
fn git(args: &[String]) -> Option<Plan> {
    let mut dir = String::new();
    let mut paths = Vec::new();
    let mut i = 0;
    let sub = loop {
        match args.get(i).map(String::as_str) {
            Some("-C") => {
                let d = args.get(i + 1)?;
                paths.push((i + 1, join(&dir, d)));
                dir = join(&dir, d);
                i += 2;
            }
            Some("--no-pager") => i += 1,
            other => break other,
        }
    };
    let safe_sub = matches!(
        sub,
        Some("status" | "diff" | "log" | "show" | "ls-files" | "rev-parse" | "blame")
    );
    let rest = args.get(i + 1..).unwrap_or_default();
    if !safe_sub
        || rest
            .iter()
            .any(|a| a.starts_with("--output") || a.starts_with("--ext-diff"))
    {
        return None;
    }
    let at = i + 1;
    paths.extend(
        operands(rest, false)?
            .into_iter()
            .map(|(j, p)| (at + j, join(&dir, &p))),
    );
    Some(Plan {
        paths,
        git_dir: Some(dir),
    })
}

/// The arguments that may name files, with their index: every operand, and
/// the value of `--opt=value`. For the grep family the pattern is no file.
/// `None` when a short option carries something path-like (`-f/etc/x`).
fn operands(args: &[String], grep: bool) -> Option<Vec<(usize, String)>> {
    let cluster = |a: &str, f: char| {
        a.strip_prefix('-')
            .is_some_and(|c| !c.starts_with('-') && c.ends_with(f))
    };
    let mut pattern_given = grep
        && args.iter().any(|a| {
            cluster(a, 'e')
                || cluster(a, 'f')
                || a.starts_with("--regexp")
                || a.starts_with("--file")
        });
    let mut out = Vec::new();
    let mut only_operands = false;
    let mut skip = false;
    for (i, a) in args.iter().enumerate() {
        if std::mem::take(&mut skip) {
            continue;
        }
        if !only_operands && a == "--" {
            only_operands = true;
            continue;
        }
        if !only_operands && a.starts_with('-') && a.len() > 1 {
            if grep && a.starts_with("--regexp") {
                skip = a == "--regexp";
                continue;
            }
            if let Some((_, value)) = a.split_once('=') {
                out.push((i, value.to_owned()));
                continue;
            }
            if grep && cluster(a, 'e') {
                skip = true;
                continue;
            }
            if a.contains(['/', '~']) || a.contains("..") {
                return None;
            }
            continue;
        }
        if grep && !pattern_given {
            pattern_given = true;
            continue;
        }
        out.push((i, a.clone()));
    }
    Some(out)
}

/// Whether a word that may name a file, read from `base` (relative to the
/// root), stays inside the root: as written, and with a root, as it really
/// resolves (every match, for a pattern).
fn inside(root: Option<&Path>, base: &str, word: &str, mark: Mark) -> bool {
    if mark.expands || mark.tilde || mark.brace {
        return false;
    }
    if word == "/dev/null" || word == "-" {
        return true;
    }
    if word.starts_with('/') {
        return false;
    }
    let rel = join(base, word);
    let mut depth = 0usize;
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." if depth == 0 => return false,
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    if mark.pattern {
        // A pattern in a directory part is not followed; a last part that
        // starts with a dot could match `..`.
        let (dir, last) = rel.rsplit_once('/').unwrap_or(("", &rel));
        if dir.contains(['*', '?', '[']) || last.starts_with('.') {
            return false;
        }
    }
    match root {
        None => true,
        Some(root) if mark.pattern => {
            matches(root, &rel).is_some_and(|found| found.iter().all(|p| p.starts_with(root)))
        }
        Some(root) => real(&root.join(&rel)).starts_with(root),
    }
}

/// Most directory entries looked at to expand one pattern.
const MAX_ENTRIES: usize = 10_000;

/// What a pattern whose directory part is plain expands to, really
/// resolved, its directory first. `None` when that cannot be told or is
/// risky: a match the command would read as an option (a file named
/// `--pre=x`), too many entries.
fn matches(root: &Path, rel: &str) -> Option<Vec<std::path::PathBuf>> {
    let (dir, last) = rel.rsplit_once('/').unwrap_or(("", rel));
    let dir = real(&root.join(dir));
    let glob = GlobBuilder::new(last)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()?
        .compile_matcher();
    let mut found = vec![dir.clone()];
    // No such directory: the shell leaves the word as it is.
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Some(found);
    };
    for (n, entry) in entries.enumerate() {
        if n >= MAX_ENTRIES {
            return None;
        }
        let name = entry.ok()?.file_name();
        let name = name.to_string_lossy();
        // The shell's patterns match a leading dot only when written.
        if name.starts_with('.') || !glob.is_match(&*name) {
            continue;
        }
        if name.starts_with('-') {
            return None;
        }
        found.push(real(&dir.join(&*name)));
    }
    Some(found)
}

/// The files the line's commands name, as rules see paths: every operand,
/// `--opt=value` and input redirection, relative to the root as written and
/// as it really resolves, patterns expanded. What is only known when the
/// command runs (variables, substitutions) is not here: the OS sandbox is
/// what holds against that.
pub(super) fn named_files(line: &Line, root: Option<&Path>) -> Vec<String> {
    let bases = bases(line).unwrap_or_else(|| vec![String::new()]);
    let mut out = Vec::new();
    for s in &line.commands {
        let mut words: Vec<(&str, Mark)> = s
            .redirections
            .iter()
            .filter(|r| r.op.reads())
            .map(|r| (r.target.as_str(), r.mark))
            .collect();
        for (w, m) in s.words.iter().zip(&s.marks).skip(1) {
            let w = if w.starts_with('-') {
                match w.split_once('=') {
                    Some((_, value)) => value,
                    None => continue,
                }
            } else {
                w.as_str()
            };
            words.push((w, *m));
        }
        for (word, mark) in words {
            if mark.expands || word.is_empty() {
                continue;
            }
            for base in &bases {
                let rel = join(base, word);
                out.push(normalize_path(&rel));
                let Some(root) = root else {
                    continue;
                };
                if mark.pattern {
                    let (dir, last) = rel.rsplit_once('/').unwrap_or(("", &rel));
                    let dir = real(&root.join(dir));
                    let expanded = GlobBuilder::new(last)
                        .literal_separator(true)
                        .build()
                        .map(|g| g.compile_matcher());
                    if let (Ok(glob), Ok(entries)) = (expanded, std::fs::read_dir(&dir)) {
                        for entry in entries.flatten().take(MAX_ENTRIES) {
                            let name = entry.file_name();
                            let name = name.to_string_lossy();
                            let dot_ok = last.starts_with('.') || !name.starts_with('.');
                            if dot_ok && glob.is_match(&*name) {
                                out.extend(real_relative(root, &dir.join(&*name)));
                            }
                        }
                    }
                }
                out.extend(real_relative(root, &root.join(&rel)));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

// ---------------------------------------------------------------------------
// git in a repository that may be hostile

/// Words in a git configuration that can make a reading git command run a
/// program (`core.fsmonitor`, `diff.external`, `diff.x.textconv`,
/// `filter.x.clean`, `gpg.program`, `core.pager`, …), read configuration
/// from elsewhere (`include.path`) or move the work tree (`core.worktree`).
/// Matched as plain text: a false alarm only means a question.
const GIT_RISKY: [&str; 19] = [
    "fsmonitor",
    "external",
    "textconv",
    "command",
    "clean",
    "smudge",
    "process",
    "program",
    "include",
    "pager",
    "askpass",
    "helper",
    "hookspath",
    "editor",
    "proxy",
    "worktree",
    "filter",
    "driver",
    "exec",
];

/// Largest git configuration file read.
const MAX_GIT_CONFIG: u64 = 1 << 20;

/// Whether the repository git finds from `cwd` (relative to the root), and
/// every configuration it reads there, name no program to run. Repositories
/// above the root are the person's own and not looked at.
fn git_quiet(root: &Path, cwd: &str) -> bool {
    let start = real(&root.join(cwd));
    if !start.starts_with(root) {
        return false;
    }
    let mut dir = start.as_path();
    loop {
        // A bare repository (`HEAD`, `objects/`) is used as it is.
        if dir.join("HEAD").is_file() && dir.join("objects").is_dir() && !git_dir_quiet(dir) {
            return false;
        }
        let dotgit = dir.join(".git");
        match std::fs::metadata(&dotgit) {
            Ok(m) if m.is_dir() => return git_dir_quiet(&dotgit),
            // A `gitdir: PATH` file (a linked worktree or a submodule).
            Ok(_) => {
                let Ok(Some(text)) = small_file(&dotgit) else {
                    return false;
                };
                let Some(target) = text.trim().strip_prefix("gitdir:") else {
                    return false;
                };
                return git_dir_quiet(&dir.join(target.trim()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => return false,
        }
        if dir == root {
            return true;
        }
        match dir.parent() {
            Some(parent) => dir = parent,
            None => return true,
        }
    }
}

/// Whether a git directory's configuration (with its work trees', its
/// submodules' and, for a linked worktree, the main repository's) names no
/// program to run.
fn git_dir_quiet(git: &Path) -> bool {
    let mut configs = vec![git.join("config"), git.join("config.worktree")];
    let mut dirs = vec![(git.join("modules"), 0)];
    while let Some((d, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten().take(MAX_ENTRIES) {
            let p = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) && depth < 4 {
                configs.push(p.join("config"));
                dirs.push((p.join("modules"), depth + 1));
                dirs.push((p, depth + 1));
            }
        }
    }
    match small_file(&git.join("commondir")) {
        Ok(Some(common)) => configs.push(git.join(common.trim()).join("config")),
        Ok(None) => {}
        Err(()) => return false,
    }
    configs.iter().all(|c| match small_file(c) {
        Ok(None) => true,
        Ok(Some(text)) => {
            let text = text.to_ascii_lowercase();
            !GIT_RISKY.iter().any(|w| text.contains(w))
        }
        Err(()) => false,
    })
}

/// A small regular file's text; `Ok(None)` when there is none. Opened
/// without blocking (it may be a FIFO) and checked through the handle.
fn small_file(path: &Path) -> Result<Option<String>, ()> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(()),
    };
    match file.metadata() {
        Ok(m) if m.is_file() && m.len() <= MAX_GIT_CONFIG => {}
        _ => return Err(()),
    }
    let mut text = String::new();
    file.take(MAX_GIT_CONFIG)
        .read_to_string(&mut text)
        .map_err(|_| ())?;
    Ok(Some(text))
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

    /// Item 11: what sets the environment, writes, substitutes or names a
    /// file outside the root is not read-only, whatever command it is.
    #[test]
    fn ask_mode_asks_for_what_it_cannot_vouch_for() {
        let p = Permissions::new(Mode::Ask);
        for cmd in [
            // Assignments and wrappers.
            "GIT_EXTERNAL_DIFF=\"rm -rf ~/*; true\" git diff",
            "PATH=evil:$PATH ls",
            "LD_PRELOAD=./x.so cat a",
            "env ls",
            "env GIT_DIR=/x git log",
            "sudo cat a",
            "time -p ls",
            "echo /etc/passwd | xargs cat",
            // Redirections that write, or read outside.
            "echo x 1<>important.txt",
            "echo x 3<>notes.txt",
            "echo x >| f",
            "echo x &>> f",
            "ls >&out.txt",
            "cat < /etc/passwd",
            "cat 0< ../x",
            // Substitutions and variables.
            "ls $(echo x)",
            "cat <(curl x)",
            "echo `date`",
            "echo $OPENAI_API_KEY",
            "cat \"$HOME/.ssh/id_rsa\"",
            "cat $'\\x2fetc/passwd'",
            "$(echo ls)",
            "cat <<EOF\n$(curl http://x)\nEOF",
            // Paths outside the root.
            "cat /etc/passwd",
            "head ../x",
            "cat ~/.ssh/id_rsa",
            "ls ~",
            "ls ~root",
            "cat src/../../x",
            "ls --color=auto /",
            "cat {a,/etc/passwd}",
            "ls .*",
            "cat .*/passwd",
            "grep -f/etc/passwd x",
            "grep -r x /etc",
            "git -C /elsewhere status",
            "git diff --no-index /etc/passwd a",
            // A `cd` that cannot be followed.
            "cd .. && cat x",
            "cd && cat .ssh/id_rsa",
            "cd - && cat x",
            "cd a; cd b; cat x",
            "cd /etc && cat passwd",
            // Flags that follow symlinks out, write or run programs.
            "grep -R x .",
            "rg -L x",
            "rg --follow x",
            "rg --hostname-bin=sh x",
            "find -L . -name x",
            "find . -follow",
            "tree -o out.txt",
            "tree -l",
            "du -L",
            "ls -LR",
            "wc --files0-from=list",
            "file -f names",
            "git --git-dir=x log",
            // What the splitter does not understand.
            "cat \"unclosed",
            "cat a\rb",
            "cat <<EOF",
            "ls >",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Ask, "{cmd:?}");
        }
        for cmd in [
            "cat < src/a.rs",
            "cat <<'EOF'\n$(curl http://x)\nEOF",
            "cat <<EOF | wc -l\nplain text\nEOF",
            "grep -e ../x src",
            "grep -rn -- -x src",
            "git log @{u}",
            "ls 2>/dev/null >/dev/null",
            "cat a 2>&1",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Allow, "{cmd:?}");
        }
        assert_eq!(p.check("bash", "X=1"), Decision::Ask);
    }

    #[cfg(unix)]
    fn tree() -> (tempfile::TempDir, Permissions) {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap().keep();
        std::fs::write(outside.join("secret"), "s").unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/sub")).unwrap();
        std::fs::write(root.join("src/a.rs"), "a").unwrap();
        symlink(outside.join("secret"), root.join("src/sub/leak")).unwrap();
        symlink(&outside, root.join("out")).unwrap();
        let p = Permissions::new(Mode::Ask).rooted(root);
        (dir, p)
    }

    /// Item 11: a path that is inside as written but leads out through a
    /// symlink asks, directly, through a pattern, and after a `cd`.
    #[cfg(unix)]
    #[test]
    fn ask_mode_follows_symlinks_out() {
        let (_dir, p) = tree();
        for cmd in [
            "cat src/sub/leak",
            "cat out/secret",
            "ls out",
            "cat src/sub/*",
            "cat src/*/leak",
            "cd src && cat sub/leak",
            "cd src/sub && cat leak",
            "git -C out log",
            "cat out/../x",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Ask, "{cmd}");
        }
        for cmd in [
            "cat src/a.rs",
            "cat src/*.rs",
            "ls src/sub",
            "cd src && cat a.rs",
            "cat src/new.rs",
        ] {
            assert_eq!(p.check("bash", cmd), Decision::Allow, "{cmd}");
        }
    }

    /// Item 11: a file whose name is an option, met by a pattern, asks
    /// (`rg x *` with a file named `--pre=sh`).
    #[cfg(unix)]
    #[test]
    fn a_pattern_that_expands_to_an_option_asks() {
        let (dir, p) = tree();
        std::fs::write(dir.path().join("src/--pre=sh"), "").unwrap();
        assert_eq!(p.check("bash", "rg x src/*"), Decision::Ask);
        assert_eq!(p.check("bash", "rg x src/*.rs"), Decision::Allow);
    }

    /// Item 11: git runs what a repository's configuration names
    /// (`core.fsmonitor` on `git status`, `diff.external` on `git diff`).
    #[test]
    fn git_in_a_repository_configured_to_run_programs_asks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::create_dir_all(root.join("sub/.git")).unwrap();
        std::fs::write(
            root.join("sub/.git/config"),
            "[diff]\n\texternal = ./evil.sh\n",
        )
        .unwrap();
        let p = Permissions::new(Mode::Ask).rooted(root);
        assert_eq!(p.check("bash", "git status"), Decision::Allow);
        assert_eq!(p.check("bash", "git -C sub diff"), Decision::Ask);
        assert_eq!(p.check("bash", "cd sub && git diff"), Decision::Ask);
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tfsmonitor = \"rm -rf ~\"\n",
        )
        .unwrap();
        assert_eq!(p.check("bash", "git status"), Decision::Ask);
        // A gitfile pointing at a git directory is followed.
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(root.join("wt/.git"), "gitdir: ../.git\n").unwrap();
        assert_eq!(p.check("bash", "git -C wt log"), Decision::Ask);
    }
}
