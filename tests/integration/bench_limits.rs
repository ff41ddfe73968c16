//! `lancet bench`'s per-provider request limits against the loopback model
//! server: the limiter as a provider's gate (requests per minute spread
//! requests out, retries included, across every provider sharing it; the
//! requests in flight never exceed the limit), and the binary reading
//! `rpm` from a `[providers.NAME]` profile. Times are asserted as lower
//! bounds only, with room for a clock's granularity: a busy machine is
//! slower, never faster.

use std::num::NonZeroU32;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lancet::agent::bench::limits::Limits;
use lancet::agent::provider::{Gate, Provider, ProviderConfig, RetryPolicy, Wire};
use lancet::agent::types::{Message, Request};
use serde_json::json;

use crate::llm_server::{LlmServer, Scripted};

fn provider(server: &LlmServer, gate: Option<Arc<dyn Gate>>) -> Provider {
    let mut config = ProviderConfig::new(Wire::OpenAi, server.openai_base_url(), "m");
    config.idle_timeout = Duration::from_secs(5);
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(2),
        ..RetryPolicy::default()
    };
    config.gate = gate;
    Provider::new(config).unwrap()
}

fn ask() -> Request {
    Request {
        model: String::new(),
        system: String::new(),
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_tokens: 16,
    }
}

/// `n` calls at once, spread over `providers` in turn; each must succeed.
async fn call_at_once(providers: &[Arc<Provider>], n: usize) {
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let p = Arc::clone(&providers[i % providers.len()]);
        set.spawn(async move { p.complete(&ask(), &mut |_| {}).await });
    }
    while let Some(done) = set.join_next().await {
        done.unwrap().unwrap();
    }
}

fn limits(rpm: Option<u32>, max_concurrency: Option<u32>) -> Limits {
    Limits {
        rpm: rpm.and_then(NonZeroU32::new),
        max_concurrency: max_concurrency.and_then(NonZeroU32::new),
    }
}

/// The gaps between the requests' arrivals, in arrival order.
fn gaps(server: &LlmServer) -> Vec<Duration> {
    let mut at: Vec<_> = server.requests().iter().map(|r| r.at).collect();
    at.sort();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

/// Item "per-provider rate limits" (issue 11): with `rpm = 600` (one request
/// per 100 ms) shared by two providers, six requests sent at once arrive
/// spread over at least the 500 ms the limit implies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_minute_spread_requests_across_every_provider_sharing_the_limit() {
    let server = LlmServer::start((0..6).map(|_| Scripted::openai_text("ok")).collect());
    let gate = limits(Some(600), None).gate();
    let providers = [
        Arc::new(provider(&server, gate.clone())),
        Arc::new(provider(&server, gate)),
    ];
    call_at_once(&providers, 6).await;
    let gaps = gaps(&server);
    assert_eq!(gaps.len(), 5);
    let spread: Duration = gaps.iter().sum();
    assert!(spread >= Duration::from_millis(450), "{gaps:?}");
    // Each gap, less the loopback's jitter.
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_millis(60)),
        "{gaps:?}"
    );
}

/// A retry is a request like any other: it waits for the rate too, and the
/// server's `Retry-After` is still honoured (the longer of the two).
#[tokio::test]
async fn a_retry_waits_for_the_rate_and_for_retry_after() {
    let busy = json!({"error": {"message": "slow down"}}).to_string();
    let server = LlmServer::start(vec![
        Scripted::status(429, busy.clone()),
        Scripted::status(429, busy).with_header("retry-after", "0.4"),
        Scripted::openai_text("ok"),
    ]);
    let p = provider(&server, limits(Some(300), None).gate());
    p.complete(&ask(), &mut |_| {}).await.unwrap();
    let gaps = gaps(&server);
    // 60 s / 300 = 200 ms, though the backoff asked for 5 ms.
    assert!(gaps[0] >= Duration::from_millis(150), "{gaps:?}");
    // Retry-After's 400 ms outlasts the rate's 200 ms.
    assert!(gaps[1] >= Duration::from_millis(350), "{gaps:?}");
}

/// Item "per-provider rate limits" (issue 11): with `max_concurrency = 2`
/// shared by two providers, six slow requests sent at once are never more
/// than two in flight at the server; without the limit, more are (so the
/// server's count is seen to work).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_never_exceed_the_limit() {
    let script = || -> Vec<Scripted> {
        (0..6)
            .map(|_| Scripted::openai_text("ok").late(Duration::from_millis(150)))
            .collect()
    };
    let server = LlmServer::start(script());
    let gate = limits(None, Some(2)).gate();
    let providers = [
        Arc::new(provider(&server, gate.clone())),
        Arc::new(provider(&server, gate)),
    ];
    call_at_once(&providers, 6).await;
    assert_eq!(server.requests().len(), 6);
    assert!(server.max_in_flight() <= 2, "{}", server.max_in_flight());

    let free = LlmServer::start(script());
    let providers = [Arc::new(provider(&free, None))];
    call_at_once(&providers, 6).await;
    assert!(free.max_in_flight() > 2, "{}", free.max_in_flight());
}

/// The binary reads `rpm` from the model's `[providers.NAME]` profile: a
/// job of three model turns through `local:NAME` with `rpm = 300` (one
/// request per 200 ms) takes at least the 400 ms between its first and
/// last request.
#[test]
fn bench_reads_rpm_from_the_profile() {
    let edit = json!({"path": "calc.py", "old_string": "def add(a, b):\n    return a - b", "new_string": "def add(a, b):\n    return a + b"});
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "read", r#"{"path": "calc.py"}"#),
        Scripted::openai_tool_call("c2", "edit", &edit.to_string()),
        Scripted::openai_text("Fixed."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("xdg/lancet");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[providers.local]\nbase_url = \"{}\"\nrpm = 300\nmax_concurrency = 1\n",
            server.openai_base_url()
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let tasks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bench/tasks");
    let output = Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(["bench", "-t"])
        .arg(&tasks)
        .args([
            "--limit",
            "1",
            "-m",
            "local:scripted",
            "-f",
            "search-replace",
        ])
        .args(["-j", "1", "-o"])
        .arg(&out)
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let shown = format!(
        "{:?}\n{}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{shown}");
    let results = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    assert!(results.contains("\"pass\":true"), "{results}");
    let gaps = gaps(&server);
    assert_eq!(gaps.len(), 2, "{shown}");
    let spread: Duration = gaps.iter().sum();
    assert!(spread >= Duration::from_millis(350), "{gaps:?}");
    // Not a terminal: nothing of the progress bar on stderr.
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains(" jobs ["),
        "{shown}"
    );
}
