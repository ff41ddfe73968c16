//! The agent loop's own overhead per turn (issue 6: under 1 ms for a turn
//! with five tool calls, excluding the model's time).
//!
//! Each case is one model turn that calls five tools, then a final turn that
//! only answers, through `lancet::agent::run::run` against the replies of
//! the scripted HTTP server the tests use (`tests/integration/llm_server.rs`;
//! real HTTP on 127.0.0.1, OpenAI wire, streamed). Three timings per case:
//!
//! - `loop`: the whole run (two model requests, five tool calls);
//! - `bare`: the same two requests (the same bodies: the run's conversation
//!   replayed) through `Provider::complete` alone, so the model's share;
//! - `tools`: the five calls through `Tools::call` alone, in process.
//!
//! `loop − bare` is the loop's own overhead per turn: running the tools,
//! assembling results and requests, the bookkeeping. `tools` should be most
//! of it.
//!
//! The timed runs talk to [`Replay`], a blocking server local to this bench
//! that serves the replies `llm_server` renders (the same bytes, one write
//! per event, `Connection: close`), request n getting reply n mod 2. The
//! scripted server itself polls `accept` every 2 ms, and that tick hides up
//! to 2 ms of work between two requests: the loop's tool calls fall inside
//! the wait the bare calls also pay, so `loop − bare` against it reads near
//! zero. `LlmServer` is used once per case, outside the timing, to check
//! that the run does what it says and that the replayed requests are the
//! loop's own bodies.
//!
//! Cases: `reads` (five `read`s of small files), `mixed` (two `read`s,
//! `grep`, `glob`, `list`), and `bash` (one `true` and four `read`s;
//! process spawn dominates, so it is reported apart and not the target).
//!
//! The criterion figures are per case; the overhead is also derived outside
//! criterion from interleaved loop/bare runs (median and mean of each) and
//! printed to stderr.

use std::hint::black_box;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode};
use lancet::Format;
use lancet::Workspace;
use lancet::agent::permissions::{Mode, NoTerminal, Permissions};
use lancet::agent::provider::{Provider, ProviderConfig, RetryPolicy, Wire};
use lancet::agent::run::{Ending, Event, RunConfig, run, system_prompt};
use lancet::agent::tools::{Tools, ToolsConfig};
use lancet::agent::types::{Message, Request};
use serde_json::json;

// The scripted server of the integration tests; not every helper is used
// here, and it fails loudly (unwrap) by design.
#[allow(clippy::unwrap_used, clippy::expect_used)]
#[path = "../tests/integration/llm_server.rs"]
mod llm_server;

use llm_server::{LlmServer, Scripted};

/// The small project the tools work on.
const FILES: &[(&str, &str)] = &[
    (
        "calc.py",
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    ),
    (
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n",
    ),
    (
        "src/main.rs",
        "fn main() {\n    println!(\"{}\", demo::add(1, 2));\n}\n",
    ),
    (
        "README.md",
        "# demo\n\nAdds and subtracts.\n\n## Use\n\n    cargo run\n",
    ),
    (
        "notes.txt",
        "alpha\nbeta\ngamma\ndelta\nepsilon\nzeta\neta\ntheta\n",
    ),
    (
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    ),
];

const ANSWER: &str = "Both add and sub are correct; nothing to change.";

/// One case: its name and its five calls `(id, tool, arguments)`.
struct Case {
    name: &'static str,
    calls: Vec<(String, String, String)>,
}

fn read(id: &str, path: &str) -> (String, String, String) {
    (
        id.to_owned(),
        "read".to_owned(),
        json!({ "path": path }).to_string(),
    )
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "reads",
            calls: vec![
                read("c1", "calc.py"),
                read("c2", "src/lib.rs"),
                read("c3", "src/main.rs"),
                read("c4", "README.md"),
                read("c5", "notes.txt"),
            ],
        },
        Case {
            name: "mixed",
            calls: vec![
                read("c1", "calc.py"),
                read("c2", "src/lib.rs"),
                (
                    "c3".to_owned(),
                    "grep".to_owned(),
                    json!({ "pattern": "fn add" }).to_string(),
                ),
                (
                    "c4".to_owned(),
                    "glob".to_owned(),
                    json!({ "pattern": "**/*.rs" }).to_string(),
                ),
                (
                    "c5".to_owned(),
                    "list".to_owned(),
                    json!({ "path": "." }).to_string(),
                ),
            ],
        },
        Case {
            name: "bash",
            calls: vec![
                (
                    "c1".to_owned(),
                    "bash".to_owned(),
                    json!({ "command": "true" }).to_string(),
                ),
                read("c2", "calc.py"),
                read("c3", "src/lib.rs"),
                read("c4", "src/main.rs"),
                read("c5", "README.md"),
            ],
        },
    ]
}

impl Case {
    /// The two scripted replies: the five calls, then the answer.
    fn script(&self) -> Vec<Scripted> {
        let calls: Vec<(&str, &str, &str)> = self
            .calls
            .iter()
            .map(|(i, n, a)| (i.as_str(), n.as_str(), a.as_str()))
            .collect();
        vec![
            Scripted::openai_turn("Looking at the files.", &calls),
            Scripted::openai_text(ANSWER),
        ]
    }
}

