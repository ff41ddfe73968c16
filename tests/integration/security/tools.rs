//! Security: the agent's tools and permissions: ask mode that asks, deny rules that deny, prompts that cannot be spoofed, special files and bounded work in the tools (items 7, 11-13, 18).

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use lancet::Workspace;
use lancet::agent::permissions::{Mode, NoTerminal, Permissions};
use lancet::agent::tools::{ToolOutcome, Tools, ToolsConfig};
use serde_json::{Value, json};

/// Tools over `root` in `mode`, with nobody to ask.
fn tools(root: &Path, mode: Mode) -> Tools {
    Tools::new(
        Workspace::open(root).unwrap(),
        ToolsConfig::default(),
        Permissions::new(mode),
        Box::new(NoTerminal),
    )
}

/// One call on a thread of its own, so a call that blocks for ever (a read
/// of a FIFO nobody writes) fails the test instead of hanging it.
fn call_within(root: &Path, mode: Mode, name: &str, args: Value, secs: u64) -> ToolOutcome {
    let (tx, rx) = mpsc::channel();
    let (root, owned) = (root.to_path_buf(), name.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut t = tools(&root, mode);
        let o = rt.block_on(t.call(&owned, &args.to_string()));
        let _ = tx.send(o);
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| {
            let name = &name[..name.len().min(20)];
            panic!("`{name}` did not answer within {secs} s")
        })
}

/// The process's peak resident memory so far, in bytes (Linux).
#[cfg(target_os = "linux")]
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Item 7: a FIFO inside the root is refused by read, write and edit
/// before it is opened; none of them blocks waiting for a writer.
#[cfg(unix)]
#[test]
fn fifo_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.path().join("pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    for (name, args) in [
        ("read", json!({"path": "pipe"})),
        ("write", json!({"path": "pipe", "content": "x"})),
        (
            "edit",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
        ("grep", json!({"pattern": "x", "path": "pipe"})),
    ] {
        let o = call_within(dir.path(), Mode::Auto, name, args, 10);
        if name != "grep" {
            assert!(o.is_error, "{name}: {}", o.content);
            assert!(o.content.contains("pipe"), "{name}: {}", o.content);
        }
    }
}

/// Item 7: a character device inside the root (a copy of /dev/zero) is
/// refused before it is read; reading it would take all the memory there is.
#[cfg(target_os = "linux")]
#[test]
fn device_node_is_refused_not_read() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: making a device node needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("mknod")
        .arg(dir.path().join("zero"))
        .args(["c", "1", "5"])
        .status()
        .unwrap();
    assert!(made.success());
    let before = peak_rss();
    for (name, args) in [
        ("read", json!({"path": "zero"})),
        ("write", json!({"path": "zero", "content": "x"})),
        (
            "edit",
            json!({"path": "zero", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let o = call_within(dir.path(), Mode::Auto, name, args, 10);
        assert!(o.is_error, "{name}: {}", o.content);
        let grew = peak_rss().saturating_sub(before);
        assert!(
            grew < 256 << 20,
            "{name}: memory grew by {} MiB",
            grew >> 20
        );
    }
    let o = call_within(
        dir.path(),
        Mode::Auto,
        "grep",
        json!({"pattern": "x", "path": "zero"}),
        10,
    );
    assert!(!o.content.contains("zero:"), "{}", o.content);
}

/// Item 18: reading 5 lines of a 1 GiB file reads about 5 lines, not the
/// file: the answer comes back, shows the lines, and memory stays bounded.
#[cfg(target_os = "linux")]
#[test]
fn reading_a_page_of_a_huge_file_costs_a_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.log");
    // 20 KB of text (so the start does not look binary), then a hole.
    let head: String = (1..=2000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&path, &head).unwrap();
    // Sparse: made at once, and the rest reads as zeros.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let before = peak_rss();
    let o = call_within(
        dir.path(),
        Mode::Auto,
        "read",
        json!({"path": "huge.log", "limit": 5}),
        10,
    );
    assert!(!o.is_error, "{}", o.content);
    assert!(o.content.contains("line 1\n") && o.content.contains("line 5\n"));
    assert!(o.content.contains("offset=6"), "{}", o.content);
    // Line 2001 is one 1 GiB line of zeros: cut, and still an answer.
    let o = call_within(
        dir.path(),
        Mode::Auto,
        "read",
        json!({"path": "huge.log", "offset": 1990}),
        10,
    );
    assert!(o.content.contains("line 2000\n"), "{}", &o.content[..200]);
    assert!(o.content.len() < 30_000, "{}", o.content.len());
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 256 << 20, "peak memory grew by {} MiB", grew >> 20);
    // An edit of a file too large to read whole is refused without reading it.
    let o = call_within(
        dir.path(),
        Mode::Auto,
        "edit",
        json!({"path": "huge.log", "old_string": "line 1", "new_string": "x"}),
        10,
    );
    assert!(o.is_error, "{}", o.content);
    let grew = peak_rss().saturating_sub(before);
    assert!(grew < 256 << 20, "peak memory grew by {} MiB", grew >> 20);
}

/// Item 18: grep says how many files it did not search because they are
/// too large, instead of answering a bare "No matches".
#[test]
fn grep_names_the_files_it_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    std::fs::write(&path, "needle\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(9 << 20)
        .unwrap();
    std::fs::write(dir.path().join("small.txt"), "hay\n").unwrap();
    let o = call_within(
        dir.path(),
        Mode::Auto,
        "grep",
        json!({"pattern": "needle"}),
        10,
    );
    assert!(!o.is_error, "{}", o.content);
    assert!(o.content.contains("1 file"), "{}", o.content);
    assert!(o.content.contains("8 MiB"), "{}", o.content);
}

/// Item 18: an argument echoed back in a result is capped, whatever its
/// size: a 1 MiB path, pattern, tool name or command comes back as a few
/// hundred characters and its size.
#[test]
fn echoed_arguments_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a".repeat(1 << 20);
    let cases = [
        (Mode::Auto, "read", json!({"path": long})),
        (Mode::Auto, "read", json!({"path": format!("../{long}")})),
        (Mode::Auto, "list", json!({"path": long})),
        (Mode::Auto, "grep", json!({"pattern": format!("({long}")})),
        (Mode::Auto, "grep", json!({"pattern": long})),
        (Mode::Auto, "glob", json!({"pattern": format!("[{long}")})),
        (Mode::Auto, "glob", json!({"pattern": long})),
        (Mode::Auto, "write", json!({"path": long, "content": "x"})),
        (Mode::ReadOnly, "bash", json!({"command": long})),
        (
            Mode::ReadOnly,
            "write",
            json!({"path": long, "content": "x"}),
        ),
        (Mode::Auto, long.as_str(), json!({})),
    ];
    for (mode, name, args) in cases {
        let shown: String = args.to_string().chars().take(60).collect();
        let o = call_within(dir.path(), mode, name, args, 20);
        let start: String = o.content.chars().take(300).collect();
        assert!(
            o.content.len() < 2000,
            "{} {shown}: {} bytes: {start}…",
            &name[..name.len().min(10)],
            o.content.len(),
        );
    }
}
