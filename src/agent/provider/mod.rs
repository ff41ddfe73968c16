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
//! One job per file: this one holds what every wire shares (the
//! configuration, the call and its retries, the error classes); `sse` turns
//! a reply's bytes into server-sent events; `openai` and `anthropic` each
//! write one wire's request body and read its events. A wire is a
//! `Protocol` value, and the `wires!` table below maps each [`Wire`] to
//! its file: a new wire protocol is one new file plus one line there.
//!
//! How a call goes:
//!
//! ```text
//! Request ──body()──▶ JSON ──POST──▶ status? ──bytes──▶ sse::events ──events──▶ Decoder ──▶ Reply
//!                                      │ not 2xx                                   │ error event
//!                                      └──────────── classify(status, body) ◀──────┘
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
//!   call gives up at once instead of sleeping through it. So does a wait
//!   that would take the waiting past [`RetryPolicy::wait_budget`] or the
//!   turn past its deadline; the error is then the last attempt's.
//! - Redirects are never followed, whatever their origin: the request
//!   carries the key (a followed 307 re-posts it, `x-api-key` included, to
//!   wherever the server points). A 3xx is [`ProviderError::Redirected`],
//!   saying where to, and the person points the base URL there.
//! - Everything a server sends is bounded, so a hostile or broken one ends
//!   the reply instead of holding it ([`ProviderConfig`] has the values):
//!   silence (before the headers, between two chunks) by the idle timeout,
//!   which keep-alive comments reset; the whole reply, retries included, by
//!   the turn's wall-clock limit, which nothing resets; text and tool
//!   arguments, and any one event, by the reply size cap; an error body by
//!   [`EVIDENCE_BYTES`]. The first two end as [`ProviderError::Timeout`]
//!   (retried) and [`Limit::Turn`]; the cap as [`Limit::ReplyBytes`], never
//!   retried (the same server would send the same endless reply).
//! - A [`Gate`] in the configuration (a shared rate limit, such as the
//!   benchmark's per-provider limits) admits every attempt, retries
//!   included, before it is sent, and its admission is held until the
//!   attempt ends. The first attempt's admission is waited for before the
//!   turn's clock starts: the turn limit measures the server, not a queue.
//!
//! Recognising error classes means reading the server's error body (a
//! context overflow is a 400 like any other); that is confined to
//! `classify`, and the body always travels on in the error as data.
//!
//! What this module does not do: choose endpoints, read keys from the
//! environment, count tokens before a reply, or decide what to do about an
//! overflow. Those belong to the caller.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;

use crate::agent::types::{
    BaseUrlProblem, Block, Limit, Message, ProviderError, Reply, Request, StreamEvent,
};

mod sse;

use sse::SseEvent;

/// What one wire protocol supplies: where its requests go, how they are
/// authorised and written, and how its stream is read. Each implementation
/// is a unit value in its own file.
trait Protocol: Sync {
    /// The path after the base URL (`/chat/completions`, `/v1/messages`).
    fn path(&self) -> &'static str;

    /// `builder` with the key (if any) and the wire's fixed headers.
    fn authorize(
        &self,
        builder: reqwest::RequestBuilder,
        key: Option<&str>,
    ) -> reqwest::RequestBuilder;

    /// The JSON body for `req` (streaming on), asking for `model`.
    fn body(&self, model: &str, req: &Request) -> Value;

    /// A fresh reader for one reply's events.
    fn decoder(&self) -> Box<dyn Decoder>;
}

