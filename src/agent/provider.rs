//! Model providers, spoken directly over HTTP: OpenAI-compatible Chat
//! Completions and Anthropic Messages, always streamed, with bounded retries.
//!
//! This is a thin layer of our own rather than an LLM client crate, so that
//! the wire details the loop depends on (tool-call deltas, usage, error
//! classes) are ours to test. A [`Provider`] is built once from a
//! [`ProviderConfig`]; [`Provider::complete`] turns a provider-neutral
//! [`Request`] into the wire's JSON, streams the reply, hands each
//! [`StreamEvent`] to the caller as it arrives and returns the assembled
//! [`Reply`].
//!
//! How a call goes:
//!
//! ```text
//! Request ──body()──▶ JSON ──POST──▶ status? ──SSE bytes──▶ SseParser ──events──▶ Decoder ──▶ Reply
//!                                      │ not 2xx                                    │ error event
//!                                      └──────────── classify(status, body) ◀───────┘
//!                                                      │ retryable: wait, then the whole request again
//!                                                      └ fatal: ProviderError
//! ```
//!
//! Invariants:
//!
//! - A retry repeats the whole request; the [`Reply`] comes from one attempt
//!   only. Events already handed to the caller by a failed attempt are not
//!   taken back, so after a dropped stream the caller may see the start of a
//!   reply twice.
//! - Never retried: 400/401/403/404 and every other 4xx except 429, a
//!   context overflow (the loop compacts instead), a malformed stream.
//! - Retried, at most [`RetryPolicy::max_retries`] times: 429, 5xx (including
//!   Anthropic's 529), connection failures, a stream that ends before its end
//!   marker, a stream idle for longer than the idle timeout, and an error
//!   event inside the stream that maps to one of those.
//! - The wait is the server's `retry-after-ms` / `Retry-After` (seconds) when
//!   it sends one, else `base_delay · 2^n` capped at `max_delay`, without
//!   jitter (one user, one process: there is no herd to spread). A server
//!   asking for longer than `max_delay` is a quota window, not a blip: the
//!   call gives up at once instead of sleeping through it.
//!
//! Recognising error classes means reading the server's error body (a
//! context overflow is a 400 like any other); that is confined to
//! `classify`, and the body always travels on in the error as data.
//!
//! What this module does not do: choose endpoints, read keys from the
//! environment, count tokens before a reply, or decide what to do about an
//! overflow. Those belong to the caller.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Map, Value, json};

use crate::agent::types::{
    Block, Message, ProviderError, Reply, Request, Role, StopReason, StreamEvent, Usage,
};

/// Which wire protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wire {
    /// OpenAI-compatible Chat Completions (`{base_url}/chat/completions`):
    /// OpenAI, and local servers such as Ollama, llama.cpp, vLLM, LM Studio.
    OpenAi,
    /// Anthropic Messages (`{base_url}/v1/messages`).
    Anthropic,
}

/// How often, and how patiently, a failed call is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` requests).
    pub max_retries: u32,
    /// The wait before the first retry when the server names none; doubled each time.
    pub base_delay: Duration,
    /// The longest wait; a server asking for more makes the call give up.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `retry` (0 for the first) when the server
    /// named none: `base_delay · 2^retry`, capped at `max_delay`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// Everything a [`Provider`] needs, as a value.
