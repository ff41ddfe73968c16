//! MCP servers' tools for the agent (the client side of the Model Context
//! Protocol, through the official Rust SDK, `rmcp`).
//!
//! [`McpHub`] holds the configured servers of one run or session: it starts
//! them side by side ([`McpHub::start`]: initialize, every page of
//! `tools/list`), offers their tools to the model as `mcp__SERVER__TOOL`
//! with their input schemas ([`McpHub::specs`]), calls one
//! ([`McpHub::call`]) with the server's timeout (a hung call is cancelled:
//! the server gets `notifications/cancelled`), turns the result into the
//! text the model reads, and starts a server again on the next call after it
//! died. A server that fails to start is reported once and left out; a
//! `notifications/tools/list_changed` lists its tools again, and the next
//! turn sees them. The hub is shared (`Arc`), cheap to clone into the
//! [`Tools`](super::tools::Tools) of a child agent.
//!
//! Names: the providers take `^[a-zA-Z0-9_-]{1,64}$`, so other characters
//! become `_` and the name is cut at 64; the hub keeps the way back. Two
//! tools that end up with one name are a collision: the first is offered,
//! the other is not, and the start-up notes say so.
//!
//! Why two reqwests: rmcp 3.11 speaks HTTP through reqwest 0.13, lancet's
//! providers through 0.12. Moving the providers to 0.13 would trade
//! lancet's webpki roots for 0.13's platform verifier (0.13 has no webpki
//! feature) in a change to every provider; the MCP client instead builds its
//! 0.13 client with lancet's own rustls configuration (`http`), and the two
//! share hyper, http and rustls.
//!
//! Owns: servers, connections, names, calls, results. Does not own:
//! permissions (the tools ask before calling), configuration files (the
//! binary turns a [`Layer`](super::config::Layer)'s `mcp` into
//! [`ServerConfig`]s, reading `bearer_token_env` from its environment), or
//! words (`words::mcp`). Invariant: the library reads no environment; every
//! failure of a server is a result or a state, never a panic or a stop.

mod content;
mod http;
mod server;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde_json::Value;

use super::config::McpServer;
use super::types::ToolSpec;
use super::words;
use server::{Called, Server};

/// The prefix of every MCP tool's name, as the model sees it.
pub const PREFIX: &str = "mcp__";
/// The longest tool name the providers take.
const NAME_MAX: usize = 64;

/// How one server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (on top of lancet's environment).
        env: BTreeMap<String, String>,
        /// The directory it runs in; `None`: the project root (`cwd =
        /// "project"`, the user's choice).
        dir: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// The bearer token (`Authorization: Bearer …`).
        bearer: Option<String>,
    },
}

/// One server, resolved from the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Its name in the configuration (`[mcp.servers.NAME]`).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Whether it is started.
    pub enabled: bool,
    /// How long one call may take.
    pub timeout: Duration,
    /// How long start-up (to its tools listed) may take.
    pub startup_timeout: Duration,
    /// Only these tools are offered (names or globs); `None`: all.
    pub allow: Option<Vec<String>>,
    /// These tools are never offered.
    pub deny: Vec<String>,
}

/// Why a server's configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpConfigError {
    /// Neither `command` nor `url`.
    #[error("MCP server `{server}` has neither `command` (stdio) nor `url` (Streamable HTTP)")]
    NoTransport {
        /// The server's name.
        server: String,
    },
    /// Both `command` and `url`.
    #[error("MCP server `{server}` has both `command` and `url`: give one")]
    BothTransports {
        /// The server's name.
        server: String,
    },
    /// The token's variable is not set.
    #[error(
        "MCP server `{server}`: the environment variable `{var}` (bearer_token_env) is not set"
    )]
    NoToken {
        /// The server's name.
        server: String,
        /// The variable.
        var: String,
    },
    /// A `cwd` that is neither `"project"` nor an absolute path.
    #[error(
        "MCP server `{server}` has `cwd = \"{cwd}\"`: give an absolute path, or \"project\" for the project root"
    )]
    RelativeCwd {
        /// The server's name.
        server: String,
        /// The value given.
        cwd: String,
    },
    /// A name the tool names could not carry.
    #[error(
        "MCP server name `{server}` may hold only letters, digits, `-` and `_` (no `__`), and be at most 32 long"
    )]
    BadName {
        /// The server's name.
        server: String,
    },
}

