//! `lancet run` end to end: the real binary against a scripted model server
//! on 127.0.0.1 ([`LlmServer`]), in a temporary root. Covers a multi-turn
//! task in tool mode (read, edit, bash, answer), text mode on the Anthropic
//! wire, ask mode without a terminal, the turn limit, a refused key, and
//! resuming a session.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::llm_server::{LlmServer, Scripted};

/// `lancet run` in `root`, with no user config, no keys from the environment
/// and no terminal.
pub(crate) fn run(root: &Path, args: &[&str]) -> Output {
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

/// The `--json` events on stdout.
pub(crate) fn events(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The events of one kind.
pub(crate) fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

pub(crate) fn root_with(files: &[(&str, &str)]) -> tempfile::TempDir {
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

/// The `tool` messages of a recorded OpenAI request: (tool_call_id, content).
fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_owned(),
                m["content"].to_string(),
            )
        })
        .collect()
}

#[test]
fn malformed_tool_arguments_go_back_as_an_error_and_the_run_continues() {
    let dir = root_with(&[("a.txt", "x\n")]);
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", r#"{"path": "#),
        Scripted::openai_text("Sorry, giving up."),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "--json",
            "read a",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let results = of(&ev, "tool_result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["is_error"], true);
    let content = results[0]["content"].as_str().unwrap();
    assert!(content.contains("not valid JSON"), "{content}");
    assert_eq!(of(&ev, "done")[0]["ending"], "answered");
    // The second request carries the error as the result of call c1.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let tool = tool_messages(&reqs[1].body);
    assert_eq!(tool.len(), 1, "{tool:?}");
    assert_eq!(tool[0].0, "c1");
    assert!(tool[0].1.contains("not valid JSON"), "{}", tool[0].1);
    // The malformed call itself is sent back as the assistant wrote it.
    let assistant = &reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the assistant turn")["tool_calls"][0];
    assert_eq!(assistant["id"], "c1");
    assert_eq!(assistant["function"]["name"], "read");
}

#[test]
fn a_path_outside_the_root_is_refused_to_the_model_and_nothing_outside_is_touched() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("inside.txt"), "inside\n").unwrap();
    let outside = outer.path().join("outside.txt");
    std::fs::write(&outside, "TOP-SECRET\n").unwrap();
    let absolute = outside.to_str().unwrap().to_owned();
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", &json!({"path": "../outside.txt"}).to_string()),
        Scripted::openai_tool_call("c2", "read", &json!({"path": absolute}).to_string()),
        Scripted::openai_tool_call(
            "c3",
            "write",
            &json!({"path": "../planted.txt", "content": "pwned\n"}).to_string(),
        ),
        Scripted::openai_text("I cannot reach that file."),
    ]);
    let out = run(
        &root,
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "--json",
            "read the file next door",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    let results = of(&ev, "tool_result");
    assert_eq!(results.len(), 3);
    for r in &results {
        assert_eq!(r["is_error"], true, "{r}");
    }
    let said: Vec<&str> = results
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert!(said[0].contains("outside the project root"), "{}", said[0]);
    assert!(said[1].contains("absolute path"), "{}", said[1]);
    assert!(said[2].contains("outside the project root"), "{}", said[2]);
    assert_eq!(of(&ev, "done")[0]["ending"], "answered");
    // Nothing outside the root was read (the model never saw its content)
    // or written.
    for req in server.requests() {
        assert!(!req.raw_body.contains("TOP-SECRET"), "{}", req.raw_body);
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains("TOP-SECRET"));
    assert!(!outer.path().join("planted.txt").exists());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "TOP-SECRET\n");
    let mut names: Vec<String> = std::fs::read_dir(outer.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["outside.txt", "root"]);
}

#[test]
fn a_429_with_retry_after_is_waited_out_and_the_run_succeeds() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![
        Scripted::status(429, r#"{"error":{"message":"slow down"}}"#)
            .with_header("retry-after", "1"),
        Scripted::openai_text("Hello."),
    ]);
    let started = std::time::Instant::now();
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "--json",
            "hi",
        ],
    );
    let took = started.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(server.remaining(), 0);
    assert!(
        took >= std::time::Duration::from_millis(900),
        "Retry-After: 1 was not waited for ({took:?})"
    );
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    let ev = events(&out);
    let text: String = of(&ev, "text")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello.");
    let done = of(&ev, "done");
    assert_eq!(done[0]["ending"], "answered");
    assert_eq!(done[0]["turns"], 1);
}

