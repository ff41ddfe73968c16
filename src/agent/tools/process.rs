//! The `bash` tool: runs a command line with `sh -c` in the root and says
//! what it did.
//!
//! The command runs in a process group of its own, with stdin empty and a
//! marker in its environment. **Nothing it starts outlives it**: when it
//! ends, what it left running in the background is ended (SIGTERM, a grace
//! period, SIGKILL) and counted; on timeout the command itself too; an
//! abandoned call (the run interrupted mid-command) takes everything with it
//! at once. Finding what left the group is the `reap` module's job (what
//! holds on which platform is written there). Output (stdout and stderr
//! interleaved as they arrive) is kept head and tail within a byte budget,
//! so a flood costs bounded memory.
//!
//! Owns: spawning (one function, [`spawn_command`], so a sandbox wraps the
//! command line in one place), output capture, and when processes are
//! ended. Does not own: whether a command may run (the permission check in
//! the parent module), how they are found and signalled (`reap`), or the
//! words of its result (the agent's `words` module).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::Tools;
use super::args::BashArgs;
use super::reap::{MARKER, Scope, new_marker};
use super::types::{Background, Run, Tool, ToolOutcome};
use crate::agent::sandbox;
use crate::agent::words;

/// How long a command's output is still read after it exits (background
/// processes may hold the pipe open).
const DRAIN: Duration = Duration::from_millis(300);
/// How long a timed-out command (or what a command left running) gets
/// between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_millis(1000);

impl Tools {
    pub(super) async fn bash(&mut self, a: BashArgs) -> ToolOutcome {
        let command = a.command.trim();
        if command.is_empty() {
            return ToolOutcome::error(words::bad_arguments(Tool::Bash, words::EMPTY_COMMAND));
        }
        if let Err(o) = self.gate(Tool::Bash, command, command) {
            return *o;
        }
        let timeout = a
            .timeout_secs
            .map_or(self.config.bash_timeout, Duration::from_secs)
            .min(self.config.bash_max_timeout)
            .max(Duration::from_secs(1));
        let sandbox = self.config.sandbox.as_ref();
        let (program, args) = sandbox::wrap(sandbox, "sh", &["-c", command]);
        let run = run_command(
            program,
            args,
            self.ws.root(),
            timeout,
            self.config.max_output,
        )
        .await;
        match run {
            Ok(r) => {
                let is_error = r.timed_out;
                let mut content = words::bash_result(&r, timeout, self.config.bash_max_timeout);
                if let Some(note) = sandbox::denial_note(sandbox, r.code != Some(0), &r.output) {
                    content.push('\n');
                    content.push_str(&note);
                }
                ToolOutcome {
                    is_error,
                    ..ToolOutcome::ok(content)
                }
            }
            Err(e) => ToolOutcome::error(words::spawn_failed(&e)),
        }
    }
}

/// Starts `program args…` (`sh -c CMD`, or the sandbox launcher around it)
/// in `root`: stdin empty, stdout and stderr piped, nothing that pages or
/// prompts, in a process group of its own (so a timeout can end everything
/// the command started), carrying `marker` in its environment (so what
/// leaves the group is still found; the sandbox launcher keeps the
/// environment when it becomes the command), killed if dropped. The one
/// place a command line becomes a process.
fn spawn_command(
    program: OsString,
    args: Vec<OsString>,
    root: &Path,
    marker: &str,
) -> std::io::Result<tokio::process::Child> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(root)
        .env(MARKER, marker)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Nothing can page or prompt: there is no terminal to answer.
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0")
        .kill_on_drop(true);
    #[cfg(unix)]
    cmd.process_group(0);
    cmd.spawn()
}

/// The first and last bytes of a stream, within a budget.
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: usize,
    half: usize,
}