impl ServerConfig {
    /// `[mcp.servers.NAME]` as a server; `var` looks up `bearer_token_env`
    /// (the caller's environment: the library reads none).
    pub fn from_layer(
        name: &str,
        s: &McpServer,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<ServerConfig, McpConfigError> {
        let server = || name.to_owned();
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if name.is_empty() || name.len() > 32 || !name.chars().all(valid) || name.contains("__") {
            return Err(McpConfigError::BadName { server: server() });
        }
        let transport = match (&s.command, &s.url) {
            (Some(_), Some(_)) => return Err(McpConfigError::BothTransports { server: server() }),
            (None, None) => return Err(McpConfigError::NoTransport { server: server() }),
            (Some(command), None) => Transport::Stdio {
                command: command.clone(),
                args: s.args.clone().unwrap_or_default(),
                env: s.env.clone().unwrap_or_default(),
                // Not the project by default: a repository's files must not
                // steer the user's command (`npx` prefers the directory's own
                // `node_modules`, `python -m` imports from it).
                dir: match s.cwd.as_deref() {
                    Some("project") => None,
                    Some(d) if Path::new(d).is_absolute() => Some(PathBuf::from(d)),
                    Some(d) => {
                        return Err(McpConfigError::RelativeCwd {
                            server: server(),
                            cwd: d.to_owned(),
                        });
                    }
                    None => Some(
                        var("HOME")
                            .filter(|h| Path::new(h).is_absolute())
                            .map_or_else(|| PathBuf::from("/"), PathBuf::from),
                    ),
                },
            },
            (None, Some(url)) => {
                // A server switched off needs no token (`lancet mcp call`
                // asks for it when it calls one by hand).
                let bearer = match &s.bearer_token_env {
                    Some(v) if s.enabled != Some(false) => {
                        Some(var(v).ok_or_else(|| McpConfigError::NoToken {
                            server: server(),
                            var: v.clone(),
                        })?)
                    }
                    Some(v) => var(v),
                    None => None,
                };
                Transport::Http {
                    url: url.clone(),
                    headers: s.headers.clone().unwrap_or_default(),
                    bearer,
                }
            }
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            enabled: s.enabled.unwrap_or(true),
            timeout: Duration::from_secs(s.timeout.unwrap_or(60)),
            startup_timeout: Duration::from_secs(s.startup_timeout.unwrap_or(30)),
            allow: s.allow.clone(),
            deny: s.deny.clone(),
        })
    }
}

/// A server's state, as `lancet mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum State {
    /// Not started yet.
    Starting,
    /// Connected; its tools are offered.
    Connected,
    /// `enabled = false`.
    Disabled,
    /// Could not start, or stopped; why.
    Failed(String),
}

/// How a call ended, as data (the CLI's exit status follows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallStatus {
    /// The tool answered.
    Ok,
    /// The tool answered with `isError`, or the server refused the call.
    ToolError,
    /// The server could not be reached, died, or did not answer in time.
    ServerFailed,
    /// No such tool.
    Unknown,
}

/// The result of one call: what the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpOutcome {
    /// The text.
    pub content: String,
    /// How it ended.
    pub status: CallStatus,
}

impl McpOutcome {
    /// Whether the model should read it as an error.
    pub fn is_error(&self) -> bool {
        self.status != CallStatus::Ok
    }
}

/// One tool as offered to the model.
#[derive(Debug, Clone)]
struct Offered {
    name: String,
    server: usize,
    tool: String,
    description: String,
    schema: Value,
}

/// The MCP servers of one run or session.
pub struct McpHub {
    servers: Vec<Server>,
    /// Servers whose configuration could not be used: name and why.
    unusable: Vec<(String, String)>,
    /// Bumped whenever a server's tools change.
    generation: Arc<AtomicU64>,
    /// Most bytes of a result kept (head and tail).
    max_output: usize,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.servers.len())
            .finish_non_exhaustive()
    }
}

/// A server as `lancet mcp list` shows it.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: State,
    /// Its tools: name (the server's) and the first line of the description.
    pub tools: Vec<(String, String)>,
}

impl McpHub {
    /// Starts every enabled server side by side (each within its start-up
    /// timeout), stdio servers whose `cwd` is "project" in `root`. `servers` holds the configuration
    /// of each, or why it cannot be used. Returns the hub and the one-line
    /// notes to show once (servers that failed, name collisions).
    pub async fn start(
        servers: Vec<Result<ServerConfig, McpConfigError>>,
        root: &Path,
        max_output: usize,
    ) -> (Arc<McpHub>, Vec<String>) {
        let generation = Arc::new(AtomicU64::new(0));
        let mut hub = McpHub {
            servers: Vec::new(),
            unusable: Vec::new(),
            generation: generation.clone(),
            max_output,
        };
        for s in servers {
            match s {
                Ok(c) => hub
                    .servers
                    .push(Server::new(c, root.to_path_buf(), generation.clone())),
                Err(e) => {
                    let name = match &e {
                        McpConfigError::NoTransport { server }
                        | McpConfigError::BothTransports { server }
                        | McpConfigError::NoToken { server, .. }
                        | McpConfigError::RelativeCwd { server, .. }
                        | McpConfigError::BadName { server } => server.clone(),
                    };
                    hub.unusable.push((name, e.to_string()));
                }
            }
        }
        let starts = hub
            .servers
            .iter()
            .filter(|s| s.config.enabled)
            .map(|s| async move { (s.config.name.clone(), s.start().await) });
        let results = futures_util::future::join_all(starts).await;
        let mut notes: Vec<String> = hub
            .unusable
            .iter()
            .map(|(name, why)| words::mcp::not_started(name, why))
            .collect();
        for (name, r) in results {
            if let Err(why) = r {
                notes.push(words::mcp::not_started(&name, &why));
            }
        }
        notes.extend(hub.offered().1);
        (Arc::new(hub), notes)
    }

