//! CLI tests: the real `lancet` binary, run in temporary directories.
//!
//! These pin the command-line contract of DESIGN.md: exit statuses, the JSON
//! report, `--dry-run` and `--check` writing nothing, all-or-nothing writes,
//! path confinement, undo, and the small commands (`diff`, `view`, `formats`).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn lancet(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn lancet_stdin(dir: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n")
}

const APP: &str = "def f():\n    return 1\n\ndef g():\n    return 2\n";

#[test]
fn applies_and_reports_json() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    write(
        dir.path(),
        "edit.txt",
        &block("app.py", "    return 2\n", "    return 3\n"),
    );
    let out = lancet(dir.path(), &["apply", "--json", "edit.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["written"], true);
    assert_eq!(v["files"][0]["path"], "app.py");
    assert_eq!(v["files"][0]["status"], "modified");
    let e = &v["files"][0]["edits"][0];
    assert_eq!(
        (
            e["index"].as_u64(),
            e["status"].as_str(),
            e["tier"].as_str()
        ),
        (Some(0), Some("applied"), Some("exact"))
    );
    assert_eq!(e["lines"], serde_json::json!([5, 5]));
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("applied to app.py at line 5")
    );
    assert_eq!(
        read(dir.path(), "app.py"),
        APP.replace("return 2", "return 3")
    );
    // The JSON keys come in the contract's order.
    let s = stdout(&out);
    let pos = |k: &str| s.find(&format!("\"{k}\"")).unwrap();
    assert!(
        pos("ok") < pos("written")
            && pos("written") < pos("files")
            && pos("files") < pos("message")
    );
}

#[test]
fn reads_stdin_and_uses_default_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    let input = "<<<<<<< SEARCH\n    return 1\n=======\n    return 10\n>>>>>>> REPLACE\n";
    let out = lancet_stdin(dir.path(), &["apply", "--file", "app.py", "-"], input);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(read(dir.path(), "app.py").contains("return 10"));
    // Without --file the block names no file: an edit failure, nothing written.
    let out = lancet_stdin(dir.path(), &["apply"], input);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("names no file"), "{}", stderr(&out));
}

