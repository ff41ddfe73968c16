//! The interactive session in a real terminal: `lancet` runs in a tmux pane
//! (each test's own tmux server, on its own socket, killed on drop), keys go
//! in with `send-keys`, the screen comes back with `capture-pane`, and the
//! model is the loopback scripted server. Every wait polls the screen
//! against a deadline; nothing asserts on a fixed sleep.
//!
//! tmux is installed by `.ci/test` when it is missing.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::llm_server::{LlmServer, Scripted};

/// How long a screen may take to show what a test waits for.
const DEADLINE: Duration = Duration::from_secs(30);

/// A tmux server of the test's own, with lancet in its one pane (the
/// sub-agents' session test uses it too).
pub(crate) struct Pane {
    socket: String,
}

impl Pane {
    /// Starts `lancet ARGS` in `root` in a new tmux server, 120×40.
    pub(crate) fn start(root: &Path, base_url: &str, args: &[&str]) -> Pane {
        static N: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "lancet-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let found = Command::new("tmux").arg("-V").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "tmux is not installed: the session tests drive a real terminal with it (.ci/test installs it: apt-get install tmux)"
        );
        let home = root.join(".test-home");
        let quote = |s: &str| format!("'{}'", s.replace('\'', "'\\''"));
        let mut line = vec![
            "env".to_owned(),
            "-u OPENAI_API_KEY -u OPENAI_BASE_URL -u ANTHROPIC_API_KEY -u ANTHROPIC_BASE_URL -u LANCET_MODEL".to_owned(),
            format!("HOME={}", quote(&home.display().to_string())),
            format!("XDG_CONFIG_HOME={}", quote(&home.join("config").display().to_string())),
            format!("XDG_DATA_HOME={}", quote(&home.join("data").display().to_string())),
            "NO_COLOR=1".to_owned(),
            "TERM=xterm-256color".to_owned(),
            quote(env!("CARGO_BIN_EXE_lancet")),
            "-C".to_owned(),
            quote(&root.display().to_string()),
            "--model".to_owned(),
            "scripted".to_owned(),
            "--provider".to_owned(),
            "openai".to_owned(),
            "--base-url".to_owned(),
            quote(base_url),
        ];
        line.extend(args.iter().map(|a| quote(a)));
        // The shell ignores the terminal's Ctrl-C (a shell with job control
        // would not get it: lancet would be in a process group of its own);
        // lancet installs its own handler, which its commands do not inherit.
        let command = format!(
            "trap '' INT; {}; echo \"[exited $?]\"; exec sleep 600",
            line.join(" ")
        );
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
            ])
            .args(["sh", "-c", &command])
            .status()
            .unwrap();
        assert!(status.success(), "tmux new-session failed");
        Pane { socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, or text).
    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend(keys);
        self.tmux(&args);
    }

    /// Types literal text (no key names).
    pub(crate) fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "0", "-l", text]);
    }

    /// The screen and its history, lines joined where they wrapped.
    pub(crate) fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J", "-t", "0", "-S", "-500"])
    }

    /// Waits until the screen satisfies `ok`; panics with the screen at the deadline.
    fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "waited {DEADLINE:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Waits until `text` is on the screen `times` times.
    pub(crate) fn wait_for(&self, text: &str, times: usize) -> String {
        self.wait(&format!("{text:?} ×{times}"), |s| {
            s.matches(text).count() >= times
        })
    }

    /// Waits for lancet to exit; its status.
    fn exited(&self) -> String {
        let screen = self.wait("lancet to exit", |s| s.contains("[exited "));
        let at = screen.find("[exited ").unwrap_or(0) + "[exited ".len();
        screen[at..].split(']').next().unwrap_or("").to_owned()
    }

    /// Waits for an empty prompt on the last line (the editor reads keys
    /// only from then on: typed ahead, they are flushed).
    fn prompt(&self) {
        self.wait("the prompt", |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim_end)
                == Some("›")
        });
    }

    /// Types a line at the prompt and sends it.
    pub(crate) fn line(&self, text: &str) {
        self.prompt();
        self.type_text(text);
        self.keys(&["Enter"]);
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

fn root_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    dir
}

/// The text of every message the n-th request sent.
fn sent(server: &LlmServer, n: usize) -> String {
    server.requests()[n].body["messages"].to_string()
}

#[test]
fn two_turns_on_one_conversation_and_a_slash_command() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![
        Scripted::openai_text("# Plan\nHello **there**, I am `lancet`.\n"),
        Scripted::openai_text("Second answer."),
    ]);
    let pane = Pane::start(dir.path(), &server.openai_base_url(), &["--yes"]);
    pane.line("first question");
    // Markdown rendered: the heading's marks and the emphasis are gone.
    let screen = pane.wait_for("Hello there, I am lancet.", 1);
    assert!(screen.contains("\nPlan\n"), "{screen}");
    // The status line after the turn: model, format, mode, tokens.
    pane.wait_for("scripted · search-replace · auto ·", 1);
    pane.line("/cost");
    pane.wait_for("this session: 1 model turn,", 1);
    pane.line("/nonsense");
    pane.wait_for(
        "There is no command `/nonsense`. The commands are: /help",
        1,
    );
    pane.line("second question");
    pane.wait_for("Second answer.", 1);
    // The second turn carried the first: one conversation.
    let second = sent(&server, 1);
    assert!(second.contains("first question"), "{second}");
    assert!(second.contains("Hello **there**"), "{second}");
    assert!(second.contains("second question"), "{second}");
    pane.line("/exit");
    assert_eq!(pane.exited(), "0");
}

