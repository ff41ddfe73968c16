//! Sub-agents (the `task` tool, issue 14) end to end: the real binary
//! against the scripted model server, each child's conversation routed by
//! a key in its prompt ([`LlmServer::start_routed`]). Concurrency is proved
//! by what the server counted ([`Scripted::together`] holds a reply until
//! both children's requests are in flight), never by timing.

use std::path::Path;

use serde_json::{Value, json};

use crate::agent_run::{events, of, root_with, run};
use crate::llm_server::{HELPER_USAGE, LlmServer, RecordedRequest, Scripted};

/// A `task` call's arguments.
fn task(description: &str, prompt: &str, extra: Value) -> String {
    let mut args = json!({"description": description, "prompt": prompt});
    if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
        a.extend(e.clone());
    }
    args.to_string()
}

/// `lancet run --json` against `server`, with `more` flags.
fn run_json(root: &Path, server: &LlmServer, more: &[&str]) -> std::process::Output {
    let url = server.openai_base_url();
    let mut args = vec![
        "--base-url",
        &url,
        "-m",
        "gpt-4o",
        "-f",
        "search-replace",
        "--json",
    ];
    args.extend_from_slice(more);
    run(root, &args)
}

/// The requests of the conversation whose first user message holds `key`.
fn conversation(server: &LlmServer, key: &str) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.first_user.contains(key))
        .collect()
}

