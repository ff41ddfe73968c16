//! `lancet run` end to end: the real binary against a scripted model server
//! on 127.0.0.1 ([`LlmServer`]), in a temporary root. Covers a multi-turn
//! task in tool mode (read, edit, bash, answer), text mode on the Anthropic
//! wire, ask mode without a terminal, the turn limit, a refused key, and
//! resuming a session.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::llm_server::{LlmServer, Scripted};

fn run(root: &Path, args: &[&str]) -> Output {
    let config = root.join(".no-user-config");
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .arg("run")
        .args(["-C", root.to_str().unwrap()])
        .args(args)
        .env("XDG_CONFIG_HOME", &config)
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

fn root_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    dir
}

#[test]
fn tool_mode_task_reads_edits_runs_a_command_and_answers() {
    let dir = root_with(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let edit = json!({"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"});
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "Reading.",
            &[("c1", "read", &json!({"path": "calc.py"}).to_string())],
        ),
        Scripted::openai_turn("", &[("c2", "edit", &edit.to_string())]),
        Scripted::openai_turn(
            "",
            &[("c3", "bash", &json!({"command": "cat calc.py"}).to_string())],
        ),
        Scripted::openai_text("Fixed: add now adds."),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "-f",
            "search-replace",
            "--yes",
            "--json",
            "fix add",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "session");
    assert_eq!(ev[0]["format"], "search-replace");
    let calls: Vec<&str> = of(&ev, "tool_call")
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(calls, ["read", "edit", "bash"]);
    let edits = of(&ev, "edit");
    assert_eq!(edits.len(), 1);
    let diff = edits[0]["diff"].as_str().unwrap();
    assert!(
        diff.contains("-    return a - b") && diff.contains("+    return a + b"),
        "{diff}"
    );
    assert_eq!(edits[0]["report"]["ok"], true);
    let results = of(&ev, "tool_result");
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap()
            .contains("return a + b")
    );
    let done = of(&ev, "done");
    assert_eq!(done[0]["ending"], "answered");
    assert_eq!(done[0]["turns"], 4);
    // The model saw each result: the last request carries all three.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let tool_msgs = reqs[3].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(tool_msgs, 3);
    assert!(
        reqs[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("SEARCH"),
        "the system prompt carries the format's instructions"
    );
    // The transcript was saved.
    let sessions = std::fs::read_dir(dir.path().join(".lancet/sessions")).unwrap();
    assert_eq!(sessions.count(), 1);
}

#[test]
fn text_mode_on_anthropic_applies_blocks_from_the_reply() {
    let dir = root_with(&[("notes.txt", "alpha\nbeta\n")]);
    let reply = "Changing it.\n\nnotes.txt\n```\n<<<<<<< SEARCH\nbeta\n=======\ngamma\n>>>>>>> REPLACE\n```\n";
    let server = LlmServer::start(vec![
        Scripted::anthropic_turn(
            "",
            &[("t1", "read", &json!({"path": "notes.txt"}).to_string())],
        ),
        Scripted::anthropic_text(reply),
        Scripted::anthropic_text("Done."),
    ]);
    let out = run(
        dir.path(),
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &server.base_url(),
            "-m",
            "claude-test",
            "-f",
            "search-replace",
            "--text-mode",
            "--yes",
            "--json",
            "rename beta",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "alpha\ngamma\n"
    );
    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/messages");
    let tools: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        !tools.contains(&"edit"),
        "text mode offers no edit tool: {tools:?}"
    );
    assert_eq!(of(&events(&out), "edit").len(), 1);
}

#[test]
fn ask_mode_without_a_terminal_stops_before_running_a_command() {
    let dir = root_with(&[("a.txt", "x\n")]);
    let server = LlmServer::start(vec![Scripted::openai_turn(
        "",
        &[(
            "c1",
            "bash",
            &json!({"command": "touch made-by-model"}).to_string(),
        )],
    )]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--json",
            "make a file",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("made-by-model").exists());
    assert_eq!(of(&events(&out), "done")[0]["ending"], "no_terminal");
}

#[test]
fn the_turn_limit_stops_the_run() {
    let dir = root_with(&[("a.txt", "x\n")]);
    let call = json!({"path": "a.txt"}).to_string();
    let server = LlmServer::start(vec![
        Scripted::openai_turn("", &[("c1", "read", &call)]),
        Scripted::openai_turn("", &[("c2", "read", &call)]),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--max-turns",
            "2",
            "--yes",
            "loop",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("turn limit"));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_refused_key_is_exit_3_with_what_to_do() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![Scripted::status(
        401,
        r#"{"error":{"message":"bad key"}}"#,
    )]);
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
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("key was refused") && err.contains("OPENAI_API_KEY"),
        "{err}"
    );
}

#[test]
fn missing_model_is_a_usage_error() {
    let dir = root_with(&[]);
    let out = run(dir.path(), &["hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no model"));
}

#[test]
fn resume_continues_the_last_conversation() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![
        Scripted::openai_text("First answer."),
        Scripted::openai_text("Second answer."),
    ]);
    let base = server.openai_base_url();
    let args = ["--base-url", base.as_str(), "-m", "gpt-4o", "--yes"];
    let first = run(dir.path(), &[&args[..], &["first task"]].concat());
    assert_eq!(first.status.code(), Some(0));
    let second = run(
        dir.path(),
        &[&args[..], &["--resume", "second task"]].concat(),
    );
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let reqs = server.requests();
    let texts: Vec<String> = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    let all = texts.join("\n");
    assert!(
        all.contains("first task") && all.contains("First answer.") && all.contains("second task"),
        "{all}"
    );
}