#[derive(Clone)]
pub struct ProviderConfig {
    /// The wire protocol.
    pub wire: Wire,
    /// The endpoint's base: `http://127.0.0.1:1234/v1` for an OpenAI-compatible
    /// server, `https://api.anthropic.com` for Anthropic. A trailing `/` is ignored.
    pub base_url: String,
    /// The key, if the endpoint needs one (local servers usually do not).
    pub api_key: Option<String>,
    /// The model used when a [`Request`] leaves its `model` empty.
    pub model: String,
    /// How long to wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// How long the server may stay silent (before its headers, or between
    /// two chunks of the stream) before the attempt counts as dropped.
    pub idle_timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// A configuration with no key, a 10 s connect timeout, a 300 s idle
    /// timeout and the default [`RetryPolicy`].
    pub fn new(
        wire: Wire,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> ProviderConfig {
        ProviderConfig {
            wire,
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            retry: RetryPolicy::default(),
        }
    }
}

// Hand-written so that a key never ends up in a log or a panic message.
impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// One model endpoint: a wire protocol, a base URL, a key and a model, with
/// its HTTP client and retry policy.
pub struct Provider {
    wire: Wire,
    base_url: String,
    api_key: Option<String>,
    model: String,
    http: reqwest::Client,
    retry: RetryPolicy,
    idle_timeout: Duration,
}

// Hand-written so that a key never ends up in a log or a panic message.
impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("wire", &self.wire)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

/// The version header every Anthropic Messages request carries.
const ANTHROPIC_VERSION: &str = "2023-06-01";

impl Provider {
    /// A provider for `config`. Fails only if the HTTP client cannot be built
    /// (no TLS backend), reported as [`ProviderError::Connection`].
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| ProviderError::Connection(error_chain(&e)))?;
        Ok(Provider {
            wire: config.wire,
            base_url: config.base_url.trim_end_matches('/').to_owned(),
            api_key: config.api_key,
            model: config.model,
            http,
            retry: config.retry,
            idle_timeout: config.idle_timeout,
        })
    }

    /// The wire protocol.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The configured model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        match self.wire {
            Wire::OpenAi => format!("{}/chat/completions", self.base_url),
            Wire::Anthropic => format!("{}/v1/messages", self.base_url),
        }
    }

    /// The JSON body `req` is sent as (streaming on). The model is
    /// `req.model`, or the configured one when that is empty.
    pub fn body(&self, req: &Request) -> Value {
        let model = if req.model.is_empty() {
            self.model.as_str()
        } else {
            req.model.as_str()
        };
        match self.wire {
            Wire::OpenAi => openai_body(model, req),
            Wire::Anthropic => anthropic_body(model, req),
        }
    }

    /// Sends `req`, streams the reply into `on_event` as it arrives, and
    /// returns the assembled reply, retrying as the module docs describe.
    pub async fn complete(
        &self,
        req: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Reply, ProviderError> {
        let body = self.body(req);
        let mut retry = 0;
        loop {
            let (error, wait) = match self.attempt(&body, on_event).await {
                Ok(reply) => return Ok(reply),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Retry { error, wait }) => (error, wait),
            };
            if retry >= self.retry.max_retries {
                return Err(error);
            }
            let delay = match wait {
                Some(asked) if asked > self.retry.max_delay => return Err(error),
                Some(asked) => asked,
                None => self.retry.backoff(retry),
            };
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// One request, start to end of stream.
    async fn attempt(
        &self,
        body: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Reply, Failure> {
        let mut builder = self
            .http
            .post(self.endpoint())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        match self.wire {
            Wire::OpenAi => {
                if let Some(key) = &self.api_key {
                    builder = builder.bearer_auth(key);
                }
            }
            Wire::Anthropic => {
                if let Some(key) = &self.api_key {
                    builder = builder.header("x-api-key", key);
                }
                builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
            }
        }
        let response = match tokio::time::timeout(self.idle_timeout, builder.send()).await {
            Err(_) => return Err(Failure::retry(ProviderError::Timeout)),
            Ok(Err(e)) => return Err(transport_failure(&e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let wait = retry_after(response.headers());
            // The body is only evidence; a server that cannot finish sending
            // it still gets its status classified.
            let text = match tokio::time::timeout(self.idle_timeout, response.text()).await {
                Ok(Ok(text)) => text,
                _ => String::new(),
            };
            return Err(classify(status, text, wait));
        }

        let mut sse = SseParser::default();
        let mut decoder = Decoder::new(self.wire);
        let mut stream = response.bytes_stream();
        loop {
            let chunk = match tokio::time::timeout(self.idle_timeout, stream.next()).await {
                Err(_) => return Err(Failure::retry(ProviderError::Timeout)),
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(Failure::retry(ProviderError::Connection(error_chain(&e))));
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            for event in sse.push(&chunk) {
                if decoder.event(&event, on_event)? {
                    return Ok(decoder.finish(on_event));
                }
            }
        }
        // An event cut off by the close is discarded (`SseParser::finish`):
        // it is most likely truncated JSON.
        sse.finish();
        if decoder.complete_without_marker() {
            Ok(decoder.finish(on_event))
        } else {
            Err(Failure::retry(ProviderError::Connection(
                STREAM_ENDED_EARLY.to_owned(),
            )))
        }
    }
}

/// The [`ProviderError::Connection`] payload for a stream that closed before
/// its end marker.
pub const STREAM_ENDED_EARLY: &str = "stream ended before its end marker";

/// How one attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Failure {
    /// Worth another attempt; `wait` is what the server asked for, if anything.
    Retry {
        error: ProviderError,
        wait: Option<Duration>,
    },
    /// Another attempt would fail the same way.
    Fatal(ProviderError),
}

impl Failure {
    fn retry(error: ProviderError) -> Failure {
        Failure::Retry { error, wait: None }
    }
}

/// A reqwest error and its sources, joined: reqwest's own message names the
/// URL, the cause ("Connection refused") is further down the chain.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// Sending failed before any status: an unusable URL is fatal, everything
/// else (refused, reset, connect timeout, DNS) may pass.
fn transport_failure(e: &reqwest::Error) -> Failure {
    let error = ProviderError::Connection(error_chain(e));
    if e.is_builder() {
        Failure::Fatal(error)
    } else {
        Failure::retry(error)
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds, sent by
/// OpenAI) first, else `Retry-After` in seconds. The HTTP-date form of
/// `Retry-After` is not read; the backoff applies instead.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// What an error status and its body mean. Bodies are read only here: the
/// classes the loop acts on (overflow → compact, missing model → tell the
/// user) are not distinguishable by status alone.
fn classify(status: u16, body: String, wait: Option<Duration>) -> Failure {
    let lower = body.to_lowercase();
    match status {
        401 | 403 => Failure::Fatal(ProviderError::Auth { status, body }),
        _ if mentions_context_overflow(&lower) => {
            Failure::Fatal(ProviderError::ContextOverflow { body })
        }
        404 => Failure::Fatal(ProviderError::ModelNotFound { body }),
        400..=499 if status != 429 && mentions_missing_model(&lower) => {
            Failure::Fatal(ProviderError::ModelNotFound { body })
        }
        429 => Failure::Retry {
            error: ProviderError::RateLimited { body },
            wait,
        },
        500..=599 => Failure::Retry {
            error: ProviderError::Server { status, body },
            wait,
        },
        _ => Failure::Fatal(ProviderError::Refused { status, body }),
    }
}

/// Phrases servers use for a prompt that no longer fits, lowercased:
/// OpenAI `context_length_exceeded`, vLLM "maximum context length",
/// llama.cpp "exceeds the available context size" / `exceed_context_size_error`,
/// LM Studio and Ollama "context length", Anthropic "prompt is too long" and
/// "exceed context limit". A bare "context" is not enough: Go servers
/// (Ollama) report "context canceled" for unrelated failures.
const CONTEXT_OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "context length",
    "context_length",
    "context window",
    "context_window",
    "context size",
    "exceed_context_size",
    "context limit",
    "prompt is too long",
];

fn mentions_context_overflow(lower: &str) -> bool {
    CONTEXT_OVERFLOW_PHRASES.iter().any(|p| lower.contains(p))
}

/// A 4xx body saying the model does not exist: OpenAI `model_not_found` /
/// "The model `x` does not exist", Ollama "model 'x' not found", LM Studio
/// and proxies "unknown model".
fn mentions_missing_model(lower: &str) -> bool {
    lower.contains("model_not_found")
        || lower.contains("unknown model")
        || (lower.contains("model")
            && (lower.contains("not found") || lower.contains("does not exist")))
}

/// The error an error payload inside a stream stands for. Anthropic names a
/// type (mapped to the status the same error gets outside a stream); OpenAI-
/// compatible servers put a numeric `code` or nothing, and nothing counts as
/// a server error.
fn stream_error(data: &str, error: &Value) -> Failure {
    let status = match error.get("type").and_then(Value::as_str) {
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("rate_limit_error") => 429,
        Some("overloaded_error") => 529,
        _ => error
            .get("code")
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| (400..=599).contains(c))
            .unwrap_or(500),
    };
    classify(status, data.to_owned(), None)
}

// ---------------------------------------------------------------------------
// Request bodies.

/// A message's blocks with tool results first: both wires require the
/// results to follow the assistant's calls directly, before any new text.
fn results_first(message: &Message) -> impl Iterator<Item = &Block> {
    let results = message
        .blocks
        .iter()
        .filter(|b| matches!(b, Block::ToolResult { .. }));
    let rest = message
        .blocks
        .iter()
        .filter(|b| !matches!(b, Block::ToolResult { .. }));
    results.chain(rest)
}

fn openai_body(model: &str, req: &Request) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for message in &req.messages {
        let text = message.text();
        match message.role {
            Role::User => {
                let mut results = 0;
                for block in results_first(message) {
                    if let Block::ToolResult { id, content, .. } = block {
                        results += 1;
                        messages.push(json!({
                            "role": "tool",
                            "tool_call_id": id,
                            "content": content,
                        }));
                    }
                }
                if !text.is_empty() || results == 0 {
                    messages.push(json!({"role": "user", "content": text}));
                }
            }
            Role::Assistant => {
                let calls: Vec<Value> = message
                    .tool_calls()
                    .map(|(id, name, arguments)| {
                        // Malformed arguments (answered with an error result)
                        // go back as `{}`: strict servers refuse invalid JSON
                        // in the history.
                        let arguments = if arguments_object(arguments).is_some() {
                            arguments.to_owned()
                        } else {
                            "{}".to_owned()
                        };
                        json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        })
                    })
                    .collect();
                let mut m = Map::new();
                m.insert("role".into(), "assistant".into());
                m.insert(
                    "content".into(),
                    if text.is_empty() && !calls.is_empty() {
                        Value::Null
                    } else {
                        text.into()
                    },
                );
                if !calls.is_empty() {
                    m.insert("tool_calls".into(), calls.into());
                }
                messages.push(m.into());
            }
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    body.insert("messages".into(), messages.into());
    // An empty `tools` array is refused by some servers; leave it out.
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                })
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    body.insert("stream".into(), true.into());
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.insert("max_tokens".into(), req.max_tokens.into());
    body.into()
}

fn anthropic_body(model: &str, req: &Request) -> Value {
    let mut messages = Vec::new();
    for message in &req.messages {
        let content: Vec<Value> = results_first(message)
            .filter_map(|block| match block {
                // Anthropic refuses empty text blocks.
                Block::Text { text } if text.is_empty() => None,
                Block::Text { text } => Some(json!({"type": "text", "text": text})),
                Block::ToolCall {
                    id,
                    name,
                    arguments,
                } => Some(json!({
                    "type": "tool_use",
                    "id": id,
                    "name": name,
                    "input": tool_input(arguments),
                })),
                Block::ToolResult {
                    id,
                    content,
                    is_error,
                } => Some(json!({
                    "type": "tool_result",
                    "tool_use_id": id,
                    "content": content,
                    "is_error": is_error,
                })),
            })
            .collect();
        if content.is_empty() {
            continue;
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        messages.push(json!({"role": role, "content": content}));
    }
    let mut body = Map::new();
    body.insert("model".into(), model.into());
    if !req.system.is_empty() {
        body.insert("system".into(), req.system.clone().into());
    }
    body.insert("messages".into(), messages.into());
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        body.insert("tools".into(), tools.into());
    }
    body.insert("max_tokens".into(), req.max_tokens.into());
    body.insert("stream".into(), true.into());
    body.into()
}

/// A call's arguments as Anthropic's `input`, which must be an object. The
/// model may have written malformed JSON (the loop answered that with an
/// error result); an empty object stands in for it when the history is sent
/// back.
fn tool_input(arguments: &str) -> Value {
    arguments_object(arguments).unwrap_or_else(|| Value::Object(Map::new()))
}

/// A call's arguments parsed, when they are a JSON object.
fn arguments_object(arguments: &str) -> Option<Value> {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
}

// ---------------------------------------------------------------------------
// Server-sent events.

/// One server-sent event: its `event:` name, if any, and its `data:` lines
/// joined with `\n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
}

