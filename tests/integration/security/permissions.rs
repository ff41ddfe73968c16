//! Security: permissions (items 11-13): ask mode that asks, deny rules that deny, prompts that cannot be spoofed. Driven through the tools over a real workspace, as `lancet run` drives them.

use std::path::Path;
use std::sync::{Arc, Mutex};

use lancet::Workspace;
use lancet::agent::permissions::{
    Answer, Decision, Denial, Effect, Layout, Mode, Permissions, Prompter, Question, Rule,
    confirmation, for_terminal,
};
use lancet::agent::tools::{Refusal, ToolOutcome, Tools, ToolsConfig};
use serde_json::json;

/// Answers no, and keeps each question as the terminal would show it.
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Prompter for Recorder {
    fn confirm(&mut self, q: &Question<'_>) -> Answer {
        self.0.lock().unwrap().push(confirmation(q));
        Answer::No
    }
}

fn tools(root: &Path, permissions: Permissions) -> (Tools, Arc<Mutex<Vec<String>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let ws = Workspace::open(root).unwrap();
    let t = Tools::new(
        ws,
        ToolsConfig::default(),
        permissions,
        Box::new(Recorder(asked.clone())),
    );
    (t, asked)
}

fn rules(list: &[&str]) -> Vec<Rule> {
    list.iter().map(|r| r.parse().unwrap()).collect()
}

async fn bash(t: &mut Tools, command: &str) -> ToolOutcome {
    t.call("bash", &json!({ "command": command }).to_string())
        .await
}

/// Item 11: assignments, read-write redirections and files outside the root
/// (absolute, `..`, `~`, a symlink out) are asked about; nothing runs and no
/// outside content reaches the model. Before: `VAR=value` words were dropped
/// before the allowlist, `1<>file` was read as input, and `cat`/`head` of
/// any path ran unasked. (These commands really run if the check fails, so
/// their payloads are harmless; the item's own examples are decided, not
/// run, in `ask_mode_examples_ask`.)
#[cfg(unix)]
#[tokio::test]
async fn ask_mode_asks_before_commands_it_cannot_vouch_for() {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().join("project");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(top.path().join("beside.txt"), "BESIDE-SECRET\n").unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "OUTSIDE-SECRET\n").unwrap();
    std::os::unix::fs::symlink(&secret, root.join("leak")).unwrap();
    std::fs::write(root.join("important.txt"), "keep me\n").unwrap();
    let (mut t, asked) = tools(&root, Permissions::new(Mode::Ask));
    let commands = [
        "GIT_EXTERNAL_DIFF=\"touch pwned; true\" git diff".to_owned(),
        "PATH=evil:$PATH ls".to_owned(),
        "echo x 1<>important.txt".to_owned(),
        format!("cat {}", secret.display()),
        "head ../beside.txt".to_owned(),
        "cat ~/.lancet-test-no-such-file".to_owned(),
        "cat leak".to_owned(),
        "cat *".to_owned(),
        "cat < leak".to_owned(),
    ];
    for (n, command) in commands.iter().enumerate() {
        let o = bash(&mut t, command).await;
        assert_eq!(
            o.refusal,
            Some(Refusal::Declined),
            "{command}: {}",
            o.content
        );
        assert!(!o.content.contains("SECRET"), "{command}: {}", o.content);
        let q = asked.lock().unwrap();
        assert_eq!(q.len(), n + 1, "{command} was not asked");
        assert!(q[n].contains(command.as_str()), "{}", q[n]);
    }
    assert_eq!(
        std::fs::read_to_string(root.join("important.txt")).unwrap(),
        "keep me\n"
    );
    assert!(!root.join("pwned").exists());
    // What only reads inside the root still runs unasked.
    let o = bash(&mut t, "cat important.txt < important.txt").await;
    assert!(o.content.contains("keep me"), "{}", o.content);
    assert_eq!(asked.lock().unwrap().len(), commands.len());
}

