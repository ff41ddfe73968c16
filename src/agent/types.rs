//! The conversation as data, independent of any provider's wire format.
//!
//! A [`Message`] is a role and a list of [`Block`]s (text, a tool call, a
//! tool result). Providers translate to and from their own JSON; the loop,
//! the sessions and the JSON event stream only see these types.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or the loop on its behalf: tool results travel as user turns).
    User,
    /// The model.
    Assistant,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model asks to call a tool.
    ToolCall {
        /// The provider's id for the call (echoed in the result).
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model wrote them (JSON text, possibly malformed).
        arguments: String,
    },
    /// What a tool call returned.
    ToolResult {
        /// The id of the call it answers.
        id: String,
        /// The result text the model reads.
        content: String,
        /// Whether the call failed.
        is_error: bool,
    },
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its parts, in order.
    pub blocks: Vec<Block>,
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            blocks: vec![Block::Text { text: text.into() }],
        }
    }

    /// The message's tool calls, in order: `(id, name, arguments)`.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            _ => None,
        })
    }

    /// The message's text parts, joined.
    pub fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A tool the model may call: its name, what it does, and its arguments' JSON schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// A JSON schema for its arguments.
    pub parameters: serde_json::Value,
}

/// Tokens a request used, as the provider counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

/// What the model is asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The model, as the provider names it.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools it may call (empty in text mode).
    pub tools: Vec<ToolSpec>,
    /// The most tokens to generate.
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    End,
    /// It wants tool results.
    ToolUse,
    /// It ran out of tokens.
    MaxTokens,
}

/// A model's reply: its message, why it stopped, and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The assistant message (text and tool calls).
    pub message: Message,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens used.
    pub usage: Usage,
}

/// Something that arrives while a reply streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More text.
    Text(String),
    /// A tool call, complete (its argument deltas assembled).
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
    },
}

/// Why a provider call failed, after retries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The key was refused (401/403).
    #[error("authentication failed ({status})")]
    Auth {
        /// HTTP status.
        status: u16,
        /// What the server said.
        body: String,
    },
    /// The model does not exist on that endpoint (404, or a model error).
    #[error("model not found")]
    ModelNotFound {
        /// What the server said.
        body: String,
    },
    /// The conversation no longer fits the model's context window.
    #[error("context window exceeded")]
    ContextOverflow {
        /// What the server said.
        body: String,
    },
    /// Still rate limited after every retry (429).
    #[error("rate limited")]
    RateLimited {
        /// What the server said.
        body: String,
    },
    /// The server failed (5xx) after every retry.
    #[error("server error {status}")]
    Server {
        /// HTTP status.
        status: u16,
        /// What the server said.
        body: String,
    },
    /// Any other refusal (400 and friends).
    #[error("request refused ({status})")]
    Refused {
        /// HTTP status.
        status: u16,
        /// What the server said.
        body: String,
    },
    /// No connection, or it broke, after every retry.
    #[error("connection failed: {0}")]
    Connection(String),
    /// The server went quiet for longer than the idle timeout.
    #[error("timed out")]
    Timeout,
    /// The response could not be read.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The server answered with a redirect (3xx). Redirects are not
    /// followed: the request carries the key, which must not go elsewhere.
    #[error("redirected ({status})")]
    Redirected {
        /// HTTP status.
        status: u16,
        /// Where it pointed (made absolute), if it said.
        location: Option<String>,
        /// The base URL whose endpoint `location` is, when it ends with the
        /// wire's path: what to configure if that server is the right one.
        location_base: Option<String>,
    },
    /// A success status without an event stream (a JSON or HTML body where
    /// `text/event-stream` was expected).
    #[error("no event stream")]
    NotEventStream {
        /// The `Content-Type` it sent, if any.
        content_type: Option<String>,
        /// The start of what it sent.
        body: String,
    },
    /// A bound on one reply ended it.
    #[error("stopped by {0}")]
    LimitReached(Limit),
    /// The base URL cannot be used; refused before any request.
    #[error("unusable base URL `{url}`")]
    InvalidBaseUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        problem: BaseUrlProblem,
    },
}

/// A bound on one reply (see the provider's configuration); each ends the
/// reply as [`ProviderError::LimitReached`] and is never retried. (The idle
/// timeout, which is retried, ends as [`ProviderError::Timeout`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// The turn's wall-clock limit: the whole reply, retries included.
    Turn(std::time::Duration),
    /// The most bytes of text and tool arguments one reply may hold (and the
    /// most one event of its stream may hold).
    ReplyBytes(usize),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Turn(d) => write!(f, "the turn limit ({} s)", d.as_secs_f64()),
            Limit::ReplyBytes(n) => write!(f, "the reply size cap ({n} bytes)"),
        }
    }
}

/// Why a base URL was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaseUrlProblem {
    /// It does not parse as a URL; the parser's reason.
    Unparsable(String),
    /// Its scheme is not `http` or `https` (`file`, `ftp`…).
    Scheme(String),
    /// It names no host.
    NoHost,
    /// It has a `?query` or a `#fragment`, which the endpoint path would
    /// end up behind.
    QueryOrFragment,
}
