//! `lancet bench` end to end: the real binary, its simulated model on its
//! own loopback server, and a scripted model ([`LlmServer`]) standing in for
//! a real endpoint. The task sets are the small ones under `tests/bench/`
//! (one per source shape); the public sets are not needed.

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::llm_server::{LlmServer, Scripted};

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/bench")
        .join(rel)
        .display()
        .to_string()
}

/// `lancet bench ARGS` in `cwd`, with no user configuration, no keys from
/// the environment (the scripted server's endpoint when given) and no terminal.
pub(crate) fn bench<S: AsRef<std::ffi::OsStr>>(
    cwd: &Path,
    endpoint: Option<&str>,
    args: &[S],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lancet"));
    cmd.arg("bench")
        .args(args)
        .current_dir(cwd)
        .env("XDG_CONFIG_HOME", cwd.join(".no-user-config"))
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null());
    if let Some(url) = endpoint {
        cmd.env("OPENAI_BASE_URL", url);
    }
    cmd.output().unwrap()
}

fn results(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub(crate) fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `sim:perfect` renders each task's real change in the format under test:
/// every format, in tool and text mode, passes every task of every source.
#[test]
fn sim_perfect_passes_every_task_in_every_format_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = vec![
        "-t".to_owned(),
        data("tasks"),
        "-t".to_owned(),
        format!("react-edit:{}", data("react-edit")),
    ];
    // EditEval's checks run under python3.
    let python = have("python3");
    if python {
        args.extend([
            "-t".to_owned(),
            format!("editeval:{}", data("editeval.jsonl")),
        ]);
    } else {
        eprintln!("python3 is not installed: the EditEval source is left out");
    }
    args.extend(
        [
            "-m",
            "sim:perfect",
            "-f",
            "all",
            "--mode",
            "both",
            "-j",
            "2",
            "-o",
        ]
        .map(str::to_owned),
    );
    args.push(out.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = bench(dir.path(), None, &args);
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    let records = results(&out);
    // 4 task directories + 2 react-edit tasks (+ 2 EditEval, 1 skipped for numpy).
    let tasks = if python { 8 } else { 6 };
    assert_eq!(records.len(), tasks * 5 * 2, "{}", show(&output));
    let failed: Vec<&Value> = records.iter().filter(|r| r["pass"] != true).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    for r in &records {
        assert_eq!(r["tries"], 1, "{r}");
        assert_eq!(r["failure"], Value::Null);
    }
    let sources: BTreeSet<&str> = records
        .iter()
        .map(|r| r["source"].as_str().unwrap())
        .collect();
    assert!(sources.contains("react-edit"));
    assert_eq!(sources.contains("editeval"), python);
    let table = String::from_utf8_lossy(&output.stdout);
    for format in [
        "search-replace",
        "udiff",
        "hashline",
        "apply-patch",
        "whole",
    ] {
        assert!(table.contains(format), "{table}");
    }
    if python {
        assert!(table.contains("EditEval/t2: needs numpy"), "{table}");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let rows = report["summary"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for row in rows {
        assert_eq!(row["pass_rate"], 1.0, "{row}");
        assert_eq!(row["tasks"], json!(tasks));
    }
}

/// Every line of results.jsonl has DESIGN.md's fields, of their types.
#[test]
fn results_lines_have_the_contract_fields() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bench(
        dir.path(),
        None,
        &[
            "-t",
            &data("tasks"),
            "-m",
            "sim:perfect",
            "-f",
            "udiff",
            "--limit",
            "2",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    let records = results(&out);
    assert_eq!(records.len(), 2);
    for r in &records {
        let o = r.as_object().unwrap();
        for key in [
            "task",
            "source",
            "model",
            "format",
            "mode",
            "pass",
            "tries",
            "failure",
            "tokens_in",
            "tokens_out",
            "cost",
            "ms",
        ] {
            assert!(o.contains_key(key), "{key} missing in {r}");
        }
        for key in ["task", "source", "model", "format", "mode"] {
            assert!(r[key].is_string(), "{key} in {r}");
        }
        assert!(r["pass"].is_boolean());
        assert!(r["tries"].is_u64() && r["tokens_in"].is_u64() && r["tokens_out"].is_u64());
        assert!(r["ms"].is_u64());
        assert!(r["failure"].is_null() || r["failure"].is_string());
        assert!(r["cost"].is_null() || r["cost"].is_number());
        assert_eq!(r["model"], "sim:perfect");
        assert_eq!(r["format"], "udiff");
        assert_eq!(r["mode"], "tool");
        assert!(r["tokens_in"].as_u64().unwrap() > 0);
    }
}

/// A rerun with the same `--out` skips finished jobs: a first run of one
/// task, then of all four, then again; each job is in results.jsonl once,
/// and the first line is the first run's.
#[test]
fn a_rerun_resumes_without_redoing_finished_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let tasks = data("tasks");
    let base = ["-t", &tasks, "-m", "sim:perfect", "-f", "hashline", "-o", o];
    let first = bench(dir.path(), None, &[&base[..], &["--limit", "1"]].concat());
    assert_eq!(first.status.code(), Some(0), "{}", show(&first));
    let before = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert_eq!(before.lines().count(), 1);
    let second = bench(dir.path(), None, &base);
    assert_eq!(second.status.code(), Some(0), "{}", show(&second));
    let after = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(after.starts_with(&before));
    assert_eq!(after.lines().count(), 4);
    let third = bench(dir.path(), None, &[&base[..], &["--json"]].concat());
    assert_eq!(third.status.code(), Some(0), "{}", show(&third));
    assert_eq!(
        std::fs::read_to_string(out.join("results.jsonl")).unwrap(),
        after,
        "nothing was left to do"
    );
    let events: Vec<Value> = String::from_utf8_lossy(&third.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "start");
    assert_eq!(events[0]["jobs"], 0);
    assert_eq!(events[0]["already_done"], 4);
    let summary = events.iter().find(|e| e["event"] == "summary").unwrap();
    assert_eq!(
        summary["rows"][0]["tasks"], 4,
        "the summary counts earlier runs too"
    );
    let keys: HashSet<String> = results(&out)
        .iter()
        .map(|r| r["task"].to_string())
        .collect();
    assert_eq!(keys.len(), 4);
}

/// One task (`add()` subtracts, in calc.py) for a scripted model through the
/// OpenAI-compatible wire, in search/replace tool mode, one job at a time.
fn scripted(script: Vec<Scripted>, tries: &str) -> (Value, LlmServer, Output) {
    scripted_in(script, tries, "tool")
}

/// [`scripted`] in a mode (`tool` or `text`).
fn scripted_in(script: Vec<Scripted>, tries: &str, mode: &str) -> (Value, LlmServer, Output) {
    let server = LlmServer::start(script);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = bench(
        dir.path(),
        Some(&server.openai_base_url()),
        &[
            "-t",
            &data("tasks"),
            "--limit",
            "1",
            "-m",
            "openai:scripted-model",
            "-f",
            "search-replace",
            "--tries",
            tries,
            "--mode",
            mode,
            "-j",
            "1",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let records = results(&out);
    assert_eq!(records.len(), 1, "{}", show(&output));
    (records[0].clone(), server, output)
}

fn read_calc() -> Scripted {
    Scripted::openai_tool_call("c1", "read", r#"{"path": "calc.py"}"#)
}

/// An edit that applies but is not the fix is `wrong_result`; tokens are
/// the server's usage, summed over the turns.
#[test]
fn a_wrong_edit_is_wrong_result() {
    let edit = json!({"path": "calc.py", "old_string": "def add(a, b):\n    return a - b", "new_string": "def add(a, b):\n    return a * b"});
    let (r, server, output) = scripted(
        vec![
            read_calc(),
            Scripted::openai_tool_call("c2", "edit", &edit.to_string()),
            Scripted::openai_text("Fixed."),
        ],
        "2",
    );
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    assert_eq!(r["pass"], false);
    assert_eq!(r["failure"], "wrong_result");
    assert_eq!(r["tries"], 1);
    assert_eq!(r["model"], "openai:scripted-model");
    assert_eq!(r["tokens_in"], 30);
    assert_eq!(r["tokens_out"], 15);
    assert_eq!(server.remaining(), 0);
    // The model was asked as `lancet run` asks it: the system prompt and the edit tool.
    let first = &server.requests()[0];
    assert_eq!(first.body["model"], "scripted-model");
    let tools: Vec<&str> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"edit"));
}

/// A malformed edit is `parse`; after the last try fails the model is not
/// asked again (two tries: two failed edits, then the run stops).
#[test]
fn a_malformed_edit_is_parse_and_tries_are_bounded() {
    let bad = r#"{"path": "calc.py", "old_string": 5, "new_string": "x"}"#;
    let (r, server, output) = scripted(
        vec![
            read_calc(),
            Scripted::openai_tool_call("c2", "edit", bad),
            Scripted::openai_tool_call("c3", "edit", bad),
            Scripted::openai_text("never asked for"),
        ],
        "2",
    );
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    assert_eq!(r["failure"], "parse");
    assert_eq!(r["tries"], 2);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.remaining(), 1);
}

/// Text that is not in the file is `not_found` (one try allowed).
#[test]
fn an_edit_of_absent_text_is_not_found() {
    let edit =
        json!({"path": "calc.py", "old_string": "return a plus b", "new_string": "return a + b"});
    let (r, server, _) = scripted(
        vec![
            read_calc(),
            Scripted::openai_tool_call("c2", "edit", &edit.to_string()),
            Scripted::openai_text("never asked for"),
        ],
        "1",
    );
    assert_eq!(r["failure"], "not_found");
    assert_eq!(r["tries"], 1);
    assert_eq!(server.remaining(), 1);
}

/// In text mode, a reply whose block never closes is `parse`, and a fixed
/// reply after the feedback passes at the second try.
#[test]
fn text_mode_edits_are_judged_the_same_way() {
    let open = "calc.py\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\n";
    let (r, _, output) = scripted_in(vec![read_calc(), Scripted::openai_text(open)], "1", "text");
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    assert_eq!(r["failure"], "parse");
    assert_eq!(r["mode"], "text");
    let fixed = format!("{open}def add(a, b):\n    return a + b\n>>>>>>> REPLACE\n");
    let (r, server, _) = scripted_in(
        vec![
            read_calc(),
            Scripted::openai_text(open),
            Scripted::openai_text(&fixed),
            Scripted::openai_text("Fixed."),
        ],
        "2",
        "text",
    );
    assert_eq!(r["pass"], true, "{r}");
    assert_eq!(r["tries"], 2);
    assert_eq!(server.remaining(), 0);
    // The engine's feedback on the first try reached the model before its
    // second: the third request ends with it, after the failed reply.
    let third = &server.requests()[2].body;
    let messages = third["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant", "{third}");
    assert_eq!(messages[n - 2]["content"], open);
    assert_eq!(messages[n - 1]["role"], "user", "{third}");
    assert!(!messages[n - 1]["content"].as_str().unwrap().is_empty());
}

/// A model that answers without editing is `no_edit`.
#[test]
fn no_edit_is_no_edit() {
    let (r, _, output) = scripted(vec![Scripted::openai_text("I would rather not.")], "2");
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    assert_eq!(r["failure"], "no_edit");
    assert_eq!(r["tries"], 0);
    assert_eq!(r["turns"], 1);
}

/// A provider that refuses (401, never retried) is `provider`, and when
/// every model failed to answer the exit status is 3.
#[test]
fn a_provider_failure_is_provider_and_exit_3() {
    let (r, _, output) = scripted(
        vec![Scripted::status(401, r#"{"error":{"message":"bad key"}}"#)],
        "2",
    );
    assert_eq!(output.status.code(), Some(3), "{}", show(&output));
    assert_eq!(r["failure"], "provider");
    assert!(r["detail"].is_string());
}

/// What the contract has and this slice does not build is a usage error
/// that says so (exit 2), never silently ignored.
#[test]
fn flags_not_built_yet_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = data("tasks");
    let base = ["-t", tasks.as_str(), "-m", "sim:perfect"];
    let cases: Vec<(Vec<&str>, &str)> = vec![(vec!["-m", "sim:sloppy"], "sim:sloppy")];
    for (extra, named) in cases {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        let out = bench(dir.path(), None, &args);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("not built yet") && err.contains(named),
            "{extra:?}: {err}"
        );
    }
    // Nothing was written for any of them.
    assert!(!dir.path().join(".lancet").exists());
}

/// A task source that does not exist is a usage error naming it.
#[test]
fn a_missing_source_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing: PathBuf = dir.path().join("nowhere");
    let spec = format!("react-edit:{}", missing.display());
    let out = bench(dir.path(), None, &["-t", &spec, "-m", "sim:perfect"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nowhere"));
}

/// Ctrl-C stops the run, keeps every finished job's line, and exits 1; the
/// job in flight leaves no line, so a rerun does it.
#[test]
fn an_interrupted_run_keeps_what_is_done_and_exits_1() {
    let server = LlmServer::start(vec![
        Scripted::openai_text("I would rather not."),
        Scripted::Silent {
            hold: std::time::Duration::from_secs(30),
        },
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["bench", "-t", &data("tasks"), "--limit", "2", "-j", "1"])
        .args(["-m", "openai:scripted-model", "-f", "whole", "-o"])
        .arg(&out)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env_remove("OPENAI_API_KEY")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let results = out.join("results.jsonl");
    let start = std::time::Instant::now();
    // The first job's line, and the second job's request in flight.
    while !(std::fs::read_to_string(&results).is_ok_and(|t| t.lines().count() == 1)
        && server.requests().len() == 2)
    {
        assert!(
            start.elapsed().as_secs() < 20,
            "the first job never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", show(&output));
    assert!(
        start.elapsed().as_secs() < 25,
        "the stop waited for the model"
    );
    let lines = std::fs::read_to_string(&results).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("no_edit"));
    assert!(out.join("report.json").exists());
}

/// `anthropic:NAME` goes over the Anthropic wire, to the endpoint `lancet
/// run` would use (`ANTHROPIC_BASE_URL`), and is judged the same way.
#[test]
fn anthropic_models_resolve_as_lancet_run_resolves_them() {
    let edit = json!({"path": "calc.py", "old_string": "def add(a, b):\n    return a - b", "new_string": "def add(a, b):\n    return a + b"});
    let server = LlmServer::start(vec![
        Scripted::anthropic_tool_call("t1", "read", r#"{"path": "calc.py"}"#),
        Scripted::anthropic_tool_call("t2", "edit", &edit.to_string()),
        Scripted::anthropic_text("Fixed."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["bench", "-t", &data("tasks"), "--limit", "1", "-j", "1"])
        .args([
            "-m",
            "anthropic:claude-scripted",
            "-f",
            "search-replace",
            "-o",
        ])
        .arg(&out)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".no-user-config"))
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", show(&output));
    let r = &results(&out)[0];
    assert_eq!(r["pass"], true, "{r}");
    assert_eq!(r["model"], "anthropic:claude-scripted");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[0].path.ends_with("/v1/messages"),
        "{}",
        requests[0].path
    );
    assert_eq!(requests[0].body["model"], "claude-scripted");
}

/// Trust (a hostile repository): a `.lancet` that is a symlink is refused as
/// the default results directory, and nothing is written through it; a FIFO
/// planted as `results.jsonl` is refused without waiting on it.
#[test]
fn a_planted_results_directory_or_fifo_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(".lancet")).unwrap();
    let tasks = data("tasks");
    let out = bench(
        dir.path(),
        None,
        &["-t", tasks.as_str(), "-m", "sim:perfect", "-f", "udiff"],
    );
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "written through the symlink"
    );

    let out_dir = dir.path().join("runs");
    std::fs::create_dir(&out_dir).unwrap();
    let fifo = out_dir.join("results.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let o = out_dir.to_str().unwrap();
    let out = bench(
        dir.path(),
        None,
        &[
            "-t",
            tasks.as_str(),
            "-m",
            "sim:perfect",
            "-f",
            "udiff",
            "-o",
            o,
        ],
    );
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("results.jsonl"),
        "{}",
        show(&out)
    );
}
