//! Security: providers and streams: credentials stay with their origin, bounded replies and turns, honest connection messages (items 15, 17).
//!
//! Each test puts a hostile or broken server ([`LlmServer`]) in front of a
//! [`Provider`] configured with small limits, so that it ends in a few
//! seconds at most; the bounds on time are generous (a loaded machine is
//! slow, never fast). The last test runs `lancet run` itself against the
//! same servers, with the limits set in `.lancet.toml`, and snapshots what
//! a person is told.

use std::time::{Duration, Instant};

use lancet::agent::provider::{EVIDENCE_BYTES, Provider, ProviderConfig, RetryPolicy, Wire};
use lancet::agent::types::{
    BaseUrlProblem, Limit, Message, ProviderError, Reply, Request, StreamEvent,
};

use crate::agent_run::run;
use crate::llm_server::{LlmServer, Scripted};

const KEY: &str = "sk-secret-key-of-the-origin";

/// Small limits: a silent second is a dead server, two seconds is a long
/// turn, 64 KiB a big reply; retries are quick.
fn config(wire: Wire, base_url: String) -> ProviderConfig {
    let mut config = ProviderConfig::new(wire, base_url, "test-model");
    config.api_key = Some(KEY.to_owned());
    config.connect_timeout = Duration::from_secs(1);
    config.idle_timeout = Duration::from_secs(1);
    config.turn_timeout = Duration::from_secs(2);
    config.max_reply_bytes = 64 << 10;
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(2),
        wait_budget: Duration::from_secs(10),
    };
    config
}

fn base(wire: Wire, server: &LlmServer) -> String {
    match wire {
        Wire::OpenAi => server.openai_base_url(),
        _ => server.base_url(),
    }
}

/// One call: the text that streamed, the result, and how long it took.
async fn call(config: ProviderConfig) -> (String, Result<Reply, ProviderError>, Duration) {
    let provider = Provider::new(config).unwrap();
    let request = Request {
        model: String::new(),
        system: String::new(),
        messages: vec![Message::user("hi")],
        tools: Vec::new(),
        max_tokens: 64,
    };
    let mut text = String::new();
    let mut on_event = |e: StreamEvent| {
        if let StreamEvent::Text(t) = e {
            text.push_str(&t);
        }
    };
    let start = Instant::now();
    let result = provider.complete(&request, &mut on_event).await;
    (text, result, start.elapsed())
}

const BOTH: [Wire; 2] = [Wire::OpenAi, Wire::Anthropic];

/// Item 15: a cross-origin 307 re-posted the request, Anthropic's
/// `x-api-key` included, to wherever the server pointed. Redirects are not
/// followed; the error says where it pointed.
#[tokio::test]
async fn a_cross_origin_redirect_is_reported_and_the_key_stays_home() {
    let elsewhere = LlmServer::start(vec![Scripted::anthropic_text("thanks for the key")]);
    let target = format!("{}/v1/messages", elsewhere.base_url());
    let origin = LlmServer::start(vec![Scripted::redirect(307, &target)]);
    let (_, result, _) = call(config(Wire::Anthropic, origin.base_url())).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Redirected {
            status: 307,
            location: Some(target),
            location_base: Some(elsewhere.base_url()),
        }
    );
    let asked = origin.requests();
    assert_eq!(asked.len(), 1, "a redirect is not retried");
    assert_eq!(asked[0].header("x-api-key"), Some(KEY));
    let leaked: Vec<_> = elsewhere
        .requests()
        .into_iter()
        .filter(|r| r.header("x-api-key").is_some() || r.raw_body.contains(KEY))
        .collect();
    assert!(leaked.is_empty(), "the key went elsewhere: {leaked:?}");
    assert!(elsewhere.requests().is_empty());
}

/// Item 15: no redirect status is followed, same origin or not, on either
/// wire; a relative `Location` is reported as the absolute URL it means.
#[tokio::test]
async fn no_redirect_is_followed_and_each_says_where_it_points() {
    for wire in BOTH {
        for status in [301, 302, 303, 307, 308] {
            let server = LlmServer::start(vec![
                Scripted::redirect(status, "/moved/here"),
                Scripted::openai_text("must not be asked for"),
            ]);
            let (_, result, _) = call(config(wire, base(wire, &server))).await;
            assert_eq!(
                result.unwrap_err(),
                ProviderError::Redirected {
                    status,
                    location: Some(format!("{}/moved/here", server.base_url())),
                    location_base: None,
                },
                "{wire:?} {status}"
            );
            assert_eq!(server.requests().len(), 1, "{wire:?} {status}");
        }
    }
}

