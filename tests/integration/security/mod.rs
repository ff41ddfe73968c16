//! The security suite: each numbered item of the red-team pass (issue
//! "Hostile repositories, hostile input, hostile servers") as a regression
//! test that failed before its fix. One file per area; each test names the
//! item it pins.

mod engine;
#[cfg(feature = "agent")]
mod permissions;
#[cfg(feature = "agent")]
mod processes;
#[cfg(feature = "agent")]
mod provider;
#[cfg(feature = "agent")]
mod sandbox;
#[cfg(feature = "agent")]
mod tools;
#[cfg(feature = "agent")]
mod trust;
