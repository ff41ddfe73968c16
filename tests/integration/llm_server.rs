//! A real HTTP/1.1 server on 127.0.0.1 that replays scripted model turns in
//! the OpenAI Chat Completions and Anthropic Messages wire formats, streaming
//! included. It is what the agent's tests talk to instead of a model: the
//! client under test does real HTTP, so the code paths are the ones a real
//! endpoint exercises.
//!
//! - [`LlmServer::start`] binds `127.0.0.1:0` and answers the n-th request
//!   with the n-th [`Scripted`] response, whatever the path; past the end of
//!   the script it answers `418` so a test that asks too often fails loudly
//!   (418 is never retried).
//! - Every request is recorded ([`LlmServer::requests`]): method, path,
//!   headers (names lowercased), body (parsed as JSON when it is JSON).
//! - Responses carry `Connection: close` and the socket is closed after each
//!   one, so each request is one connection and the order is the script's.
//! - Streams are close-delimited (no `Content-Length`), written one event per
//!   write, so a dropped stream is simply a close before the end marker.
//! - Dropping the server stops it: the accept loop polls a stop flag, every
//!   socket has read/write timeouts, and a stalled response watches the flag.
//!   Drop waits for all of it, and that wait is bounded.
//!
//! - Hostile servers for the provider's limits: a redirect
//!   ([`Scripted::redirect`]), an endless stream of one event repeated
//!   ([`Scripted::Forever`]: keep-alive comments, a token at a time, text as
//!   fast as the socket takes it), headers that never end
//!   ([`Scripted::Slowloris`]) and a server that never answers
//!   ([`Scripted::Silent`]). Each stops when the client hangs up or the
//!   server is dropped.
//!
//! - For request limits: each request's arrival time is recorded, the
//!   server counts the requests in flight (from the request read to the
//!   socket closed) and keeps the most there ever were
//!   ([`LlmServer::max_in_flight`]), and [`Scripted::late`] holds a
//!   response back so that requests overlap.
//!
//! - For concurrent conversations (sub-agents): [`LlmServer::start_routed`]
//!   gives each conversation its own script, chosen by a key its first
//!   user message contains (requests that match no key take the main
//!   script), and [`Scripted::together`] is a rendezvous: its responses are
//!   held back in groups of `n` until the group's last request arrives — so
//!   a test proves requests overlap by what the server counted
//!   ([`LlmServer::max_in_flight`]), not by timing (a client that sends
//!   them one after another lets the hold run out, bounded, and the count
//!   shows it), and can order steps of concurrent conversations.
//!
//! Not supported, because no client under test sends it: chunked request
//! bodies, `Expect: 100-continue`, keep-alive, TLS.

// The helpers serve every agent test module (the loop's end-to-end tests
// included); not each of them uses every helper.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The usage the `*_text` / `*_tool_call` / `*_turn` helpers report:
/// (prompt / input tokens, completion / output tokens).
pub(crate) const HELPER_USAGE: (u64, u64) = (10, 5);

/// The longest a [`Scripted::Together`] response waits for the others.
pub(crate) const TOGETHER_MAX: Duration = Duration::from_secs(5);

/// How long a connection may sit idle (reading the request, or writing to a
/// client that does not read) before the server gives up on it.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(2);