/// Item 11, by decision: every example of the item asks in ask mode.
#[test]
fn ask_mode_examples_ask() {
    let p = Permissions::new(Mode::Ask);
    for cmd in [
        "GIT_EXTERNAL_DIFF=\"rm -rf ~/*; true\" git diff",
        "PATH=evil:$PATH ls",
        "echo x 1<>important.txt",
        "cat /etc/passwd",
        "head ../x",
        "cat ~/.ssh/id_rsa",
        "echo $(cat /etc/passwd)",
        "cat $HOME/.ssh/id_rsa",
    ] {
        assert_eq!(p.check("bash", cmd), Decision::Ask, "{cmd}");
    }
}

/// Item 12: `read(.env)` holds against a symlink to `.env`, against `grep`
/// (which leaves the file out and says so), `glob`, `list`, and `cat`
/// through a link. Before: a symlink and `grep` read it.
#[cfg(unix)]
#[tokio::test]
async fn read_deny_holds_against_symlinks_and_searches() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".env"), "TOKEN=hunter2\n").unwrap();
    std::fs::write(root.join("main.rs"), "// TOKEN is read at start\n").unwrap();
    std::os::unix::fs::symlink(".env", root.join("config")).unwrap();
    std::os::unix::fs::symlink(".", root.join("here")).unwrap();
    let perms = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["read(.env)"]));
    let (mut t, _) = tools(root, perms);
    for path in ["config", "here/.env", ".env"] {
        let o = t.call("read", &json!({ "path": path }).to_string()).await;
        assert!(
            matches!(o.refusal, Some(Refusal::Denied(Denial::Rule { .. }))),
            "read {path}: {}",
            o.content
        );
        assert!(!o.content.contains("hunter2"));
    }
    let o = t
        .call("grep", &json!({ "pattern": "TOKEN" }).to_string())
        .await;
    assert!(!o.content.contains("hunter2"), "{}", o.content);
    assert!(o.content.contains("main.rs"), "{}", o.content);
    assert!(o.content.contains("left out"), "{}", o.content);
    let o = t
        .call(
            "grep",
            &json!({ "pattern": "TOKEN", "path": "here" }).to_string(),
        )
        .await;
    assert!(!o.content.contains("hunter2"), "{}", o.content);
    let o = t
        .call(
            "grep",
            &json!({ "pattern": "TOKEN", "path": "config" }).to_string(),
        )
        .await;
    assert!(
        matches!(o.refusal, Some(Refusal::Denied(Denial::Rule { .. }))),
        "{}",
        o.content
    );
    let o = t
        .call("glob", &json!({ "pattern": "*env*" }).to_string())
        .await;
    assert!(!o.content.contains(".env"), "{}", o.content);
    assert!(o.content.contains("left out"), "{}", o.content);
    let o = t.call("list", &json!({}).to_string()).await;
    assert!(!o.content.lines().any(|l| l == ".env"), "{}", o.content);
    assert!(o.content.contains("main.rs"), "{}", o.content);
    assert!(o.content.contains("left out"), "{}", o.content);
    for command in [
        "cat config",
        "cat here/.env",
        "grep TOKEN .env",
        "head < config",
    ] {
        let o = bash(&mut t, command).await;
        assert!(
            matches!(o.refusal, Some(Refusal::Denied(Denial::Rule { .. }))),
            "{command}: {}",
            o.content
        );
        assert!(!o.content.contains("hunter2"));
    }
}