/// A blocking HTTP server answering request n with `replies[n % len]`, a
/// `text/event-stream` of the given events, one write each, then a close.
/// Requests are served one at a time on the accept thread: the bench sends
/// them one at a time.
struct Replay {
    addr: SocketAddr,
    served: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Replay {
    fn start(script: Vec<Scripted>) -> Replay {
        let replies: Vec<Vec<String>> = script
            .into_iter()
            .map(|s| match s {
                Scripted::Stream { events } => events,
                other => panic!("Replay serves streams only, not {other:?}"),
            })
            .collect();
        let listener = match TcpListener::bind("127.0.0.1:0") {
            Ok(l) => l,
            Err(e) => panic!("bind: {e}"),
        };
        let addr = match listener.local_addr() {
            Ok(a) => a,
            Err(e) => panic!("local address: {e}"),
        };
        let served = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (served, stop) = (Arc::clone(&served), Arc::clone(&stop));
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let n = served.fetch_add(1, Ordering::SeqCst);
                    // A failed exchange fails the client, which panics.
                    let _ = Replay::serve(stream, &replies[n % replies.len()]);
                }
            })
        };
        Replay {
            addr,
            served,
            stop,
            thread: Some(thread),
        }
    }

    fn serve(stream: TcpStream, events: &[String]) -> std::io::Result<()> {
        stream.set_nodelay(true)?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                break;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let mut out = stream;
        out.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
        )?;
        out.flush()?;
        for event in events {
            out.write_all(event.as_bytes())?;
            out.flush()?;
        }
        out.shutdown(Shutdown::Both)
    }

    fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn provider(base_url: String) -> Provider {
    let mut config = ProviderConfig::new(Wire::OpenAi, base_url, "gpt-4o");
    config.connect_timeout = Duration::from_secs(2);
    config.idle_timeout = Duration::from_secs(5);
    // A failure should fail the bench, not be retried into the figures.
    config.retry = RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    };
    match Provider::new(config) {
        Ok(p) => p,
        Err(e) => panic!("provider: {e}"),
    }
}

fn tools(root: &Path) -> Tools {
    let ws = match Workspace::open(root) {
        Ok(ws) => ws,
        Err(e) => panic!("workspace: {e:?}"),
    };
    Tools::new(
        ws,
        ToolsConfig::default(),
        Permissions::new(Mode::Auto),
        Box::new(NoTerminal),
    )
}

fn run_config() -> RunConfig {
    RunConfig {
        model: "gpt-4o".to_owned(),
        system: system_prompt(Format::SearchReplace.instructions(), false, None),
        max_turns: 10,
        max_tokens: 8192,
        // A known window, as for gpt-4o: the loop estimates the
        // conversation's size every turn (it never compacts here).
        context_window: Some(128_000),
        loop_repeats: lancet::agent::guard::DEFAULT_LOOP_REPEATS,
    }
}

fn task() -> Vec<Message> {
    vec![Message::user(
        "Check that add and sub in this project are right.",
    )]
}

/// The whole loop: two model turns, five tool calls.
fn run_loop(
    rt: &tokio::runtime::Runtime,
    provider: &Provider,
    config: &RunConfig,
    tools: &mut Tools,
) -> Ending {
    let outcome = rt.block_on(run(provider, tools, None, task(), config, &mut |e| {
        black_box(e);
    }));
    match outcome {
        Ok(o) => o.ending,
        Err(e) => panic!("run: {e}"),
    }
}

/// The model's share: the same requests through the provider alone.
fn run_bare(rt: &tokio::runtime::Runtime, provider: &Provider, requests: &[Request]) {
    rt.block_on(async {
        for req in requests {
            if let Err(e) = provider.complete(req, &mut |e| drop(black_box(e))).await {
                panic!("complete: {e}");
            }
        }
    });
}

/// The tools' share: the five calls in process.
fn run_tools(rt: &tokio::runtime::Runtime, case: &Case, tools: &mut Tools) {
    rt.block_on(async {
        for (_, name, args) in &case.calls {
            black_box(tools.call(name, args).await);
        }
    });
}

