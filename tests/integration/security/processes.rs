//! Security: processes: nothing a command starts outlives its timeout or lancet (item 16).
//!
//! Each command below starts a `sleep 300` that escapes its process group
//! or its parent (`setsid`, `nohup`, a subshell's orphan) and writes its pid
//! to a file; after the tool returns, after a timeout, or after `lancet run`
//! gets SIGTERM or SIGHUP, that pid must be gone. Linux only: that is where
//! lancet can see processes that left the group (`/proc`).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lancet::Workspace;
use lancet::agent::permissions::{Mode, NoTerminal, Permissions};
use lancet::agent::tools::{ToolOutcome, Tools, ToolsConfig};
use serde_json::json;

use crate::llm_server::{LlmServer, Scripted};

/// Whether `pid` is a live process (a zombie is dead: it only waits to be reaped).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit(')')
                .next()
                .map(|r| !r.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Whether `pid` is gone within `within`.
fn gone(pid: u32, within: Duration) -> bool {
    let end = Instant::now() + within;
    loop {
        if !alive(pid) {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills, at the end of a test that failed, the `sleep`s it left behind.
struct Leftovers(Vec<u32>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for &pid in &self.0 {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if alive(pid) && cmd.starts_with(b"sleep") {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

/// The pid a command wrote to `name` in `root`, waiting up to 10 s for it.
fn pid_in(root: &Path, name: &str) -> u32 {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(s) = std::fs::read_to_string(root.join(name))
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < end, "{name} was never written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn bash(root: &Path, command: &str, timeout_secs: u64) -> ToolOutcome {
    let mut t = Tools::new(
        Workspace::open(root).unwrap(),
        ToolsConfig::default(),
        Permissions::new(Mode::Auto),
        Box::new(NoTerminal),
    );
    let args = json!({"command": command, "timeout_secs": timeout_secs});
    t.call("bash", &args.to_string()).await
}

/// Item 16: `setsid cmd &`, `nohup cmd &` and `(cmd &)` end with the command
/// that started them, and the result says so.
#[tokio::test]
async fn background_processes_end_with_their_command() {
    for (kind, command) in [
        ("setsid", "setsid sleep 300 & echo $! > bg.pid"),
        (
            "nohup",
            "nohup sleep 300 >/dev/null 2>&1 & echo $! > bg.pid",
        ),
        ("subshell", "(sleep 300 & echo $! > bg.pid)"),
        (
            "setsid, no output",
            "setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > bg.pid",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let o = bash(dir.path(), command, 60).await;
        let pid = pid_in(dir.path(), "bg.pid");
        let _left = Leftovers(vec![pid]);
        assert!(!o.is_error, "{kind}: {}", o.content);
        assert!(
            gone(pid, Duration::from_millis(200)),
            "{kind}: background process {pid} outlived its command: {}",
            o.content
        );
        assert!(
            o.content.contains("1 background process"),
            "{kind}: {}",
            o.content
        );
    }
}

/// Item 16: a timeout ends a `setsid` grandchild too (it left the group the
/// timeout kills), and the result does not claim more than was checked.
#[tokio::test]
async fn a_timeout_ends_what_left_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let command = "setsid sh -c 'echo $$ > bg.pid; exec sleep 300' & sleep 100";
    let o = bash(dir.path(), command, 1).await;
    let pid = pid_in(dir.path(), "bg.pid");
    let _left = Leftovers(vec![pid]);
    assert!(o.is_error, "{}", o.content);
    assert!(
        gone(pid, Duration::from_millis(200)),
        "setsid grandchild {pid} outlived the timeout: {}",
        o.content
    );
}

/// Item 16: a command whose background process finishes on its own leaves
/// nothing to end, and the result says nothing about background processes.
#[tokio::test]
async fn a_finished_background_process_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let o = bash(dir.path(), "true & wait; echo done", 60).await;
    assert!(!o.is_error && o.content.contains("done"), "{}", o.content);
    assert!(!o.content.contains("background"), "{}", o.content);
}

/// `lancet run` in `root` against `server`, started (not waited for).
fn spawn_run(root: &Path, server: &LlmServer) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .arg("run")
        .args(["-C", root.to_str().unwrap()])
        .args(["--base-url", &server.openai_base_url(), "-m", "gpt-4o"])
        .args(["--yes", "--json", "run the server"])
        .env("XDG_CONFIG_HOME", root.join(".no-user-config"))
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Sends `signal` to `lancet run` while its command runs: the command's
/// processes end with it, those that left the group included.
fn signal_mid_command(signal: rustix::process::Signal) {
    let dir = tempfile::tempdir().unwrap();
    let command = "setsid sleep 300 & echo $! > bg.pid; sleep 300 & echo $! > fg.pid; wait";
    let call = json!({"command": command}).to_string();
    let server = LlmServer::start(vec![Scripted::openai_turn("", &[("c1", "bash", &call)])]);
    let mut lancet = spawn_run(dir.path(), &server);
    let bg = pid_in(dir.path(), "bg.pid");
    let fg = pid_in(dir.path(), "fg.pid");
    let _left = Leftovers(vec![bg, fg]);
    let pid = rustix::process::Pid::from_child(&lancet);
    rustix::process::kill_process(pid, signal).unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = lancet.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > end {
            let _ = lancet.kill();
            panic!("lancet did not exit after {signal:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1), "{signal:?}: {status:?}");
    for pid in [bg, fg] {
        assert!(
            gone(pid, Duration::from_secs(2)),
            "{signal:?}: process {pid} outlived lancet"
        );
    }
}

/// Item 16: SIGTERM to `lancet run` is handled like Ctrl-C.
#[test]
fn sigterm_ends_the_running_command() {
    signal_mid_command(rustix::process::Signal::TERM);
}

/// Item 16: SIGHUP (the terminal closed) is handled like Ctrl-C.
#[test]
fn sighup_ends_the_running_command() {
    signal_mid_command(rustix::process::Signal::HUP);
}
