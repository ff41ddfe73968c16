//! One MCP server: starting it (a child process over stdio, or a Streamable
//! HTTP endpoint), its tools, calling one with a timeout, and starting it
//! again after it died.
//!
//! A stdio server runs in the directory its `cwd` names (by default the
//! user's home, not the project: see `McpServer::cwd`), in a process group of its own
//! (a terminal's Ctrl-C goes to lancet's foreground group, not to it), with
//! its stderr captured: never shown on the user's terminal, its last lines
//! kept for error messages. The child is killed when its connection is
//! dropped (and `end_descendants` ends whatever is left when lancet exits).
//!
//! Owns: the connection and its state. Does not own: names the model sees,
//! permissions, or words (the hub and `words::mcp`). Invariant: a call never
//! holds the connection's lock while it waits for the server, so calls to
//! one server run side by side and a hung call never blocks a restart.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
    ServerResult, Tool,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError, ServiceExt};

use super::{ServerConfig, State, Transport};
use crate::agent::words;

/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 20;
/// The longest stderr line kept (bytes).
const STDERR_LINE_MAX: usize = 400;

/// What the server's notifications change: its tool list, and the hub's
/// generation counter (bumped on every change, so the next turn sees it).
#[derive(Clone)]
struct Handler {
    tools: Arc<RwLock<Vec<Tool>>>,
    filter: Arc<Filter>,
    generation: Arc<AtomicU64>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, ctx: NotificationContext<RoleClient>) {
        // Listed again off the notification's task: the service answers
        // the list while this handler returns.
        let this = self.clone();
        let peer = ctx.peer.clone();
        tokio::spawn(async move {
            if let Ok(tools) = peer.list_all_tools().await {
                this.store(tools);
            }
        });
    }
}

impl Handler {
    fn store(&self, tools: Vec<Tool>) {
        let tools = tools
            .into_iter()
            .filter(|t| self.filter.offers(&t.name))
            .collect();
        if let Ok(mut slot) = self.tools.write() {
            *slot = tools;
        }
        self.generation.fetch_add(1, Ordering::Relaxed);
    }
}

/// Which of a server's tools are offered (`allow`, `deny`).
pub(super) struct Filter {
    allow: Option<GlobSet>,
    deny: GlobSet,
}

impl Filter {
    fn new(config: &ServerConfig) -> Filter {
        let set = |names: &[String]| {
            let mut b = GlobSetBuilder::new();
            for n in names {
                // A name that is no glob is taken literally.
                let glob = Glob::new(n).or_else(|_| Glob::new(&globset_escape(n)));
                if let Ok(g) = glob {
                    b.add(g);
                }
            }
            b.build().unwrap_or_else(|_| GlobSet::empty())
        };
        Filter {
            allow: config.allow.as_deref().map(set),
            deny: set(&config.deny),
        }
    }

    pub(super) fn offers(&self, tool: &str) -> bool {
        self.allow.as_ref().is_none_or(|a| a.is_match(tool)) && !self.deny.is_match(tool)
    }
}

fn globset_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '*' | '?' | '[' | ']' | '{' | '}' | '\\' => format!("\\{c}"),
            c => c.to_string(),
        })
        .collect()
}

/// How one call ended, as data.
pub(crate) enum Called {
    /// The server answered.
    Result(CallToolResult),
    /// The server said no (a JSON-RPC error: unknown tool, bad arguments…).
    Refused(String),
    /// No answer within the timeout; the request was cancelled.
    TimedOut(Duration),
    /// The server went away during the call (it is started again next time).
    Died(String),
    /// The server could not be (re)started.
    Unavailable(String),
}

/// One configured server.
pub(super) struct Server {
    pub(super) config: ServerConfig,
    root: PathBuf,
    /// The live connection (`None`: not started, failed, or died).
    conn: tokio::sync::Mutex<Option<RunningService<RoleClient, Handler>>>,
    pub(super) tools: Arc<RwLock<Vec<Tool>>>,
    pub(super) state: Mutex<State>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    handler: Handler,
}