#[test]
fn human_output_shows_the_diff_and_the_summary_line() {
    let dir = root_with(&[("calc.py", "def add(a, b):\n    return a - b\n")]);
    let edit = json!({"path": "calc.py", "old_string": "    return a - b", "new_string": "    return a + b"});
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", &json!({"path": "calc.py"}).to_string()),
        Scripted::openai_turn("Fixing.", &[("c2", "edit", &edit.to_string())]),
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
            "fix add",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_err() || l.is_empty()),
        "human output is not JSON lines:\n{stdout}"
    );
    assert!(stdout.contains("→ read "), "{stdout}");
    assert!(stdout.contains("→ edit "), "{stdout}");
    assert!(
        stdout.contains("--- a/calc.py")
            && stdout.contains("+++ b/calc.py")
            && stdout.contains("-    return a - b")
            && stdout.contains("+    return a + b"),
        "{stdout}"
    );
    assert!(stdout.contains("Fixed: add now adds."), "{stdout}");
    // Three turns of HELPER_USAGE (10 in, 5 out).
    assert!(
        stderr.contains("done — 3 turns, 30 tokens in, 15 out"),
        "{stderr}"
    );
}

#[test]
fn the_projects_agents_md_is_in_the_system_prompt() {
    let dir = root_with(&[
        (
            "AGENTS.md",
            "Always run `make check-everything` before finishing.\n",
        ),
        ("a.txt", "x\n"),
    ]);
    let server = LlmServer::start(vec![Scripted::openai_text("Noted.")]);
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
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.requests();
    let first = &reqs[0].body["messages"][0];
    assert_eq!(first["role"], "system");
    let system = first["content"].as_str().unwrap();
    assert!(
        system.contains("AGENTS.md")
            && system.contains("Always run `make check-everything` before finishing."),
        "{system}"
    );
    // Only once, and not as a user message.
    assert_eq!(reqs[0].raw_body.matches("make check-everything").count(), 1);
}

#[test]
fn the_edit_format_is_picked_per_model_from_models_toml() {
    // edit-formats/models.toml: `grok-code*` → hashline, tool mode.
    let dir = root_with(&[("a.txt", "x\n")]);
    let server = LlmServer::start(vec![Scripted::openai_text("Ok.")]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "grok-code-fast-1",
            "--yes",
            "--json",
            "hi",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "session");
    assert_eq!(ev[0]["format"], "hashline");
    assert_eq!(ev[0]["text_mode"], false);
    let reqs = server.requests();
    let edit = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "edit")
        .expect("tool mode offers the edit tool");
    let params = &edit["function"]["parameters"];
    assert!(params["properties"]["edits"].is_object(), "{params}");
    assert!(params["properties"]["old_string"].is_null(), "{params}");
    assert!(
        reqs[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("LINE:HASH"),
        "the system prompt carries hashline's instructions"
    );

    // A model that falls to the `*` entry gets search-replace.
    let server = LlmServer::start(vec![Scripted::openai_text("Ok.")]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "some-other-model",
            "--yes",
            "--json",
            "hi",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(events(&out)[0]["format"], "search-replace");
    let reqs = server.requests();
    let edit = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "edit")
        .unwrap();
    assert!(edit["function"]["parameters"]["properties"]["old_string"].is_object());
}

#[test]
fn the_same_failing_call_three_times_stops_the_run_as_repeating() {
    let dir = root_with(&[("a.txt", "x\n")]);
    let call = json!({"path": "missing.txt"}).to_string();
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", &call),
        Scripted::openai_tool_call("c2", "read", &call),
        Scripted::openai_tool_call("c3", "read", &call),
        Scripted::openai_text("never asked for"),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "--json",
            "read missing",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let ev = events(&out);
    let results = of(&ev, "tool_result");
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["is_error"] == true));
    let done = of(&ev, "done");
    assert_eq!(done[0]["ending"], "repeating");
    assert_eq!(done[0]["turns"], 3);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.remaining(), 1);
}

