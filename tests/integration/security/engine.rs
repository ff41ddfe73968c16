//! Security: the engine and the workspace: state directories, the journal, modes, locking, special files, ownership, correctness (items 1-9, and the engine's messages and exit codes).
//!
//! Each test names the item of the red-team pass it pins. Tests about the
//! command line run the real `lancet` binary under a watchdog (a hang is a
//! failure, not a stuck suite); the rest go through the library. Files are
//! made hostile the way a cloned repository can make them: symlinks where
//! lancet keeps its state, FIFOs and devices as targets, tampered journals,
//! files owned by someone else. These tests run as root (the ownership and
//! device-node cases need it).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lancet::{ApplyOptions, EditStatus, Format, Workspace, WorkspaceError, feedback, plan};

/// Runs `lancet ARGS` in `dir`, `input` on stdin; a run longer than a minute
/// (the bounded cases answer in well under a second) is killed and fails.
fn lancet_in(dir: &Path, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_owned();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("lancet {args:?} did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

fn lancet(dir: &Path, args: &[&str]) -> Output {
    lancet_in(dir, args, "")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn block(path: &str, search: &str, replace: &str) -> String {
    format!("{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n")
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn read(dir: &Path, rel: &str) -> String {
    fs::read_to_string(dir.join(rel)).unwrap()
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

/// An apply of one edit to `app.py` in `dir` (exit status and output).
fn apply_one(dir: &Path, search: &str, replace: &str) -> Output {
    write(dir, "edit.txt", &block("app.py", search, replace));
    lancet(dir, &["apply", "edit.txt"])
}

// ------------------------------------------------------------------ item 1

/// Item 1: `.lancet/undo` a symlink to the project's parent: an apply must
/// neither prune (delete) the parent's directories nor write through the link.
#[test]
fn a_symlinked_undo_directory_is_refused_and_nothing_outside_is_deleted() {
    let top = tempfile::tempdir().unwrap();
    for i in 0..25 {
        fs::create_dir(top.path().join(format!("{i:04}-sibling"))).unwrap();
    }
    let r = top.path().join("r");
    write(&r, "app.py", "x = 1\n");
    fs::create_dir(r.join(".lancet")).unwrap();
    symlink("../..", r.join(".lancet/undo")).unwrap();
    let out = apply_one(&r, "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(".lancet/undo is a symlink"), "{err}");
    assert!(err.contains("Remove it"), "{err}");
    for i in 0..25 {
        assert!(top.path().join(format!("{i:04}-sibling")).is_dir());
    }
    assert_eq!(
        read(&r, "app.py"),
        "x = 1\n",
        "refused means nothing written"
    );
    assert!(
        fs::symlink_metadata(r.join(".lancet/undo"))
            .unwrap()
            .is_symlink()
    );
}

/// Item 1: `.lancet` itself a symlink, or `.lancet/.gitignore` one: refused,
/// nothing written through them, not even the `*` line.
#[test]
fn a_symlinked_state_directory_or_gitignore_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "app.py", "x = 1\n");
    symlink(outside.path(), r.path().join(".lancet")).unwrap();
    let out = apply_one(r.path(), "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(".lancet is a symlink"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);

    let r = tempfile::tempdir().unwrap();
    write(r.path(), "app.py", "x = 1\n");
    fs::create_dir(r.path().join(".lancet")).unwrap();
    let target = outside.path().join("victim");
    fs::write(&target, "keep\n").unwrap();
    symlink(&target, r.path().join(".lancet/.gitignore")).unwrap();
    let out = apply_one(r.path(), "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains(".lancet/.gitignore is a symlink"));
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
    assert_eq!(read(r.path(), "app.py"), "x = 1\n");
}

/// Item 1: `.lancet/sessions` a symlink: transcripts (every file read, every
/// command output) are never written through it, in any mode.
#[test]
fn a_symlinked_sessions_directory_is_refused() {
    let outside = tempfile::tempdir().unwrap();
    let r = tempfile::tempdir().unwrap();
    fs::create_dir(r.path().join(".lancet")).unwrap();
    symlink(outside.path(), r.path().join(".lancet/sessions")).unwrap();
    let ws = Workspace::open(r.path()).unwrap();
    let err = ws.state_dir("sessions").unwrap_err();
    assert!(
        matches!(&err, WorkspaceError::StateEntry { path, .. } if path == ".lancet/sessions"),
        "{err:?}"
    );
    #[cfg(feature = "agent")]
    assert!(lancet::agent::session::Session::create(r.path(), 1).is_err());
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
}

/// Item 1: pruning keeps the 20 newest entries lancet wrote and deletes only
/// them: a foreign directory, a symlink and an entry with a forged-looking
/// name but no manifest, all older than lancet's, survive 22 applies.
#[test]
fn pruning_deletes_only_entries_lancet_wrote() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("precious"), "keep\n").unwrap();
    let r = tempfile::tempdir().unwrap();
    let undo = r.path().join(".lancet/undo");
    fs::create_dir_all(undo.join("0000000000000000-0000000000-00000000000000000000")).unwrap();
    fs::write(
        undo.join("0000000000000000-0000000000-00000000000000000000/data"),
        "mine\n",
    )
    .unwrap();
    symlink(
        outside.path(),
        undo.join("0000000000000001-0000000000-00000000000000000000"),
    )
    .unwrap();
    fs::create_dir(undo.join("notes")).unwrap();
    write(r.path(), "app.py", "v = 0\n");
    for i in 0..22 {
        let out = apply_one(r.path(), &format!("v = {i}\n"), &format!("v = {}\n", i + 1));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let names: Vec<String> = fs::read_dir(&undo)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 20 + 3, "{names:?}");
    assert_eq!(
        fs::read_to_string(undo.join("0000000000000000-0000000000-00000000000000000000/data"))
            .unwrap(),
        "mine\n"
    );
    assert!(undo.join("notes").is_dir());
    assert_eq!(
        fs::read_to_string(outside.path().join("precious")).unwrap(),
        "keep\n"
    );
}

/// Item 1: pruned entries wait in `.lancet/pruned/`, reached like every
/// state directory: a `.lancet/pruned` symlink to a directory outside is
/// never followed (nothing is moved or deleted there; the entries are
/// pruned in place instead), and undo still works.
#[test]
fn a_pruned_directory_symlink_is_not_followed() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("precious"), "keep\n").unwrap();
    let r = tempfile::tempdir().unwrap();
    fs::create_dir(r.path().join(".lancet")).unwrap();
    symlink(outside.path(), r.path().join(".lancet/pruned")).unwrap();
    write(r.path(), "app.py", "v = 0\n");
    for i in 0..25 {
        let out = apply_one(r.path(), &format!("v = {i}\n"), &format!("v = {}\n", i + 1));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let outside_names: Vec<String> = fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(outside_names, ["precious"]);
    assert_eq!(
        fs::read_to_string(outside.path().join("precious")).unwrap(),
        "keep\n"
    );
    assert_eq!(
        fs::read_dir(r.path().join(".lancet/undo")).unwrap().count(),
        20
    );
    let out = lancet(r.path(), &["undo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        fs::read_to_string(r.path().join("app.py")).unwrap(),
        "v = 24\n"
    );
}

// ------------------------------------------------------------------ item 2

/// Applies `x = 1` → `x = 2` to `app.py` and returns the journal entry's manifest path.
fn applied_once(dir: &Path) -> std::path::PathBuf {
    write(dir, "app.py", "x = 1\n");
    let out = apply_one(dir, "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let entry = fs::read_dir(dir.join(".lancet/undo"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    entry.join("manifest.json")
}

/// Item 2: a manifest whose `saved` copy leads out of its entry (relative or
/// absolute), with no hash and mode 06777: undo refuses, saying what is
/// wrong; nothing outside is copied in and no file becomes setuid.
#[test]
fn a_tampered_journal_is_refused_with_what_is_wrong() {
    let top = tempfile::tempdir().unwrap();
    fs::write(top.path().join("secret"), "top secret\n").unwrap();
    let r = top.path().join("r");
    fs::create_dir(&r).unwrap();
    let manifest = applied_once(&r);
    let forged = |saved: &str, before: &str| {
        format!(
            r#"{{"entries":[{{"path":"app.py","existed":true,"saved":"{saved}","mode":{},"after":{}{before}}}],"created_dirs":[]}}"#,
            0o6777,
            lancet::content_hash(b"x = 2\n")
        )
    };
    for (saved, before, what) in [
        ("../../../secret", "", "not a file of the entry"),
        ("/etc/passwd", "", "not a file of the entry"),
        ("0", "", "without the hash"),
    ] {
        fs::write(&manifest, forged(saved, before)).unwrap();
        let out = lancet(&r, &["undo"]);
        assert_eq!(code(&out), 1, "{saved}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("is not as lancet writes it"), "{err}");
        assert!(err.contains(what), "{saved}: {err}");
        assert_eq!(read(&r, "app.py"), "x = 2\n");
        assert_eq!(mode(&r.join("app.py")) & 0o7000, 0);
    }
    fs::write(&manifest, "{ not json").unwrap();
    let out = lancet(&r, &["undo"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("not the JSON lancet writes"),
        "{}",
        stderr(&out)
    );
}

/// Item 2: a well-formed manifest can still only restore permission bits:
/// a recorded 06755 comes back as 0755, never setuid or setgid.
#[test]
fn undo_restores_permission_bits_only() {
    let r = tempfile::tempdir().unwrap();
    let manifest = applied_once(r.path());
    let text = fs::read_to_string(&manifest).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut v = v;
    v["entries"][0]["mode"] = serde_json::json!(0o6755);
    fs::write(&manifest, v.to_string()).unwrap();
    let out = lancet(r.path(), &["undo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(read(r.path(), "app.py"), "x = 1\n");
    assert_eq!(mode(&r.path().join("app.py")), 0o755);
}

// ------------------------------------------------------------------ item 3

/// Item 3: modes from a diff: only what git records for a regular file.
/// `new mode 104777` (setuid, world-writable), `100777`, a symlink's
/// `120000` are refused as malformed (exit 2), nothing changes; 100755 works.
#[test]
fn diff_modes_are_only_git_regular_file_modes() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "run.sh", "echo\n");
    fs::set_permissions(r.path().join("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    let diff = |m: &str| {
        format!(
            "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode {m}\n--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo\n+echo hi\n"
        )
    };
    for (m, words) in [
        ("104777", "file mode 104777"),
        ("100777", "file mode 100777"),
        ("120000", "symlinks"),
    ] {
        let out = lancet_in(r.path(), &["apply", "-"], &diff(m));
        assert_eq!(code(&out), 2, "{m}: {}", stderr(&out));
        assert!(stderr(&out).contains(words), "{m}: {}", stderr(&out));
        assert_eq!(mode(&r.path().join("run.sh")), 0o644);
        assert_eq!(read(r.path(), "run.sh"), "echo\n");
    }
    let created =
        "diff --git a/x b/x\nnew file mode 106755\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n";
    assert_eq!(code(&lancet_in(r.path(), &["apply", "-"], created)), 2);
    assert!(!r.path().join("x").exists());
    let out = lancet_in(r.path(), &["apply", "-"], &diff("100755"));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(mode(&r.path().join("run.sh")), 0o755);
}

// ------------------------------------------------------------------ item 4

/// Item 4: the journal's copy of a private file is private: state
/// directories 0700, files 0600; the edited file keeps its 0600.
#[test]
fn state_and_journal_are_private() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "app.py", "password = 1\n");
    fs::set_permissions(r.path().join("app.py"), fs::Permissions::from_mode(0o600)).unwrap();
    let out = apply_one(r.path(), "password = 1\n", "password = 2\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(mode(&r.path().join("app.py")), 0o600);
    let lancet_dir = r.path().join(".lancet");
    assert_eq!(mode(&lancet_dir), 0o700);
    assert_eq!(mode(&lancet_dir.join("undo")), 0o700);
    assert_eq!(mode(&lancet_dir.join(".gitignore")), 0o600);
    let entry = fs::read_dir(lancet_dir.join("undo"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(mode(&entry), 0o700);
    // The copies lie in the entry itself, beside the manifest (no `files/`).
    assert!(!entry.join("files").exists());
    assert_eq!(mode(&entry.join("0")), 0o600);
    assert_eq!(mode(&entry.join("manifest.json")), 0o600);
    // Transcripts go through the same state directory.
    let ws = Workspace::open(r.path()).unwrap();
    let sessions = ws.state_dir("sessions").unwrap();
    drop(sessions.create_file("t.jsonl").unwrap());
    assert_eq!(mode(&lancet_dir.join("sessions")), 0o700);
    assert_eq!(mode(&lancet_dir.join("sessions/t.jsonl")), 0o600);
}

// ------------------------------------------------------------------ item 5

/// Item 5: 20 parallel applies, each adding its own line through its own
/// edit of one file: every edit reported applied is in the file, and every
/// apply that did not apply says so.
#[test]
fn parallel_applies_lose_no_edit() {
    let r = tempfile::tempdir().unwrap();
    let lines: String = (0..20).map(|i| format!("slot {i}\n")).collect();
    write(r.path(), "slots.txt", &lines);
    for i in 0..20 {
        write(
            r.path(),
            &format!("e{i}.txt"),
            &block(
                "slots.txt",
                &format!("slot {i}\n"),
                &format!("slot {i}\nadded {i}\n"),
            ),
        );
    }
    let children: Vec<_> = (0..20)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_lancet"))
                .current_dir(r.path())
                .args(["apply", &format!("e{i}.txt")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let text = read(r.path(), "slots.txt");
    let mut applied = 0;
    for (i, out) in outs.iter().enumerate() {
        if code(out) == 0 {
            applied += 1;
            assert!(stdout(out).contains("applied"), "{}", stdout(out));
            assert!(
                text.contains(&format!("slot {i}\nadded {i}\n")),
                "apply {i} said applied, but its line is missing:\n{text}"
            );
        } else {
            assert!(!stderr(out).is_empty(), "apply {i} failed silently");
        }
    }
    assert_eq!(applied, 20, "under the lock every apply waits its turn");
}

// ------------------------------------------------------------------ item 6

/// Item 6: plan, swap a directory for a symlink to the outside, commit: the
/// commit refuses and nothing is written outside.
#[test]
fn a_directory_swapped_between_plan_and_commit_is_not_written_through() {
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("a.py"), "x = 1\n").unwrap();
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "src/a.py", "x = 1\n");
    let ws = Workspace::open(r.path()).unwrap();
    let patch = Format::SearchReplace
        .parse(&block("src/a.py", "x = 1\n", "x = 2\n"))
        .unwrap();
    let planned = plan(&ws, &patch, &ApplyOptions::default());
    assert!(planned.report().ok);
    fs::rename(r.path().join("src"), r.path().join("moved")).unwrap();
    symlink(outside.path(), r.path().join("src")).unwrap();
    assert!(planned.commit(&ws).is_err());
    assert_eq!(
        fs::read_to_string(outside.path().join("a.py")).unwrap(),
        "x = 1\n"
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 1);
    assert_eq!(read(r.path(), "moved/a.py"), "x = 1\n");
}

// ------------------------------------------------------------------ item 7

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(ok.success());
}

/// Item 7: a FIFO as the target of `apply` or `view` is refused at once
/// (reading it would block forever), named for what it is.
#[test]
fn a_fifo_is_refused_without_hanging() {
    let r = tempfile::tempdir().unwrap();
    mkfifo(&r.path().join("app.py"));
    let out = apply_one(r.path(), "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("app.py is refused: it is a named pipe (FIFO)"),
        "{}",
        stderr(&out)
    );
    let out = lancet(r.path(), &["view", "app.py"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("named pipe"), "{}", stderr(&out));
    // The agent's read, edit and write tools read through the workspace.
    let ws = Workspace::open(r.path()).unwrap();
    assert!(matches!(
        ws.read("app.py"),
        Err(WorkspaceError::NotRegular { .. })
    ));
}

/// Item 7: a device node inside the root is never read (a character device
/// can produce bytes until memory runs out).
#[test]
fn a_device_node_is_refused() {
    let r = tempfile::tempdir().unwrap();
    let made = Command::new("mknod")
        .arg(r.path().join("app.py"))
        .args(["c", "1", "5"])
        .status()
        .unwrap();
    assert!(made.success(), "mknod needs root");
    let out = apply_one(r.path(), "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a character device"),
        "{}",
        stderr(&out)
    );
    let out = lancet(r.path(), &["view", "app.py"]);
    assert_eq!(code(&out), 1);
}

/// Item 7: files over the workspace's size limit are refused before they are
/// read whole.
#[test]
fn files_over_the_size_limit_are_refused() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "big.txt", "0123456789\n");
    let ws = Workspace::open(r.path()).unwrap().with_max_file_bytes(10);
    assert!(matches!(
        ws.read("big.txt"),
        Err(WorkspaceError::TooLarge {
            bytes: 11,
            limit: 10,
            ..
        })
    ));
}

// ------------------------------------------------------------------ item 8

/// Item 8: an edit by root keeps the file's owner and group.
#[test]
fn owner_and_group_are_kept() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "app.py", "x = 1\n");
    std::os::unix::fs::chown(r.path().join("app.py"), Some(1000), Some(1000)).unwrap();
    let out = apply_one(r.path(), "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let meta = fs::metadata(r.path().join("app.py")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (1000, 1000));
    assert_eq!(read(r.path(), "app.py"), "x = 2\n");
}

/// Item 8: a read-only file is not rewritten unless asked (`--force`), and
/// stays read-only when it is.
#[test]
fn read_only_files_need_force() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "app.py", "x = 1\n");
    fs::set_permissions(r.path().join("app.py"), fs::Permissions::from_mode(0o444)).unwrap();
    let out = apply_one(r.path(), "x = 1\n", "x = 2\n");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("app.py is refused: it is read-only"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(read(r.path(), "app.py"), "x = 1\n");
    let out = lancet(r.path(), &["apply", "--force", "edit.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(read(r.path(), "app.py"), "x = 2\n");
    assert_eq!(mode(&r.path().join("app.py")), 0o444);
}

/// Item 8: a symlink as a target, dangling or not, is refused: creating
/// over a dangling one would replace the link (and undo would then lose it).
#[test]
fn symlinks_are_not_replaced() {
    let r = tempfile::tempdir().unwrap();
    symlink("missing.py", r.path().join("new.py")).unwrap();
    write(r.path(), "edit.txt", &block("new.py", "", "x = 1\n"));
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("new.py is refused: it is a symlink"),
        "{}",
        stderr(&out)
    );
    assert!(
        fs::symlink_metadata(r.path().join("new.py"))
            .unwrap()
            .is_symlink()
    );
    assert!(!r.path().join("missing.py").exists());

    write(r.path(), "real.py", "x = 1\n");
    symlink("real.py", r.path().join("link.py")).unwrap();
    write(
        r.path(),
        "edit.txt",
        &block("link.py", "x = 1\n", "x = 2\n"),
    );
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(read(r.path(), "real.py"), "x = 1\n");
    assert!(
        fs::symlink_metadata(r.path().join("link.py"))
            .unwrap()
            .is_symlink()
    );
}

// ------------------------------------------------------------------ item 9

/// Item 9: REPLACE found elsewhere is not "already applied": `load()` stays
/// to be changed, so the answer is not found (exit 1) naming `load()`'s line.
#[test]
fn replace_found_elsewhere_is_not_already_applied() {
    let r = tempfile::tempdir().unwrap();
    let app = "def load(path):\n    data = read(path, strict=False)\n    return data\n\n\ndef load_strict(path):\n    data = read(path, strict=True)\n    return data\n";
    write(r.path(), "app.py", app);
    let out = apply_one(
        r.path(),
        "    data = reed(path, strict=False)\n",
        "    data = read(path, strict=True)\n",
    );
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    let msg = stderr(&out);
    assert!(!msg.contains("already applied"), "{msg}");
    assert!(msg.contains("line 2 (96% similar)"), "{msg}");
    assert_eq!(read(r.path(), "app.py"), app);
}

/// Item 9: a file of lone-CR lines keeps its final CR.
#[test]
fn a_final_lone_cr_is_kept() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "f.txt", "one\rtwo\rthree\r");
    write(
        r.path(),
        "edit.txt",
        &block("f.txt", "one\rtwo\n", "ONE\rtwo\n"),
    );
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(read(r.path(), "f.txt"), "ONE\rtwo\rthree\r");
}

// ------------------------------------------------------------------ item 18

/// Item 18: a SEARCH of n identical lines against 4n identical lines
/// (n = 50,000) answers at once: ambiguous, with the true count and a few
/// places, not all 150,001 of them.
#[test]
fn repeated_lines_are_ambiguous_at_once() {
    let r = tempfile::tempdir().unwrap();
    let n = 50_000;
    write(r.path(), "f.txt", &"x = 1\n".repeat(4 * n));
    write(
        r.path(),
        "edit.txt",
        &block("f.txt", &"x = 1\n".repeat(n), &"x = 2\n".repeat(n)),
    );
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let msg = stderr(&out);
    assert!(msg.contains("SEARCH matches 150001 places"), "{msg}");
    assert!(msg.contains("and 149996 more"), "{msg}");
    assert!(msg.len() < 2_000, "{} bytes of message", msg.len());
    // Whitespace-tolerant, and with a hint that picks one: bounded too.
    write(
        r.path(),
        "edit.txt",
        &block("f.txt", &"x  =  1\n".repeat(n), &"x = 2\n".repeat(n)),
    );
    let out = lancet(r.path(), &["apply", "--check", "edit.txt"]);
    assert_eq!(code(&out), 1);
    let hinted = format!(
        "f.txt\n<<<<<<< SEARCH\n:start_line: 7\n{}=======\n{}>>>>>>> REPLACE\n",
        "x = 1\n".repeat(n),
        "x = 2\n".repeat(n)
    );
    write(r.path(), "edit.txt", &hinted);
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = read(r.path(), "f.txt");
    assert_eq!(text.lines().filter(|l| *l == "x = 2").count(), n);
    assert!(text.starts_with("x = 1\n".repeat(6).as_str()));
}

/// Item 18: a path of megabytes is refused at once and never echoed back
/// whole (the message shows its start and its length).
#[test]
fn a_huge_path_is_refused_and_clipped() {
    let r = tempfile::tempdir().unwrap();
    let path = "a/".repeat(5_000_000);
    let diff = format!("--- a/{path}x\n+++ b/{path}x\n@@ -1 +1 @@\n-x\n+y\n");
    write(r.path(), "edit.diff", &diff);
    for args in [
        &["apply", "edit.diff"][..],
        &["apply", "--json", "edit.diff"][..],
    ] {
        let out = lancet(r.path(), args);
        assert_eq!(code(&out), 1, "{}", stderr(&out));
        let shown = out.stdout.len() + out.stderr.len();
        assert!(shown < 4_000, "{shown} bytes echoed");
        let all = stdout(&out) + &stderr(&out);
        assert!(all.contains("(10000001 bytes)"), "{all}");
    }
}

// ------------------------------------------------------------------ messages

/// Messages: creating a file under a regular file is a refusal (exit 1)
/// naming the file in the way, not an I/O error.
#[test]
fn creating_under_a_file_exits_one() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "a", "a file\n");
    write(r.path(), "edit.txt", &block("a/b.py", "", "x = 1\n"));
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a is a file, not a directory"),
        "{}",
        stderr(&out)
    );
}