#[test]
fn an_ask_prompt_answered_yes_then_no_with_a_reason() {
    let dir = root_with(&[("a.txt", "a\n")]);
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call(
            "c1",
            "bash",
            &json!({"command": "touch yes.txt"}).to_string(),
        ),
        Scripted::openai_text("made it"),
        Scripted::openai_tool_call(
            "c2",
            "bash",
            &json!({"command": "touch no.txt"}).to_string(),
        ),
        Scripted::openai_text("left it"),
        Scripted::openai_tool_call(
            "c3",
            "bash",
            &json!({"command": "touch s1.txt"}).to_string(),
        ),
        Scripted::openai_tool_call(
            "c4",
            "bash",
            &json!({"command": "touch s2.txt"}).to_string(),
        ),
        Scripted::openai_tool_call(
            "c5",
            "bash",
            &json!({"command": "touch s3.txt; rm a.txt"}).to_string(),
        ),
        Scripted::openai_text("all asked"),
    ]);
    let pane = Pane::start(
        dir.path(),
        &server.openai_base_url(),
        &["--permission", "ask"],
    );
    pane.line("make yes.txt");
    // The command in full, then the four answers.
    pane.wait_for("$ touch yes.txt", 1);
    pane.wait_for("[y]es  [n]o  [s]ession", 1);
    pane.type_text("y");
    pane.keys(&["Enter"]);
    pane.wait_for("made it", 1);
    assert!(dir.path().join("yes.txt").exists());
    pane.line("make no.txt");
    pane.wait_for("[y]es  [n]o  [s]ession", 2);
    pane.type_text("n");
    pane.keys(&["Enter"]);
    pane.wait_for("Why not?", 1);
    pane.type_text("not in this project");
    pane.keys(&["Enter"]);
    pane.wait_for("left it", 1);
    assert!(!dir.path().join("no.txt").exists());
    // The refusal, and the reason, reached the model.
    let after = sent(&server, 3);
    assert!(after.contains("The user declined"), "{after}");
    assert!(after.contains("not in this project"), "{after}");
    // "Always in this session" covers the command's prefix, and only
    // commands made of it alone.
    pane.line("make three");
    pane.wait_for("Allow bash touch s1.txt?", 1);
    pane.type_text("s");
    pane.keys(&["Enter"]);
    // s2.txt is not asked about; the compound command is.
    pane.wait_for("Allow bash touch s3.txt; rm a.txt?", 1);
    assert!(dir.path().join("s1.txt").exists());
    assert!(dir.path().join("s2.txt").exists());
    assert_eq!(pane.screen().matches("[y]es  [n]o").count(), 4);
    pane.type_text("n");
    pane.keys(&["Enter"]);
    pane.wait_for("Why not?", 2);
    pane.keys(&["Enter"]);
    pane.wait_for("all asked", 1);
    assert!(dir.path().join("a.txt").exists());
}