/// Runs the case once against the scripted server, outside the timing,
/// checks that it does what it says (answered in two turns, five calls that
/// all succeeded), and returns the two requests the loop sent, rebuilt from
/// its conversation and checked against what the server received.
fn check(
    rt: &tokio::runtime::Runtime,
    case: &Case,
    root: &Path,
    config: &RunConfig,
) -> Vec<Request> {
    let server = LlmServer::start(case.script());
    let provider = provider(server.openai_base_url());
    let mut tools = tools(root);
    let mut events = Vec::new();
    let outcome = rt.block_on(run(&provider, &mut tools, None, task(), config, &mut |e| {
        events.push(e);
    }));
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => panic!("{}: run: {e}", case.name),
    };
    assert_eq!(outcome.ending, Ending::Answered, "{}", case.name);
    assert_eq!(outcome.turns, 2, "{}", case.name);
    let results: Vec<&Event> = events
        .iter()
        .filter(|e| matches!(e, Event::ToolResult { .. }))
        .collect();
    assert_eq!(results.len(), 5, "{}: {events:?}", case.name);
    for r in &results {
        if let Event::ToolResult {
            name,
            content,
            is_error,
            ..
        } = r
        {
            assert!(!is_error, "{}: {name} failed: {content}", case.name);
        }
    }
    assert_eq!(server.remaining(), 0, "{}", case.name);
    // The conversation: task, the calls, their results, the answer. The
    // second request carried all but the answer.
    let n = outcome.messages.len();
    assert_eq!(n, 4, "{}: {:?}", case.name, outcome.messages);
    let request = |messages: &[Message]| Request {
        model: config.model.clone(),
        system: config.system.clone(),
        messages: messages.to_vec(),
        tools: tools.specs(),
        max_tokens: config.max_tokens,
    };
    let requests = vec![
        request(&outcome.messages[..1]),
        request(&outcome.messages[..n - 1]),
    ];
    // The replay sends the same bodies the loop sent.
    let sent = server.requests();
    assert_eq!(sent.len(), 2, "{}", case.name);
    for (i, req) in requests.iter().enumerate() {
        assert_eq!(
            provider.body(req),
            sent[i].body,
            "{}: request {i} differs from the loop's",
            case.name
        );
    }
    requests
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The overhead outside criterion: `rounds` interleaved loop, bare and tools
/// runs (so a change in load hits all three), in milliseconds.
fn derive(
    rt: &tokio::runtime::Runtime,
    case: &Case,
    root: &Path,
    config: &RunConfig,
    requests: &[Request],
    rounds: usize,
) {
    let replay = Replay::start(case.script());
    let provider = provider(replay.openai_base_url());
    let (mut looped, mut bare, mut tooled) = (Vec::new(), Vec::new(), Vec::new());
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for _ in 0..rounds {
        let mut t_loop = tools(root);
        let t = Instant::now();
        run_loop(rt, &provider, config, &mut t_loop);
        looped.push(ms(t.elapsed()));
        let t = Instant::now();
        run_bare(rt, &provider, requests);
        bare.push(ms(t.elapsed()));
        let mut t_tools = tools(root);
        let t = Instant::now();
        run_tools(rt, case, &mut t_tools);
        tooled.push(ms(t.elapsed()));
    }
    assert_eq!(replay.served(), 4 * rounds, "{}", case.name);
    let (ml, mb, mt) = (mean(&looped), mean(&bare), mean(&tooled));
    let (dl, db, dt) = (median(&mut looped), median(&mut bare), median(&mut tooled));
    eprintln!(
        "agent bench {}: {rounds} rounds; loop (2 model turns + 5 calls) median {dl:.3} ms (mean {ml:.3}); \
         bare calls median {db:.3} ms (mean {mb:.3}); \
         overhead per turn (loop - bare): median {:.3} ms (mean {:.3}); \
         five tool calls alone: median {dt:.3} ms (mean {mt:.3})",
        case.name,
        dl - db,
        ml - mb,
    );
}

fn bench(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else {
        panic!("no temporary directory");
    };
    let root = dir.path();
    for (path, text) in FILES {
        let p = root.join(path);
        if let Some(parent) = p.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            panic!("creating {}: {e}", parent.display());
        }
        if let Err(e) = std::fs::write(&p, text) {
            panic!("writing {path}: {e}");
        }
    }
    // As `lancet run` builds it.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("runtime: {e}"),
    };
    let config = run_config();
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // then one round is enough to show it works.
    let benching = std::env::args().any(|a| a == "--bench");
    let cases = cases();
    let mut requests = Vec::new();
    for case in &cases {
        let reqs = check(&rt, case, root, &config);
        derive(
            &rt,
            case,
            root,
            &config,
            &reqs,
            if benching { 300 } else { 1 },
        );
        requests.push(reqs);
    }

    let mut g = c.benchmark_group("agent_turn");
    g.sampling_mode(SamplingMode::Flat).sample_size(30);
    for (case, reqs) in cases.iter().zip(&requests) {
        // Two requests per loop and per bare run keep the replay in step.
        let replay = Replay::start(case.script());
        let provider = provider(replay.openai_base_url());
        g.bench_function(format!("{}/loop", case.name), |b| {
            b.iter_batched(
                || tools(root),
                |mut t| {
                    black_box(run_loop(&rt, &provider, &config, &mut t));
                    t
                },
                BatchSize::SmallInput,
            )
        });
        g.bench_function(format!("{}/bare", case.name), |b| {
            b.iter(|| run_bare(&rt, &provider, reqs))
        });
        g.bench_function(format!("{}/tools", case.name), |b| {
            b.iter_batched(
                || tools(root),
                |mut t| {
                    run_tools(&rt, case, &mut t);
                    t
                },
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench(&mut c);
    c.final_summary();
}