/// Item 15 (the provider's messages): a base URL that is not an http(s) URL
/// with a host is refused when the provider is built, before any request.
#[test]
fn an_unusable_base_url_is_refused_before_any_request() {
    let cases = [
        ("file:///etc/passwd", BaseUrlProblem::Scheme("file".into())),
        ("ftp://127.0.0.1/v1", BaseUrlProblem::Scheme("ftp".into())),
        // A forgotten scheme parses as a scheme of its own.
        (
            "localhost:11434/v1",
            BaseUrlProblem::Scheme("localhost".into()),
        ),
        (
            "http://127.0.0.1:1/v1?key=x",
            BaseUrlProblem::QueryOrFragment,
        ),
        ("http://127.0.0.1:1/v1#top", BaseUrlProblem::QueryOrFragment),
    ];
    for (url, problem) in cases {
        let error = Provider::new(ProviderConfig::new(Wire::OpenAi, url, "m")).unwrap_err();
        assert_eq!(
            error,
            ProviderError::InvalidBaseUrl {
                url: url.to_owned(),
                problem
            },
            "{url}"
        );
    }
    for url in ["not a url", "http://", ""] {
        let error = Provider::new(ProviderConfig::new(Wire::OpenAi, url, "m")).unwrap_err();
        assert!(
            matches!(
                &error,
                ProviderError::InvalidBaseUrl {
                    problem: BaseUrlProblem::Unparsable(_),
                    ..
                }
            ),
            "{url}: {error:?}"
        );
    }
    for url in [
        "http://127.0.0.1:11434/v1",
        "https://api.anthropic.com",
        "http://[::1]:8080/v1/",
    ] {
        assert!(
            Provider::new(ProviderConfig::new(Wire::OpenAi, url, "m")).is_ok(),
            "{url}"
        );
    }
}

/// Item 17: SSE keep-alive comments forever kept a reply open for good
/// (killed at 31 min). They reset the idle timer but not the turn's
/// deadline.
#[tokio::test]
async fn keep_alive_comments_forever_end_at_the_turn_limit() {
    let server = LlmServer::start(vec![Scripted::keep_alive_forever(Duration::from_millis(
        50,
    ))]);
    let (_, result, took) = call(config(Wire::OpenAi, server.openai_base_url())).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::LimitReached(Limit::Turn(Duration::from_secs(2)))
    );
    assert!(took >= Duration::from_secs(2), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert_eq!(server.requests().len(), 1);
}

/// Item 17: one token per interval never ended either; the turn limit
/// ends it, and what streamed was handed out.
#[tokio::test]
async fn one_token_at_a_time_ends_at_the_turn_limit() {
    for wire in BOTH {
        let every = Duration::from_millis(100);
        let trickle = match wire {
            Wire::OpenAi => Scripted::openai_forever("tok ", every),
            _ => Scripted::anthropic_forever("tok ", every),
        };
        let server = LlmServer::start(vec![trickle]);
        let (text, result, took) = call(config(wire, base(wire, &server))).await;
        assert_eq!(
            result.unwrap_err(),
            ProviderError::LimitReached(Limit::Turn(Duration::from_secs(2))),
            "{wire:?}"
        );
        assert!(text.starts_with("tok tok "), "{wire:?}: {text:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");
    }
}

/// Item 17: an endless text stream reached 3.3 GB in 60 s. The reply size
/// cap ends it, and it is not retried (the same server would do it again).
#[tokio::test]
async fn an_endless_text_stream_ends_at_the_reply_cap() {
    let piece = "x".repeat(1000);
    for wire in BOTH {
        let flood = match wire {
            Wire::OpenAi => Scripted::openai_forever(&piece, Duration::ZERO),
            _ => Scripted::anthropic_forever(&piece, Duration::ZERO),
        };
        let server = LlmServer::start(vec![flood, Scripted::openai_text("never asked for")]);
        let (text, result, took) = call(config(wire, base(wire, &server))).await;
        assert_eq!(
            result.unwrap_err(),
            ProviderError::LimitReached(Limit::ReplyBytes(64 << 10)),
            "{wire:?}"
        );
        assert!(text.len() > 60 << 10, "{wire:?}: {}", text.len());
        assert!(text.len() <= (64 << 10) + piece.len(), "{}", text.len());
        assert_eq!(server.requests().len(), 1, "{wire:?}");
        assert!(took < Duration::from_secs(20), "{took:?}");
    }
}

