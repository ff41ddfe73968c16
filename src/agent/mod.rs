//! The agent shell behind `lancet run` (feature `agent`): a thin tool-calling
//! loop around the engine.
//!
//! - [`types`]: the conversation as data (messages, tool calls, usage, errors);
//!   provider-neutral, so the loop never sees a wire format.
//! - `provider`: OpenAI-compatible Chat Completions and Anthropic Messages,
//!   streamed, with bounded retries.
//! - `tools`: read, write, edit (the engine, in the chosen edit format), bash,
//!   grep, glob, list; every path through the [`Workspace`](crate::Workspace).
//! - `mcp`: MCP servers' tools (`mcp__SERVER__TOOL`), through `rmcp`.
//! - `permissions`: deny beats ask beats allow.
//! - `sandbox`: the bash tool's OS sandbox (Landlock, a network namespace),
//!   entered by `lancet sandbox` right before it becomes the command.
//! - [`bench`](mod@bench): the benchmark (`lancet bench`): tasks, simulated models,
//!   the runner and its summary, every job through [`run`](run::run).
//! - [`task`]: sub-agents — the `task` tool, run by the loop: children
//!   with a fresh context, run concurrently, their usage rolled up.
//! - `words`: every word the agent writes for the model (system prompt,
//!   tool descriptions and results, compaction notes), snapshot-tested.
//!
//! Nothing here is reachable without the `agent` feature; the engine builds
//! and is tested without it.
//!
//! Public: the entry points the `lancet` binary (and an embedder building
//! its own shell) drives — configuration, models, permissions, providers,
//! the loop, the sandbox, sessions, tools and the conversation types.
//! Crate-private: the loop's own machinery (`context`: compaction;
//! `recover`: text tool calls) and the words.

pub mod bench;
pub mod config;
pub(crate) mod context;
pub mod guard;
pub mod mcp;
pub mod models;
pub mod permissions;
pub mod provider;
pub(crate) mod recover;
pub mod run;
pub mod sandbox;
pub mod session;
pub mod task;
pub mod tools;
pub mod types;
pub(crate) mod words;
