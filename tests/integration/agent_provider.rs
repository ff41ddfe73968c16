//! The providers against a real HTTP server ([`LlmServer`]): streaming and
//! tool-call assembly on both wires, the request bodies and headers they
//! send, and which failures are retried, how long they wait and what error
//! is left when they give up.

use std::time::{Duration, Instant};

use lancet::agent::provider::{Provider, ProviderConfig, RetryPolicy, STREAM_ENDED_EARLY, Wire};
use lancet::agent::types::{
    Block, Message, ProviderError, Reply, Request, Role, StopReason, StreamEvent, ToolSpec, Usage,
};
use serde_json::json;

use crate::llm_server::{
    AnthropicBlock, HELPER_USAGE, LlmServer, OpenAiDelta, Scripted, sse_data, sse_event,
};

/// Retries fast enough that a test with three of them stays in milliseconds.
fn quick_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_secs(2),
        ..RetryPolicy::default()
    }
}

fn provider(wire: Wire, server: &LlmServer, key: Option<&str>) -> Provider {
    let base = match wire {
        Wire::OpenAi => server.openai_base_url(),
        _ => server.base_url(),
    };
    let mut config = ProviderConfig::new(wire, base, "test-model");
    config.api_key = key.map(str::to_owned);
    config.connect_timeout = Duration::from_secs(1);
    config.idle_timeout = Duration::from_secs(2);
    config.retry = quick_retries();
    Provider::new(config).unwrap()
}

fn ask(text: &str) -> Request {
    Request {
        model: String::new(),
        system: "You are terse.".into(),
        messages: vec![Message::user(text)],
        tools: Vec::new(),
        max_tokens: 256,
    }
}

/// Runs one call, collecting what streamed.
async fn complete(
    provider: &Provider,
    req: &Request,
) -> (Vec<StreamEvent>, Result<Reply, ProviderError>) {
    let mut seen = Vec::new();
    let mut on_event = |e: StreamEvent| seen.push(e);
    let reply = provider.complete(req, &mut on_event).await;
    (seen, reply)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            StreamEvent::ToolCall { .. } => None,
        })
        .collect()
}

fn call(id: &str, name: &str, arguments: &str) -> Block {
    Block::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn helper_usage() -> Usage {
    Usage {
        input_tokens: HELPER_USAGE.0,
        output_tokens: HELPER_USAGE.1,
    }
}

// ---------------------------------------------------------------------------
// Streaming.

#[tokio::test]
async fn openai_streams_text_as_it_arrives() {
    let server = LlmServer::start(vec![Scripted::openai_text("Hello, world.")]);
    let p = provider(Wire::OpenAi, &server, Some("sk-test"));
    let (events, reply) = complete(&p, &ask("hi")).await;
    let reply = reply.unwrap();
    assert!(events.len() > 1, "text arrives in pieces: {events:?}");
    assert_eq!(text_of(&events), "Hello, world.");
    assert_eq!(reply.message.role, Role::Assistant);
    assert_eq!(
        reply.message.blocks,
        vec![Block::Text {
            text: "Hello, world.".into()
        }]
    );
    assert_eq!(reply.stop, StopReason::End);
    assert_eq!(reply.usage, helper_usage());
}

#[tokio::test]
async fn openai_assembles_interleaved_tool_calls_from_fragments() {
    let args = |index: u32, fragment: &str| OpenAiDelta::ToolArgs {
        index,
        fragment: fragment.into(),
    };
    let server = LlmServer::start(vec![Scripted::openai(vec![
        OpenAiDelta::Role,
        OpenAiDelta::Text("Looking.".into()),
        OpenAiDelta::ToolStart {
            index: 0,
            id: "call_a".into(),
            name: "read".into(),
        },
        args(0, "{\"pa"),
        OpenAiDelta::ToolStart {
            index: 1,
            id: "call_b".into(),
            name: "grep".into(),
        },
        args(1, "{\"pattern\""),
        args(0, "th\": \"src/"),
        args(1, ": \"fn main"),
        args(0, "lib.rs\"}"),
        args(1, "\"}"),
        OpenAiDelta::Finish("tool_calls".into()),
        OpenAiDelta::Usage {
            prompt: 321,
            completion: 45,
        },
    ])]);
    let p = provider(Wire::OpenAi, &server, None);
    let (events, reply) = complete(&p, &ask("look")).await;
    let reply = reply.unwrap();
    assert_eq!(
        reply.message.blocks,
        vec![
            Block::Text {
                text: "Looking.".into()
            },
            call("call_a", "read", "{\"path\": \"src/lib.rs\"}"),
            call("call_b", "grep", "{\"pattern\": \"fn main\"}"),
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 321,
            output_tokens: 45
        }
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::Text("Looking.".into()),
            StreamEvent::ToolCall {
                id: "call_a".into(),
                name: "read".into()
            },
            StreamEvent::ToolCall {
                id: "call_b".into(),
                name: "grep".into()
            },
        ]
    );
}