/// One scripted response.
#[derive(Debug, Clone)]
pub(crate) enum Scripted {
    /// `200 OK`, `text/event-stream`, these events (each already formatted,
    /// ending in a blank line), then the connection closes.
    Stream {
        /// The events, in order; one write each.
        events: Vec<String>,
    },
    /// Any status with these headers and body (`application/json` unless a
    /// `content-type` header is given).
    Raw {
        /// The status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: String,
    },
    /// The headers of a stream and `head` (some events, possibly half of
    /// one), then the socket closes: the stream never reaches its end marker.
    Dropped {
        /// What is sent before the close.
        head: String,
    },
    /// The headers of a stream and `head`, then silence for `hold` (for idle
    /// timeouts), then the socket closes.
    Stalled {
        /// What is sent before the silence.
        head: String,
        /// How long the silence lasts (cut short when the server stops).
        hold: Duration,
    },
    /// The headers of a stream and `head`, then `event` again and again,
    /// `every` apart (back to back when zero), until the client hangs up or
    /// the server stops.
    Forever {
        /// What is sent once, first.
        head: String,
        /// What is repeated.
        event: String,
        /// The pause between two repeats.
        every: Duration,
    },
    /// A status line and a header one byte at a time, `every` apart; the
    /// header's value never ends.
    Slowloris {
        /// The pause between two bytes.
        every: Duration,
    },
    /// Reads the request and sends nothing for `hold` (cut short when the
    /// server stops), then closes.
    Silent {
        /// How long the silence lasts.
        hold: Duration,
    },
    /// A rendezvous: the requests answered by `Together` responses are
    /// taken in groups of `n`, in arrival order; each is held until its
    /// group's last one has arrived (at most [`TOGETHER_MAX`], cut short
    /// when the server stops), then answered with `then`.
    Together {
        /// How many requests must be in flight.
        n: usize,
        /// The response.
        then: Box<Scripted>,
    },
    /// Nothing for `hold` (cut short when the server stops), then `then`.
    Late {
        /// How long the response is held back.
        hold: Duration,
        /// The response.
        then: Box<Scripted>,
    },
}

