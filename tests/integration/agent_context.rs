//! `lancet run` keeping inside the model's window, end to end against the
//! scripted server: a context overflow from the provider leads to a summary
//! and the run goes on; a known window (a profile's `context_window`) leads
//! to compaction before the request would overflow.

use std::path::Path;

use serde_json::{Value, json};

use crate::agent_run::{events, run};
use crate::llm_server::{LlmServer, OpenAiDelta, Scripted};

fn big_file(dir: &Path) {
    let text: String = (0..1200)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    std::fs::write(dir.join("big.txt"), text).unwrap();
}

#[test]
fn an_overflow_is_summarised_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[("c1", "read", &json!({"path": "big.txt"}).to_string())],
        ),
        Scripted::status(
            400,
            r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens."}}"#,
        ),
        Scripted::openai_text("Task: count lines. big.txt has 800 lines."),
        Scripted::openai_text("big.txt has 800 lines."),
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
            "count the lines of big.txt",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    // The summary request: no tools, the conversation as text, the question.
    let summary_req = &reqs[2].body;
    assert!(
        summary_req
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(|a| a.is_empty()))
    );
    let asked = summary_req["messages"].to_string();
    assert!(
        asked.contains("Summarise") && asked.contains("count the lines of big.txt"),
        "{asked}"
    );
    // The run goes on from the task and the summary, without the old output.
    let next = reqs[3].body["messages"].to_string();
    assert!(next.contains("count the lines of big.txt"));
    assert!(next.contains("big.txt has 800 lines") && next.contains("summarised"));
    assert!(!next.contains("line 1199 of a long file"));
    let ev = events(&out);
    let compacted: Vec<&Value> = ev.iter().filter(|e| e["event"] == "compacted").collect();
    assert_eq!(compacted.len(), 1);
    assert!(
        compacted[0]["summary"]
            .as_str()
            .unwrap()
            .contains("800 lines")
    );
    let transcript: String = std::fs::read_dir(dir.path().join(".lancet/sessions"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(transcript.contains("\"entry\":\"compacted\""));
}

#[test]
fn a_known_window_compacts_before_the_request_overflows() {
    let dir = tempfile::tempdir().unwrap();
    big_file(dir.path());
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[("c1", "read", &json!({"path": "big.txt"}).to_string())],
        ),
        Scripted::openai_text("Summary: big.txt was read; it has 800 lines."),
        Scripted::openai_text("800 lines."),
    ]);
    std::fs::write(
        dir.path().join(".lancet.toml"),
        format!(
            "provider = \"local\"\nmodel = \"qwen2.5-coder\"\n[providers.local]\nwire = \"openai\"\nbase_url = \"{}\"\ncontext_window = 6000\n",
            server.openai_base_url()
        ),
    )
    .unwrap();
    // The project's profile sets an endpoint, which only a trusted project may.
    let out = run(
        dir.path(),
        &["--trust", "--yes", "--json", "count the lines of big.txt"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        3,
        "read, summary, answer: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(reqs[0].body["model"], "qwen2.5-coder");
    assert!(reqs[1].body["messages"].to_string().contains("Summarise"));
    assert!(
        !reqs[2].body["messages"]
            .to_string()
            .contains("line 1199 of a long file")
    );
}

/// A window smaller than the system prompt: one summary, then no more
/// compaction every turn (it could not help).
#[test]
fn a_hopelessly_small_window_is_not_compacted_every_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    let read = json!({"path": "a.txt"}).to_string();
    // A call whose request the server counts at 2,000 prompt tokens.
    let big_read = |id: &str| {
        Scripted::openai(vec![
            OpenAiDelta::Role,
            OpenAiDelta::ToolStart {
                index: 0,
                id: id.to_owned(),
                name: "read".to_owned(),
            },
            OpenAiDelta::ToolArgs {
                index: 0,
                fragment: read.clone(),
            },
            OpenAiDelta::Finish("tool_calls".to_owned()),
            OpenAiDelta::Usage {
                prompt: 2000,
                completion: 5,
            },
        ])
    };
    let server = LlmServer::start(vec![
        big_read("c1"),
        Scripted::openai_text("Summary: a.txt holds x."),
        big_read("c2"),
        Scripted::openai_text("It holds x."),
    ]);
    std::fs::write(
        dir.path().join(".lancet.toml"),
        format!(
            "provider = \"tiny\"\nmodel = \"gpt-4o\"\n[providers.tiny]\nwire = \"openai\"\nbase_url = \"{}\"\ncontext_window = 100\n",
            server.openai_base_url()
        ),
    )
    .unwrap();
    // The project's profile sets an endpoint, which only a trusted project may.
    let out = run(
        dir.path(),
        &["--trust", "--yes", "--json", "what is in a.txt?"],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summaries = server
        .requests()
        .iter()
        .filter(|r| r.body["messages"].to_string().contains("Summarise"))
        .count();
    assert_eq!(summaries, 1);
    assert_eq!(server.remaining(), 0);
}