/// The tool messages of an OpenAI request: (call id, content).
fn tool_results(r: &RecordedRequest) -> Vec<(String, String)> {
    r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("").to_owned(),
                m["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// The names of the tools a request offered.
fn tool_names(r: &RecordedRequest) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The session transcripts in `root`, by file name.
fn transcripts(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root.join(".lancet/sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A parent that delegates two searches in one reply: both children's
/// requests are in flight at once, the parent's next request carries both
/// answers in call order, and its final answer follows; the children's
/// events carry their ids, their tokens roll up into the parent's, and
/// their transcripts are written and linked.
#[test]
fn two_searches_in_one_reply_run_at_once_and_both_answers_come_back() {
    let dir = root_with(&[
        ("a.py", "def alpha():\n    return 1\n"),
        ("b.py", "def beta():\n    return 2\n"),
        ("AGENTS.md", "Project note: AGENTS-MARKER.\n"),
    ]);
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_turn(
                "Delegating.",
                &[
                    (
                        "c1",
                        "task",
                        &task(
                            "find alpha",
                            "ALPHA-KEY: where is alpha defined?",
                            json!({}),
                        ),
                    ),
                    (
                        "c2",
                        "task",
                        &task("find beta", "BETA-KEY: where is beta defined?", json!({})),
                    ),
                ],
            ),
            Scripted::openai_text("alpha is in a.py:1 and beta is in b.py:1."),
        ],
        vec![
            (
                "ALPHA-KEY",
                vec![
                    Scripted::openai_tool_call("g1", "grep", r#"{"pattern": "def alpha"}"#)
                        .together(2),
                    Scripted::openai_text("alpha: a.py:1"),
                ],
            ),
            (
                "BETA-KEY",
                vec![
                    Scripted::openai_tool_call("g2", "grep", r#"{"pattern": "def beta"}"#)
                        .together(2),
                    Scripted::openai_text("beta: b.py:1"),
                ],
            ),
        ],
    );
    let out = run_json(dir.path(), &server, &["--yes", "do it"]);
    assert!(out.status.success(), "{out:?}");
    // Both children's first requests were in flight at once.
    assert!(server.max_in_flight() >= 2, "{}", server.max_in_flight());
    assert_eq!(server.remaining(), 0);

    // Each child: a fresh context (its prompt as the only message), the
    // parent's system prompt and a sub-agent's note, read-only tools.
    let alpha = conversation(&server, "ALPHA-KEY");
    assert_eq!(alpha.len(), 2);
    let first = &alpha[0].body["messages"];
    let users: Vec<&Value> = first
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .collect();
    assert_eq!(users.len(), 1, "{first}");
    assert!(
        first[0]["content"]
            .as_str()
            .unwrap()
            .contains("You are a sub-agent (task-1)")
    );
    assert_eq!(tool_names(&alpha[0]), ["read", "grep", "glob", "list"]);
    let grep = &tool_results(&alpha[1])[0].1;
    assert!(grep.contains("a.py:1"), "{grep}");

    // The parent's second request: both answers, in call order.
    let parent: Vec<RecordedRequest> = conversation(&server, "")
        .into_iter()
        .filter(|r| !r.first_user.contains("-KEY"))
        .collect();
    assert_eq!(parent.len(), 2);
    assert!(tool_names(&parent[0]).contains(&"task".to_owned()));
    assert_eq!(
        tool_results(&parent[1]),
        [
            ("c1".to_owned(), "alpha: a.py:1".to_owned()),
            ("c2".to_owned(), "beta: b.py:1".to_owned())
        ]
    );

    let ev = events(&out);
    let text: String = of(&ev, "text")
        .iter()
        .filter(|e| e.get("agent").is_none())
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        text.ends_with("alpha is in a.py:1 and beta is in b.py:1."),
        "{text}"
    );
    // Start and end events, and every child event with its id.
    let starts: Vec<(&str, &str)> = of(&ev, "task_start")
        .iter()
        .map(|e| {
            (
                e["agent"].as_str().unwrap(),
                e["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(starts, [("task-1", "find alpha"), ("task-2", "find beta")]);
    let ends = of(&ev, "task_end");
    assert_eq!(ends.len(), 2);
    for e in &ends {
        assert_eq!(e["ending"], "answered");
        assert_eq!(e["turns"], 2);
        assert_eq!(e["input_tokens"], 2 * HELPER_USAGE.0);
    }
    let child_calls: Vec<(&str, &str)> = of(&ev, "tool_call")
        .iter()
        .filter_map(|e| Some((e.get("agent")?.as_str()?, e["name"].as_str()?)))
        .collect();
    assert!(child_calls.contains(&("task-1", "grep")), "{child_calls:?}");
    assert!(child_calls.contains(&("task-2", "grep")), "{child_calls:?}");
    // Token roll-up: the parent's two turns and each child's two.
    let done = of(&ev, "done")[0];
    assert_eq!(done["input_tokens"], 6 * HELPER_USAGE.0);
    assert_eq!(done["output_tokens"], 6 * HELPER_USAGE.1);

    // The children's transcripts beside the parent's, linked from it.
    let names = transcripts(dir.path());
    assert_eq!(names.len(), 3, "{names:?}");
    let parent_name = names.iter().find(|n| n.matches('.').count() == 1).unwrap();
    let stem = parent_name.trim_end_matches(".jsonl");
    let child = format!("{stem}.task-1.jsonl");
    assert!(names.contains(&child), "{names:?}");
    let sessions = dir.path().join(".lancet/sessions");
    let child_text = std::fs::read_to_string(sessions.join(&child)).unwrap();
    assert!(child_text.contains("ALPHA-KEY") && child_text.contains("alpha: a.py:1"));
    let links: Vec<Value> = std::fs::read_to_string(sessions.join(parent_name))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["entry"] == "task")
        .collect();
    assert_eq!(links.len(), 2);
    assert_eq!(links[0]["agent"], "task-1");
    assert_eq!(links[0]["transcript"], child.as_str());
    assert_eq!(links[0]["ending"], "answered");
    assert_eq!(links[1]["description"], "find beta");
}

/// `--resume` after a run that delegated reads the parent's conversation
/// back (the link entries skipped, never a child's transcript).
#[test]
fn a_session_with_tasks_resumes() {
    let dir = root_with(&[("a.py", "def alpha():\n    return 1\n")]);
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_tool_call(
                "c1",
                "task",
                &task("find", "ALPHA-KEY: find alpha", json!({})),
            ),
            Scripted::openai_text("It is in a.py."),
        ],
        vec![("ALPHA-KEY", vec![Scripted::openai_text("a.py:1")])],
    );
    let out = run_json(dir.path(), &server, &["--yes", "where is alpha?"]);
    assert!(out.status.success(), "{out:?}");
    let again = LlmServer::start(vec![Scripted::openai_text("Still a.py.")]);
    let out = run_json(dir.path(), &again, &["--yes", "--resume", "and now?"]);
    assert!(out.status.success(), "{out:?}");
    let r = &again.requests()[0];
    assert_eq!(r.first_user, "where is alpha?");
    assert_eq!(tool_results(r), [("c1".to_owned(), "a.py:1".to_owned())]);
}

/// A child that reaches its turn limit (the call's `max_turns`) comes back
/// as an error result saying so, with what it had written; the parent goes on.
#[test]
fn a_child_that_hits_its_turn_limit_says_so() {
    let dir = root_with(&[("a.py", "x = 1\n")]);
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_tool_call(
                "c1",
                "task",
                &task("look", "LOOK-KEY: look around", json!({"max_turns": 1})),
            ),
            Scripted::openai_text("The sub-agent ran out of turns."),
        ],
        vec![(
            "LOOK-KEY",
            vec![Scripted::openai_turn(
                "Listing first.",
                &[("l1", "list", "{}")],
            )],
        )],
    );
    let out = run_json(dir.path(), &server, &["--yes", "do it"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.remaining(), 0);
    let parent = server.requests().last().unwrap().clone();
    let (_, result) = &tool_results(&parent)[0];
    assert!(result.contains("turn limit (1 turn)"), "{result}");
    assert!(result.contains("Listing first."), "{result}");
    let ev = events(&out);
    assert_eq!(of(&ev, "task_end")[0]["ending"], "max_turns");
    let results = of(&ev, "tool_result");
    let task_result = results.iter().find(|e| e["name"] == "task").unwrap();
    assert_eq!(task_result["is_error"], true);
}

/// In read-only mode a child given `edit` is refused with the usual
/// read-only result; the file is untouched.
#[test]
fn a_childs_edit_is_refused_in_read_only_mode() {
    let dir = root_with(&[("a.txt", "one\n")]);
    let edit = json!({"path": "a.txt", "old_string": "one", "new_string": "ONE"}).to_string();
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_tool_call(
                "c1",
                "task",
                &task(
                    "fix",
                    "EDIT-KEY: capitalise a.txt",
                    json!({"tools": ["read", "edit"]}),
                ),
            ),
            Scripted::openai_text("It could not edit."),
        ],
        vec![(
            "EDIT-KEY",
            vec![
                Scripted::openai_tool_call("r1", "read", r#"{"path": "a.txt"}"#),
                Scripted::openai_tool_call("e1", "edit", &edit),
                Scripted::openai_text("The edit was refused: read-only."),
            ],
        )],
    );
    let out = run_json(dir.path(), &server, &["--permission", "read-only", "do it"]);
    assert!(out.status.success(), "{out:?}");
    let child = conversation(&server, "EDIT-KEY");
    assert_eq!(tool_names(&child[0]), ["read", "edit"]);
    let refused = &tool_results(&child[2])[1].1;
    assert!(refused.contains("read-only"), "{refused}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "one\n"
    );
}

/// A child asks for a tool its parent does not have, or for `task`: the
/// call is refused and no child starts.
#[test]
fn a_child_cannot_be_given_task_or_unknown_tools() {
    let dir = root_with(&[("a.txt", "one\n")]);
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call(
            "c1",
            "task",
            &task("nest", "NEST-KEY", json!({"tools": ["read", "task"]})),
        ),
        Scripted::openai_text("Understood."),
    ]);
    let out = run_json(dir.path(), &server, &["--yes", "do it"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.requests().len(), 2);
    let (_, result) = &tool_results(&server.requests()[1])[0];
    assert!(
        result.contains("never `task`") && result.contains("No sub-agent"),
        "{result}"
    );
    assert!(of(&events(&out), "task_start").is_empty());
}

/// Two children edit the same file at once: the first holds it, the second
/// is refused naming the first, and no edit is lost.
#[test]
fn two_children_never_edit_one_file_at_once() {
    let dir = root_with(&[("f.txt", "one\ntwo\n")]);
    let tools = json!({"tools": ["read", "edit"]});
    let child = |key: &str, old: &str, new: &str| {
        let edit = json!({"path": "f.txt", "old_string": old, "new_string": new}).to_string();
        (
            key.to_owned(),
            vec![
                Scripted::openai_tool_call("r", "read", r#"{"path": "f.txt"}"#).together(2),
                Scripted::openai_tool_call("e", "edit", &edit).together(2),
                Scripted::openai_text(&format!("{key} done")).together(2),
            ],
        )
    };
    let (a, b) = (child("A-KEY", "one", "ONE"), child("B-KEY", "two", "TWO"));
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_turn(
                "",
                &[
                    ("c1", "task", &task("first", "A-KEY: edit", tools.clone())),
                    ("c2", "task", &task("second", "B-KEY: edit", tools.clone())),
                ],
            ),
            Scripted::openai_text("Done."),
        ],
        vec![(a.0.as_str(), a.1), (b.0.as_str(), b.1)],
    );
    let out = run_json(dir.path(), &server, &["--yes", "do it"]);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
    let results: Vec<(String, String)> = ["A-KEY", "B-KEY"]
        .iter()
        .map(|k| {
            let c = conversation(&server, k);
            assert_eq!(c.len(), 3, "{k}");
            (k.to_string(), tool_results(&c[2])[1].1.clone())
        })
        .collect();
    let refused: Vec<&(String, String)> = results
        .iter()
        .filter(|(_, r)| r.contains("being edited by another sub-agent"))
        .collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    // The refused one names the other; the file holds the other's edit.
    if refused[0].0 == "A-KEY" {
        assert!(refused[0].1.contains("(task-2)"), "{}", refused[0].1);
        assert_eq!(text, "one\nTWO\n");
    } else {
        assert!(refused[0].1.contains("(task-1)"), "{}", refused[0].1);
        assert_eq!(text, "ONE\ntwo\n");
    }
}

