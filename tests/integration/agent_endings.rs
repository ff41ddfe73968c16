//! Honest endings, end to end through `lancet run` and `lancet bench`
//! against the scripted loopback server, on both wires: a reply cut off at
//! `max_tokens` is its own ending (exit 1), never an answer; a tool call or
//! a text-mode edit cut off mid-way is not run and the model is told; a
//! text-mode reply without an edit is warned about; a looping reply is
//! stopped by the repetition guard; a turn past its wall-clock limit is a
//! `timeout` in the benchmark.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_run::{events, root_with, run};
use crate::llm_server::{AnthropicBlock, LlmServer, OpenAiDelta, Scripted};

/// The two wires, as `lancet run` selects them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    OpenAi,
    Anthropic,
}

const WIRES: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// Usage of a cut-off reply: the limit's worth of output tokens.
const CUT_USAGE: (u64, u64) = (100, 64);

/// A reply cut off at its token limit: `text`, then each call `(id, name,
/// arguments as sent)`, with the wire's own "ran out of tokens" reason.
fn cut_off(wire: Wire, text: &str, calls: &[(&str, &str, &str)]) -> Scripted {
    match wire {
        Wire::OpenAi => {
            let mut deltas = vec![OpenAiDelta::Role];
            if !text.is_empty() {
                deltas.push(OpenAiDelta::Text(text.to_owned()));
            }
            for (index, (id, name, args)) in (0u32..).zip(calls) {
                deltas.push(OpenAiDelta::ToolStart {
                    index,
                    id: (*id).to_owned(),
                    name: (*name).to_owned(),
                });
                deltas.push(OpenAiDelta::ToolArgs {
                    index,
                    fragment: (*args).to_owned(),
                });
            }
            deltas.push(OpenAiDelta::Finish("length".to_owned()));
            deltas.push(OpenAiDelta::Usage {
                prompt: CUT_USAGE.0,
                completion: CUT_USAGE.1,
            });
            Scripted::openai(deltas)
        }
        Wire::Anthropic => {
            let mut blocks = Vec::new();
            if !text.is_empty() {
                blocks.push(AnthropicBlock::Text(text.to_owned()));
            }
            for (id, name, args) in calls {
                blocks.push(AnthropicBlock::ToolUse {
                    id: (*id).to_owned(),
                    name: (*name).to_owned(),
                    input_json: (*args).to_owned(),
                });
            }
            Scripted::anthropic(blocks, "max_tokens", CUT_USAGE)
        }
    }
}

fn text(wire: Wire, text: &str) -> Scripted {
    match wire {
        Wire::OpenAi => Scripted::openai_text(text),
        Wire::Anthropic => Scripted::anthropic_text(text),
    }
}

fn call(wire: Wire, id: &str, name: &str, args: &str) -> Scripted {
    match wire {
        Wire::OpenAi => Scripted::openai_tool_call(id, name, args),
        Wire::Anthropic => Scripted::anthropic_tool_call(id, name, args),
    }
}

/// `lancet run --yes --json` on `wire` against `server`, with `extra` flags.
fn run_on(wire: Wire, server: &LlmServer, root: &Path, extra: &[&str], task: &str) -> Output {
    let (provider, base, model) = match wire {
        Wire::OpenAi => ("openai", server.openai_base_url(), "gpt-4o"),
        Wire::Anthropic => ("anthropic", server.base_url(), "claude-test"),
    };
    let mut args = vec![
        "--provider",
        provider,
        "--base-url",
        &base,
        "-m",
        model,
        "--yes",
        "--json",
    ];
    args.extend_from_slice(extra);
    args.push(task);
    run(root, &args)
}

fn of<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