#[test]
fn exit_statuses() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    // 1: an edit does not apply.
    write(
        dir.path(),
        "miss.txt",
        &block("app.py", "    return 42\n", "    return 0\n"),
    );
    let out = lancet(dir.path(), &["apply", "miss.txt"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("SEARCH text not found in app.py"),
        "{}",
        stderr(&out)
    );
    // 2: malformed input (a block that is never closed), and usage errors.
    write(
        dir.path(),
        "bad.txt",
        "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n",
    );
    let out = lancet(dir.path(), &["apply", "bad.txt"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("line 2"), "{}", stderr(&out));
    assert_eq!(
        code(&lancet(
            dir.path(),
            &["apply", "--max-tier", "sloppy", "miss.txt"]
        )),
        2
    );
    assert_eq!(code(&lancet(dir.path(), &["apply", "no-such-file.txt"])), 2);
    write(dir.path(), "prose.txt", "just some words\n");
    let out = lancet(dir.path(), &["apply", "prose.txt"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("not in any edit format"),
        "{}",
        stderr(&out)
    );
    // 3: an I/O error (the edits "file" is a directory).
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    assert_eq!(code(&lancet(dir.path(), &["apply", "adir"])), 3);
    assert_eq!(read(dir.path(), "app.py"), APP);
}

#[test]
fn dry_run_and_check_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    write(
        dir.path(),
        "edit.txt",
        &block("app.py", "    return 1\n", "    return 100\n"),
    );
    let out = lancet(dir.path(), &["apply", "--dry-run", "edit.txt"]);
    assert_eq!(code(&out), 0);
    let diff = stdout(&out);
    assert!(
        diff.contains("--- a/app.py") && diff.contains("+++ b/app.py"),
        "{diff}"
    );
    assert!(diff.contains("-    return 1\n+    return 100\n"), "{diff}");
    assert_eq!(read(dir.path(), "app.py"), APP);
    let out = lancet(dir.path(), &["apply", "--dry-run", "--json", "edit.txt"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["written"], false);
    assert!(v["diff"].as_str().unwrap().contains("+    return 100"));
    let out = lancet(dir.path(), &["apply", "--check", "edit.txt"]);
    assert_eq!((code(&out), stdout(&out).as_str()), (0, ""));
    write(dir.path(), "miss.txt", &block("app.py", "nope\n", "x\n"));
    assert_eq!(
        code(&lancet(dir.path(), &["apply", "--check", "miss.txt"])),
        1
    );
    assert_eq!(read(dir.path(), "app.py"), APP);
    assert!(
        !dir.path().join(".lancet").exists(),
        "a dry run must not journal"
    );
}

#[test]
fn failing_multi_file_apply_leaves_every_file_identical() {
    let dir = tempfile::tempdir().unwrap();
    let crlf = "one\r\ntwo\r\nthree";
    write(dir.path(), "a.txt", crlf);
    write(dir.path(), "b.py", APP);
    let edits = [
        block("a.txt", "two\n", "TWO\n"),
        block("new/c.txt", "", "created\n"),
        block("b.py", "    return 99\n", "    return 0\n"),
    ]
    .concat();
    write(dir.path(), "edit.txt", &edits);
    let out = lancet(dir.path(), &["apply", "--json", "edit.txt"]);
    assert_eq!(code(&out), 1);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["written"], false);
    let statuses: Vec<&str> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["modified", "created", "failed"]);
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("Nothing was written")
    );
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).unwrap(),
        crlf.as_bytes()
    );
    assert_eq!(read(dir.path(), "b.py"), APP);
    assert!(!dir.path().join("new").exists());
    // With --partial the edits that apply are written.
    let out = lancet(dir.path(), &["apply", "--partial", "edit.txt"]);
    assert_eq!(code(&out), 1);
    assert_eq!(
        std::fs::read(dir.path().join("a.txt")).unwrap(),
        b"one\r\nTWO\r\nthree"
    );
    assert_eq!(read(dir.path(), "new/c.txt"), "created\n");
    assert_eq!(read(dir.path(), "b.py"), APP);
}

#[test]
fn path_escapes_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    std::fs::create_dir(&root).unwrap();
    write(base.path(), "outside.txt", "secret\n");
    #[cfg(unix)]
    std::os::unix::fs::symlink(base.path(), root.join("link")).unwrap();
    for path in [
        "../outside.txt",
        "/etc/hostname",
        "link/outside.txt",
        ".lancet/x",
    ] {
        write(&root, "edit.txt", &block(path, "secret\n", "pwned\n"));
        let out = lancet(&root, &["apply", "--json", "edit.txt"]);
        assert_eq!(code(&out), 1, "{path}: {}", stdout(&out));
        let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(v["files"][0]["edits"][0]["status"], "invalid", "{path}");
        assert!(
            v["message"].as_str().unwrap().contains("refused"),
            "{path}: {}",
            v["message"]
        );
    }
    assert_eq!(read(base.path(), "outside.txt"), "secret\n");
}

#[test]
fn undo_restores_the_last_apply() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    write(
        dir.path(),
        "e1.txt",
        &[
            block("app.py", "    return 1\n", "    return 11\n"),
            block("n.txt", "", "new\n"),
        ]
        .concat(),
    );
    assert_eq!(code(&lancet(dir.path(), &["apply", "e1.txt"])), 0);
    write(
        dir.path(),
        "e2.txt",
        &block("app.py", "    return 2\n", "    return 22\n"),
    );
    assert_eq!(code(&lancet(dir.path(), &["apply", "e2.txt"])), 0);
    let out = lancet(dir.path(), &["undo"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("restored app.py"));
    assert_eq!(
        read(dir.path(), "app.py"),
        APP.replace("return 1\n", "return 11\n")
    );
    let out = lancet(dir.path(), &["undo", "-C", "."]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("removed n.txt"), "{}", stdout(&out));
    assert_eq!(read(dir.path(), "app.py"), APP);
    assert!(!dir.path().join("n.txt").exists());
    let out = lancet(dir.path(), &["undo"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("nothing to undo"));
}

/// `--no-undo`: the apply is written as usual, but keeps no journal entry
/// (nothing under `.lancet/`), so `lancet undo` has nothing to revert.
#[test]
fn apply_no_undo_keeps_no_journal() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    write(
        dir.path(),
        "e.txt",
        &block("app.py", "    return 1\n", "    return 11\n"),
    );
    let out = lancet(dir.path(), &["apply", "--no-undo", "e.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        read(dir.path(), "app.py"),
        APP.replace("return 1\n", "return 11\n")
    );
    assert!(!dir.path().join(".lancet").exists());
    let out = lancet(dir.path(), &["undo"]);
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("nothing to undo"));
}