/// Item 12: `bash(curl*)` holds against the wrappers the splitter can see
/// (`time -p`, `setsid`, `env X=1`, `sh -c`, …), and a command whose name is
/// a substitution is refused with words that say why and that the sandbox
/// holds against the rest (asked about in ask mode without a rule). Before:
/// `time -p curl`, `setsid curl` and `$(echo curl)` ran.
#[tokio::test]
async fn command_deny_holds_against_wrappers() {
    let p = Permissions::new(Mode::Auto).with(Effect::Deny, rules(&["bash(curl*)"]));
    let url = "http://127.0.0.1:9/";
    for cmd in [
        format!("time -p curl {url}"),
        format!("setsid curl {url}"),
        format!("env X=1 curl {url}"),
        format!("sh -c 'curl {url}'"),
        format!("nice -n 5 nohup timeout 5 curl {url}"),
        format!("stdbuf -oL command exec curl {url}"),
        format!("echo {url} | xargs sudo doas curl"),
        format!("watch busybox curl {url}"),
        format!("bash -c \"eval 'curl {url}'\""),
    ] {
        assert!(
            matches!(p.check("bash", &cmd), Decision::Deny(Denial::Rule { .. })),
            "{cmd}: {:?}",
            p.check("bash", &cmd)
        );
    }
    for cmd in [format!("$(echo curl) {url}"), format!("$CURL {url}")] {
        assert!(
            matches!(p.check("bash", &cmd), Decision::Deny(Denial::Unseen { .. })),
            "{cmd}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let (mut t, _) = tools(dir.path(), p);
    let o = bash(&mut t, &format!("$(echo curl) {url}")).await;
    assert!(
        matches!(o.refusal, Some(Refusal::Denied(Denial::Unseen { .. }))),
        "{}",
        o.content
    );
    assert!(
        o.content.contains("bash(curl*)") && o.content.contains("sandbox"),
        "{}",
        o.content
    );
    let (mut t, asked) = tools(dir.path(), Permissions::new(Mode::Ask));
    let o = bash(&mut t, &format!("$(echo curl) {url}")).await;
    assert_eq!(o.refusal, Some(Refusal::Declined), "{}", o.content);
    assert_eq!(asked.lock().unwrap().len(), 1);
}

/// Item 13: a command holding `\r` and ANSI escapes is shown with them
/// escaped, and whole, however long: what the person approves is what runs.
/// Before: `rm -rf ~/x #\r\x1b[2Kls -la` showed as `ls -la? [y/N]`.
#[tokio::test]
async fn a_spoofed_prompt_shows_the_real_command() {
    let tail = "x".repeat(5000);
    let command = format!("rm -rf ~/x #\r\x1b[2Kls -la {tail}");
    let q = confirmation(&Question {
        tool: "bash",
        subject: &command,
        detail: &command,
    });
    assert!(!q.contains('\r') && !q.contains('\x1b'), "{q:?}");
    let shown = "rm -rf ~/x #\\r\\x1b[2Kls -la ";
    let last = q.lines().last().unwrap();
    assert_eq!(last, format!("Allow bash {shown}{tail}? [y/N] "));
    // Bidi overrides and other invisible characters too.
    assert_eq!(
        for_terminal("a\u{202e}b\u{2066}c\u{7}", Layout::Line),
        "a\\u{202e}b\\u{2066}c\\x07"
    );
    // Through the tools, as `lancet run` asks on a terminal (a harmless
    // payload: it runs if the question is not asked).
    let dir = tempfile::tempdir().unwrap();
    let (mut t, asked) = tools(dir.path(), Permissions::new(Mode::Ask));
    let command = format!("touch pwned #\r\x1b[2Kls -la {tail}");
    let o = bash(&mut t, &command).await;
    assert_eq!(o.refusal, Some(Refusal::Declined));
    assert!(!dir.path().join("pwned").exists());
    let asked = asked.lock().unwrap();
    assert_eq!(asked.len(), 1);
    assert!(!asked[0].contains('\r') && !asked[0].contains('\x1b'));
    let shown = "touch pwned #\\r\\x1b[2Kls -la ";
    assert!(asked[0].ends_with(&format!("Allow bash {shown}{tail}? [y/N] ")));
}

/// Item 13, what `lancet run` prints: a model's text, a tool call's
/// arguments and a failed call's result reach the terminal with their
/// control characters escaped (a `\r` and an ANSI sequence in the reply
/// could otherwise rewrite what the person reads).
#[test]
fn the_run_shows_untrusted_text_escaped() {
    use crate::agent_run::{root_with, run};
    use crate::llm_server::{LlmServer, Scripted};
    let dir = root_with(&[("a.txt", "x\n")]);
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "Done.\r\x1b[2Kall tests pass\n",
            &[(
                "c1",
                "read",
                &json!({"path": "missing\x1b[8m.txt"}).to_string(),
            )],
        ),
        Scripted::openai_text("bye\x1b]0;owned\x07"),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "hi",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        !stdout.contains('\x1b') && !stdout.contains('\r'),
        "{stdout:?}"
    );
    assert!(stdout.contains(r"Done.\r\x1b[2Kall tests pass"), "{stdout}");
    assert!(stdout.contains(r"bye\x1b]0;owned\x07"), "{stdout}");
}