impl Server {
    pub(super) fn new(config: ServerConfig, root: PathBuf, generation: Arc<AtomicU64>) -> Server {
        let tools = Arc::new(RwLock::new(Vec::new()));
        let handler = Handler {
            tools: tools.clone(),
            filter: Arc::new(Filter::new(&config)),
            generation,
        };
        let state = if config.enabled {
            State::Starting
        } else {
            State::Disabled
        };
        Server {
            config,
            root,
            conn: tokio::sync::Mutex::new(None),
            tools,
            state: Mutex::new(state),
            stderr: Arc::new(Mutex::new(VecDeque::new())),
            handler,
        }
    }

    pub(super) fn state(&self) -> State {
        self.state
            .lock()
            .map(|s| s.clone())
            .unwrap_or(State::Failed(String::new()))
    }

    fn set_state(&self, state: State) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
    }

    /// Starts the server and lists its tools, within its start-up timeout.
    /// On failure the state says why.
    pub(super) async fn start(&self) -> Result<(), String> {
        let mut conn = self.conn.lock().await;
        self.start_locked(&mut conn).await.map(|_| ())
    }

    async fn start_locked(
        &self,
        conn: &mut Option<RunningService<RoleClient, Handler>>,
    ) -> Result<Peer<RoleClient>, String> {
        *conn = None;
        let limit = self.config.startup_timeout;
        let started = match tokio::time::timeout(limit, self.connect()).await {
            Ok(Ok(service)) => Ok(service),
            Ok(Err(why)) => Err(why),
            Err(_) => Err(words::mcp::start_timed_out(limit)),
        };
        match started {
            Ok(service) => {
                let peer = service.peer().clone();
                *conn = Some(service);
                self.set_state(State::Connected);
                Ok(peer)
            }
            Err(why) => {
                let why = self.with_stderr(why);
                self.set_state(State::Failed(why.clone()));
                Err(why)
            }
        }
    }

    /// `why` with the last lines the server wrote on stderr.
    fn with_stderr(&self, why: String) -> String {
        let lines: Vec<String> = self
            .stderr
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default();
        words::mcp::with_stderr(&why, &lines)
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, Handler>, String> {
        let service = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                dir,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args)
                    .envs(env)
                    .current_dir(dir.as_deref().unwrap_or(&self.root))
                    .kill_on_drop(true);
                #[cfg(unix)]
                cmd.process_group(0);
                let (child, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| words::mcp::spawn_failed(command, &e))?;
                if let Some(stderr) = stderr {
                    let kept = self.stderr.clone();
                    tokio::spawn(keep_stderr(stderr, kept));
                }
                self.handler
                    .clone()
                    .serve(child)
                    .await
                    .map_err(|e| words::mcp::init_failed(&e))?
            }
            Transport::Http {
                url,
                headers,
                bearer,
            } => {
                let transport = super::http::transport(url, headers, bearer.as_deref())?;
                self.handler
                    .clone()
                    .serve(transport)
                    .await
                    .map_err(|e| words::mcp::init_failed(&e))?
            }
        };
        let tools = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| words::mcp::list_failed(&e))?;
        self.handler.store(tools);
        Ok(service)
    }

    /// A live connection's peer, starting the server again when it died.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut conn = self.conn.lock().await;
        if let Some(service) = conn.as_ref()
            && !service.is_closed()
            && !service.peer().is_transport_closed()
        {
            return Ok(service.peer().clone());
        }
        self.start_locked(&mut conn).await
    }

    /// Marks the connection dead (the next call starts the server again).
    async fn died(&self) {
        let mut conn = self.conn.lock().await;
        *conn = None;
        self.set_state(State::Failed(words::mcp::stopped()));
    }

    /// Calls `tool` with `arguments`, cancelling it at the timeout.
    pub(super) async fn call(&self, tool: &str, arguments: JsonObject) -> Called {
        if !self.config.enabled {
            return Called::Unavailable(words::mcp::disabled());
        }
        let peer = match self.peer().await {
            Ok(p) => p,
            Err(why) => return Called::Unavailable(why),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let timeout = self.config.timeout;
        let sent = peer
            .send_cancellable_request(request, PeerRequestOptions::with_timeout(timeout))
            .await;
        let answer = match sent {
            Ok(handle) => handle.await_response().await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(ServerResult::CallToolResult(r)) => Called::Result(r),
            Ok(_) => Called::Refused(words::mcp::unexpected_answer()),
            Err(ServiceError::Timeout { timeout }) => Called::TimedOut(timeout),
            Err(ServiceError::McpError(e)) => Called::Refused(e.message.to_string()),
            Err(e @ (ServiceError::TransportClosed | ServiceError::TransportSend(_))) => {
                self.died().await;
                Called::Died(self.with_stderr(e.to_string()))
            }
            Err(e) => {
                if peer.is_transport_closed() {
                    self.died().await;
                    Called::Died(self.with_stderr(e.to_string()))
                } else {
                    Called::Refused(e.to_string())
                }
            }
        }
    }

    /// Closes the connection (a stdio server's process is killed).
    pub(super) async fn stop(&self) {
        let service = self.conn.lock().await.take();
        if let Some(service) = service {
            let _ = tokio::time::timeout(Duration::from_secs(2), service.cancel()).await;
        }
    }
}