/// Item 17: one event that never ends (no blank line, ever) grew the
/// parser's buffer without bound; the cap applies to one event too.
#[tokio::test]
async fn an_event_that_never_ends_stops_at_the_reply_cap() {
    for (head, event) in [("data: ", "y".repeat(4096)), ("", "data: z\n".to_owned())] {
        let server = LlmServer::start(vec![Scripted::Forever {
            head: head.to_owned(),
            event,
            every: Duration::ZERO,
        }]);
        // A turn limit far above the time the cap takes even on a loaded
        // machine: the cap, not the clock, must be what ends the reply.
        let mut config = config(Wire::OpenAi, server.openai_base_url());
        config.turn_timeout = Duration::from_secs(30);
        let (text, result, took) = call(config).await;
        assert_eq!(
            result.unwrap_err(),
            ProviderError::LimitReached(Limit::ReplyBytes(64 << 10))
        );
        assert_eq!(text, "");
        assert_eq!(server.requests().len(), 1);
        assert!(took < Duration::from_secs(20), "{took:?}");
    }
}

/// Item 17: a server that never answers ended only after 300 s idle × 5
/// tries. The idle timeout and the retries are the caller's to set, and
/// bound it.
#[tokio::test]
async fn a_silent_server_is_given_up_after_the_idle_timeout_and_the_retries() {
    let silent = || Scripted::Silent {
        hold: Duration::from_secs(60),
    };
    let server = LlmServer::start(vec![silent(), silent(), silent()]);
    let mut config = config(Wire::OpenAi, server.openai_base_url());
    config.idle_timeout = Duration::from_millis(300);
    config.turn_timeout = Duration::from_secs(60);
    let (_, result, took) = call(config).await;
    assert_eq!(result.unwrap_err(), ProviderError::Timeout);
    assert_eq!(server.requests().len(), 3);
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// Item 17: headers sent a byte at a time (slowloris) never finish; the
/// idle timeout covers the whole wait for the headers, not each byte.
#[tokio::test]
async fn headers_that_never_end_count_as_silence() {
    let slow = || Scripted::Slowloris {
        every: Duration::from_millis(20),
    };
    let server = LlmServer::start(vec![slow(), slow()]);
    let mut config = config(Wire::OpenAi, server.openai_base_url());
    // Long enough for a loaded machine's server thread to have read each
    // request before the client gives up on its headers.
    config.idle_timeout = Duration::from_secs(1);
    config.turn_timeout = Duration::from_secs(60);
    config.retry.max_retries = 1;
    let (_, result, took) = call(config).await;
    assert_eq!(result.unwrap_err(), ProviderError::Timeout);
    assert_eq!(server.requests().len(), 2);
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// Item 17: a stream that stalls on every attempt is retried only while
/// the turn lasts: the deadline covers the retries. (Attempts end at 1 s and
/// 2 s, the third is cut by the 2.5 s deadline: half a second of slack
/// either way.)
#[tokio::test]
async fn retried_stalls_end_at_the_turn_limit() {
    let stall = || Scripted::openai_text("slow").stalled_after(2, Duration::from_secs(60));
    let server = LlmServer::start((0..10).map(|_| stall()).collect());
    let mut config = config(Wire::OpenAi, server.openai_base_url());
    config.turn_timeout = Duration::from_millis(2500);
    config.retry.max_retries = 9;
    config.retry.max_delay = config.retry.base_delay;
    let (_, result, took) = call(config).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::LimitReached(Limit::Turn(Duration::from_millis(2500)))
    );
    assert_eq!(server.requests().len(), 3);
    assert!(took < Duration::from_secs(20), "{took:?}");
}

/// Item 17: the retry budget is a count and a total wait; a wait that
/// would pass the total gives up with the server's error.
#[tokio::test]
async fn the_wait_budget_bounds_the_waiting_between_retries() {
    let busy = || Scripted::status(503, "busy").with_header("retry-after-ms", "300");
    let server = LlmServer::start((0..6).map(|_| busy()).collect());
    let mut config = config(Wire::OpenAi, server.openai_base_url());
    config.retry.max_retries = 5;
    config.retry.wait_budget = Duration::from_millis(500);
    let (_, result, took) = call(config).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::Server {
            status: 503,
            body: "busy".into()
        }
    );
    // 300 ms waited, a second 300 ms would pass 500 ms.
    assert_eq!(server.requests().len(), 2);
    assert!(took < Duration::from_secs(10), "{took:?}");
}