    /// A counter that moves whenever a server's tool list changes (a
    /// `tools/list_changed` notification was followed).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty() && self.unusable.is_empty()
    }

    /// The tools offered, and the collisions (as notes).
    fn offered(&self) -> (Vec<Offered>, Vec<String>) {
        let mut out: Vec<Offered> = Vec::new();
        let mut seen: HashMap<String, (String, String)> = HashMap::new();
        let mut collisions = Vec::new();
        for (i, s) in self.servers.iter().enumerate() {
            // A server that died keeps its tools: the next call starts it again.
            if !s.config.enabled {
                continue;
            }
            let Ok(tools) = s.tools.read() else { continue };
            for t in tools.iter() {
                let name = model_name(&s.config.name, &t.name);
                if let Some((server, tool)) = seen.get(&name) {
                    collisions.push(words::mcp::collision(
                        &name,
                        (server, tool),
                        (&s.config.name, &t.name),
                    ));
                    continue;
                }
                seen.insert(name.clone(), (s.config.name.clone(), t.name.to_string()));
                out.push(Offered {
                    name,
                    server: i,
                    tool: t.name.to_string(),
                    description: t
                        .description
                        .as_deref()
                        .map(str::to_owned)
                        .unwrap_or_default(),
                    schema: Value::Object((*t.input_schema).clone()),
                });
            }
        }
        (out, collisions)
    }

    /// The tools to offer the model (as of now: a list that changed shows).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.offered()
            .0
            .into_iter()
            .map(|o| ToolSpec {
                description: words::mcp::description(
                    &self.servers[o.server].config.name,
                    &o.description,
                ),
                name: o.name,
                parameters: o.schema,
            })
            .collect()
    }

    /// Whether `name` is one of the tools offered now.
    pub fn offers(&self, name: &str) -> bool {
        self.offered().0.iter().any(|o| o.name == name)
    }

    /// Calls the tool the model knows as `name` (`mcp__SERVER__TOOL`) with
    /// the JSON text `arguments`.
    pub async fn call(&self, name: &str, arguments: &str) -> McpOutcome {
        let offered = self.offered().0;
        let Some(o) = offered.iter().find(|o| o.name == name) else {
            let names: Vec<&str> = offered.iter().map(|o| o.name.as_str()).collect();
            return McpOutcome {
                content: words::mcp::unknown_tool(name, &names),
                status: CallStatus::Unknown,
            };
        };
        self.call_server(o.server, &o.tool, name, arguments).await
    }

    /// Calls `tool` of the server named `server` by hand (`lancet mcp call`):
    /// every tool the server lists, offered or not.
    pub async fn call_by_hand(&self, server: &str, tool: &str, arguments: &str) -> McpOutcome {
        let Some(i) = self.servers.iter().position(|s| s.config.name == server) else {
            let why = self
                .unusable
                .iter()
                .find(|(n, _)| n == server)
                .map(|(_, why)| why.clone())
                .unwrap_or_else(|| words::mcp::no_server(server));
            return McpOutcome {
                content: why,
                status: CallStatus::ServerFailed,
            };
        };
        let name = model_name(server, tool);
        self.call_server(i, tool, &name, arguments).await
    }

    async fn call_server(&self, i: usize, tool: &str, name: &str, arguments: &str) -> McpOutcome {
        let server = &self.servers[i];
        let arguments = match parse_arguments(arguments) {
            Ok(a) => a,
            Err(why) => {
                return McpOutcome {
                    content: words::mcp::bad_arguments(name, &why),
                    status: CallStatus::ToolError,
                };
            }
        };
        let (content, status) = match server.call(tool, arguments).await {
            Called::Result(r) => {
                let text = content::render(&r, self.max_output);
                if r.is_error == Some(true) {
                    (text, CallStatus::ToolError)
                } else {
                    (text, CallStatus::Ok)
                }
            }
            Called::Refused(why) => (
                words::mcp::refused_by_server(&server.config.name, tool, &why),
                CallStatus::ToolError,
            ),
            Called::TimedOut(after) => {
                (words::mcp::timed_out(name, after), CallStatus::ServerFailed)
            }
            Called::Died(why) => (
                words::mcp::died(&server.config.name, &why),
                CallStatus::ServerFailed,
            ),
            Called::Unavailable(why) => (
                words::mcp::unavailable(&server.config.name, &why),
                CallStatus::ServerFailed,
            ),
        };
        McpOutcome {
            content: content::clip(&content, self.max_output),
            status,
        }
    }

    /// Every configured server, its state and its tools (for `lancet mcp list`).
    pub fn report(&self) -> Vec<ServerReport> {
        let mut out: Vec<ServerReport> = self
            .servers
            .iter()
            .map(|s| ServerReport {
                name: s.config.name.clone(),
                state: s.state(),
                tools: s
                    .tools
                    .read()
                    .map(|t| {
                        t.iter()
                            .map(|t| {
                                let d = t.description.as_deref().unwrap_or("");
                                (
                                    t.name.to_string(),
                                    d.lines().next().unwrap_or("").trim().to_owned(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect();
        out.extend(self.unusable.iter().map(|(name, why)| ServerReport {
            name: name.clone(),
            state: State::Failed(why.clone()),
            tools: Vec::new(),
        }));
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Closes every connection (stdio servers' processes are killed).
    pub async fn shutdown(&self) {
        futures_util::future::join_all(self.servers.iter().map(Server::stop)).await;
    }
}

/// A report ([`McpHub::report`]) as `lancet mcp list` prints it.
pub fn render_report(report: &[ServerReport]) -> String {
    words::mcp::list(report)
}

/// The arguments a model (or a person) wrote: a JSON object; empty is `{}`.
fn parse_arguments(text: &str) -> Result<rmcp::model::JsonObject, String> {
    if text.trim().is_empty() {
        return Ok(rmcp::model::JsonObject::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => Ok(o),
        // Arguments encoded twice (a JSON string holding the object).
        Ok(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(o)) => Ok(o),
            _ => Err(words::mcp::not_an_object()),
        },
        Ok(_) => Err(words::mcp::not_an_object()),
        Err(e) => Err(e.to_string()),
    }
}

/// `mcp__SERVER__TOOL`, with every character the providers refuse as `_`,
/// cut to 64 bytes.
pub fn model_name(server: &str, tool: &str) -> String {
    let mut name: String = format!("{PREFIX}{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(NAME_MAX);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fit_the_providers() {
        assert_eq!(
            model_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(model_name("db", "run query.v2"), "mcp__db__run_query_v2");
        let long = model_name("s", &"x".repeat(100));
        assert_eq!(long.len(), 64);
        assert_eq!(model_name("s", "é"), "mcp__s___");
    }

    #[test]
    fn configuration_is_checked() {
        let stdio = McpServer {
            command: Some("srv".into()),
            ..McpServer::default()
        };
        let c = ServerConfig::from_layer("a", &stdio, |_| None).unwrap();
        assert_eq!(c.timeout, Duration::from_secs(60));
        assert_eq!(c.startup_timeout, Duration::from_secs(30));
        assert!(c.enabled);
        for bad in ["", "a__b", "a b", &"x".repeat(33)] {
            assert!(matches!(
                ServerConfig::from_layer(bad, &stdio, |_| None),
                Err(McpConfigError::BadName { .. })
            ));
        }
        let none = McpServer::default();
        assert!(matches!(
            ServerConfig::from_layer("a", &none, |_| None),
            Err(McpConfigError::NoTransport { .. })
        ));
        let http = McpServer {
            url: Some("http://127.0.0.1:1/mcp".into()),
            bearer_token_env: Some("TOKEN".into()),
            ..McpServer::default()
        };
        assert!(matches!(
            ServerConfig::from_layer("a", &http, |_| None),
            Err(McpConfigError::NoToken { .. })
        ));
        let c =
            ServerConfig::from_layer("a", &http, |v| (v == "TOKEN").then(|| "t0k".into())).unwrap();
        assert!(matches!(c.transport, Transport::Http { bearer: Some(ref b), .. } if b == "t0k"));
        let both = McpServer {
            command: Some("x".into()),
            ..http
        };
        assert!(matches!(
            ServerConfig::from_layer("a", &both, |_| None),
            Err(McpConfigError::BothTransports { .. })
        ));
    }

    #[test]
    fn arguments_are_an_object() {
        assert!(parse_arguments("").unwrap().is_empty());
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(parse_arguments(r#""{\"a\":1}""#).unwrap()["a"], 1);
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{").is_err());
    }
}
