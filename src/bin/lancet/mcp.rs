//! `lancet mcp list [-C DIR]` and `lancet mcp call [-C DIR] SERVER TOOL
//! [JSON]`: the configured MCP servers, their states and tools, and one
//! call by hand (for debugging a server), printed as the model would read
//! it; and [`start`], which `lancet run` and the session use to start the
//! servers of a run.
//!
//! The configuration is `lancet run`'s (the same files, the same trust: an
//! untrusted project's `.lancet.toml` may not add or change a server). This
//! is where `bearer_token_env` is read from the environment. Exit status of
//! `call`: 0 the tool answered, 1 it answered with `isError` (or the server
//! refused the call), 2 usage or configuration error, 3 the server failed
//! (could not start, died, or did not answer in time). `list`: 0, 2 for a
//! configuration file that cannot be read, 3 when a server failed (it is
//! listed with why).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use lancet::agent::config::Layer;
use lancet::agent::mcp::{CallStatus, McpConfigError, McpHub, ServerConfig};

use crate::error::{Error, Exit};
use crate::style;

#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    #[command(subcommand)]
    pub(crate) command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// MCP servers from the configuration, their states and tools.
    List {
        /// Workspace root (whose .lancet.toml counts; where a server with `cwd = "project"` runs).
        #[arg(short = 'C', long = "root", default_value = ".")]
        root: PathBuf,
    },
    /// Call one MCP tool; prints its result (exit 1: the tool returned an error, 3: the server failed).
    Call {
        /// Workspace root (whose .lancet.toml counts; where a server with `cwd = "project"` runs).
        #[arg(short = 'C', long = "root", default_value = ".")]
        root: PathBuf,
        /// The server's name in the configuration.
        server: String,
        /// The tool's name as the server lists it.
        tool: String,
        /// The arguments, one JSON object (default {}).
        json: Option<String>,
    },
}

/// The servers of `layer`, as the hub takes them (tokens read here).
fn servers(layer: &Layer) -> Vec<Result<ServerConfig, McpConfigError>> {
    layer
        .mcp
        .servers
        .iter()
        .map(|(name, s)| ServerConfig::from_layer(name, s, |v| std::env::var(v).ok()))
        .collect()
}

/// Text from a server, safe on a terminal: what a terminal would act on
/// (escape sequences, a lone carriage return, bidi overrides) as visible
/// escapes, as every untrusted text lancet shows (`for_terminal`).
fn plain(text: &str) -> std::borrow::Cow<'_, str> {
    lancet::agent::permissions::for_terminal(text, lancet::agent::permissions::Layout::Block)
}

/// Starts the servers `layer` configures (none: `None`), on `runtime`, and
/// says once on stderr which were left out.
pub(crate) fn start(
    layer: &Layer,
    root: &Path,
    max_output: usize,
    runtime: &tokio::runtime::Runtime,
) -> Option<Arc<McpHub>> {
    if layer.mcp.servers.is_empty() {
        return None;
    }
    let (hub, notes) = runtime.block_on(McpHub::start(servers(layer), root, max_output));
    for n in notes {
        anstream::eprintln!(
            "{}",
            style::paint(style::NOTICE, &format!("lancet: note: {}", plain(&n)))
        );
    }
    Some(hub)
}

pub(crate) fn mcp(args: &McpArgs) -> Result<Exit, Error> {
    lancet::agent::tools::adopt_orphans();
    let runtime = crate::run::runtime()?;
    let exit = match &args.command {
        McpCommand::List { root } => {
            let (layer, root) = configuration(root)?;
            let (hub, _notes) = runtime.block_on(McpHub::start(servers(&layer), &root, 30_000));
            let report = hub.report();
            crate::print_plain(&plain(&lancet::agent::mcp::render_report(&report)), true);
            // A server that could not start (or whose configuration cannot
            // be used) is exit 3, as for `call`: a script checking its
            // servers can tell.
            let failed = report
                .iter()
                .any(|r| matches!(r.state, lancet::agent::mcp::State::Failed(_)));
            runtime.block_on(hub.shutdown());
            if failed { Exit::Io } else { Exit::Success }
        }
        McpCommand::Call {
            root,
            server,
            tool,
            json,
        } => {
            let arguments = json.as_deref().unwrap_or("{}");
            if !matches!(
                serde_json::from_str::<serde_json::Value>(arguments),
                Ok(serde_json::Value::Object(_))
            ) {
                anstream::eprintln!(
                    "lancet: {}",
                    style::paint(
                        style::BAD,
                        &format!("the arguments must be one JSON object, not `{arguments}`")
                    )
                );
                return Ok(Exit::Usage);
            }
            let (mut layer, root) = configuration(root)?;
            let Some(config) = layer.mcp.servers.remove(server) else {
                anstream::eprintln!(
                    "lancet: {}",
                    style::paint(
                        style::BAD,
                        &format!("there is no MCP server `{server}` in the configuration")
                    )
                );
                return Ok(Exit::Usage);
            };
            let only = match ServerConfig::from_layer(server, &config, |v| std::env::var(v).ok()) {
                Ok(mut c) => {
                    // By hand a disabled server is called all the same: that
                    // is what debugging it needs.
                    c.enabled = true;
                    c
                }
                Err(e) => {
                    anstream::eprintln!("lancet: {}", style::paint(style::BAD, &e.to_string()));
                    return Ok(Exit::Usage);
                }
            };
            let outcome = runtime.block_on(async {
                let (hub, _) = McpHub::start(vec![Ok(only)], &root, usize::MAX).await;
                let outcome = hub.call_by_hand(server, tool, arguments).await;
                hub.shutdown().await;
                outcome
            });
            crate::print_plain(&plain(&outcome.content), true);
            match outcome.status {
                CallStatus::Ok => Exit::Success,
                CallStatus::ToolError | CallStatus::Unknown => Exit::Failed,
                _ => Exit::Io,
            }
        }
    };
    drop(runtime);
    lancet::agent::tools::end_descendants();
    Ok(exit)
}

/// The merged configuration for `root`, and the root as opened.
fn configuration(root: &Path) -> Result<(Layer, PathBuf), Error> {
    let ws = lancet::Workspace::open(root).map_err(|source| Error::RunRoot {
        root: root.to_path_buf(),
        source,
    })?;
    let root = ws.root().to_path_buf();
    Ok((crate::run::layers_trusting(false, &root)?, root))
}

#[cfg(test)]
mod tests {
    use super::plain;

    /// What a server sends is shown, not acted on: escape sequences, a
    /// carriage return and bidi overrides (which reorder what a person
    /// reads) become visible escapes; lines and tabs stay.
    #[test]
    fn a_servers_text_cannot_steer_the_terminal() {
        let shown = plain("ok\x1b[2J\r done\u{202e}gnp.exe\n\tnext");
        assert_eq!(shown, "ok\\x1b[2J\\r done\\u{202e}gnp.exe\n\tnext");
    }
}