/// Item 17: a wait that would end past the turn's deadline is not slept
/// through (only to be cut by the turn limit): the call gives up at once
/// with the server's error.
#[tokio::test]
async fn a_wait_past_the_deadline_gives_up_at_once() {
    let server = LlmServer::start(vec![
        Scripted::status(429, "slow down").with_header("retry-after", "3"),
        Scripted::openai_text("must not be asked for"),
    ]);
    let mut config = config(Wire::OpenAi, server.openai_base_url());
    config.retry.max_delay = Duration::from_secs(5);
    // A 3 s wait can never fit in the 2 s turn.
    let (_, result, _) = call(config).await;
    assert_eq!(
        result.unwrap_err(),
        ProviderError::RateLimited {
            body: "slow down".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
}

/// Item 17: an error answered with an endless body is read only as far as
/// it is evidence.
#[tokio::test]
async fn an_error_body_is_read_only_in_part() {
    let huge = "e".repeat(4 << 20);
    let server = LlmServer::start(vec![Scripted::status(400, huge)]);
    let (_, result, _) = call(config(Wire::OpenAi, server.openai_base_url())).await;
    match result.unwrap_err() {
        ProviderError::Refused { status: 400, body } => assert_eq!(body.len(), EVIDENCE_BYTES),
        other => panic!("{other:?}"),
    }
}

/// Item 17 (the provider's messages): a 200 that is not an event stream
/// (JSON from a server that does not stream, an HTML page from a web server)
/// said "is the server running?" after retrying it. It is its own error,
/// not retried, with what came.
#[tokio::test]
async fn a_success_without_an_event_stream_says_what_came() {
    let json = r#"{"choices":[{"message":{"content":"hi"}}]}"#;
    let html = "<html><body>Welcome to nginx!</body></html>";
    for wire in BOTH {
        for (content_type, body) in [("application/json", json), ("text/html", html)] {
            let server = LlmServer::start(vec![
                Scripted::status(200, body).with_header("content-type", content_type),
                Scripted::openai_text("must not be asked for"),
            ]);
            let (_, result, _) = call(config(wire, base(wire, &server))).await;
            assert_eq!(
                result.unwrap_err(),
                ProviderError::NotEventStream {
                    content_type: Some(content_type.to_owned()),
                    body: body.to_owned(),
                },
                "{wire:?}"
            );
            assert_eq!(server.requests().len(), 1);
        }
    }
}

/// Items 15 and 17 end to end: `lancet run` against each hostile server,
/// with its limits set in `.lancet.toml` (top level and per profile), says
/// which limit or which answer ended the run, and exits 3 (2 for a base URL
/// that cannot be one).
#[test]
fn lancet_run_says_which_limit_or_answer_ended_the_run() {
    let elsewhere = LlmServer::start(vec![Scripted::openai_text("thanks for the key")]);
    let moved = format!("{}/v1/chat/completions", elsewhere.base_url());
    let cases: Vec<(&str, Scripted, &str)> = vec![
        ("redirect", Scripted::redirect(307, &moved), ""),
        ("json", Scripted::status(200, r#"{"choices":[]}"#), ""),
        (
            "keep-alive",
            Scripted::keep_alive_forever(Duration::from_millis(50)),
            "turn_timeout = 1\n",
        ),
        (
            "flood",
            Scripted::openai_forever(&"x".repeat(1000), Duration::ZERO),
            // The repetition guard would stop this reply first: the cap is
            // what is pinned here.
            "max_reply_bytes = 65536\nloop_repeats = 0\n",
        ),
        (
            "silent",
            Scripted::Silent {
                hold: Duration::from_secs(30),
            },
            "provider = \"slow\"\n[providers.slow]\nidle_timeout = 1\nmax_retries = 0\n",
        ),
    ];
    let mut said = String::new();
    for (name, script, toml) in cases {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".lancet.toml"), toml).unwrap();
        let server = LlmServer::start(vec![script]);
        let out = run(
            dir.path(),
            &[
                "--base-url",
                &server.openai_base_url(),
                "-m",
                "gpt-4o",
                "--yes",
                // The limits come from the project's file, which only a
                // trusted project may set for a profile.
                "--trust",
                "hi",
            ],
        );
        // The sandbox's start-up line names a temporary root and depends on
        // the kernel; it is pinned by the sandbox tests, not here.
        let stderr = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| {
                !l.starts_with("lancet: sandbox")
                    && !l.starts_with("lancet: no sandbox")
                    && !l.starts_with("lancet: note:")
            })
            .collect::<Vec<_>>()
            .join("\n")
            .replace(&server.base_url(), "http://ORIGIN")
            .replace(&elsewhere.base_url(), "http://ELSEWHERE");
        said.push_str(&format!(
            "{name}: exit {:?}\n{}\n",
            out.status.code(),
            stderr.trim_end()
        ));
    }
    assert!(elsewhere.requests().is_empty());
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--base-url", "file:///etc/passwd", "-m", "gpt-4o", "hi"],
    );
    said.push_str(&format!(
        "file: exit {:?}\n{}\n",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).trim_end()
    ));
    insta::assert_snapshot!(said);
}