/// One piece of a scripted OpenAI stream; each becomes one `data:` chunk.
#[derive(Debug, Clone)]
pub(crate) enum OpenAiDelta {
    /// `delta.role = "assistant"` (what servers send first).
    Role,
    /// `delta.content`.
    Text(String),
    /// The first delta of a tool call: its index, id and name, no arguments.
    ToolStart {
        /// The call's `index` (calls may interleave).
        index: u32,
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of a tool call's `arguments`.
    ToolArgs {
        /// The call's `index`.
        index: u32,
        /// The fragment.
        fragment: String,
    },
    /// `finish_reason` (`stop`, `tool_calls`, `length`).
    Finish(String),
    /// The final usage chunk (`choices: []`).
    Usage {
        /// `prompt_tokens`.
        prompt: u64,
        /// `completion_tokens`.
        completion: u64,
    },
    /// A `data:` payload sent as is.
    Raw(String),
}

/// One content block of a scripted Anthropic reply.
#[derive(Debug, Clone)]
pub(crate) enum AnthropicBlock {
    /// A text block, streamed as `text_delta`s.
    Text(String),
    /// A `tool_use` block, its input streamed as `input_json_delta`s.
    ToolUse {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The input as JSON text, split into fragments on the wire.
        input_json: String,
    },
}

/// A `data:`-only SSE event (OpenAI style).
pub(crate) fn sse_data(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// A named SSE event (Anthropic style).
pub(crate) fn sse_event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// `s` split into pieces of at most `n` characters (never inside a character).
pub(crate) fn pieces(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> String {
    sse_data(
        &json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
        .to_string(),
    )
}

impl OpenAiDelta {
    fn render(&self) -> String {
        match self {
            OpenAiDelta::Role => openai_chunk(json!({"role": "assistant", "content": ""}), None),
            OpenAiDelta::Text(t) => openai_chunk(json!({"content": t}), None),
            OpenAiDelta::ToolStart { index, id, name } => openai_chunk(
                json!({"tool_calls": [{
                    "index": index,
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }]}),
                None,
            ),
            OpenAiDelta::ToolArgs { index, fragment } => openai_chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
                None,
            ),
            OpenAiDelta::Finish(reason) => openai_chunk(json!({}), Some(reason)),
            OpenAiDelta::Usage { prompt, completion } => sse_data(
                &json!({
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": "scripted",
                    "choices": [],
                    "usage": {
                        "prompt_tokens": prompt,
                        "completion_tokens": completion,
                        "total_tokens": prompt + completion,
                    },
                })
                .to_string(),
            ),
            OpenAiDelta::Raw(data) => sse_data(data),
        }
    }
}

impl Scripted {
    /// An OpenAI Chat Completions stream: one chunk per delta, then `data: [DONE]`.
    pub(crate) fn openai(deltas: Vec<OpenAiDelta>) -> Scripted {
        let mut events: Vec<String> = deltas.iter().map(OpenAiDelta::render).collect();
        events.push(sse_data("[DONE]"));
        Scripted::Stream { events }
    }

    /// A whole OpenAI turn: `text` in small pieces, then each call
    /// `(id, name, arguments)` with its arguments in fragments, the finish
    /// reason that fits, and [`HELPER_USAGE`].
    pub(crate) fn openai_turn(text: &str, calls: &[(&str, &str, &str)]) -> Scripted {
        let mut deltas = vec![OpenAiDelta::Role];
        deltas.extend(pieces(text, 3).into_iter().map(OpenAiDelta::Text));
        for (index, (id, name, args)) in (0u32..).zip(calls) {
            deltas.push(OpenAiDelta::ToolStart {
                index,
                id: (*id).to_owned(),
                name: (*name).to_owned(),
            });
            deltas.extend(
                pieces(args, 5)
                    .into_iter()
                    .map(|fragment| OpenAiDelta::ToolArgs { index, fragment }),
            );
        }
        let finish = if calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        deltas.push(OpenAiDelta::Finish(finish.to_owned()));
        deltas.push(OpenAiDelta::Usage {
            prompt: HELPER_USAGE.0,
            completion: HELPER_USAGE.1,
        });
        Scripted::openai(deltas)
    }

    /// An OpenAI turn that only answers `text`.
    pub(crate) fn openai_text(text: &str) -> Scripted {
        Scripted::openai_turn(text, &[])
    }

    /// An OpenAI turn that only calls one tool.
    pub(crate) fn openai_tool_call(id: &str, name: &str, args_json: &str) -> Scripted {
        Scripted::openai_turn("", &[(id, name, args_json)])
    }

    /// An Anthropic Messages stream: `message_start` (with `usage.0` input
    /// tokens), a `ping`, each block (start, deltas, stop), `message_delta`
    /// (with `stop_reason` and `usage.1` output tokens), `message_stop`.
    pub(crate) fn anthropic(
        blocks: Vec<AnthropicBlock>,
        stop_reason: &str,
        usage: (u64, u64),
    ) -> Scripted {
        let mut events = vec![
            sse_event(
                "message_start",
                &json!({"type": "message_start", "message": {
                    "id": "msg_scripted",
                    "type": "message",
                    "role": "assistant",
                    "model": "scripted",
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {"input_tokens": usage.0, "output_tokens": 1},
                }}),
            ),
            sse_event("ping", &json!({"type": "ping"})),
        ];
        for (index, block) in blocks.iter().enumerate() {
            let (start, deltas) = match block {
                AnthropicBlock::Text(text) => (
                    json!({"type": "text", "text": ""}),
                    pieces(text, 4)
                        .into_iter()
                        .map(|p| json!({"type": "text_delta", "text": p}))
                        .collect::<Vec<_>>(),
                ),
                AnthropicBlock::ToolUse {
                    id,
                    name,
                    input_json,
                } => (
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                    pieces(input_json, 5)
                        .into_iter()
                        .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                        .collect(),
                ),
            };
            events.push(sse_event(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            for delta in deltas {
                events.push(sse_event(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            events.push(sse_event(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push(sse_event(
            "message_delta",
            &json!({
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": usage.1},
            }),
        ));
        events.push(sse_event("message_stop", &json!({"type": "message_stop"})));
        Scripted::Stream { events }
    }

    /// A whole Anthropic turn: a text block (if `text` is not empty), a
    /// `tool_use` block per call `(id, name, input_json)`, the stop reason
    /// that fits, and [`HELPER_USAGE`].
    pub(crate) fn anthropic_turn(text: &str, calls: &[(&str, &str, &str)]) -> Scripted {
        let mut blocks = Vec::new();
        if !text.is_empty() {
            blocks.push(AnthropicBlock::Text(text.to_owned()));
        }
        for (id, name, input_json) in calls {
            blocks.push(AnthropicBlock::ToolUse {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                input_json: (*input_json).to_owned(),
            });
        }
        let stop = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        Scripted::anthropic(blocks, stop, HELPER_USAGE)
    }

    /// An Anthropic turn that only answers `text`.
    pub(crate) fn anthropic_text(text: &str) -> Scripted {
        Scripted::anthropic_turn(text, &[])
    }

    /// An Anthropic turn that only calls one tool.
    pub(crate) fn anthropic_tool_call(id: &str, name: &str, input_json: &str) -> Scripted {
        Scripted::anthropic_turn("", &[(id, name, input_json)])
    }

    /// This response held until `n` requests meet (see [`Scripted::Together`]).
    pub(crate) fn together(self, n: usize) -> Scripted {
        Scripted::Together {
            n,
            then: Box::new(self),
        }
    }

    /// A plain response: `status` and `body`, no extra headers.
    pub(crate) fn status(status: u16, body: impl Into<String>) -> Scripted {
        Scripted::Raw {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A redirect: `status` (301, 302, 307, 308…) to `location`.
    pub(crate) fn redirect(status: u16, location: &str) -> Scripted {
        Scripted::status(status, "").with_header("location", location)
    }

    /// An OpenAI stream that sends `text` as one chunk every `every`, forever.
    pub(crate) fn openai_forever(text: &str, every: Duration) -> Scripted {
        Scripted::Forever {
            head: OpenAiDelta::Role.render(),
            event: OpenAiDelta::Text(text.to_owned()).render(),
            every,
        }
    }

    /// An Anthropic stream that opens a text block and sends `text` as one
    /// delta every `every`, forever.
    pub(crate) fn anthropic_forever(text: &str, every: Duration) -> Scripted {
        let Scripted::Stream { events } = Scripted::anthropic_text("x") else {
            unreachable!("anthropic_text is a stream");
        };
        // message_start, ping, content_block_start.
        let head: String = events.iter().take(3).map(String::as_str).collect();
        Scripted::Forever {
            head,
            event: sse_event(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": text}}),
            ),
            every,
        }
    }

    /// A stream of nothing but keep-alive comments, one every `every`.
    pub(crate) fn keep_alive_forever(every: Duration) -> Scripted {
        Scripted::Forever {
            head: String::new(),
            event: ": keep-alive\n\n".to_owned(),
            every,
        }
    }

    /// This response, held back for `hold` after the request is read.
    pub(crate) fn late(self, hold: Duration) -> Scripted {
        Scripted::Late {
            hold,
            then: Box::new(self),
        }
    }

    /// This raw response with one more header.
    ///
    /// # Panics
    ///
    /// On anything but [`Scripted::Raw`].
    pub(crate) fn with_header(self, name: &str, value: &str) -> Scripted {
        match self {
            Scripted::Raw {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_owned(), value.to_owned()));
                Scripted::Raw {
                    status,
                    headers,
                    body,
                }
            }
            other => panic!("with_header is for Scripted::Raw, not {other:?}"),
        }
    }

    /// This stream cut off after its first `events` events and half of the
    /// next one.
    ///
    /// # Panics
    ///
    /// On anything but [`Scripted::Stream`].
    pub(crate) fn dropped_after(self, events: usize) -> Scripted {
        Scripted::Dropped {
            head: self.head(events),
        }
    }

    /// This stream's first `events` events, then silence for `hold`.
    ///
    /// # Panics
    ///
    /// On anything but [`Scripted::Stream`].
    pub(crate) fn stalled_after(self, events: usize, hold: Duration) -> Scripted {
        let Scripted::Stream { events: all } = self else {
            panic!("stalled_after is for Scripted::Stream");
        };
        Scripted::Stalled {
            head: all.iter().take(events).map(String::as_str).collect(),
            hold,
        }
    }

    fn head(self, events: usize) -> String {
        let Scripted::Stream { events: all } = self else {
            panic!("dropped_after is for Scripted::Stream");
        };
        let mut head: String = all.iter().take(events).map(String::as_str).collect();
        if let Some(next) = all.get(events) {
            let half: String = next.chars().take(next.chars().count() / 2).collect();
            head.push_str(&half);
        }
        head
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct RecordedRequest {
    /// `POST`, usually.
    pub(crate) method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub(crate) path: String,
    /// Headers in arrival order, names lowercased.
    pub(crate) headers: Vec<(String, String)>,
    /// The body parsed as JSON, or `Value::Null` if it is not JSON.
    pub(crate) body: Value,
    /// The body as text.
    pub(crate) raw_body: String,
    /// When the request had been read.
    pub(crate) at: Instant,
    /// The text of the conversation's first user message (what routes it).
    pub(crate) first_user: String,
}

impl RecordedRequest {
    /// The first header called `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct Shared {
    script: Mutex<VecDeque<Scripted>>,
    /// Per-conversation scripts: a key the first user message contains.
    routes: Mutex<Vec<(String, VecDeque<Scripted>)>>,
    requests: Mutex<Vec<RecordedRequest>>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    stop: AtomicBool,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Requests that reached a [`Scripted::Together`] so far.
    met: AtomicUsize,
}

/// One request in flight, counted for as long as it lives.
struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    fn start(shared: &'a Shared) -> InFlight<'a> {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The server; stops when dropped.
#[derive(Debug)]
pub(crate) struct LlmServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl LlmServer {
    /// Binds `127.0.0.1:0` and serves `script`, one response per request, in order.
    pub(crate) fn start(script: Vec<Scripted>) -> LlmServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            ..Shared::default()
        });
        let accept = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept_loop(&listener, &shared))
        };
        LlmServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// Like [`LlmServer::start`], with a script per conversation: a request
    /// whose first user message contains a route's key is answered from that
    /// route's script (the first key that matches), any other from `script`.
    pub(crate) fn start_routed(
        script: Vec<Scripted>,
        routes: Vec<(&str, Vec<Scripted>)>,
    ) -> LlmServer {
        let server = LlmServer::start(script);
        *server.shared.routes.lock().unwrap() = routes
            .into_iter()
            .map(|(key, s)| (key.to_owned(), s.into()))
            .collect();
        server
    }

    /// `http://127.0.0.1:PORT`: the base URL for Anthropic.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: the base URL for an OpenAI-compatible client.
    pub(crate) fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Every request received so far, in order.
    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The most requests that were ever in flight at once.
    pub(crate) fn max_in_flight(&self) -> usize {
        self.shared.max_in_flight.load(Ordering::SeqCst)
    }

    /// How many scripted responses have not been asked for yet.
    pub(crate) fn remaining(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let workers = std::mem::take(&mut *self.shared.workers.lock().unwrap());
        for worker in workers {
            let _ = worker.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let shared_for_worker = Arc::clone(shared);
                let worker = std::thread::spawn(move || {
                    // A broken connection only fails the request it carried;
                    // the test sees that through the client.
                    let _ = serve(stream, &shared_for_worker);
                });
                shared.workers.lock().unwrap().push(worker);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Reads one request, records it, writes the next scripted response, closes.
fn serve(stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(SOCKET_TIMEOUT))?;
    stream.set_write_timeout(Some(SOCKET_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);

    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let path = parts.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let _in_flight = InFlight::start(shared);

    // Taking the script item and recording the request under one lock keeps
    // the n-th record paired with the n-th response.
    let response = {
        let mut requests = shared.requests.lock().unwrap();
        let body: Value = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
        let first_user = first_user_text(&body);
        requests.push(RecordedRequest {
            method,
            path,
            headers,
            body,
            raw_body,
            at: Instant::now(),
            first_user: first_user.clone(),
        });
        let mut routes = shared.routes.lock().unwrap();
        match routes
            .iter_mut()
            .find(|(key, _)| first_user.contains(key.as_str()))
        {
            Some((_, script)) => script.pop_front(),
            None => shared.script.lock().unwrap().pop_front(),
        }
    };
    let response = response.unwrap_or_else(|| {
        Scripted::status(
            418,
            json!({"error": {"message": "llm_server: script exhausted"}}).to_string(),
        )
    });

    let mut out = stream;
    let stopped = || shared.stop.load(Ordering::SeqCst);
    let response = match response {
        Scripted::Late { hold, then } => {
            pause(hold, &stopped);
            *then
        }
        Scripted::Together { n, then } => {
            let n = n.max(1);
            let group_end = (shared.met.fetch_add(1, Ordering::SeqCst) / n + 1) * n;
            let until = Instant::now() + TOGETHER_MAX;
            while shared.met.load(Ordering::SeqCst) < group_end
                && Instant::now() < until
                && !stopped()
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            *then
        }
        other => other,
    };
    const STREAM_HEADERS: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    match response {
        Scripted::Stream { events } => {
            out.write_all(STREAM_HEADERS.as_bytes())?;
            out.flush()?;
            for event in events {
                out.write_all(event.as_bytes())?;
                out.flush()?;
            }
        }
        Scripted::Raw {
            status,
            headers,
            body,
        } => {
            let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                head.push_str("content-type: application/json\r\n");
            }
            for (k, v) in &headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            out.write_all(head.as_bytes())?;
            out.write_all(body.as_bytes())?;
            out.flush()?;
        }
        Scripted::Dropped { head } => {
            out.write_all(STREAM_HEADERS.as_bytes())?;
            out.write_all(head.as_bytes())?;
            out.flush()?;
        }
        Scripted::Stalled { head, hold } => {
            out.write_all(STREAM_HEADERS.as_bytes())?;
            out.write_all(head.as_bytes())?;
            out.flush()?;
            let until = Instant::now() + hold;
            while Instant::now() < until && !stopped() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Scripted::Forever { head, event, every } => {
            out.write_all(STREAM_HEADERS.as_bytes())?;
            out.write_all(head.as_bytes())?;
            out.flush()?;
            // A write fails once the client hangs up; that ends it too.
            while !stopped() {
                out.write_all(event.as_bytes())?;
                out.flush()?;
                pause(every, &stopped);
            }
        }
        Scripted::Slowloris { every } => {
            // A status line, then one header whose value never ends.
            let head = "HTTP/1.1 200 OK\r\nx-slow: ".bytes();
            for byte in head.chain(std::iter::repeat(b'a')) {
                if stopped() {
                    break;
                }
                out.write_all(&[byte])?;
                out.flush()?;
                pause(every, &stopped);
            }
        }
        Scripted::Silent { hold } => pause(hold, &stopped),
        // Unwrapped above; a held response inside a held one is not held twice.
        Scripted::Late { .. } | Scripted::Together { .. } => {}
    }
    out.shutdown(Shutdown::Both)
}

/// The text of the first user message of a request body, in either wire
/// format (a string, or text blocks); empty when there is none.
fn first_user_text(body: &Value) -> String {
    let Some(message) = body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
    else {
        return String::new();
    };
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Sleeps for `length`, in small steps so that a stopping server is not held up.
fn pause(length: Duration, stopped: &dyn Fn() -> bool) {
    let until = Instant::now() + length;
    while Instant::now() < until && !stopped() {
        std::thread::sleep(Duration::from_millis(5).min(length));
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        418 => "I'm a teapot",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