#[test]
fn undo_refuses_when_the_file_changed_since() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    write(
        dir.path(),
        "e.txt",
        &block("app.py", "    return 1\n", "    return 11\n"),
    );
    assert_eq!(code(&lancet(dir.path(), &["apply", "e.txt"])), 0);
    write(dir.path(), "app.py", "edited by hand\n");
    let out = lancet(dir.path(), &["undo"]);
    assert_eq!(code(&out), 1);
    assert_eq!(read(dir.path(), "app.py"), "edited by hand\n");
}

#[test]
fn binary_and_latin1_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("img.bin"), b"GIF89a\0\0x = 1\n").unwrap();
    std::fs::write(dir.path().join("l1.txt"), b"caf\xe9\nx = 1\n").unwrap();
    for (path, words) in [("img.bin", "binary file"), ("l1.txt", "not UTF-8")] {
        write(dir.path(), "e.txt", &block(path, "x = 1\n", "x = 2\n"));
        let out = lancet(dir.path(), &["apply", "e.txt"]);
        assert_eq!(code(&out), 1);
        assert!(stderr(&out).contains(words), "{}", stderr(&out));
    }
    assert_eq!(
        std::fs::read(dir.path().join("l1.txt")).unwrap(),
        b"caf\xe9\nx = 1\n"
    );
}

#[test]
fn diff_command() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a", "one\ntwo\nthree\n");
    write(dir.path(), "b", "one\n2\nthree");
    let same = lancet(dir.path(), &["diff", "a", "a"]);
    assert_eq!((code(&same), stdout(&same).as_str()), (0, ""));
    let out = lancet(dir.path(), &["diff", "a", "b", "-U", "0"]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    assert!(text.starts_with("--- a\n+++ b\n"), "{text}");
    assert!(text.contains("\\ No newline at end of file"), "{text}");
    assert_eq!(code(&lancet(dir.path(), &["diff", "a", "missing"])), 2);
}

#[test]
fn view_and_formats() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "app.py", APP);
    let out = lancet(dir.path(), &["view", "app.py", "--lines", "4:5"]);
    assert_eq!(code(&out), 0);
    assert_eq!(stdout(&out), "4 | def g():\n5 |     return 2\n");
    assert_eq!(
        code(&lancet(dir.path(), &["view", "app.py", "--lines", "5:4"])),
        2
    );
    // The hashline view: `LINE:HASH|text`, the hash as `line_hash` computes it.
    let out = lancet(
        dir.path(),
        &["view", "app.py", "--format", "hashline", "--lines", "2:2"],
    );
    assert_eq!(code(&out), 0);
    assert_eq!(
        stdout(&out),
        format!("2:{}|    return 1\n", lancet::line_hash("    return 1"))
    );
    let out = lancet(dir.path(), &["formats"]);
    let listed: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect();
    assert_eq!(
        listed,
        [
            "search-replace",
            "udiff",
            "hashline",
            "apply-patch",
            "whole"
        ]
    );
    let out = lancet(dir.path(), &["formats", "search-replace"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("<<<<<<< SEARCH"));
    assert_eq!(code(&lancet(dir.path(), &["formats", "nope"])), 2);
}

