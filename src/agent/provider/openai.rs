//! The OpenAI-compatible Chat Completions wire: the request body
//! (`messages` with `system`, `tool` and `tool_calls` entries, `tools` as
//! functions, streaming with usage) and the reading of its `data:` chunks
//! into a reply.
//!
//! Servers that speak this wire differ (OpenAI, Ollama, llama.cpp, vLLM, LM
//! Studio, proxies), so the reader is lenient where they are: tool calls
//! told apart by `index` or, without one, by `id`; arguments as JSON text or
//! as an object; a missing call id replaced by its index; "stop" with tool
//! calls read as a tool-use stop. What it owns is the wire's shape; what
//! counts as a retryable error and the transport belong to the parent module.
//!
//! Invariant: tool calls are announced only when the choice finishes (or the
//! stream ends), because their deltas may interleave; text streams at once.

use serde_json::{Map, Value, json};

use super::sse::SseEvent;
use super::{Decoder, Failure, Protocol, arguments_object, parse_json, results_first, stream_error, u64_at};
use crate::agent::types::{Block, Message, Reply, Request, Role, StopReason, StreamEvent, Usage};

/// The wire, as the `wires!` table names it.
pub(super) const PROTOCOL: OpenAi = OpenAi;

/// OpenAI-compatible Chat Completions.
pub(super) struct OpenAi;

impl Protocol for OpenAi {
    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    fn authorize(
        &self,
        builder: reqwest::RequestBuilder,
        key: Option<&str>,
    ) -> reqwest::RequestBuilder {
        match key {
            Some(key) => builder.bearer_auth(key),
            None => builder,
        }
    }

    fn body(&self, model: &str, req: &Request) -> Value {
        body(model, req)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::<OpenAiStream>::default()
    }
}

/// The Chat Completions body: the system prompt as the first message, tool
/// results as `tool` messages before the user's text, calls as `tool_calls`.
fn body(model: &str, req: &Request) -> Value {
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
    /// Bytes of text and arguments so far.
    size: usize,
}

impl Decoder for OpenAiStream {
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
                    self.size += text.len();
                    on_event(StreamEvent::Text(text.to_owned()));
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for call in calls {
                        self.size += self.call_delta(call);
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

    fn complete_without_marker(&self) -> bool {
        self.finish_reason.is_some()
    }

    fn size(&self) -> usize {
        self.size
    }

    fn finish(mut self: Box<Self>, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> Reply {
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

impl OpenAiStream {
    /// Folds one tool-call delta into its call. Calls are told apart by
    /// `index`; id and name come first, `arguments` in pieces. Returns how
    /// many bytes of arguments it added.
    fn call_delta(&mut self, delta: &Value) -> usize {
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
            return 0;
        };
        if call.id.is_empty() {
            call.id = id.to_owned();
        }
        if call.name.is_empty() {
            call.name = name.to_owned();
        }
        let before = call.arguments.len();
        match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(piece)) => call.arguments.push_str(piece),
            // Some servers send the arguments as an object rather than JSON text.
            Some(v @ Value::Object(_)) => call.arguments.push_str(&v.to_string()),
            _ => {}
        }
        call.arguments.len() - before
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
}

#[cfg(test)]
mod tests {
    use super::super::sse::ev;
    use super::super::{Wire, decode};
    use super::*;
    use crate::agent::types::ProviderError;

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
}