/// One child's provider fails: its result says so, and its sibling's
/// answer still comes back.
#[test]
fn a_childs_provider_failure_does_not_stop_its_sibling() {
    let dir = root_with(&[("a.py", "x = 1\n")]);
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_turn(
                "",
                &[
                    ("c1", "task", &task("fails", "FAIL-KEY: look", json!({}))),
                    ("c2", "task", &task("works", "WORK-KEY: look", json!({}))),
                ],
            ),
            Scripted::openai_text("One failed, one answered."),
        ],
        vec![
            (
                "FAIL-KEY",
                vec![Scripted::status(
                    400,
                    json!({"error": {"message": "bad request"}}).to_string(),
                )],
            ),
            ("WORK-KEY", vec![Scripted::openai_text("x is 1")]),
        ],
    );
    let out = run_json(dir.path(), &server, &["--yes", "do it"]);
    assert!(out.status.success(), "{out:?}");
    let parent = server.requests().last().unwrap().clone();
    let results = tool_results(&parent);
    assert!(results[0].1.contains("model request failed"), "{results:?}");
    assert_eq!(results[1].1, "x is 1");
    let mut ends = of(&events(&out), "task_end")
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["agent"].as_str().unwrap(),
                e["ending"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>();
    ends.sort();
    assert_eq!(ends, ["task-1 provider_failed", "task-2 answered"]);
}