/// Keeps the last lines a server writes on stderr (read as bytes: a line
/// that is not UTF-8 must not stop the reading and fill the pipe).
async fn keep_stderr(
    stderr: impl tokio::io::AsyncRead + Unpin,
    kept: Arc<Mutex<VecDeque<String>>>,
) {
    use tokio::io::AsyncBufReadExt as _;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut tail = Tail::default();
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let n = chunk.len();
        let lines = tail.feed(chunk);
        reader.consume(n);
        keep(&kept, lines);
    }
    // A last line without its newline (the server died mid-line).
    keep(&kept, tail.finish());
}

fn keep(kept: &Mutex<VecDeque<String>>, lines: Vec<String>) {
    if let Ok(mut kept) = kept.lock() {
        for line in lines {
            if kept.len() == STDERR_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    }
}

/// The line a server is writing on stderr, at most [`STDERR_LINE_MAX`]
/// bytes of it: a server that writes without a newline costs no more
/// memory than that.
#[derive(Default)]
struct Tail {
    line: Vec<u8>,
}

impl Tail {
    /// The lines `chunk` ends (each cut to the maximum).
    fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut done = Vec::new();
        let mut rest = chunk;
        loop {
            let end = rest.iter().position(|&b| b == b'\n');
            let part = &rest[..end.unwrap_or(rest.len())];
            let room = STDERR_LINE_MAX.saturating_sub(self.line.len());
            self.line.extend_from_slice(&part[..part.len().min(room)]);
            let Some(end) = end else { break };
            done.push(String::from_utf8_lossy(&self.line).trim_end().to_owned());
            self.line.clear();
            rest = &rest[end + 1..];
        }
        done
    }

    /// The line being written, if any.
    fn finish(self) -> Vec<String> {
        if self.line.is_empty() {
            Vec::new()
        } else {
            vec![String::from_utf8_lossy(&self.line).trim_end().to_owned()]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that writes on stderr without ever ending the line holds
    /// at most [`STDERR_LINE_MAX`] bytes of it, however much it writes;
    /// lines are cut there and kept; a last line without a newline counts.
    #[test]
    fn a_line_without_end_costs_bounded_memory() {
        let mut tail = Tail::default();
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..160 {
            assert!(tail.feed(&chunk).is_empty());
            assert!(tail.line.len() <= STDERR_LINE_MAX);
            assert!(tail.line.capacity() <= 2 * STDERR_LINE_MAX);
        }
        let lines = tail.feed(b"\r\nError: port taken\nhalf");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "x".repeat(STDERR_LINE_MAX));
        assert_eq!(lines[1], "Error: port taken");
        assert_eq!(tail.finish(), ["half"]);
    }
}