fn done(out: &Output) -> Value {
    let ev = events(out);
    (*of(&ev, "done")
        .last()
        .unwrap_or_else(|| panic!("no done event: {}", stderr(out))))
    .clone()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A reply cut off at `max_tokens` with nothing to act on ends the run as
/// `truncated`, exit 1 (stopped), on both wires — not as an answer.
#[test]
fn a_reply_cut_off_at_max_tokens_is_truncated_not_answered() {
    for wire in WIRES {
        let dir = root_with(&[("a.txt", "x\n")]);
        let server = LlmServer::start(vec![cut_off(wire, "Let me think about this. First", &[])]);
        let out = run_on(wire, &server, dir.path(), &[], "change a.txt");
        assert_eq!(out.status.code(), Some(1), "{wire:?}: {}", stderr(&out));
        let ev = events(&out);
        assert_eq!(of(&ev, "truncated").len(), 1, "{wire:?}");
        assert_eq!(done(&out)["ending"], "truncated", "{wire:?}");
        assert_eq!(server.requests().len(), 1, "{wire:?}");
        // And for a person: said as a stop, with the limit.
        let dir = root_with(&[("a.txt", "x\n")]);
        let server = LlmServer::start(vec![cut_off(wire, "Let me think", &[])]);
        let (provider, base) = match wire {
            Wire::OpenAi => ("openai", server.openai_base_url()),
            Wire::Anthropic => ("anthropic", server.base_url()),
        };
        let out = run(
            dir.path(),
            &[
                "--provider",
                provider,
                "--base-url",
                &base,
                "-m",
                "m",
                "--yes",
                "go",
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{wire:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cut off at its limit of 8192 tokens"),
            "{wire:?}: {}",
            stderr(&out)
        );
    }
}

/// A tool call cut off mid-JSON is not run (the file stays as it was): the
/// model gets an error result saying so and asking for a smaller step, and
/// the run goes on (here to an answer: exit 0). A complete call before it
/// in the same reply runs. The last call of a cut-off reply is not run even
/// when its JSON parses: a server may close partial JSON (llama.cpp's
/// parser repairs it), so a cut-off `write` can arrive looking whole.
#[test]
fn a_tool_call_cut_off_mid_json_is_not_run_and_the_model_is_told() {
    for wire in WIRES {
        let dir = root_with(&[("a.txt", "x\n")]);
        let server = LlmServer::start(vec![
            cut_off(
                wire,
                "",
                &[
                    ("c1", "read", r#"{"path": "a.txt"}"#),
                    ("c2", "write", r#"{"path": "a.txt", "content": "hel"#),
                ],
            ),
            text(wire, "Stopping here."),
        ]);
        let out = run_on(wire, &server, dir.path(), &[], "rewrite a.txt");
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "x\n",
            "{wire:?}"
        );
        let ev = events(&out);
        assert_eq!(of(&ev, "truncated").len(), 1, "{wire:?}");
        let results = of(&ev, "tool_result");
        assert_eq!(results.len(), 2, "{wire:?}: {ev:?}");
        assert_eq!(results[0]["name"], "read");
        assert_eq!(results[0]["is_error"], false, "{wire:?}");
        assert_eq!(results[1]["name"], "write");
        assert_eq!(results[1]["is_error"], true, "{wire:?}");
        let said = results[1]["content"].as_str().unwrap();
        assert!(
            said.contains("cut off") && said.contains("was not run") && said.contains("smaller"),
            "{said}"
        );
        // The model read it in its next request.
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2, "{wire:?}");
        assert!(
            reqs[1].body["messages"].to_string().contains("was not run"),
            "{wire:?}"
        );
        assert_eq!(done(&out)["ending"], "answered", "{wire:?}");

        // Healed by the server: whole JSON, half a file.
        let server = LlmServer::start(vec![
            cut_off(
                wire,
                "",
                &[("c1", "write", r#"{"path": "a.txt", "content": "hel"}"#)],
            ),
            text(wire, "Stopping here."),
        ]);
        let out = run_on(wire, &server, dir.path(), &[], "rewrite a.txt");
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "x\n",
            "{wire:?}"
        );
        let ev = events(&out);
        let results = of(&ev, "tool_result");
        assert_eq!(results.len(), 1, "{wire:?}: {ev:?}");
        assert_eq!(results[0]["is_error"], true, "{wire:?}");
        assert!(
            results[0]["content"]
                .as_str()
                .unwrap()
                .contains("was not run")
        );
    }
}

/// In text mode, a reply cut off in the middle of an edit is not applied
/// (a cut-off edit may be a truncated file); the model is told, and its
/// next, whole edit applies.
#[test]
fn a_text_mode_edit_cut_off_is_not_applied() {
    for wire in WIRES {
        let dir = root_with(&[("notes.txt", "alpha\nbeta\n")]);
        let whole = "notes.txt\n```\n<<<<<<< SEARCH\nbeta\n=======\ngamma\n>>>>>>> REPLACE\n```\n";
        let server = LlmServer::start(vec![
            call(
                wire,
                "t1",
                "read",
                &json!({"path": "notes.txt"}).to_string(),
            ),
            cut_off(
                wire,
                "notes.txt\n```\n<<<<<<< SEARCH\nbeta\n=======\ngam",
                &[],
            ),
            text(wire, whole),
            text(wire, "Done."),
        ]);
        let out = run_on(
            wire,
            &server,
            dir.path(),
            &["-f", "search-replace", "--text-mode"],
            "rename beta",
        );
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        let reqs = server.requests();
        assert_eq!(reqs.len(), 4, "{wire:?}");
        let told = reqs[2].body["messages"].to_string();
        assert!(
            told.contains("cut off") && told.contains("nothing was applied"),
            "{told}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
            "alpha\ngamma\n",
            "{wire:?}"
        );
        let ev = events(&out);
        assert_eq!(of(&ev, "truncated").len(), 1, "{wire:?}");
        assert_eq!(of(&ev, "edit").len(), 1, "{wire:?}");
    }
}

/// In text mode, an answer without an edit while nothing was changed is
/// warned about (an event for the person); it is still the answer.
#[test]
fn a_text_mode_reply_without_an_edit_is_warned_about() {
    for wire in WIRES {
        let dir = root_with(&[("notes.txt", "alpha\n")]);
        let server = LlmServer::start(vec![text(wire, "It looks fine to me.")]);
        let out = run_on(
            wire,
            &server,
            dir.path(),
            &["-f", "search-replace", "--text-mode"],
            "rename alpha",
        );
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        let ev = events(&out);
        let warned = of(&ev, "no_edit");
        assert_eq!(warned.len(), 1, "{wire:?}: {ev:?}");
        assert!(warned[0]["warning"].as_str().unwrap().contains("no edit"));
        assert_eq!(done(&out)["ending"], "answered");
        // Not in tool mode, and not once an edit was made.
        let server = LlmServer::start(vec![text(wire, "It looks fine to me.")]);
        let out = run_on(wire, &server, dir.path(), &[], "rename alpha");
        assert!(of(&events(&out), "no_edit").is_empty(), "{wire:?}");
    }
}

/// A model that loops is stopped by the repetition guard long before any
/// other bound: the run ends as `looping`, exit 1, on both wires; with the
/// guard off (`loop_repeats = 0`) the reply size cap still ends it.
#[test]
fn a_looping_reply_is_stopped_by_the_repetition_guard() {
    for wire in WIRES {
        let forever = |wire| match wire {
            Wire::OpenAi => Scripted::openai_forever("I will fix the bug now. ", Duration::ZERO),
            Wire::Anthropic => {
                Scripted::anthropic_forever("I will fix the bug now. ", Duration::ZERO)
            }
        };
        let dir = root_with(&[("a.txt", "x\n")]);
        let server = LlmServer::start(vec![forever(wire)]);
        let out = run_on(wire, &server, dir.path(), &[], "fix it");
        assert_eq!(out.status.code(), Some(1), "{wire:?}: {}", stderr(&out));
        let ev = events(&out);
        let looped = of(&ev, "looping");
        assert_eq!(looped.len(), 1, "{wire:?}");
        assert_eq!(looped[0]["chunk"], "I will fix the bug now. ");
        assert!(looped[0]["repeats"].as_u64().unwrap() >= 12);
        assert_eq!(done(&out)["ending"], "looping");
        // Stopped early: a few KiB streamed, not the 4 MiB cap.
        let streamed: usize = of(&ev, "text")
            .iter()
            .map(|e| e["text"].as_str().unwrap().len())
            .sum();
        assert!(streamed < 8192, "{streamed}");

        // Configured: 20 copies, from the user's file.
        let config = dir.path().join(".no-user-config/lancet");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), "loop_repeats = 20\n").unwrap();
        let server = LlmServer::start(vec![forever(wire)]);
        let out = run_on(wire, &server, dir.path(), &[], "fix it");
        let ev = events(&out);
        assert!(of(&ev, "looping")[0]["repeats"].as_u64().unwrap() >= 20);
        // Off: the reply size cap is what ends it.
        std::fs::write(
            config.join("config.toml"),
            "loop_repeats = 0\nmax_reply_bytes = 20000\n",
        )
        .unwrap();
        let server = LlmServer::start(vec![forever(wire)]);
        let out = run_on(wire, &server, dir.path(), &[], "fix it");
        assert_eq!(out.status.code(), Some(3), "{wire:?}: {}", stderr(&out));
        assert!(of(&events(&out), "looping").is_empty());
        assert!(stderr(&out).contains("reply size cap"), "{}", stderr(&out));
    }
}

/// `lancet bench` with a scripted model: each case's record, on both wires.
fn bench_one(wire: Wire, script: Vec<Scripted>, config: &str, mode: &str) -> Value {
    let server = LlmServer::start(script);
    let dir = tempfile::tempdir().unwrap();
    let xdg = dir.path().join("xdg");
    std::fs::create_dir_all(xdg.join("lancet")).unwrap();
    std::fs::write(xdg.join("lancet/config.toml"), config).unwrap();
    let out = dir.path().join("out");
    let tasks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bench/tasks");
    let model = match wire {
        Wire::OpenAi => "openai:scripted",
        Wire::Anthropic => "anthropic:scripted",
    };
    let output = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["bench", "-t"])
        .arg(&tasks)
        .args(["--limit", "1", "-j", "1", "--tries", "2", "--mode", mode])
        .args(["-m", model, "-f", "search-replace", "-o"])
        .arg(&out)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", &xdg)
        .env("NO_COLOR", "1")
        .env("OPENAI_BASE_URL", server.openai_base_url())
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = crate::bench::show(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    let line = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    serde_json::from_str(line.lines().next().unwrap()).unwrap()
}

/// In the benchmark: a reply cut off with no edit in it is `no_edit` (its
/// ending `truncated`), never `provider`; an edit call cut off mid-JSON is
/// a try that failed to parse (`parse`); a text-mode edit cut off is the
/// same; a looping reply stopped by the guard is `no_edit` (ending
/// `looping`, one turn); a turn past its wall-clock limit is `timeout`.
#[test]
fn the_bench_records_cut_off_replies_and_slow_turns_honestly() {
    for wire in WIRES {
        let r = bench_one(
            wire,
            vec![cut_off(wire, "I think the bug is", &[])],
            "",
            "tool",
        );
        assert_eq!(r["failure"], "no_edit", "{wire:?}: {r}");
        assert_eq!(r["ending"], "truncated", "{wire:?}: {r}");
        assert_eq!(r["tries"], 0);
        assert_eq!(r["tokens_out"], CUT_USAGE.1);

        let edit =
            r#"{"path": "calc.py", "old_string": "def add(a, b):\n    return a - b", "new_str"#;
        let r = bench_one(
            wire,
            vec![
                call(wire, "r1", "read", r#"{"path": "calc.py"}"#),
                cut_off(wire, "", &[("e1", "edit", edit)]),
                cut_off(wire, "", &[("e2", "edit", edit)]),
            ],
            "",
            "tool",
        );
        assert_eq!(r["failure"], "parse", "{wire:?}: {r}");
        assert_eq!(r["tries"], 2, "{wire:?}: {r}");
        assert_eq!(r["ending"], "stopped", "{wire:?}: {r}");

        let r = bench_one(
            wire,
            vec![
                call(wire, "r1", "read", r#"{"path": "calc.py"}"#),
                cut_off(wire, "calc.py\n```\n<<<<<<< SEARCH\ndef add(a, b):\n", &[]),
                text(wire, "I give up."),
            ],
            "",
            "text",
        );
        assert_eq!(r["failure"], "parse", "{wire:?}: {r}");
        assert_eq!(r["tries"], 1, "{wire:?}: {r}");

        let forever = match wire {
            Wire::OpenAi => Scripted::openai_forever("Let me see. ", Duration::ZERO),
            Wire::Anthropic => Scripted::anthropic_forever("Let me see. ", Duration::ZERO),
        };
        let r = bench_one(wire, vec![forever], "", "tool");
        assert_eq!(r["failure"], "no_edit", "{wire:?}: {r}");
        assert_eq!(r["ending"], "looping", "{wire:?}: {r}");
        assert_eq!(r["turns"], 1, "{wire:?}: {r}");

        let r = bench_one(
            wire,
            vec![Scripted::keep_alive_forever(Duration::from_millis(50))],
            "turn_timeout = 1\n",
            "tool",
        );
        assert_eq!(r["failure"], "timeout", "{wire:?}: {r}");
        assert!(
            r["detail"].as_str().unwrap().contains("turn limit"),
            "{wire:?}: {r}"
        );
    }
}
