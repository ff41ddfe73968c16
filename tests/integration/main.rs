//! lancet's integration tests: one test binary (link time matters on small
//! machines), one module per area.

// Tests fail loudly by design: a panic with the value is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(feature = "agent")]
mod agent_context;
#[cfg(feature = "agent")]
mod agent_endings;
#[cfg(feature = "agent")]
mod agent_provider;
#[cfg(feature = "agent")]
mod agent_run;
#[cfg(feature = "agent")]
mod agent_task;
#[cfg(feature = "agent")]
mod bench;
#[cfg(feature = "agent")]
mod bench_limits;
#[cfg(feature = "agent")]
mod bench_local;
#[cfg(all(feature = "agent", feature = "syntax"))]
mod bench_mutate;
#[cfg(feature = "agent")]
mod bench_report;
#[cfg(feature = "agent")]
mod bench_sim;
mod cli;
mod engine;
mod feedback;
mod fixtures;
mod fuzz_regressions;
mod layout;
#[cfg(feature = "agent")]
mod llm_server;
#[cfg(all(feature = "agent", unix))]
mod mcp;
mod props;
mod security;
#[cfg(all(feature = "agent", unix))]
mod session;