/// An incremental parser for `text/event-stream`: bytes in (split anywhere),
/// complete events out. Lines end with `\r\n`, `\n` or `\r`; `:` starts a
/// comment; several `data:` lines make one event; `id:` and `retry:` are
/// ignored (a retry here repeats the whole request, not the stream).
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseParser {
    /// Feeds bytes; returns the events they completed.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if std::mem::take(&mut self.after_cr) && b == b'\n' {
                continue;
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.end_line(&mut out);
                    self.after_cr = true;
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// The stream ended: an event without its closing blank line is
    /// discarded, as the SSE specification says, because a stream cut off
    /// mid-event most likely cut its JSON too.
    pub(crate) fn finish(&mut self) {
        *self = SseParser::default();
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        // Line breaks are ASCII, so a line holds whole UTF-8 sequences.
        let line = String::from_utf8_lossy(&raw);
        if line.is_empty() {
            let event = self.event.take();
            if let Some(data) = self.data.take() {
                out.push(SseEvent { event, data });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (&*line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
    }
}

// ---------------------------------------------------------------------------
// Stream decoding.

/// Turns a wire's events into stream events and, at the end, a [`Reply`].
enum Decoder {
    OpenAi(OpenAiStream),
    Anthropic(AnthropicStream),
}

impl Decoder {
    fn new(wire: Wire) -> Decoder {
        match wire {
            Wire::OpenAi => Decoder::OpenAi(OpenAiStream::default()),
            Wire::Anthropic => Decoder::Anthropic(AnthropicStream::default()),
        }
    }

    /// Takes one event; `Ok(true)` once the end marker has arrived.
    fn event(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, Failure> {
        match self {
            Decoder::OpenAi(s) => s.event(event, on_event),
            Decoder::Anthropic(s) => s.event(event, on_event),
        }
    }

    /// Whether a stream that closed without its end marker still delivered
    /// the whole answer (its stop reason arrived).
    fn complete_without_marker(&self) -> bool {
        match self {
            Decoder::OpenAi(s) => s.finish_reason.is_some(),
            Decoder::Anthropic(s) => s.stop_reason.is_some(),
        }
    }

    fn finish(self, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> Reply {
        match self {
            Decoder::OpenAi(s) => s.finish(on_event),
            Decoder::Anthropic(s) => s.finish(on_event),
        }
    }
}

fn parse_json(data: &str) -> Result<Value, Failure> {
    serde_json::from_str(data).map_err(|e| Failure::Fatal(ProviderError::Malformed(e.to_string())))
}

fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// An OpenAI tool call being assembled from its deltas.
#[derive(Debug, Default)]
struct PendingCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

impl PendingCall {
    /// The call's id. Some local servers send none; the result still needs
    /// one to echo, so the index stands in.
    fn id_or_default(&self) -> String {
        if self.id.is_empty() {
            format!("call_{}", self.index)
        } else {
            self.id.clone()
        }
    }

    fn into_block(self) -> Block {
        Block::ToolCall {
            id: self.id_or_default(),
            name: self.name,
            // A call without arguments is sent as "" by some servers.
            arguments: if self.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                self.arguments
            },
        }
    }
}

/// An OpenAI-compatible Chat Completions stream being read.
#[derive(Debug, Default)]
struct OpenAiStream {
    text: String,
    calls: Vec<PendingCall>,
    finish_reason: Option<String>,
    usage: Usage,
    announced: bool,
}

impl OpenAiStream {
    fn event(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, Failure> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        let chunk = parse_json(data)?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(stream_error(data, error));
        }
        // `usage` is null on every chunk but the last with some servers.
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Usage {
                input_tokens: u64_at(usage, "prompt_tokens"),
                output_tokens: u64_at(usage, "completion_tokens"),
            };
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        // One completion is asked for (no `n`), so only the first choice counts.
        if let Some(choice) = choices.and_then(|c| c.first()) {
            if let Some(delta) = choice.get("delta") {
                if let Some(text) = delta.get("content").and_then(Value::as_str)
                    && !text.is_empty()
                {
                    self.text.push_str(text);
                    on_event(StreamEvent::Text(text.to_owned()));
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for call in calls {
                        self.call_delta(call);
                    }
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_owned());
                self.announce(on_event);
            }
        }
        Ok(false)
    }

    /// Folds one tool-call delta into its call. Calls are told apart by
    /// `index`; id and name come first, `arguments` in pieces.
    fn call_delta(&mut self, delta: &Value) {
        let id = delta.get("id").and_then(Value::as_str).unwrap_or("");
        let function = delta.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            // Servers that send no index send each call whole or with its id
            // on every piece: a new id is a new call, no id continues the last.
            None => match self.calls.iter().find(|c| !id.is_empty() && c.id == id) {
                Some(c) => c.index,
                None if id.is_empty() && !self.calls.is_empty() => {
                    self.calls.last().map_or(0, |c| c.index)
                }
                None => self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0),
            },
        };
        let position = match self.calls.iter().position(|c| c.index == index) {
            Some(p) => p,
            None => {
                self.calls.push(PendingCall {
                    index,
                    ..PendingCall::default()
                });
                self.calls.len() - 1
            }
        };
        let Some(call) = self.calls.get_mut(position) else {
            return;
        };
        if call.id.is_empty() {
            call.id = id.to_owned();
        }
        if call.name.is_empty() {
            call.name = name.to_owned();
        }
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            // Some servers send the arguments as an object rather than JSON text.
            Some(v @ Value::Object(_)) => call.arguments.push_str(&v.to_string()),
            _ => {}
        }
    }

    /// Calls can interleave, so each is known complete only when the choice
    /// finishes (or the stream ends).
    fn announce(&mut self, on_event: &mut (dyn FnMut(StreamEvent) + Send)) {
        if std::mem::replace(&mut self.announced, true) {
            return;
        }
        self.calls.sort_by_key(|c| c.index);
        for call in &self.calls {
            on_event(StreamEvent::ToolCall {
                id: call.id_or_default(),
                name: call.name.clone(),
            });
        }
    }

    fn finish(mut self, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> Reply {
        self.announce(on_event);
        let mut blocks = Vec::new();
        if !self.text.is_empty() {
            blocks.push(Block::Text { text: self.text });
        }
        let has_calls = !self.calls.is_empty();
        blocks.extend(self.calls.into_iter().map(PendingCall::into_block));
        // Some local servers answer "stop" even when they called tools; the
        // calls decide.
        let stop = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            _ if has_calls => StopReason::ToolUse,
            _ => StopReason::End,
        };
        Reply {
            message: Message {
                role: Role::Assistant,
                blocks,
            },
            stop,
            usage: self.usage,
        }
    }
}