impl Capture {
    fn new(max: usize) -> Capture {
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            half: (max / 2).max(1),
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len();
        let room = self.half.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.half {
            bytes = &bytes[bytes.len() - self.half..];
            self.tail.clear();
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(self.half);
        self.tail.drain(..over);
    }

    fn render(self) -> String {
        let kept = self.head.len() + self.tail.len();
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if kept >= self.total {
            head.extend_from_slice(&tail);
            return String::from_utf8_lossy(&head).into_owned();
        }
        // Cut on character boundaries, so no replacement characters appear at the cut.
        let valid = match std::str::from_utf8(&head) {
            Ok(_) => head.len(),
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => head.len(),
        };
        head.truncate(valid);
        let skip = tail
            .iter()
            .take(3)
            .take_while(|b| (**b & 0xC0) == 0x80)
            .count();
        tail.drain(..skip);
        let cut = self.total - head.len() - tail.len();
        format!(
            "{}{}{}",
            String::from_utf8_lossy(&head),
            words::output_cut(cut),
            String::from_utf8_lossy(&tail)
        )
    }
}

/// Reads some bytes; `None` at the end (or on an error). Pends forever once
/// the stream is gone, so a `select!` branch on it stays quiet.
async fn read_some<R: AsyncRead + Unpin>(r: &mut Option<R>, buf: &mut [u8]) -> Option<usize> {
    match r {
        Some(r) => match r.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// Runs `program args…` to its end or its timeout, capturing its output.
async fn run_command(
    program: OsString,
    args: Vec<OsString>,
    root: &Path,
    timeout: Duration,
    max_output: usize,
) -> std::io::Result<Run> {
    use tokio::time::{Instant, sleep_until};
    let marker = new_marker();
    let mut child = spawn_command(program, args, root, &marker)?;
    // If this call is abandoned (Ctrl-C ends the run mid-command), the
    // command and everything it started go with it, not only the shell.
    let mut guard = Guard(child.id().map(|pid| Scope::new(pid, marker)));
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let mut cap = Capture::new(max_output);
    let (mut b1, mut b2) = (vec![0u8; 8192], vec![0u8; 8192]);
    let deadline = Instant::now() + timeout;
    let mut status = None;
    let mut until = deadline;
    loop {
        if status.is_some() && out.is_none() && err.is_none() {
            break;
        }
        tokio::select! {
            n = read_some(&mut out, &mut b1) => match n {
                Some(n) => cap.push(&b1[..n]),
                None => out = None,
            },
            n = read_some(&mut err, &mut b2) => match n {
                Some(n) => cap.push(&b2[..n]),
                None => err = None,
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s?);
                until = deadline.min(Instant::now() + DRAIN);
            }
            () = sleep_until(until) => break,
        }
    }
    let timed_out = status.is_none();
    // Nothing a command starts outlives it: on a timeout the command itself
    // ends here too; after a normal end, what it left in the background.
    let background = match guard.0.clone() {
        Some(scope) => scope.end(GRACE).await,
        None => Background::default(),
    };
    guard.0 = None;
    if timed_out {
        let _ = child.start_kill();
        if let Ok(Ok(s)) = tokio::time::timeout(GRACE, child.wait()).await {
            status = Some(s);
        }
    }
    // What was written while it was being ended.
    let until = Instant::now() + Duration::from_millis(200);
    while out.is_some() || err.is_some() {
        tokio::select! {
            n = read_some(&mut out, &mut b1) => match n {
                Some(n) => cap.push(&b1[..n]),
                None => out = None,
            },
            n = read_some(&mut err, &mut b2) => match n {
                Some(n) => cap.push(&b2[..n]),
                None => err = None,
            },
            () = sleep_until(until) => break,
        }
    }
    let lingering = !timed_out && (out.is_some() || err.is_some());
    #[cfg(unix)]
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    #[cfg(not(unix))]
    let signal = None;
    Ok(Run {
        output: cap.render(),
        code: status.and_then(|s| s.code()),
        signal,
        timed_out,
        lingering,
        background,
    })
}

/// Ends a command and everything it started when dropped armed.
struct Guard(Option<Scope>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(scope) = self.0.take() {
            scope.end_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;
    use crate::agent::tools::tests::{call, get, put, setup};
    use serde_json::json;
    use std::fs;

    #[cfg(unix)]
    #[tokio::test]
    async fn bash_runs_in_root_and_reports_exit() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "here.txt", "");
        let o = call(
            &mut t,
            "bash",
            json!({"command": "ls; echo err >&2; exit 3"}),
        )
        .await;
        assert!(!o.is_error);
        assert!(
            o.content.contains("here.txt") && o.content.contains("err"),
            "{}",
            o.content
        );
        assert!(o.content.ends_with("[exit code 3]"), "{}", o.content);
        let o = call(&mut t, "bash", json!({"command": "  "})).await;
        assert!(o.is_error);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn bash_timeout_kills_the_group() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let o = call(
            &mut t,
            "bash",
            json!({"command": "echo started; sleep 100 & echo $! > bg.pid; sleep 100", "timeout_secs": 1}),
        )
        .await;
        assert!(o.is_error, "{}", o.content);
        assert!(o.content.contains("started") && o.content.contains("timed out after 1 s"));
        let pid = get(&dir, "bg.pid").trim().to_owned();
        assert!(dies(&pid), "background child {pid} survived the timeout");
    }

    /// Whether process `pid` is gone (or a zombie waiting for a parent that
    /// does not reap) within 2.5 s.
    #[cfg(target_os = "linux")]
    fn dies(pid: &str) -> bool {
        let alive = || {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .is_some_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| !r.trim_start().starts_with('Z'))
                })
        };
        for _ in 0..50 {
            if !alive() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Ctrl-C drops the run mid-command: the command's whole group ends too.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn an_abandoned_command_takes_its_group_with_it() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let call = t.call(
            "bash",
            r#"{"command": "sleep 100 & echo $! > bg.pid; sleep 100"}"#,
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(500), call)
                .await
                .is_err()
        );
        let pid = get(&dir, "bg.pid").trim().to_owned();
        assert!(
            dies(&pid),
            "background child {pid} survived its abandoned command"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn bash_output_is_cut_head_and_tail() {
        let (_dir, mut t) = setup(Format::SearchReplace);
        t.config.max_output = 1000;
        let o = call(&mut t, "bash", json!({"command": "seq 1 100000"})).await;
        assert!(o.content.starts_with("1\n2\n3\n"), "{}", o.content);
        assert!(
            o.content.contains("99999\n100000\n[exit code 0]"),
            "{}",
            o.content
        );
        assert!(o.content.contains(" bytes cut …]"));
        assert!(o.content.len() < 1200, "{}", o.content.len());
    }

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut c = Capture::new(10);
        for chunk in [&b"abc"[..], b"defgh", b"ijklmnop", b"qrstuvwxyz"] {
            c.push(chunk);
        }
        assert_eq!(c.render(), "abcde\n[… 16 bytes cut …]\nvwxyz");
        let mut c = Capture::new(10);
        c.push(b"short");
        assert_eq!(c.render(), "short");
        // A multi-byte character at the cut is dropped whole.
        let mut c = Capture::new(6);
        c.push("aaéé".as_bytes());
        c.push(b"0123456789zz");
        assert_eq!(c.render(), "aa\n[… 13 bytes cut …]\n9zz");
    }
}