/// One reply's events being read into a [`Reply`].
trait Decoder: Send {
    /// Takes one event, handing what it completes to `on_event`; `Ok(true)`
    /// once the end marker has arrived.
    fn event(
        &mut self,
        event: &SseEvent,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<bool, Failure>;

    /// Whether a stream that closed without its end marker still delivered
    /// the whole answer (its stop reason arrived).
    fn complete_without_marker(&self) -> bool;

    /// Bytes of text and tool arguments read so far, for the reply size cap.
    fn size(&self) -> usize;

    /// The assembled reply (calls still open are closed).
    fn finish(self: Box<Self>, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> Reply;
}

/// Declares the wires: each entry is a variant of [`Wire`] (with its docs)
/// and the file that implements it as a `PROTOCOL` value. It is a macro so
/// that the enum, the modules and the dispatch cannot drift apart: adding a
/// wire is its file plus its entry here.
macro_rules! wires {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)+) => {
        $(mod $module;)+

        /// Which wire protocol an endpoint speaks.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Wire {
            $($(#[$doc])* $variant,)+
        }

        impl Wire {
            /// The wire's implementation.
            fn protocol(self) -> &'static dyn Protocol {
                match self {
                    $(Wire::$variant => &$module::PROTOCOL,)+
                }
            }
        }
    };
}

wires! {
    /// OpenAI-compatible Chat Completions (`{base_url}/chat/completions`):
    /// OpenAI, and local servers such as Ollama, llama.cpp, vLLM, LM Studio.
    OpenAi => openai,
    /// Anthropic Messages (`{base_url}/v1/messages`).
    Anthropic => anthropic,
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
    /// The most time spent waiting between attempts, summed over one call;
    /// a wait that would pass it makes the call give up instead.
    pub wait_budget: Duration,
}

impl Default for RetryPolicy {
    /// Four retries, 0.5 s doubling to at most 30 s each, at most 120 s of
    /// waiting in all: a blip or a short overload is waited out, a server
    /// that stays down is reported within about two minutes.
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            wait_budget: Duration::from_secs(120),
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
    /// Keep-alive comments count as chunks.
    pub idle_timeout: Duration,
    /// The wall-clock limit of one [`Provider::complete`]: connecting,
    /// streaming and every retry with its waits.
    pub turn_timeout: Duration,
    /// The most bytes of text and tool arguments one reply may hold; also
    /// the most one event of the stream may hold.
    pub max_reply_bytes: usize,
    /// Retries.
    pub retry: RetryPolicy,
    /// What every attempt waits on before it is sent (`None`: nothing).
    pub gate: Option<Arc<dyn Gate>>,
}

/// An admission that is held while one attempt runs (a concurrency slot,
/// say); dropping it gives it back.
pub type Admission = Box<dyn Send>;

/// Something every attempt to a provider waits on before it is sent: a
/// limit shared by several [`Provider`]s (one account's rate limit, say).
/// The provider holds what [`Gate::admit`] yields until the attempt ends.
pub trait Gate: Send + Sync + fmt::Debug {
    /// Waits until one more attempt may be sent.
    fn admit(&self) -> Pin<Box<dyn Future<Output = Admission> + Send + '_>>;
}

impl ProviderConfig {
    /// A configuration with no key and the defaults: a 10 s connect timeout;
    /// a 60 s idle timeout (a server silent for a minute is not coming back
    /// soon; a slow local model that needs longer to read a long prompt can
    /// be given more); a 600 s turn limit (ten minutes for one reply, retries
    /// included, is longer than any healthy reply takes); a 4 MiB reply cap
    /// (a hundred times a long reply); and the default [`RetryPolicy`]. A
    /// silent server is thus given up on after 5 × 60 s at most.
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
            idle_timeout: Duration::from_secs(60),
            turn_timeout: Duration::from_secs(600),
            max_reply_bytes: 4 << 20,
            retry: RetryPolicy::default(),
            gate: None,
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
            .field("turn_timeout", &self.turn_timeout)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("retry", &self.retry)
            .field("gate", &self.gate)
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
    turn_timeout: Duration,
    max_reply_bytes: usize,
    gate: Option<Arc<dyn Gate>>,
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
            .field("turn_timeout", &self.turn_timeout)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("gate", &self.gate)
            .finish()
    }
}

