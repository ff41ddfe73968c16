//! The Anthropic Messages wire: the request body (`system`, content blocks,
//! `tool_use` / `tool_result`, tools with an `input_schema`), the
//! `x-api-key` and `anthropic-version` headers, and the reading of its named
//! events (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `error`) into a reply.
//!
//! What it owns is the wire's shape; what counts as a retryable error and
//! the transport belong to the parent module. Invariant: blocks are kept in
//! their `index` order, and a tool call is announced when its block closes
//! (its input is complete then); block kinds the loop does not use
//! (thinking, server tools) are read past, not refused.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::sse::SseEvent;
use super::{Decoder, Failure, Protocol, arguments_object, parse_json, results_first, stream_error, u64_at};
use crate::agent::types::{Block, Message, Reply, Request, Role, StopReason, StreamEvent, Usage};

/// The wire, as the `wires!` table names it.
pub(super) const PROTOCOL: Anthropic = Anthropic;

/// The version header every Anthropic Messages request carries.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Anthropic Messages.
pub(super) struct Anthropic;

impl Protocol for Anthropic {
    fn path(&self) -> &'static str {
        "/v1/messages"
    }

    fn authorize(
        &self,
        builder: reqwest::RequestBuilder,
        key: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let builder = match key {
            Some(key) => builder.header("x-api-key", key),
            None => builder,
        };
        builder.header("anthropic-version", ANTHROPIC_VERSION)
    }

    fn body(&self, model: &str, req: &Request) -> Value {
        body(model, req)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::<AnthropicStream>::default()
    }
}

/// The Messages body: the system prompt as `system`, content blocks per
/// message (tool results first), tools with their `input_schema`.
fn body(model: &str, req: &Request) -> Value {
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
    /// Bytes of text and tool input so far.
    size: usize,
}

impl Decoder for AnthropicStream {
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
                        self.size += text.len();
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
                            self.size += piece.len();
                            on_event(StreamEvent::Text(piece.to_owned()));
                        }
                    }
                    (Some(OpenBlock::Tool { json, .. }), Some("input_json_delta")) => {
                        if let Some(piece) = delta.get("partial_json").and_then(Value::as_str) {
                            json.push_str(piece);
                            self.size += piece.len();
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

    fn complete_without_marker(&self) -> bool {
        self.stop_reason.is_some()
    }

    fn size(&self) -> usize {
        self.size
    }

    fn finish(mut self: Box<Self>, on_event: &mut (dyn FnMut(StreamEvent) + Send)) -> Reply {
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

impl AnthropicStream {
    /// Closes the block at `index`: an empty text block is dropped, a tool
    /// call is announced.
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
}

#[cfg(test)]
mod tests {
    use super::super::sse::ev;
    use super::super::{Wire, decode};
    use super::*;
    use crate::agent::types::ProviderError;

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
    fn anthropic_input_must_be_an_object() {
        assert_eq!(tool_input("{\"a\":1}"), json!({"a": 1}));
        assert_eq!(tool_input("{\"a\":"), json!({}));
        assert_eq!(tool_input("[1]"), json!({}));
    }
}