/// An Anthropic content block being assembled.
#[derive(Debug)]
enum OpenBlock {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
        /// The `input` sent with the block's start, used when no deltas follow.
        initial: Value,
    },
    /// A block kind the loop does not use (thinking, server tools).
    Other,
}

/// An Anthropic Messages stream being read.
#[derive(Debug, Default)]
struct AnthropicStream {
    open: BTreeMap<u64, OpenBlock>,
    done: BTreeMap<u64, Block>,
    stop_reason: Option<String>,
    usage: Usage,
}

impl AnthropicStream {
    fn event(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, Failure> {
        let value = parse_json(&event.data)?;
        // The `type` field repeats the `event:` name; either will do.
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        let index = u64_at(&value, "index");
        match kind {
            "message_start" => {
                if let Some(usage) = value.get("message").and_then(|m| m.get("usage")) {
                    // Cached prompt tokens fill the context window like any other.
                    self.usage.input_tokens = u64_at(usage, "input_tokens")
                        + u64_at(usage, "cache_creation_input_tokens")
                        + u64_at(usage, "cache_read_input_tokens");
                    self.usage.output_tokens = u64_at(usage, "output_tokens");
                }
            }
            "content_block_start" => {
                let block = value.get("content_block").unwrap_or(&Value::Null);
                let open = match block.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                        if !text.is_empty() {
                            on_event(StreamEvent::Text(text.to_owned()));
                        }
                        OpenBlock::Text(text.to_owned())
                    }
                    Some("tool_use") => OpenBlock::Tool {
                        id: block
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        name: block
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        json: String::new(),
                        initial: block.get("input").cloned().unwrap_or(Value::Null),
                    },
                    _ => OpenBlock::Other,
                };
                self.open.insert(index, open);
            }
            "content_block_delta" => {
                let delta = value.get("delta").unwrap_or(&Value::Null);
                match (
                    self.open.get_mut(&index),
                    delta.get("type").and_then(Value::as_str),
                ) {
                    (Some(OpenBlock::Text(text)), Some("text_delta")) => {
                        if let Some(piece) = delta.get("text").and_then(Value::as_str)
                            && !piece.is_empty()
                        {
                            text.push_str(piece);
                            on_event(StreamEvent::Text(piece.to_owned()));
                        }
                    }
                    (Some(OpenBlock::Tool { json, .. }), Some("input_json_delta")) => {
                        if let Some(piece) = delta.get("partial_json").and_then(Value::as_str) {
                            json.push_str(piece);
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => self.close(index, on_event),
            "message_delta" => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(out) = value
                    .get("usage")
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_u64)
                {
                    self.usage.output_tokens = out;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let error = value.get("error").unwrap_or(&Value::Null);
                return Err(stream_error(&event.data, error));
            }
            // `ping`, and event kinds added after this was written.
            _ => {}
        }
        Ok(false)
    }

    fn close(&mut self, index: u64, on_event: &mut (dyn FnMut(StreamEvent) + Send)) {
        let Some(open) = self.open.remove(&index) else {
            return;
        };
        let block = match open {
            OpenBlock::Text(text) if text.is_empty() => return,
            OpenBlock::Text(text) => Block::Text { text },
            OpenBlock::Tool {
                id,
                name,
                json,
                initial,
            } => {
                let arguments = if !json.trim().is_empty() {
                    json
                } else if initial.is_object() {
                    initial.to_string()
                } else {
                    "{}".to_owned()
                };
                on_event(StreamEvent::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                });
                Block::ToolCall {
                    id,
                    name,
                    arguments,
                }
            }
            OpenBlock::Other => return,
        };
        self.done.insert(index, block);
    }

    fn finish(mut self, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> Reply {
        let unclosed: Vec<u64> = self.open.keys().copied().collect();
        for index in unclosed {
            self.close(index, on_event);
        }
        let blocks: Vec<Block> = self.done.into_values().collect();
        let has_calls = blocks.iter().any(|b| matches!(b, Block::ToolCall { .. }));
        let stop = match self.stop_reason.as_deref() {
            Some("max_tokens") => StopReason::MaxTokens,
            Some("tool_use") => StopReason::ToolUse,
            _ if has_calls => StopReason::ToolUse,
            _ => StopReason::End,
        };
        Reply {
            message: Message {
                role: Role::Assistant,
                blocks,
            },
            stop,
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parser: &mut SseParser, input: &str) -> Vec<SseEvent> {
        parser.push(input.as_bytes())
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn sse_reads_lf_crlf_and_cr_line_endings() {
        for input in [
            "data: a\n\ndata: b\n\n",
            "data: a\r\n\r\ndata: b\r\n\r\n",
            "data: a\r\rdata: b\r\r",
        ] {
            let mut p = SseParser::default();
            assert_eq!(
                events(&mut p, input),
                vec![ev(None, "a"), ev(None, "b")],
                "{input:?}"
            );
        }
    }

    #[test]
    fn sse_joins_data_lines_skips_comments_and_keeps_event_names() {
        let mut p = SseParser::default();
        let input =
            ": keep-alive\n\nevent: ping\ndata: {}\n\ndata:one\ndata: two\nid: 7\nretry: 10\n\n";
        assert_eq!(
            events(&mut p, input),
            vec![ev(Some("ping"), "{}"), ev(None, "one\ntwo")]
        );
    }

    #[test]
    fn sse_event_name_without_data_is_dropped_and_does_not_leak() {
        let mut p = SseParser::default();
        assert_eq!(
            events(&mut p, "event: x\n\ndata: y\n\n"),
            vec![ev(None, "y")]
        );
    }

    #[test]
    fn sse_gives_the_same_events_however_the_bytes_are_split() {
        let input =
            "event: a\r\ndata: {\"t\":\"é…\"}\r\n\r\n: c\ndata: 1\ndata: 2\n\ndata: [DONE]\r\r";
        let mut whole = SseParser::default();
        let expected = whole.push(input.as_bytes());
        assert_eq!(expected.len(), 3);
        let bytes = input.as_bytes();
        for cut in 0..=bytes.len() {
            for cut2 in cut..=bytes.len() {
                let mut p = SseParser::default();
                let mut got = p.push(&bytes[..cut]);
                got.extend(p.push(&bytes[cut..cut2]));
                got.extend(p.push(&bytes[cut2..]));
                assert_eq!(got, expected, "cut at {cut}, {cut2}");
            }
        }
    }

    #[test]
    fn sse_discards_an_event_cut_off_by_the_end() {
        let mut p = SseParser::default();
        assert_eq!(
            events(&mut p, "data: {\"a\":1}\n\ndata: {\"b\""),
            vec![ev(None, "{\"a\":1}")]
        );
        p.finish();
        assert_eq!(events(&mut p, "\n\n"), vec![]);
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 40,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        let waits: Vec<u128> = (0..6).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(waits, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(policy.backoff(40), Duration::from_secs(1));
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, reqwest::header::HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn retry_after_prefers_milliseconds_then_seconds() {
        assert_eq!(retry_after(&headers(&[])), None);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3"), ("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[(
                "retry-after",
                "Wed, 21 Oct 2015 07:28:00 GMT"
            )])),
            None
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
    }

    fn class(status: u16, body: &str) -> Failure {
        classify(status, body.to_owned(), None)
    }

    #[test]
    fn classify_by_status_and_body() {
        assert!(matches!(
            class(401, ""),
            Failure::Fatal(ProviderError::Auth { status: 401, .. })
        ));
        assert!(matches!(
            class(403, "context length"),
            Failure::Fatal(ProviderError::Auth { status: 403, .. })
        ));
        assert!(matches!(
            class(404, ""),
            Failure::Fatal(ProviderError::ModelNotFound { .. })
        ));
        for body in [
            r#"{"error":{"code":"context_length_exceeded"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            r#"{"error":{"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            "This model's maximum context length is 4096 tokens.",
        ] {
            assert!(
                matches!(
                    class(400, body),
                    Failure::Fatal(ProviderError::ContextOverflow { .. })
                ),
                "{body}"
            );
        }
        assert!(matches!(
            class(400, "The model `gpt-9` does not exist"),
            Failure::Fatal(ProviderError::ModelNotFound { .. })
        ));
        assert!(matches!(
            class(400, "bad request"),
            Failure::Fatal(ProviderError::Refused { status: 400, .. })
        ));
        assert!(matches!(
            class(429, ""),
            Failure::Retry {
                error: ProviderError::RateLimited { .. },
                ..
            }
        ));
        assert!(matches!(
            class(529, ""),
            Failure::Retry {
                error: ProviderError::Server { status: 529, .. },
                ..
            }
        ));
        // Ollama's "context canceled" is not an overflow.
        assert!(matches!(
            class(500, "context canceled"),
            Failure::Retry {
                error: ProviderError::Server { status: 500, .. },
                ..
            }
        ));
    }

    fn decode(wire: Wire, events: &[SseEvent]) -> (Vec<StreamEvent>, Result<Reply, Failure>) {
        let mut seen = Vec::new();
        let mut on_event = |e: StreamEvent| seen.push(e);
        let mut decoder = Decoder::new(wire);
        let mut result = None;
        for e in events {
            match decoder.event(e, &mut on_event) {
                Ok(true) => {
                    result = Some(Ok(()));
                    break;
                }
                Ok(false) => {}
                Err(f) => {
                    result = Some(Err(f));
                    break;
                }
            }
        }
        let reply = match result {
            Some(Err(f)) => Err(f),
            _ => Ok(decoder.finish(&mut on_event)),
        };
        (seen, reply)
    }

    #[test]
    fn openai_calls_without_index_are_told_apart_by_id() {
        let chunk = |calls: Value| {
            ev(
                None,
                &json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}).to_string(),
            )
        };
        let (_, reply) = decode(
            Wire::OpenAi,
            &[
                chunk(json!([{"id": "a", "function": {"name": "read", "arguments": "{\"p\":"}}])),
                chunk(json!([{"function": {"arguments": "1}"}}])),
                chunk(json!([{"id": "b", "function": {"name": "list", "arguments": {"d": "."}}}])),
                ev(None, "[DONE]"),
            ],
        );
        let reply = reply.unwrap();
        assert_eq!(
            reply.message.blocks,
            vec![
                Block::ToolCall {
                    id: "a".into(),
                    name: "read".into(),
                    arguments: "{\"p\":1}".into()
                },
                Block::ToolCall {
                    id: "b".into(),
                    name: "list".into(),
                    arguments: "{\"d\":\".\"}".into()
                },
            ]
        );
        assert_eq!(reply.stop, StopReason::ToolUse);
    }

    #[test]
    fn openai_error_chunk_is_classified() {
        let (_, reply) = decode(
            Wire::OpenAi,
            &[ev(
                None,
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#,
            )],
        );
        assert!(matches!(
            reply,
            Err(Failure::Fatal(ProviderError::ContextOverflow { .. }))
        ));
    }

    #[test]
    fn anthropic_overloaded_event_is_retryable() {
        let (_, reply) = decode(
            Wire::Anthropic,
            &[ev(
                Some("error"),
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )],
        );
        assert!(matches!(
            reply,
            Err(Failure::Retry {
                error: ProviderError::Server { status: 529, .. },
                ..
            })
        ));
    }

    #[test]
    fn anthropic_tool_without_deltas_keeps_its_start_input() {
        let (seen, reply) = decode(
            Wire::Anthropic,
            &[
                ev(
                    None,
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"list","input":{}}}"#,
                ),
                ev(None, r#"{"type":"content_block_stop","index":0}"#),
                ev(None, r#"{"type":"message_stop"}"#),
            ],
        );
        assert_eq!(
            seen,
            vec![StreamEvent::ToolCall {
                id: "t1".into(),
                name: "list".into()
            }]
        );
        assert_eq!(
            reply.unwrap().message.blocks,
            vec![Block::ToolCall {
                id: "t1".into(),
                name: "list".into(),
                arguments: "{}".into()
            }]
        );
    }

    #[test]
    fn malformed_json_is_fatal() {
        let (_, reply) = decode(Wire::OpenAi, &[ev(None, "{not json")]);
        assert!(matches!(
            reply,
            Err(Failure::Fatal(ProviderError::Malformed(_)))
        ));
    }

    /// The loop may spawn a call on a multi-threaded runtime.
    #[test]
    fn a_call_is_send() {
        fn send<T: Send>(_: &T) {}
        let p = Provider::new(ProviderConfig::new(
            Wire::OpenAi,
            "http://127.0.0.1:9/v1",
            "m",
        ))
        .unwrap();
        let req = Request {
            model: String::new(),
            system: String::new(),
            messages: vec![Message::user("hi")],
            tools: Vec::new(),
            max_tokens: 1,
        };
        let mut on_event = |_: StreamEvent| {};
        let call = p.complete(&req, &mut on_event);
        send(&call);
        send(&p);
    }

    #[test]
    fn anthropic_input_must_be_an_object() {
        assert_eq!(tool_input("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(tool_input("{\"a\":"), json!({}));
        assert_eq!(tool_input("[1]"), json!({}));
    }
}