/// Messages: a refused move names its destination.
#[test]
fn a_refused_move_names_the_destination() {
    let r = tempfile::tempdir().unwrap();
    write(r.path(), "a.py", "x = 1\n");
    for to in [".git/hooks/pre-commit", ".lancet.toml"] {
        let diff = format!("diff --git a/a.py b/{to}\nrename from a.py\nrename to {to}\n");
        let out = lancet_in(r.path(), &["apply", "-"], &diff);
        assert_eq!(code(&out), 1, "{to}: {}", stderr(&out));
        let msg = stderr(&out);
        assert!(
            msg.contains(&format!("a.py cannot be moved to {to}")),
            "{msg}"
        );
        assert!(
            msg.contains(&format!("the destination {to} is refused")),
            "{msg}"
        );
        assert_eq!(read(r.path(), "a.py"), "x = 1\n");
    }
}

/// Messages (and the model's reach): lancet's own configuration may be read,
/// never created, changed or deleted by an edit.
#[test]
fn lancet_toml_is_never_written() {
    let r = tempfile::tempdir().unwrap();
    write(
        r.path(),
        "edit.txt",
        &block(".lancet.toml", "", "[permissions]\n"),
    );
    let out = lancet(r.path(), &["apply", "edit.txt"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("lancet's own configuration"),
        "{}",
        stderr(&out)
    );
    assert!(!r.path().join(".lancet.toml").exists());
    write(r.path(), ".lancet.toml", "model = \"m\"\n");
    let ws = Workspace::open(r.path()).unwrap();
    assert!(ws.read(".lancet.toml").unwrap().is_some());
    let h = lancet::content_hash(b"model = \"m\"\n");
    let change = |bytes: &[u8]| lancet::Change::Write {
        path: "./.LANCET.toml".into(),
        bytes: bytes.to_vec(),
        expected_hash: Some(h),
        mode: None,
    };
    assert!(matches!(
        ws.commit(&[change(b"x")]),
        Err(WorkspaceError::ConfigFile { .. })
    ));
    let delete = lancet::Change::Delete {
        path: ".lancet.toml".into(),
        expected_hash: h,
    };
    assert!(matches!(
        ws.commit(&[delete]),
        Err(WorkspaceError::ConfigFile { .. })
    ));
    assert_eq!(read(r.path(), ".lancet.toml"), "model = \"m\"\n");
}

/// Messages: a failed write carries the system's reason (here: no space).
#[test]
fn io_errors_carry_the_reason() {
    let e = WorkspaceError::Io {
        path: "/p/app.py".into(),
        source: std::io::Error::from_raw_os_error(28),
    };
    assert!(e.to_string().contains("No space left on device"), "{e}");
    assert!(feedback::workspace_error(&e).contains("No space left on device"));
}

/// The engine's new words, as a person or a model reads them.
#[test]
fn engine_security_words() {
    use lancet::{EditError, EditKind, FileKind, JournalProblem, ParseError, PathProblem};
    let mut o = String::new();
    let mut put = |name: &str, text: &str| o.push_str(&format!("## {name}\n{text}\n\n"));
    let refuse = |why| EditError::PathRefused { why };
    for (name, why) in [
        ("config", PathProblem::Config),
        (
            "symlink",
            PathProblem::NotRegular {
                found: FileKind::Symlink,
            },
        ),
        (
            "fifo",
            PathProblem::NotRegular {
                found: FileKind::Fifo,
            },
        ),
        (
            "too large",
            PathProblem::TooLarge {
                bytes: 70_000_000,
                limit: 67_108_864,
            },
        ),
        ("read-only", PathProblem::ReadOnly),
        ("too long", PathProblem::TooLong { bytes: 10_000_001 }),
        ("changed", PathProblem::Changed),
    ] {
        put(
            &format!("refused ({name})"),
            &feedback::edit_error("src/app.py", &refuse(why), None, EditKind::Block),
        );
    }
    put(
        "destination refused",
        &feedback::edit_error(
            "a.py",
            &EditError::DestinationRefused {
                to: ".git/config".into(),
                why: PathProblem::Reserved,
            },
            None,
            EditKind::Hunk,
        ),
    );
    put(
        "under a file",
        &feedback::edit_error(
            "a/b.py",
            &EditError::ParentNotDirectory { parent: "a".into() },
            None,
            EditKind::Block,
        ),
    );
    put(
        "long path clipped",
        &feedback::edit_error(
            &"a/".repeat(200),
            &refuse(PathProblem::TooLong { bytes: 400 }),
            None,
            EditKind::Hunk,
        ),
    );
    put(
        "bad mode",
        &feedback::parse_error(
            &ParseError::BadMode {
                line: 3,
                mode: "104777".into(),
            },
            Some("udiff"),
        ),
    );
    let p = |s: &str| s.to_owned();
    for (name, problem) in [
        ("syntax", JournalProblem::Syntax { line: 1, column: 3 }),
        ("too large", JournalProblem::TooLarge { bytes: 99_999_999 }),
        (
            "saved name",
            JournalProblem::SavedName {
                saved: p("../../secret"),
            },
        ),
        (
            "saved missing",
            JournalProblem::SavedMissing { path: p("a.py") },
        ),
        (
            "hash missing",
            JournalProblem::HashMissing { path: p("a.py") },
        ),
        ("duplicate", JournalProblem::Duplicate { path: p("a.py") }),
        (
            "not regular",
            JournalProblem::NotRegular {
                name: p("files/0"),
                found: FileKind::Symlink,
            },
        ),
        (
            "copy missing",
            JournalProblem::CopyMissing { saved: p("0") },
        ),
    ] {
        put(
            &format!("journal ({name})"),
            &feedback::workspace_error(&WorkspaceError::JournalCorrupt {
                entry: p("0000000000000001-0000000042-00000000000000000000"),
                problem,
            }),
        );
    }
    for (name, e) in [
        (
            "state symlink",
            WorkspaceError::StateEntry {
                path: p(".lancet/undo"),
                found: FileKind::Symlink,
                expected: FileKind::Directory,
            },
        ),
        (
            "state directory",
            WorkspaceError::StateEntry {
                path: p(".lancet/.gitignore"),
                found: FileKind::Directory,
                expected: FileKind::Regular,
            },
        ),
        (
            "busy",
            WorkspaceError::Busy {
                waited: Duration::from_secs(10),
            },
        ),
        ("stale", WorkspaceError::Stale { path: p("a.py") }),
        ("changed", WorkspaceError::PathChanged { path: p("a.py") }),
        ("read-only", WorkspaceError::ReadOnly { path: p("a.py") }),
        (
            "io",
            WorkspaceError::Io {
                path: "/p/a.py".into(),
                source: std::io::Error::from_raw_os_error(13),
            },
        ),
    ] {
        put(
            &format!("workspace ({name})"),
            &feedback::workspace_error(&e),
        );
    }
    insta::assert_snapshot!("engine_security_words", o);
}

/// Item 9's status as data, for the JSON report: not found, not already applied.
#[test]
fn replace_elsewhere_reports_not_found_in_json() {
    let r = tempfile::tempdir().unwrap();
    write(
        r.path(),
        "app.py",
        "def load(path):\n    data = read(path, strict=False)\n\n\ndef load_strict(path):\n    data = read(path, strict=True)\n",
    );
    let ws = Workspace::open(r.path()).unwrap();
    let patch = Format::SearchReplace
        .parse(&block(
            "app.py",
            "    data = reed(path, strict=False)\n",
            "    data = read(path, strict=True)\n",
        ))
        .unwrap();
    let report = plan(&ws, &patch, &ApplyOptions::default()).into_report();
    let e = report.edits().next().unwrap();
    assert_eq!(e.status, EditStatus::NotFound);
}

/// Item 7, through a whole-file block under a bare name (`benchsuite`, no
/// extension): the plan looks the name up in the root to tell a file from an
/// example; a FIFO there is refused without being opened (no hang), a symlink
/// is refused without being written through, and nothing of the reply is
/// written.
#[test]
fn a_bare_name_over_a_fifo_or_symlink_is_refused() {
    let reply = "a.py\n```python\nA = 2\n```\n\nbenchsuite\n```sh\ncargo bench\n```\n";
    let outside = tempfile::tempdir().unwrap();
    write(outside.path(), "target", "secret\n");
    for special in ["fifo", "symlink"] {
        let r = tempfile::tempdir().unwrap();
        write(r.path(), "a.py", "A = 1\n");
        write(r.path(), "edit.txt", reply);
        let at = r.path().join("benchsuite");
        if special == "fifo" {
            mkfifo(&at);
        } else {
            symlink(outside.path().join("target"), &at).unwrap();
        }
        let out = lancet(r.path(), &["apply", "--format", "whole", "edit.txt"]);
        assert_eq!(code(&out), 1, "{special}: {}", stderr(&out));
        let words = stdout(&out) + &stderr(&out);
        assert!(
            words.contains("benchsuite is refused"),
            "{special}: {words}"
        );
        assert_eq!(read(r.path(), "a.py"), "A = 1\n", "{special}");
        assert_eq!(read(outside.path(), "target"), "secret\n", "{special}");
    }
}