/// The README's first command applies the bundled model reply in `examples/`
/// (dry run: the diff is printed, the example project is left as it is).
#[test]
fn the_readme_example_applies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let before = std::fs::read(root.join("examples/shop/cart.py")).unwrap();
    let out = lancet(
        root,
        &["apply", "--dry-run", "-C", "examples", "examples/reply.md"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("+            result += item.price * quantity * (1 - item.discount)"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("matched at a different indentation"));
    assert_eq!(
        std::fs::read(root.join("examples/shop/cart.py")).unwrap(),
        before
    );
}

/// `lancet apply` on a terminal that wants colour (`CLICOLOR_FORCE=1`), or
/// with colour turned off (`NO_COLOR=1`).
fn lancet_coloured(dir: &Path, args: &[&str], no_color: bool) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lancet"));
    cmd.current_dir(dir)
        .args(args)
        .env("CLICOLOR_FORCE", "1")
        .env_remove("NO_COLOR");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    cmd.output().unwrap()
}

/// Issue "One shape before the next capabilities": the CLI tints a line by
/// the status of the edit it reports, never by the words in it. A quoted file
/// line that says "failed:" stays plain; the failed edit's headline and the
/// summary are red, an applied edit green; NO_COLOR wins over
/// CLICOLOR_FORCE.
#[test]
fn colour_follows_the_status_not_the_words() {
    const RED: &str = "\x1b[31m";
    const GREEN: &str = "\x1b[32m";
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "log.txt",
        "first\njob failed: disk full\nlast\n",
    );
    let edits = [
        block("log.txt", "first\n", "FIRST\n"),
        block("log.txt", "job failled: disc ful\n", "job ok\n"),
    ]
    .concat();
    write(dir.path(), "edit.txt", &edits);
    let out = lancet_coloured(dir.path(), &["apply", "edit.txt"], false);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    let line = |start: &str| {
        err.lines()
            .find(|l| l.contains(start))
            .unwrap_or_else(|| panic!("no line with {start:?} in:\n{err}"))
            .to_owned()
    };
    assert!(line("edit 1: applied").starts_with(GREEN), "{err}");
    assert!(line("edit 2 failed").starts_with(RED), "{err}");
    assert!(line("Nothing was written").starts_with(RED), "{err}");
    let quoted = line("| job failed: disk full");
    assert!(
        !quoted.contains('\x1b'),
        "a quoted file line is tinted: {quoted:?}"
    );
    let plain = lancet_coloured(dir.path(), &["apply", "edit.txt"], true);
    assert!(!stderr(&plain).contains('\x1b'), "{}", stderr(&plain));
    assert_eq!(
        read(dir.path(), "log.txt"),
        "first\njob failed: disk full\nlast\n"
    );
}

/// Issue "Hostile repositories…", messages and exit codes: `apply --json`
/// answers an I/O failure (exit 3) with its report object too, so a script
/// always has one shape to parse.
#[test]
fn json_report_on_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    let out = lancet(dir.path(), &["apply", "--json", "adir"]);
    assert_eq!(code(&out), 3);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {:?}", stdout(&out)));
    assert_eq!(v["ok"], false);
    assert_eq!(v["written"], false);
    assert!(v["files"].as_array().unwrap().is_empty());
    assert!(v["message"].as_str().unwrap().contains("adir"), "{v}");
}

/// The summary of an apply is printed untinted in one write where colour is
/// off; a reader that closed the pipe before it is no failure: the apply is
/// done, its status stands, nothing panics.
#[test]
fn a_closed_stdout_does_not_fail_an_apply() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (1..=400).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.path().join("a.txt"), &lines).unwrap();
    // Many hunks: a summary larger than a pipe's buffer would block, not end.
    let mut diff = String::from("--- a/a.txt\n+++ b/a.txt\n");
    for i in (5..=400).step_by(10) {
        diff.push_str(&format!(
            "@@ -{i},1 +{i},1 @@\n-line {i}\n+line {i} changed\n"
        ));
    }
    std::fs::write(dir.path().join("e.diff"), &diff).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .current_dir(dir.path())
        .args(["apply", "e.diff"])
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(code(&out), 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let written = std::fs::read_to_string(dir.path().join("a.txt")).unwrap();
    assert_eq!(written.matches("changed").count(), 40);
}