#[tokio::test]
async fn openai_helper_tool_call_round_trips() {
    let server = LlmServer::start(vec![Scripted::openai_tool_call(
        "call_1",
        "write",
        r#"{"path": "a.txt", "content": "x\ny\n"}"#,
    )]);
    let p = provider(Wire::OpenAi, &server, None);
    let reply = complete(&p, &ask("go")).await.1.unwrap();
    assert_eq!(
        reply.message.blocks,
        vec![call(
            "call_1",
            "write",
            r#"{"path": "a.txt", "content": "x\ny\n"}"#
        )]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
}

#[tokio::test]
async fn openai_usage_is_zero_when_the_server_sends_none() {
    let server = LlmServer::start(vec![Scripted::openai(vec![
        OpenAiDelta::Text("ok".into()),
        OpenAiDelta::Finish("stop".into()),
    ])]);
    let p = provider(Wire::OpenAi, &server, None);
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.usage, Usage::default());
    assert_eq!(reply.message.text(), "ok");
}

#[tokio::test]
async fn openai_length_is_max_tokens() {
    let server = LlmServer::start(vec![Scripted::openai(vec![
        OpenAiDelta::Text("cut".into()),
        OpenAiDelta::Finish("length".into()),
    ])]);
    let p = provider(Wire::OpenAi, &server, None);
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.stop, StopReason::MaxTokens);
}

#[tokio::test]
async fn anthropic_streams_text_tool_use_and_usage() {
    let server = LlmServer::start(vec![Scripted::anthropic(
        vec![
            AnthropicBlock::Text("I will read it.".into()),
            AnthropicBlock::ToolUse {
                id: "toolu_1".into(),
                name: "read".into(),
                input_json: r#"{"path": "src/main.rs", "offset": 1}"#.into(),
            },
        ],
        "tool_use",
        (1200, 87),
    )]);
    let p = provider(Wire::Anthropic, &server, Some("sk-ant"));
    let (events, reply) = complete(&p, &ask("read main")).await;
    let reply = reply.unwrap();
    assert_eq!(text_of(&events), "I will read it.");
    assert_eq!(
        events.last(),
        Some(&StreamEvent::ToolCall {
            id: "toolu_1".into(),
            name: "read".into()
        })
    );
    assert_eq!(
        reply.message.blocks,
        vec![
            Block::Text {
                text: "I will read it.".into()
            },
            call("toolu_1", "read", r#"{"path": "src/main.rs", "offset": 1}"#),
        ]
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 1200,
            output_tokens: 87
        }
    );
}

#[tokio::test]
async fn anthropic_text_ends_the_turn() {
    let server = LlmServer::start(vec![Scripted::anthropic_text("Done.")]);
    let p = provider(Wire::Anthropic, &server, None);
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.message.text(), "Done.");
    assert_eq!(reply.stop, StopReason::End);
    assert_eq!(reply.usage, helper_usage());
}

// ---------------------------------------------------------------------------
// What is sent.