/// The pids of processes whose command line is exactly `argv`.
fn processes(argv: &[&str]) -> Vec<u32> {
    let want: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == want))
        .collect()
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_stops_a_long_command_and_the_session_goes_on() {
    let dir = root_with(&[]);
    // A duration no other test runs, to find this command's process.
    let argv = ["sleep", "299.25"];
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "Running it now.",
            &[(
                "c1",
                "bash",
                &json!({"command": "sleep 299.25"}).to_string(),
            )],
        ),
        Scripted::openai_text("still here"),
    ]);
    let pane = Pane::start(dir.path(), &server.openai_base_url(), &["--yes"]);
    pane.line("wait a long time");
    pane.wait_for("→ bash sleep 299.25", 1);
    let start = Instant::now();
    while processes(&argv).is_empty() {
        assert!(start.elapsed() < DEADLINE, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    pane.keys(&["C-c"]);
    pane.wait_for("stopped: the turn was interrupted", 1);
    // The command's whole process group is gone.
    let start = Instant::now();
    while !processes(&argv).is_empty() {
        assert!(start.elapsed() < DEADLINE, "the command outlived Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    }
    pane.line("are you there?");
    pane.wait_for("still here", 1);
    // The cut turn was recorded honestly, and the conversation kept.
    let next = sent(&server, 1);
    assert!(next.contains("wait a long time"), "{next}");
    assert!(next.contains("The user interrupted this turn"), "{next}");
    assert!(next.contains("Running it now."), "{next}");
    // Ctrl-C twice at an empty prompt leaves.
    pane.prompt();
    pane.keys(&["C-c"]);
    pane.wait_for("(Ctrl-C again, or Ctrl-D, to leave)", 1);
    pane.keys(&["C-c"]);
    assert_eq!(pane.exited(), "0");
}

#[test]
fn resume_continues_the_last_conversation() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![
        Scripted::openai_text("noted"),
        Scripted::openai_text("you said the word is heron"),
        Scripted::openai_text("a new conversation"),
        Scripted::openai_text("heron, still"),
    ]);
    {
        let pane = Pane::start(dir.path(), &server.openai_base_url(), &["--yes"]);
        pane.line("the word is heron");
        pane.wait_for("noted", 1);
        pane.prompt();
        pane.keys(&["C-d"]);
        assert_eq!(pane.exited(), "0");
    }
    let pane = Pane::start(
        dir.path(),
        &server.openai_base_url(),
        &["--yes", "--resume"],
    );
    pane.wait_for("continuing session", 1);
    pane.line("what was the word?");
    pane.wait_for("you said the word is heron", 1);
    let second = sent(&server, 1);
    assert!(second.contains("the word is heron"), "{second}");
    assert!(second.contains("noted"), "{second}");
    // /clear starts afresh; /resume goes back to the last transcript.
    pane.line("/clear");
    pane.wait_for("a new conversation (the last one stays", 1);
    pane.line("hello again");
    pane.wait_for("a new conversation\n", 1);
    assert!(!sent(&server, 2).contains("heron"));
    pane.line("/clear");
    pane.line("/resume");
    pane.wait_for("continuing session", 2);
    pane.line("and now?");
    pane.wait_for("heron, still", 1);
    let last = sent(&server, 3);
    assert!(
        last.contains("hello again") && !last.contains("the word is heron"),
        "{last}"
    );
    // History is the user's, per project, outside the repository.
    let history = dir.path().join(".test-home/data/lancet/history");
    assert!(std::fs::read_dir(&history).unwrap().count() == 1);
}

#[test]
fn diff_shows_the_sessions_edits_and_undo_reverts_the_last() {
    let dir = root_with(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let first = json!({"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"});
    let second = json!({"path": "calc.py", "old_string": "def add(a, b):", "new_string": "def add(a, b, c=0):"});
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[("c1", "read", &json!({"path": "calc.py"}).to_string())],
        ),
        // Two edits of one file in one turn: /diff is against the file
        // before the first.
        Scripted::openai_turn("", &[("c2", "edit", &first.to_string())]),
        Scripted::openai_turn("", &[("c3", "edit", &second.to_string())]),
        Scripted::openai_text("Fixed."),
    ]);
    let pane = Pane::start(dir.path(), &server.openai_base_url(), &["--yes"]);
    pane.line("/diff");
    pane.wait_for("No file was changed by an edit in this session", 1);
    pane.line("fix add");
    pane.wait_for("Fixed.", 1);
    pane.line("/diff");
    pane.wait(
        "the session's diff",
        |s| {
            s.contains("--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n-def add(a, b):\n-    return a - b\n+def add(a, b, c=0):\n+    return a + b\n")
        },
    );
    pane.line("/undo");
    pane.wait_for("undone: restored calc.py", 1);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    pane.line("/undo");
    pane.wait_for("undone: restored calc.py", 2);
    pane.line("/diff");
    pane.wait_for("No file was changed by an edit in this session", 2);
}

/// Issue 13, ask mode: an edit is shown as its diff before the question,
/// and once approved it is applied without showing the same diff again.
#[test]
fn an_asked_edit_shows_its_diff_once() {
    let dir = root_with(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let fix = json!({"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"});
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[("c1", "read", &json!({"path": "calc.py"}).to_string())],
        ),
        Scripted::openai_turn("", &[("c2", "edit", &fix.to_string())]),
        Scripted::openai_text("Fixed."),
    ]);
    let pane = Pane::start(
        dir.path(),
        &server.openai_base_url(),
        &["--permission", "ask"],
    );
    pane.line("fix add");
    pane.wait_for("[y]es  [n]o  [s]ession", 1);
    assert_eq!(pane.screen().matches("+    return a + b").count(), 1);
    pane.type_text("y");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Fixed.", 1);
    assert!(screen.contains("applied as shown above"), "{screen}");
    assert_eq!(screen.matches("+    return a + b").count(), 1, "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
}

#[test]
fn a_terminal_resize_leaves_the_prompt_whole() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![Scripted::openai_text("ok")]);
    let pane = Pane::start(dir.path(), &server.openai_base_url(), &["--yes"]);
    pane.prompt();
    pane.type_text("half a line");
    pane.tmux(&["resize-window", "-t", "0", "-x", "50", "-y", "20"]);
    pane.tmux(&["resize-window", "-t", "0", "-x", "100", "-y", "30"]);
    pane.type_text(" and the rest");
    pane.wait_for("› half a line and the rest", 1);
    pane.keys(&["Enter"]);
    pane.wait_for("ok", 1);
    let first = sent(&server, 0);
    assert!(first.contains("half a line and the rest"), "{first}");
}

/// Off a terminal nothing changed: `lancet` and `lancet run` without a
/// task are the usage errors they were.
#[test]
fn off_a_terminal_there_is_no_session() {
    let bare = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(bare.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("Usage: lancet"));
    let run = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["run", "--model", "m"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("<TASK>"), "{err}");
}