/// `[task] parallel = 1`: the children of one reply run one after the
/// other (the second starts after the first ended; never two requests at
/// once), their results still in call order.
#[test]
fn the_parallel_bound_holds() {
    let dir = root_with(&[
        ("a.py", "x = 1\n"),
        (".lancet.toml", "[task]\nparallel = 1\n"),
    ]);
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_turn(
                "",
                &[
                    ("c1", "task", &task("one", "ONE-KEY: look", json!({}))),
                    ("c2", "task", &task("two", "TWO-KEY: look", json!({}))),
                ],
            ),
            Scripted::openai_text("Both looked."),
        ],
        vec![
            (
                "ONE-KEY",
                vec![
                    Scripted::openai_tool_call("l", "list", "{}"),
                    Scripted::openai_text("one saw a.py"),
                ],
            ),
            ("TWO-KEY", vec![Scripted::openai_text("two saw a.py")]),
        ],
    );
    let out = run_json(dir.path(), &server, &["--yes", "do it"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(server.max_in_flight(), 1);
    let ev = events(&out);
    let order: Vec<String> = ev
        .iter()
        .filter(|e| e["event"] == "task_start" || e["event"] == "task_end")
        .map(|e| {
            format!(
                "{} {}",
                e["event"].as_str().unwrap(),
                e["agent"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            "task_start task-1",
            "task_end task-1",
            "task_start task-2",
            "task_end task-2"
        ]
    );
    let results = tool_results(server.requests().last().unwrap());
    assert_eq!(results[0].1, "one saw a.py");
    assert_eq!(results[1].1, "two saw a.py");
}

/// `lancet run`'s human output shows a child compactly: a line when it
/// starts, one per tool call (prefixed with its id), one when it ends.
#[test]
fn the_human_output_shows_children_compactly() {
    let dir = root_with(&[("a.py", "x = 1\n")]);
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_tool_call("c1", "task", &task("find x", "X-KEY: find x", json!({}))),
            Scripted::openai_text("x is in a.py."),
        ],
        vec![(
            "X-KEY",
            vec![
                Scripted::openai_turn(
                    "Child text the parent's output does not show.",
                    &[("g", "grep", r#"{"pattern": "x ="}"#)],
                ),
                Scripted::openai_text("a.py:1"),
            ],
        )],
    );
    let url = server.openai_base_url();
    let out = run(
        dir.path(),
        &["--base-url", &url, "-m", "gpt-4o", "--yes", "where is x?"],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("▸ task-1 started: find x\n"), "{stdout}");
    assert!(
        stdout.contains("  task-1 → grep {\"pattern\": \"x =\"}\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("◂ task-1 answered — 2 turns, 20 tokens in, 10 out\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("Child text"), "{stdout}");
    // The closing line counts the child's tokens.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 turns, 40 tokens in, 20 out"), "{stderr}");
}

/// Ctrl-C while two children run (one in a command, one waiting for its
/// model) stops the run, both children and the command.
#[cfg(unix)]
#[test]
fn ctrl_c_stops_every_child_and_its_commands() {
    use std::process::{Command, Stdio};
    let dir = root_with(&[("a.py", "x = 1\n")]);
    let server = LlmServer::start_routed(
        vec![Scripted::openai_turn(
            "",
            &[
                (
                    "c1",
                    "task",
                    &task("sleeper", "SLEEP-KEY: wait", json!({"tools": ["bash"]})),
                ),
                ("c2", "task", &task("waiter", "WAIT-KEY: wait", json!({}))),
            ],
        )],
        vec![
            (
                "SLEEP-KEY",
                vec![Scripted::openai_tool_call(
                    "b",
                    "bash",
                    r#"{"command": "echo $$ > sleeper.pid; exec sleep 60"}"#,
                )],
            ),
            (
                "WAIT-KEY",
                vec![Scripted::Silent {
                    hold: std::time::Duration::from_secs(60),
                }],
            ),
        ],
    );
    let child = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .arg("run")
        .args(["-C", dir.path().to_str().unwrap()])
        .args(["--base-url", &server.openai_base_url(), "-m", "gpt-4o"])
        .args(["--yes", "--json", "wait"])
        .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = dir.path().join("sleeper.pid");
    let start = std::time::Instant::now();
    let pid = loop {
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if pid.ends_with('\n') && conversation(&server, "WAIT-KEY").len() == 1 {
            break pid.trim().to_owned();
        }
        assert!(start.elapsed().as_secs() < 20, "the children never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    // The command is gone (or a zombie about to be reaped), not left running.
    let status = Path::new("/proc").join(&pid).join("status");
    let gone = || {
        std::fs::read_to_string(&status).map_or(true, |s| {
            s.lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'))
        })
    };
    let start = std::time::Instant::now();
    while !gone() {
        assert!(
            start.elapsed().as_secs() < 10,
            "sleep {pid} outlived the run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The session in ask mode, two children editing two files at once: their
/// questions come one at a time, each naming its child, and the session
/// shows the children's start, calls and end.
#[cfg(unix)]
#[test]
fn in_the_session_childrens_questions_come_one_at_a_time_naming_them() {
    use crate::session::Pane;
    let dir = root_with(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let tools = json!({"tools": ["read", "edit"]});
    let child = |key: &str, file: &str, old: &str, new: &str| {
        let edit = json!({"path": file, "old_string": old, "new_string": new}).to_string();
        let read = json!({"path": file}).to_string();
        vec![
            Scripted::openai_tool_call("r", "read", &read),
            Scripted::openai_tool_call("e", "edit", &edit).together(2),
            Scripted::openai_text(&format!("{key} edited {file}")),
        ]
    };
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_turn(
                "",
                &[
                    (
                        "c1",
                        "task",
                        &task("edit a", "A-KEY: edit a.txt", tools.clone()),
                    ),
                    (
                        "c2",
                        "task",
                        &task("edit b", "B-KEY: edit b.txt", tools.clone()),
                    ),
                ],
            ),
            Scripted::openai_text("Both files are edited."),
        ],
        vec![
            ("A-KEY", child("A-KEY", "a.txt", "a", "A")),
            ("B-KEY", child("B-KEY", "b.txt", "b", "B")),
        ],
    );
    let pane = Pane::start(
        dir.path(),
        &server.openai_base_url(),
        &["--permission", "ask"],
    );
    pane.line("edit both");
    pane.wait_for("▸ task-1 started: edit a", 1);
    pane.wait_for("▸ task-2 started: edit b", 1);
    // The first question, naming its child; the other waits its turn.
    let screen = pane.wait_for("[y]es  [n]o", 1);
    assert_eq!(
        screen.matches("[asked by sub-agent task-").count(),
        1,
        "{screen}"
    );
    let first = if screen.contains("[asked by sub-agent task-1: edit a]") {
        "task-1"
    } else {
        assert!(
            screen.contains("[asked by sub-agent task-2: edit b]"),
            "{screen}"
        );
        "task-2"
    };
    pane.type_text("y");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("[y]es  [n]o", 2);
    let second = if first == "task-1" {
        "[asked by sub-agent task-2: edit b]"
    } else {
        "[asked by sub-agent task-1: edit a]"
    };
    assert!(screen.contains(second), "{screen}");
    pane.type_text("y");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for("Both files are edited.", 1);
    assert!(screen.contains("→ task edit a\n"), "{screen}");
    assert!(screen.contains("task-1 → read a.txt"), "{screen}");
    assert!(screen.contains("◂ task-1 answered"), "{screen}");
    assert!(screen.contains("◂ task-2 answered"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "A\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "B\n"
    );
}