/// A conversation with every kind of block: the task, a reply with text and
/// two calls, the results (one failed) with a follow-up note.
fn conversation() -> Request {
    Request {
        model: String::new(),
        system: "You are lancet.".into(),
        messages: vec![
            Message::user("Fix the bug."),
            Message {
                role: Role::Assistant,
                blocks: vec![
                    Block::Text {
                        text: "Reading.".into(),
                    },
                    call("c1", "read", r#"{"path":"a.py"}"#),
                    call("c2", "bash", r#"{"command":"false"}"#),
                ],
            },
            Message {
                role: Role::User,
                blocks: vec![
                    Block::Text {
                        text: "Also check b.py.".into(),
                    },
                    Block::ToolResult {
                        id: "c1".into(),
                        content: "1 x = 1".into(),
                        is_error: false,
                    },
                    Block::ToolResult {
                        id: "c2".into(),
                        content: "exit 1".into(),
                        is_error: true,
                    },
                ],
            },
        ],
        tools: vec![ToolSpec {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            }),
        }],
        max_tokens: 1000,
    }
}

#[tokio::test]
async fn openai_request_carries_system_calls_results_and_tools() {
    let server = LlmServer::start(vec![Scripted::openai_text("ok")]);
    let p = provider(Wire::OpenAi, &server, Some("sk-test"));
    complete(&p, &conversation()).await.1.unwrap();
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(r.header("x-api-key"), None);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are lancet."},
                {"role": "user", "content": "Fix the bug."},
                {"role": "assistant", "content": "Reading.", "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "read", "arguments": "{\"path\":\"a.py\"}"}},
                    {"id": "c2", "type": "function",
                     "function": {"name": "bash", "arguments": "{\"command\":\"false\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "1 x = 1"},
                {"role": "tool", "tool_call_id": "c2", "content": "exit 1"},
                {"role": "user", "content": "Also check b.py."},
            ],
            "tools": [{"type": "function", "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 1000,
        })
    );
}

#[tokio::test]
async fn openai_without_a_key_sends_no_authorization_and_no_empty_tools() {
    let server = LlmServer::start(vec![Scripted::openai_text("ok")]);
    let p = provider(Wire::OpenAi, &server, None);
    let mut req = ask("hi");
    req.model = "qwen2.5-coder:7b".into();
    req.system = String::new();
    complete(&p, &req).await.1.unwrap();
    let r = &server.requests()[0];
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.body["model"], "qwen2.5-coder:7b",
        "the request's model wins"
    );
    assert_eq!(
        r.body["messages"],
        json!([{"role": "user", "content": "hi"}]),
        "no empty system message"
    );
    assert!(r.body.get("tools").is_none());
}

#[tokio::test]
async fn anthropic_request_carries_system_blocks_tools_and_headers() {
    let server = LlmServer::start(vec![Scripted::anthropic_text("ok")]);
    let p = provider(Wire::Anthropic, &server, Some("sk-ant"));
    complete(&p, &conversation()).await.1.unwrap();
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some("sk-ant"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(
        r.body,
        json!({
            "model": "test-model",
            "system": "You are lancet.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.py"}},
                    {"type": "tool_use", "id": "c2", "name": "bash", "input": {"command": "false"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "1 x = 1", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "c2", "content": "exit 1", "is_error": true},
                    {"type": "text", "text": "Also check b.py."},
                ]},
            ],
            "tools": [{
                "name": "read",
                "description": "Read a file.",
                "input_schema": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            }],
            "max_tokens": 1000,
            "stream": true,
        })
    );
}

// ---------------------------------------------------------------------------
// Retries.

