//! lancet's integration tests: one test binary (link time matters on small
//! machines), one module per area.

// Tests fail loudly by design: a panic with the value is the report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli;
mod engine;
mod feedback;
mod fixtures;
mod fuzz_regressions;
mod layout;
mod props;