#[test]
fn malformed_tool_input_on_anthropic_goes_back_as_an_error_result() {
    let dir = root_with(&[("a.txt", "x\n")]);
    let server = LlmServer::start(vec![
        Scripted::anthropic_tool_call("t1", "read", r#"{"path": "#),
        Scripted::anthropic_text("Giving up."),
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
            "--yes",
            "--json",
            "read a",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let messages = reqs[1].body["messages"].as_array().unwrap();
    // The call goes back with an object input (the wire requires one) ...
    let call = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_use")
        .expect("the tool_use block");
    assert_eq!(call["id"], "t1");
    assert!(call["input"].is_object(), "{call}");
    // ... and its result is an error the model reads.
    let result = messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("the tool_result block");
    assert_eq!(result["tool_use_id"], "t1");
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"].to_string().contains("not valid JSON"),
        "{result}"
    );
}

#[test]
fn a_tool_call_printed_as_text_is_recovered() {
    let dir = root_with(&[("a.txt", "the secret word is plum\n")]);
    let server = LlmServer::start(vec![
        Scripted::openai_text(
            "Let me look.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
        ),
        Scripted::openai_text("The word is plum."),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "--json",
            "what is the word?",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev = events(&out);
    assert_eq!(of(&ev, "tool_call")[0]["name"], "read");
    // The result goes back as text (there is no native call to answer).
    let reqs = server.requests();
    let last = reqs[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    let content = last["content"].to_string();
    assert!(
        content.contains("Result of your `read` call") && content.contains("plum"),
        "{content}"
    );
}

#[test]
fn malformed_arguments_go_back_in_the_history_as_an_empty_object() {
    let dir = root_with(&[]);
    let server = LlmServer::start(vec![
        Scripted::openai_turn("", &[("c1", "read", "{\"path\": ")]),
        Scripted::openai_text("Sorry."),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "--yes",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let reqs = server.requests();
    let call = &reqs[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"];
    assert_eq!(call, "{}", "{}", reqs[1].body);
}

/// Each format's edit tool, through the whole loop: read, edit, answer.
#[test]
fn every_format_edits_through_the_loop() {
    let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n";
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** End Patch\n";
    let cases: Vec<(&str, Value)> = vec![
        (
            "search-replace",
            json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
        ),
        ("udiff", json!({"diff": diff})),
        ("apply-patch", json!({"input": patch})),
        (
            "whole",
            json!({"path": "a.txt", "content": "one\n2\nthree\n"}),
        ),
        (
            "hashline",
            json!({"path": "a.txt", "edits": [{"op": "replace", "start": "2:ANCHOR", "lines": ["2"]}]}),
        ),
    ];
    for (format, args) in cases {
        let dir = root_with(&[("a.txt", "one\ntwo\nthree\n")]);
        let mut args = args.to_string();
        if format == "hashline" {
            // The anchor is whatever `lancet view` shows for line 2.
            let view = Command::new(env!("CARGO_BIN_EXE_lancet"))
                .args(["view", "--format", "hashline", "a.txt"])
                .current_dir(dir.path())
                .output()
                .unwrap();
            let view = String::from_utf8_lossy(&view.stdout).to_string();
            let anchor = view.lines().nth(1).unwrap().split('|').next().unwrap();
            args = args.replace("2:ANCHOR", anchor.trim());
        }
        let server = LlmServer::start(vec![
            Scripted::openai_turn("", &[("c1", "read", r#"{"path": "a.txt"}"#)]),
            Scripted::openai_turn("", &[("c2", "edit", &args)]),
            Scripted::openai_text("Done."),
        ]);
        let out = run(
            dir.path(),
            &[
                "--base-url",
                &server.openai_base_url(),
                "-m",
                "gpt-4o",
                "-f",
                format,
                "--yes",
                "--json",
                "change two to 2",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\n2\nthree\n",
            "{format}"
        );
        assert_eq!(of(&events(&out), "edit").len(), 1, "{format}");
    }
}

#[test]
fn text_mode_udiff_in_the_reply() {
    let dir = root_with(&[("a.txt", "one\ntwo\nthree\n")]);
    let reply =
        "Here:\n```diff\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n```\n";
    let server = LlmServer::start(vec![
        Scripted::openai_turn("", &[("c1", "read", r#"{"path": "a.txt"}"#)]),
        Scripted::openai_text(reply),
        Scripted::openai_text("Done."),
    ]);
    let out = run(
        dir.path(),
        &[
            "--base-url",
            &server.openai_base_url(),
            "-m",
            "gpt-4o",
            "-f",
            "udiff",
            "--text-mode",
            "--yes",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n2\nthree\n"
    );
}

/// Issue "Hostile repositories…", messages and exit codes: an edit written
/// in a text-mode reply that needs a confirmation nobody can give stops the
/// run (exit 1, `no_terminal`), as the same edit through the tool does.
#[test]
fn a_refused_text_mode_edit_without_a_terminal_stops_the_run() {
    let dir = root_with(&[("notes.txt", "alpha\nbeta\n")]);
    let reply = "notes.txt\n```\n<<<<<<< SEARCH\nbeta\n=======\ngamma\n>>>>>>> REPLACE\n```\n";
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", &json!({"path": "notes.txt"}).to_string()),
        Scripted::openai_text(reply),
        Scripted::openai_text("Done."),
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
            "--text-mode",
            "--json",
            "rename beta",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(of(&events(&out), "done")[0]["ending"], "no_terminal");
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "alpha\nbeta\n"
    );
}