#[tokio::test]
async fn retry_after_seconds_is_honoured() {
    let server = LlmServer::start(vec![
        Scripted::status(429, r#"{"error":{"type":"rate_limit_error"}}"#)
            .with_header("Retry-After", "1"),
        Scripted::openai_text("after the wait"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let start = Instant::now();
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    let waited = start.elapsed();
    assert_eq!(reply.message.text(), "after the wait");
    assert_eq!(server.requests().len(), 2);
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
}

#[tokio::test]
async fn retry_after_ms_is_preferred() {
    let server = LlmServer::start(vec![
        Scripted::status(429, "{}")
            .with_header("retry-after", "30")
            .with_header("retry-after-ms", "20"),
        Scripted::openai_text("ok"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let start = Instant::now();
    complete(&p, &ask("hi")).await.1.unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_quota_window_longer_than_max_delay_gives_up_at_once() {
    let server = LlmServer::start(vec![
        Scripted::status(429, "quota").with_header("Retry-After", "3600"),
        Scripted::openai_text("never reached"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let error = complete(&p, &ask("hi")).await.1.unwrap_err();
    assert_eq!(
        error,
        ProviderError::RateLimited {
            body: "quota".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = LlmServer::start(vec![
        Scripted::status(500, "boom"),
        Scripted::status(503, "busy"),
        Scripted::openai_text("fine now"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.message.text(), "fine now");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn anthropic_overloaded_is_retried_as_status_and_as_stream_event() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let server = LlmServer::start(vec![
        Scripted::status(529, overloaded),
        Scripted::Stream {
            events: vec![
                sse_event("ping", &json!({"type": "ping"})),
                sse_event("error", &serde_json::from_str(overloaded).unwrap()),
            ],
        },
        Scripted::anthropic_text("here"),
    ]);
    let p = provider(Wire::Anthropic, &server, None);
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.message.text(), "here");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_dropped_stream_is_retried_whole() {
    let server = LlmServer::start(vec![
        Scripted::openai_text("first attempt, cut").dropped_after(3),
        Scripted::openai_text("second attempt"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let (events, reply) = complete(&p, &ask("hi")).await;
    let reply = reply.unwrap();
    assert_eq!(reply.message.text(), "second attempt");
    assert_eq!(server.requests().len(), 2);
    // What the dropped attempt streamed was already handed out.
    assert!(text_of(&events).ends_with("second attempt"));
}

#[tokio::test]
async fn a_dropped_anthropic_stream_is_retried() {
    let server = LlmServer::start(vec![
        Scripted::anthropic_text("cut").dropped_after(4),
        Scripted::anthropic_text("whole"),
    ]);
    let p = provider(Wire::Anthropic, &server, None);
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.message.text(), "whole");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_dropped_every_time_ends_as_connection() {
    let cut = || Scripted::openai_text("never whole").dropped_after(2);
    let server = LlmServer::start(vec![cut(), cut(), cut()]);
    let p = provider(Wire::OpenAi, &server, None);
    let error = complete(&p, &ask("hi")).await.1.unwrap_err();
    assert_eq!(error, ProviderError::Connection(STREAM_ENDED_EARLY.into()));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn a_silent_stream_times_out_and_is_retried_then_gives_timeout() {
    let stall = || Scripted::openai_text("slow").stalled_after(2, Duration::from_secs(3));
    let server = LlmServer::start(vec![
        stall(),
        Scripted::openai_text("prompt"),
        stall(),
        stall(),
    ]);
    let mut config = ProviderConfig::new(Wire::OpenAi, server.openai_base_url(), "m");
    config.idle_timeout = Duration::from_millis(150);
    config.retry = RetryPolicy {
        max_retries: 1,
        ..quick_retries()
    };
    let p = Provider::new(config).unwrap();
    let reply = complete(&p, &ask("hi")).await.1.unwrap();
    assert_eq!(reply.message.text(), "prompt");
    let error = complete(&p, &ask("again")).await.1.unwrap_err();
    assert_eq!(error, ProviderError::Timeout);
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn exhausted_retries_leave_server_or_rate_limited() {
    let server = LlmServer::start(vec![
        Scripted::status(500, "a"),
        Scripted::status(502, "b"),
        Scripted::status(503, "c"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let error = complete(&p, &ask("hi")).await.1.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Server {
            status: 503,
            body: "c".into()
        }
    );
    assert_eq!(server.requests().len(), 3);

    let server = LlmServer::start(vec![
        Scripted::status(429, "slow down"),
        Scripted::status(429, "slow down"),
        Scripted::status(429, "slow down"),
    ]);
    let p = provider(Wire::Anthropic, &server, None);
    let error = complete(&p, &ask("hi")).await.1.unwrap_err();
    assert_eq!(
        error,
        ProviderError::RateLimited {
            body: "slow down".into()
        }
    );
    assert_eq!(server.requests().len(), 3);
}

// ---------------------------------------------------------------------------
// Failures that are never retried: each case is a status and a body, the
// error it must become, and exactly one request.

/// The error each kind of refusal must become, body kept as it came.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Auth,
    ModelNotFound,
    ContextOverflow,
    Refused,
}

#[tokio::test]
async fn refusals_are_classified_and_never_retried() {
    let cases = [
        (
            Wire::OpenAi,
            401,
            r#"{"error":{"code":"invalid_api_key"}}"#,
            Expect::Auth,
        ),
        (
            Wire::Anthropic,
            403,
            r#"{"type":"error","error":{"type":"permission_error"}}"#,
            Expect::Auth,
        ),
        (
            Wire::OpenAi,
            404,
            r#"{"error":"model 'qwen9' not found"}"#,
            Expect::ModelNotFound,
        ),
        (
            Wire::Anthropic,
            404,
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}"#,
            Expect::ModelNotFound,
        ),
        (
            Wire::OpenAi,
            400,
            r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","code":"model_not_found"}}"#,
            Expect::ModelNotFound,
        ),
        (
            Wire::OpenAi,
            400,
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","code":"context_length_exceeded"}}"#,
            Expect::ContextOverflow,
        ),
        (
            Wire::Anthropic,
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}"#,
            Expect::ContextOverflow,
        ),
        (
            Wire::OpenAi,
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            Expect::ContextOverflow,
        ),
        (
            Wire::OpenAi,
            400,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","code":400}"#,
            Expect::ContextOverflow,
        ),
        (
            Wire::OpenAi,
            400,
            r#"{"error":"bad json"}"#,
            Expect::Refused,
        ),
    ];
    for (wire, status, body, expect) in cases {
        let server = LlmServer::start(vec![
            Scripted::status(status, body),
            Scripted::openai_text("must not be asked for"),
        ]);
        let p = provider(wire, &server, Some("key"));
        let error = complete(&p, &ask("hi")).await.1.unwrap_err();
        let body = body.to_owned();
        let expected = match expect {
            Expect::Auth => ProviderError::Auth { status, body },
            Expect::ModelNotFound => ProviderError::ModelNotFound { body },
            Expect::ContextOverflow => ProviderError::ContextOverflow { body },
            Expect::Refused => ProviderError::Refused { status, body },
        };
        assert_eq!(error, expected, "{wire:?} {status}");
        assert_eq!(server.requests().len(), 1, "{wire:?} {status} was retried");
    }
}

#[tokio::test]
async fn an_overflow_inside_the_stream_is_not_retried() {
    let server = LlmServer::start(vec![
        Scripted::Stream {
            events: vec![sse_data(
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#,
            )],
        },
        Scripted::openai_text("must not be asked for"),
    ]);
    let p = provider(Wire::OpenAi, &server, None);
    let error = complete(&p, &ask("hi")).await.1.unwrap_err();
    assert!(matches!(error, ProviderError::ContextOverflow { .. }));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn nothing_listening_is_a_connection_error_after_retries() {
    // A port that was just free: bind, note it, release it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut config = ProviderConfig::new(Wire::OpenAi, format!("http://127.0.0.1:{port}/v1"), "m");
    config.connect_timeout = Duration::from_millis(500);
    config.retry = quick_retries();
    let p = Provider::new(config).unwrap();
    let start = Instant::now();
    let error = complete(&p, &ask("hi")).await.1.unwrap_err();
    assert!(
        matches!(&error, ProviderError::Connection(_)),
        "got {error:?}"
    );
    // Two retries at 5 ms and 10 ms: it did wait, and not long.
    assert!(start.elapsed() >= Duration::from_millis(15));
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn the_server_stops_when_dropped_even_mid_stall() {
    let server = LlmServer::start(vec![
        Scripted::openai_text("x").stalled_after(1, Duration::from_secs(60)),
    ]);
    let mut config = ProviderConfig::new(Wire::OpenAi, server.openai_base_url(), "m");
    config.idle_timeout = Duration::from_millis(100);
    config.retry = RetryPolicy {
        max_retries: 0,
        ..quick_retries()
    };
    let p = Provider::new(config).unwrap();
    assert_eq!(
        complete(&p, &ask("hi")).await.1.unwrap_err(),
        ProviderError::Timeout
    );
    let start = Instant::now();
    drop(server);
    assert!(start.elapsed() < Duration::from_secs(3));
}