impl Provider {
    /// A provider for `config`.
    ///
    /// # Errors
    ///
    /// [`ProviderError::InvalidBaseUrl`] for a base URL that is not an
    /// `http`/`https` URL with a host and without a query or fragment (a
    /// configuration error: nothing was sent); [`ProviderError::Connection`]
    /// if the HTTP client cannot be built (no TLS backend).
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        check_base_url(&config.base_url).map_err(|problem| ProviderError::InvalidBaseUrl {
            url: config.base_url.clone(),
            problem,
        })?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            // See the module docs: the key must not follow a redirect.
            .redirect(reqwest::redirect::Policy::none())
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
            turn_timeout: config.turn_timeout,
            max_reply_bytes: config.max_reply_bytes,
            gate: config.gate,
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
        format!("{}{}", self.base_url, self.wire.protocol().path())
    }

    /// The JSON body `req` is sent as (streaming on). The model is
    /// `req.model`, or the configured one when that is empty.
    pub fn body(&self, req: &Request) -> Value {
        let model = if req.model.is_empty() {
            self.model.as_str()
        } else {
            req.model.as_str()
        };
        self.wire.protocol().body(model, req)
    }

    /// Sends `req`, streams the reply into `on_event` as it arrives, and
    /// returns the assembled reply, retrying and bounded as the module docs
    /// describe.
    pub async fn complete(
        &self,
        req: &Request,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Reply, ProviderError> {
        let body = self.body(req);
        // Waiting to be admitted is not the server's time (module docs).
        let first = self.admit().await;
        // A limit too large to add to the clock is no limit.
        let Some(deadline) = tokio::time::Instant::now().checked_add(self.turn_timeout) else {
            return self.retried(&body, on_event, None, first).await;
        };
        match tokio::time::timeout_at(
            deadline,
            self.retried(&body, on_event, Some(deadline), first),
        )
        .await
        {
            Ok(result) => result,
            Err(_) => Err(ProviderError::LimitReached(Limit::Turn(self.turn_timeout))),
        }
    }

    /// Attempts until one succeeds, fails for good, or the retries, the wait
    /// budget or the time before `deadline` run out.
    async fn retried(
        &self,
        body: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        deadline: Option<tokio::time::Instant>,
        mut first: Option<Admission>,
    ) -> Result<Reply, ProviderError> {
        let mut retry = 0;
        let mut waited = Duration::ZERO;
        loop {
            let admitted = match first.take() {
                Some(a) => Some(a),
                None => self.admit().await,
            };
            let result = self.attempt(body, on_event).await;
            drop(admitted);
            let (error, wait) = match result {
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
            waited = waited.saturating_add(delay);
            // Sleeping into the deadline would only turn the server's error
            // into a turn limit, later.
            let past_deadline = deadline.is_some_and(|d| {
                tokio::time::Instant::now()
                    .checked_add(delay)
                    .is_none_or(|end| end >= d)
            });
            if waited > self.retry.wait_budget || past_deadline {
                return Err(error);
            }
            tokio::time::sleep(delay).await;
            retry += 1;
        }
    }

    /// The gate's admission for one attempt (none without a gate).
    async fn admit(&self) -> Option<Admission> {
        match &self.gate {
            Some(gate) => Some(gate.admit().await),
            None => None,
        }
    }

    /// One request, start to end of stream.
    async fn attempt(
        &self,
        body: &Value,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Reply, Failure> {
        let protocol = self.wire.protocol();
        let builder = self
            .http
            .post(self.endpoint())
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        let builder = protocol.authorize(builder, self.api_key.as_deref());
        let response = match tokio::time::timeout(self.idle_timeout, builder.send()).await {
            Err(_) => return Err(Failure::retry(ProviderError::Timeout)),
            Ok(Err(e)) => return Err(transport_failure(&e)),
            Ok(Ok(response)) => response,
        };
        let status = response.status().as_u16();
        if response.status().is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(|l| match response.url().join(l) {
                    Ok(url) => url.to_string(),
                    Err(_) => l.to_owned(),
                });
            let location_base = location
                .as_deref()
                .and_then(|l| l.strip_suffix(protocol.path()))
                .map(str::to_owned);
            return Err(Failure::Fatal(ProviderError::Redirected {
                status,
                location,
                location_base,
            }));
        }
        if !response.status().is_success() {
            let wait = retry_after(response.headers());
            let text = self.evidence(response).await;
            return Err(classify(status, text, wait));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let is_stream = content_type.as_deref().is_some_and(|t| {
            let essence = t.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("text/event-stream")
        });
        if !is_stream {
            let body = self.evidence(response).await;
            return Err(Failure::Fatal(ProviderError::NotEventStream {
                content_type,
                body,
            }));
        }

        let mut decoder = protocol.decoder();
        let mut events = std::pin::pin!(sse::events(
            response.bytes_stream(),
            self.idle_timeout,
            self.max_reply_bytes
        ));
        while let Some(event) = events.next().await {
            if decoder.event(&event?, on_event)? {
                return Ok(decoder.finish(on_event));
            }
            if decoder.size() > self.max_reply_bytes {
                return Err(Failure::Fatal(ProviderError::LimitReached(
                    Limit::ReplyBytes(self.max_reply_bytes),
                )));
            }
        }
        // An event cut off by the close was discarded by `sse::events`: it is
        // most likely truncated JSON.
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

/// The most of a body read when it is only evidence (an error status, a
/// reply that is not a stream): enough for any error message, and a bound
/// on a server that answers an error with an endless body.
pub const EVIDENCE_BYTES: usize = 64 << 10;

impl Provider {
    /// The start of `response`'s body, at most [`EVIDENCE_BYTES`], as text.
    /// The body is only evidence: a server that cannot finish sending it
    /// still gets its status classified with what did arrive.
    async fn evidence(&self, response: reqwest::Response) -> String {
        let mut body = Vec::new();
        let mut chunks = std::pin::pin!(response.bytes_stream());
        while body.len() < EVIDENCE_BYTES {
            match tokio::time::timeout(self.idle_timeout, chunks.next()).await {
                Ok(Some(Ok(chunk))) => {
                    let room = EVIDENCE_BYTES - body.len();
                    body.extend_from_slice(chunk.get(..room).unwrap_or(&chunk));
                }
                _ => break,
            }
        }
        String::from_utf8_lossy(&body).into_owned()
    }
}

/// Whether `url` can be a base URL: it parses, its scheme is `http` or
/// `https`, it names a host, and it has no query or fragment (the endpoint
/// path is appended to it as text).
fn check_base_url(url: &str) -> Result<(), BaseUrlProblem> {
    let parsed = reqwest::Url::parse(url).map_err(|e| BaseUrlProblem::Unparsable(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(BaseUrlProblem::Scheme(parsed.scheme().to_owned()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(BaseUrlProblem::NoHost);
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(BaseUrlProblem::QueryOrFragment);
    }
    Ok(())
}

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
// What the wires share.

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

/// A call's arguments parsed, when they are a JSON object.
fn arguments_object(arguments: &str) -> Option<Value> {
    serde_json::from_str::<Value>(arguments)
        .ok()
        .filter(Value::is_object)
}

/// An event's data as JSON; anything else is a malformed stream.
fn parse_json(data: &str) -> Result<Value, Failure> {
    serde_json::from_str(data).map_err(|e| Failure::Fatal(ProviderError::Malformed(e.to_string())))
}

/// A counter in a JSON object, 0 when absent.
fn u64_at(value: &Value, key: &str) -> u64 {
    value.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Feeds `events` to `wire`'s decoder the way an attempt does, for the
/// wires' tests: what streamed, and the reply or the failure.
#[cfg(test)]
fn decode(wire: Wire, events: &[SseEvent]) -> (Vec<StreamEvent>, Result<Reply, Failure>) {
    let mut seen = Vec::new();
    let mut on_event = |e: StreamEvent| seen.push(e);
    let mut decoder = wire.protocol().decoder();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy {
            max_retries: 40,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
            ..RetryPolicy::default()
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

    #[test]
    fn malformed_json_is_fatal() {
        let (_, reply) = decode(Wire::OpenAi, &[sse::ev(None, "{not json")]);
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
}
