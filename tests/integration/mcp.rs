//! The MCP client against real MCP servers, started by the tests: npm's
//! `@modelcontextprotocol/server-everything` over stdio and over Streamable
//! HTTP, and a Python server built with PyPI's `mcp`
//! (tests/fixtures/mcp/server.py). The hub is driven directly for the
//! protocol (results, timeouts, a server killed mid-call), and the real
//! binary for `lancet mcp list`/`call` and for an agent run against the
//! loopback model server that calls an MCP tool and uses its answer.
//!
//! The servers are installed by `.ci/test` (target/mcp-node from the
//! committed package-lock.json, target/mcp-pyenv); without them these tests
//! fail, naming `.ci/test`, rather than skipping. Nothing here uses the
//! network beyond 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lancet::agent::mcp::{CallStatus, McpHub, ServerConfig, State, Transport};
use serde_json::Value;

use crate::llm_server::{LlmServer, Scripted};

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// server-everything's entry point, installed by `.ci/test`.
fn everything_js() -> PathBuf {
    let p = manifest().join("target/mcp-node/node_modules/.bin/mcp-server-everything");
    assert!(
        p.exists(),
        "{} is missing: run .ci/test, which installs @modelcontextprotocol/server-everything \
         into target/mcp-node from tests/fixtures/mcp/package-lock.json",
        p.display()
    );
    p
}

/// The Python with PyPI's `mcp`, installed by `.ci/test`.
fn python() -> PathBuf {
    let p = manifest().join("target/mcp-pyenv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run .ci/test, which makes target/mcp-pyenv with PyPI's mcp",
        p.display()
    );
    p
}

fn fixture_server() -> PathBuf {
    manifest().join("tests/fixtures/mcp/server.py")
}

fn config(name: &str, transport: Transport) -> ServerConfig {
    let s = lancet::agent::config::McpServer {
        command: Some("x".into()),
        ..Default::default()
    };
    let mut c = ServerConfig::from_layer(name, &s, |_| None).unwrap();
    c.transport = transport;
    c
}

fn stdio(command: &str, args: &[&str]) -> Transport {
    let s = lancet::agent::config::McpServer {
        command: Some(command.into()),
        args: Some(args.iter().map(|a| (*a).to_owned()).collect()),
        ..Default::default()
    };
    ServerConfig::from_layer("x", &s, |_| None)
        .unwrap()
        .transport
}

fn everything_stdio() -> ServerConfig {
    let js = everything_js();
    config(
        "everything",
        stdio("node", &[js.to_str().unwrap(), "stdio"]),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn start(configs: Vec<ServerConfig>, root: &Path) -> (Arc<McpHub>, Vec<String>) {
    McpHub::start(configs.into_iter().map(Ok).collect(), root, 30_000).await
}

fn names(hub: &McpHub) -> Vec<String> {
    hub.specs().into_iter().map(|s| s.name).collect()
}

#[test]
fn stdio_everything_lists_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    runtime().block_on(async {
        let (hub, notes) = start(vec![everything_stdio()], dir.path()).await;
        assert!(notes.is_empty(), "{notes:?}");
        let names = names(&hub);
        for t in [
            "echo",
            "get-sum",
            "get-tiny-image",
            "trigger-long-running-operation",
        ] {
            assert!(
                names.contains(&format!("mcp__everything__{t}")),
                "{names:?}"
            );
        }
        let sum = hub
            .specs()
            .into_iter()
            .find(|s| s.name == "mcp__everything__get-sum")
            .unwrap();
        assert_eq!(sum.parameters["type"], "object");
        assert!(
            sum.parameters["properties"]["a"].is_object(),
            "{}",
            sum.parameters
        );
        assert!(sum.description.contains("MCP server `everything`"));

        let o = hub
            .call("mcp__everything__echo", r#"{"message":"hi"}"#)
            .await;
        assert_eq!((o.content.as_str(), o.status), ("Echo: hi", CallStatus::Ok));
        let o = hub
            .call("mcp__everything__get-sum", r#"{"a":2,"b":3}"#)
            .await;
        assert_eq!(o.status, CallStatus::Ok);
        assert!(o.content.contains('5'), "{}", o.content);

        // An image is a placeholder line with its type and size.
        let o = hub.call("mcp__everything__get-tiny-image", "{}").await;
        assert_eq!(o.status, CallStatus::Ok);
        let line = o
            .content
            .lines()
            .find(|l| l.starts_with("[image: "))
            .unwrap_or_else(|| panic!("{}", o.content));
        assert!(
            line.starts_with("[image: image/png, ") && line.ends_with(" bytes]"),
            "{line}"
        );
        assert!(!o.content.contains("iVBOR"), "no base64 for the model");

        // Resource links are lines naming the URI.
        let o = hub
            .call("mcp__everything__get-resource-links", r#"{"count":2}"#)
            .await;
        let links: Vec<&str> = o
            .content
            .lines()
            .filter(|l| l.starts_with("[resource link: "))
            .collect();
        assert_eq!(links.len(), 2, "{}", o.content);
        assert!(links[0].contains("<demo://resource/"), "{}", links[0]);

        // Bad arguments: the server's error is an error result.
        let o = hub.call("mcp__everything__get-sum", r#"{"a":"x"}"#).await;
        assert!(o.is_error(), "{}", o.content);

        // A name nobody offers.
        let o = hub.call("mcp__everything__nope", "{}").await;
        assert_eq!(o.status, CallStatus::Unknown);
        assert!(o.content.contains("mcp__everything__echo"), "{}", o.content);
        hub.shutdown().await;
    });
}

#[test]
fn a_hung_call_is_cancelled_and_the_server_still_answers() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = everything_stdio();
    c.timeout = Duration::from_millis(1500);
    runtime().block_on(async {
        let (hub, _) = start(vec![c], dir.path()).await;
        let t = Instant::now();
        let o = hub
            .call(
                "mcp__everything__trigger-long-running-operation",
                r#"{"duration":20,"steps":5}"#,
            )
            .await;
        let took = t.elapsed();
        assert_eq!(o.status, CallStatus::ServerFailed, "{}", o.content);
        assert!(
            o.content.contains("did not answer within 1.5 s"),
            "{}",
            o.content
        );
        assert!(took < Duration::from_secs(5), "{took:?}");
        let o = hub
            .call("mcp__everything__echo", r#"{"message":"after"}"#)
            .await;
        assert_eq!(o.content, "Echo: after");
        hub.shutdown().await;
    });
}

/// The pid a wrapper shell wrote before it became the server.
fn read_pid(path: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_server_killed_mid_call_is_an_error_and_restarts_on_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let js = everything_js();
    let script = format!(
        "echo $$ > '{}'; exec node '{}' stdio",
        pidfile.display(),
        js.display()
    );
    // `cwd = "project"`: the user's word that it runs in the project root.
    let s = lancet::agent::config::McpServer {
        command: Some("sh".into()),
        args: Some(vec!["-c".into(), script.clone()]),
        cwd: Some("project".into()),
        ..Default::default()
    };
    let c = config(
        "everything",
        ServerConfig::from_layer("everything", &s, |_| None)
            .unwrap()
            .transport,
    );
    runtime().block_on(async {
        let (hub, notes) = start(vec![c], dir.path()).await;
        assert!(notes.is_empty(), "{notes:?}");
        let first = read_pid(&pidfile);
        std::fs::remove_file(&pidfile).unwrap();
        // Its own process group (a terminal's Ctrl-C does not reach it), the
        // project root as its directory, stderr a pipe (never the terminal).
        let stat = std::fs::read_to_string(format!("/proc/{first}/stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        assert_eq!(fields[2], first.to_string(), "process group: {stat}");
        assert_eq!(
            std::fs::read_link(format!("/proc/{first}/cwd")).unwrap(),
            std::fs::canonicalize(dir.path()).unwrap()
        );
        let err = std::fs::read_link(format!("/proc/{first}/fd/2")).unwrap();
        assert!(
            err.to_string_lossy().starts_with("pipe:"),
            "{}",
            err.display()
        );
        let killer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            Command::new("kill")
                .args(["-9", &first.to_string()])
                .status()
                .unwrap();
        });
        let t = Instant::now();
        let o = hub
            .call(
                "mcp__everything__trigger-long-running-operation",
                r#"{"duration":20,"steps":5}"#,
            )
            .await;
        killer.await.unwrap();
        assert_eq!(o.status, CallStatus::ServerFailed, "{}", o.content);
        assert!(
            o.content.contains("stopped during the call"),
            "{}",
            o.content
        );
        assert!(t.elapsed() < Duration::from_secs(10));
        // Still offered; the next call starts it again.
        assert!(hub.offers("mcp__everything__echo"));
        let o = hub
            .call("mcp__everything__echo", r#"{"message":"back"}"#)
            .await;
        assert_eq!(o.content, "Echo: back");
        assert_ne!(read_pid(&pidfile), first);
        hub.shutdown().await;
    });
}

/// server-everything over Streamable HTTP on a free port, up once it said
/// it listens; killed when dropped.
struct HttpEverything {
    child: Child,
    port: u16,
}

impl HttpEverything {
    fn start() -> HttpEverything {
        let js = everything_js();
        for _ in 0..5 {
            // A free port now; another process may take it before node
            // does, so a clash is retried with another.
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new("node")
                .arg(&js)
                .arg("streamableHttp")
                .env("PORT", port.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stderr = child.stderr.take().unwrap();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let _ = tx.send(line);
                }
            });
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut listening = false;
            while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            {
                if line.contains("listening on port") {
                    listening = true;
                    break;
                }
                if line.contains("already in use") {
                    break;
                }
            }
            if listening {
                return HttpEverything { child, port };
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("server-everything did not start over Streamable HTTP");
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http(url: &str) -> Transport {
    let s = lancet::agent::config::McpServer {
        url: Some(url.into()),
        ..Default::default()
    };
    ServerConfig::from_layer("x", &s, |_| None)
        .unwrap()
        .transport
}

#[test]
fn streamable_http_lists_and_calls() {
    let server = HttpEverything::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config("web", http(&server.url()));
    c.timeout = Duration::from_millis(1500);
    runtime().block_on(async {
        let (hub, notes) = start(vec![c], dir.path()).await;
        assert!(notes.is_empty(), "{notes:?}");
        assert!(names(&hub).contains(&"mcp__web__get-sum".to_owned()));
        let o = hub.call("mcp__web__get-sum", r#"{"a":20,"b":22}"#).await;
        assert!(o.content.contains("42"), "{}", o.content);
        // A timeout over HTTP cancels the call, not the session.
        let o = hub
            .call(
                "mcp__web__trigger-long-running-operation",
                r#"{"duration":20,"steps":5}"#,
            )
            .await;
        assert_eq!(o.status, CallStatus::ServerFailed, "{}", o.content);
        let o = hub.call("mcp__web__echo", r#"{"message":"still"}"#).await;
        assert_eq!(o.content, "Echo: still");
        hub.shutdown().await;
    });
}

#[test]
fn the_python_server_lists_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    let py = python();
    let mut c = config(
        "py",
        stdio(py.to_str().unwrap(), &[fixture_server().to_str().unwrap()]),
    );
    c.timeout = Duration::from_secs(2);
    runtime().block_on(async {
        let (hub, notes) = start(vec![c], dir.path()).await;
        assert!(notes.is_empty(), "{notes:?}");
        // `word.count` is offered under a name the providers take.
        let mut names = names(&hub);
        names.sort();
        assert_eq!(
            names,
            [
                "mcp__py__add",
                "mcp__py__fail",
                "mcp__py__grow",
                "mcp__py__wait",
                "mcp__py__word_count"
            ]
        );
        let o = hub.call("mcp__py__add", r#"{"a":2,"b":3}"#).await;
        assert_eq!((o.content.as_str(), o.status), ("5", CallStatus::Ok));
        let o = hub.call("mcp__py__word_count", r#"{"text":"a b c"}"#).await;
        assert_eq!(o.content, "3");
        // isError is an error result.
        let o = hub.call("mcp__py__fail", r#"{"why":"no"}"#).await;
        assert_eq!(o.status, CallStatus::ToolError, "{}", o.content);
        assert!(o.is_error());
        // notifications/tools/list_changed: the tools are listed again, and
        // the next look (the next model turn) offers the new one.
        let before = hub.generation();
        assert!(!hub.offers("mcp__py__grown"));
        let o = hub.call("mcp__py__grow", "{}").await;
        assert_eq!(o.content, "added");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !hub.offers("mcp__py__grown") {
            assert!(Instant::now() < deadline, "the new tool never showed");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(hub.generation() > before);
        let o = hub.call("mcp__py__grown", "{}").await;
        assert_eq!(o.content, "grown");
        // A call past its timeout is cancelled at the server too: it gets
        // notifications/cancelled and stops the tool.
        let marker = dir.path().join("cancelled");
        let args = serde_json::json!({"seconds": 30, "cancelled_marker": marker}).to_string();
        let o = hub.call("mcp__py__wait", &args).await;
        assert_eq!(o.status, CallStatus::ServerFailed, "{}", o.content);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !marker.exists() {
            assert!(
                Instant::now() < deadline,
                "the server never heard of the cancel"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let o = hub.call("mcp__py__add", r#"{"a":1,"b":1}"#).await;
        assert_eq!(o.content, "2");
        hub.shutdown().await;
    });
}

#[test]
fn allow_and_deny_choose_the_tools_offered() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = everything_stdio();
    c.allow = Some(vec!["get-*".into(), "echo".into()]);
    c.deny = vec!["get-env".into()];
    runtime().block_on(async {
        let (hub, _) = start(vec![c], dir.path()).await;
        let names = names(&hub);
        assert!(names.contains(&"mcp__everything__echo".to_owned()));
        assert!(names.contains(&"mcp__everything__get-sum".to_owned()));
        assert!(!names.contains(&"mcp__everything__get-env".to_owned()));
        assert!(!names.iter().any(|n| n.contains("trigger")), "{names:?}");
        let o = hub.call("mcp__everything__get-env", "{}").await;
        assert_eq!(o.status, CallStatus::Unknown);
        hub.shutdown().await;
    });
}

#[test]
fn a_server_that_cannot_start_is_reported_once_and_the_rest_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut slow = config("slow", stdio("sleep", &["30"]));
    slow.startup_timeout = Duration::from_millis(500);
    let broken = config("broken", stdio("/nonexistent/server", &[]));
    runtime().block_on(async {
        let t = Instant::now();
        let (hub, notes) = start(vec![broken, slow, everything_stdio()], dir.path()).await;
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("`broken`") && notes[0].contains("could not be started"));
        assert!(notes[1].contains("`slow`") && notes[1].contains("within 0.5 s"));
        assert!(hub.offers("mcp__everything__echo"));
        let report = hub.report();
        let state = |n: &str| report.iter().find(|r| r.name == n).unwrap().state.clone();
        assert!(matches!(state("broken"), State::Failed(_)));
        assert_eq!(state("everything"), State::Connected);
        hub.shutdown().await;
    });
}

// ---------------------------------------------------------------------------
// The binary: `lancet mcp`, and an agent run.

/// A user's home whose configuration is `config`.
fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/lancet");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), config).unwrap();
    home
}

fn lancet(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lancet"));
    cmd.args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("LANCET_MODEL")
        .stdin(Stdio::null());
    cmd
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn everything_toml() -> String {
    format!(
        "[mcp.servers.everything]\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\n",
        everything_js().display()
    )
}

fn python_toml() -> String {
    format!(
        "[mcp.servers.py]\ncommand = \"{}\"\nargs = [\"{}\"]\n",
        python().display(),
        fixture_server().display()
    )
}

#[test]
fn lancet_mcp_list_and_call() {
    let config = format!(
        "{}{}[mcp.servers.off]\ncommand = \"true\"\nenabled = false\n[mcp.servers.broken]\ncommand = \"/nonexistent/server\"\n",
        everything_toml(),
        python_toml()
    );
    let home = home_with(&config);
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_str().unwrap();
    let out = lancet(home.path(), &["mcp", "list", "-C", r])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    // A server that failed makes the list exit 3 (as `call` does), after
    // listing every server.
    assert_eq!(out.status.code(), Some(3), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("everything: connected, 13 tools (offered as mcp__everything__TOOL)"),
        "{stdout}"
    );
    assert!(stdout.contains("\n  get-sum "), "{stdout}");
    assert!(stdout.contains("py: connected, 5 tools"), "{stdout}");
    assert!(
        stdout.contains("  add         Add two integers."),
        "{stdout}"
    );
    assert!(stdout.contains("off: disabled"), "{stdout}");
    assert!(
        stdout.contains("broken: failed: `/nonexistent/server` could not be started"),
        "{stdout}"
    );

    // Every enabled server up (a disabled one is no failure): exit 0.
    let healthy = home_with(&format!(
        "{}[mcp.servers.off]\ncommand = \"true\"\nenabled = false\n",
        python_toml()
    ));
    let out = lancet(healthy.path(), &["mcp", "list", "-C", r])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    let call = |args: &[&str]| {
        let mut all = vec!["mcp", "call", "-C", r];
        all.extend_from_slice(args);
        lancet(home.path(), &all).output().unwrap()
    };
    let out = call(&["everything", "get-sum", r#"{"a":2,"b":3}"#]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "The sum of 2 and 3 is 5.\n");
    let out = call(&["py", "fail", r#"{"why":"x"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let out = call(&["broken", "x"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let out = call(&["nosuch", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no MCP server `nosuch`"));
    let out = call(&["everything", "echo", "[1]"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A `lancet run` with `config` as the user's configuration, against the
/// scripted model; killed if it runs past a minute.
fn agent_run(config: &str, server: &LlmServer, args: &[&str]) -> Output {
    let home = home_with(config);
    let root = tempfile::tempdir().unwrap();
    let url = server.openai_base_url();
    let mut all = vec![
        "run",
        "-C",
        root.path().to_str().unwrap(),
        "--base-url",
        &url,
        "-m",
        "gpt-4o",
    ];
    all.extend_from_slice(args);
    all.push("Add 19 and 23 with the MCP tool.");
    let child = lancet(home.path(), &all)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The tool results the model was sent, in the last request.
fn tool_results(server: &LlmServer) -> Vec<String> {
    let requests = server.requests();
    let last = requests.last().unwrap();
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn an_agent_run_calls_an_mcp_tool_and_uses_its_answer() {
    let server = LlmServer::start(vec![
        Scripted::openai_tool_call("c1", "mcp__everything__get-sum", r#"{"a":19,"b":23}"#),
        Scripted::openai_text("The sum is 42."),
    ]);
    // Started through a shell that writes its pid: the server must not
    // outlive lancet.
    let pids = tempfile::tempdir().unwrap();
    let pidfile = pids.path().join("pid");
    let config = format!(
        "[mcp.servers.everything]\ncommand = \"sh\"\nargs = [\"-c\", \"echo $$ > '{}'; exec node '{}' stdio\"]\n[permissions]\nallow = [\"mcp__everything__get-sum\"]\n",
        pidfile.display(),
        everything_js().display()
    );
    let out = agent_run(&config, &server, &[]);
    let pid = read_pid(&pidfile);
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(Instant::now() < deadline, "the MCP server outlived lancet");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read") && tools.contains(&"mcp__everything__get-sum"),
        "{tools:?}"
    );
    let schema: &Value = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__everything__get-sum")
        .map(|t| &t["function"]["parameters"])
        .unwrap();
    assert!(schema["properties"]["b"].is_object(), "{schema}");
    assert_eq!(tool_results(&server), ["The sum of 19 and 23 is 42."]);
    assert!(text(&out.stdout).contains("The sum is 42."));
}

#[test]
fn mcp_calls_are_asked_about_denied_and_refused_in_read_only_mode() {
    let call = || {
        vec![
            Scripted::openai_tool_call("c1", "mcp__everything__echo", r#"{"message":"x"}"#),
            Scripted::openai_text("done"),
        ]
    };
    // Ask mode (the default) without a terminal: refused, the run stops.
    let server = LlmServer::start(call());
    let out = agent_run(&everything_toml(), &server, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("needed your confirmation"),
        "{}",
        text(&out.stderr)
    );
    // A deny rule by server refuses, the model reads why.
    let server = LlmServer::start(call());
    let config = format!(
        "{}[permissions]\ndeny = [\"mcp__everything__*\"]\n",
        everything_toml()
    );
    let out = agent_run(&config, &server, &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = tool_results(&server);
    assert!(
        results[0].starts_with(
            "Permission denied: `mcp__everything__echo` (denied by the rule `mcp__everything__*`)"
        ),
        "{results:?}"
    );
    // Read-only mode refuses an MCP tool no allow rule names…
    let server = LlmServer::start(call());
    let out = agent_run(&everything_toml(), &server, &["--permission", "read-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        tool_results(&server)[0].contains("read-only"),
        "{:?}",
        tool_results(&server)
    );
    // …and runs one that an allow rule names.
    let server = LlmServer::start(call());
    let config = format!(
        "{}[permissions]\nallow = [\"mcp__everything__echo\"]\n",
        everything_toml()
    );
    let out = agent_run(&config, &server, &["--permission", "read-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(tool_results(&server), ["Echo: x"]);
}

#[test]
fn a_run_goes_on_without_a_server_that_fails_and_says_so_once() {
    let server = LlmServer::start(vec![Scripted::openai_text("fine")]);
    let config = format!(
        "{}[mcp.servers.broken]\ncommand = \"/nonexistent/server\"\n",
        everything_toml()
    );
    let out = agent_run(&config, &server, &[]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.matches("`broken`").count(), 1, "{stderr}");
    assert!(
        stderr.contains("MCP server `broken` is left out of this session"),
        "{stderr}"
    );
    let tools = server.requests()[0].body["tools"].to_string();
    assert!(tools.contains("mcp__everything__echo"));
}

#[test]
fn the_bearer_token_and_headers_are_sent() {
    // The loopback model server records what it is sent; it is no MCP
    // server, so the start fails, after the request carried the headers.
    let server = LlmServer::start(vec![Scripted::status(401, "no")]);
    let url = format!("{}/mcp", server.base_url());
    let config = format!(
        "[mcp.servers.web]\nurl = \"{url}\"\nbearer_token_env = \"LANCET_TEST_MCP_TOKEN\"\nheaders = {{ X-Project = \"lancet\" }}\nstartup_timeout = 10\n"
    );
    let home = home_with(&config);
    let root = tempfile::tempdir().unwrap();
    let out = lancet(
        home.path(),
        &["mcp", "list", "-C", root.path().to_str().unwrap()],
    )
    .env("LANCET_TEST_MCP_TOKEN", "s3cret")
    .output()
    .unwrap();
    assert!(
        text(&out.stdout).contains("web: failed: "),
        "{}",
        text(&out.stdout)
    );
    let requests = server.requests();
    let first = requests.first().expect("a request");
    assert_eq!(first.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(first.header("x-project"), Some("lancet"));
    assert_eq!(first.body["method"], "initialize");
    // Without the variable the server is left out, saying which variable.
    let out = lancet(
        home.path(),
        &["mcp", "list", "-C", root.path().to_str().unwrap()],
    )
    .env_remove("LANCET_TEST_MCP_TOKEN")
    .output()
    .unwrap();
    assert!(
        text(&out.stdout).contains("`LANCET_TEST_MCP_TOKEN` (bearer_token_env) is not set"),
        "{}",
        text(&out.stdout)
    );
}

/// HTTPS to an MCP server whose certificate no public authority signed is
/// refused before a request is sent: the MCP client verifies certificates
/// against the webpki roots, as the providers do.
#[test]
fn https_with_an_untrusted_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(made.success());
    // A TLS server that logs every request it is sent, and its port.
    let script = r#"
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        print("POST", flush=True)
        self.send_response(500)
        self.end_headers()
s = http.server.HTTPServer(("127.0.0.1", 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
c.load_cert_chain(sys.argv[1], sys.argv[2])
s.socket = c.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut server = Command::new("python3")
        .args(["-c", script])
        .arg(&cert)
        .arg(&key)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let port: u16 = lines.next().unwrap().unwrap().trim().parse().unwrap();
    let mut c = config("tls", http(&format!("https://127.0.0.1:{port}/mcp")));
    c.startup_timeout = Duration::from_secs(10);
    runtime().block_on(async {
        let (hub, notes) = start(vec![c], dir.path()).await;
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(matches!(hub.report()[0].state, State::Failed(_)));
        hub.shutdown().await;
    });
    let _ = server.kill();
    let _ = server.wait();
    let requests: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(requests.is_empty(), "a request was sent: {requests:?}");
}

/// A sub-agent may be given an MCP tool its parent has (the `task` call
/// names it): the child's request offers only that tool, its call reaches
/// the server, and its answer comes back to the parent — the seam between
/// the MCP hub and sub-agents' tools (`Tools::child` shares the hub).
#[test]
fn a_sub_agent_given_an_mcp_tool_calls_it() {
    let task = serde_json::json!({
        "description": "add",
        "prompt": "SUM-KEY: add 19 and 23",
        "tools": ["mcp__everything__get-sum"],
    })
    .to_string();
    let server = LlmServer::start_routed(
        vec![
            Scripted::openai_tool_call("c1", "task", &task),
            Scripted::openai_text("The child says 42."),
        ],
        vec![(
            "SUM-KEY",
            vec![
                Scripted::openai_tool_call("s1", "mcp__everything__get-sum", r#"{"a":19,"b":23}"#),
                Scripted::openai_text("It is 42."),
            ],
        )],
    );
    let out = agent_run(&everything_toml(), &server, &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = server.requests();
    let child: Vec<&Value> = requests
        .iter()
        .filter(|r| r.first_user.contains("SUM-KEY"))
        .map(|r| &r.body)
        .collect();
    assert_eq!(child.len(), 2);
    let offered: Vec<&str> = child[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["mcp__everything__get-sum"]);
    let child_result: Vec<&str> = child[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(child_result, ["The sum of 19 and 23 is 42."]);
    assert_eq!(tool_results(&server), ["It is 42."]);
    assert!(text(&out.stdout).contains("The child says 42."));
}

/// A stdio server runs outside the project unless the user's `cwd` says
/// otherwise: by default in the home directory, where a repository's own
/// `node_modules` or Python modules cannot steer the command; `cwd =
/// "project"` and an absolute path are kept; a relative one is refused.
#[test]
fn a_stdio_server_runs_outside_the_project_unless_told() {
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap().to_owned();
    let dir_of = |cwd: Option<&str>| {
        let s = lancet::agent::config::McpServer {
            command: Some("node".into()),
            cwd: cwd.map(str::to_owned),
            ..Default::default()
        };
        ServerConfig::from_layer("x", &s, |v| (v == "HOME").then(|| home_s.clone()))
    };
    let dir = |cwd: Option<&str>| match dir_of(cwd).unwrap().transport {
        Transport::Stdio { dir, .. } => dir,
        other => panic!("{other:?}"),
    };
    assert_eq!(dir(None), Some(home.path().to_path_buf()));
    assert_eq!(dir(Some("project")), None);
    assert_eq!(dir(Some("/srv/mcp")), Some(PathBuf::from("/srv/mcp")));
    let err = dir_of(Some("tools")).unwrap_err();
    assert!(err.to_string().contains("absolute path"), "{err}");
    // And the process really starts there: a server that prints its
    // directory on stderr before it fails to speak MCP.
    let project = tempfile::tempdir().unwrap();
    let s = lancet::agent::config::McpServer {
        command: Some("sh".into()),
        args: Some(vec!["-c".into(), "pwd >&2; exit 1".into()]),
        startup_timeout: Some(5),
        ..Default::default()
    };
    let c =
        ServerConfig::from_layer("where", &s, |v| (v == "HOME").then(|| home_s.clone())).unwrap();
    let notes = runtime().block_on(async {
        let (hub, notes) = start(vec![c], project.path()).await;
        hub.shutdown().await;
        notes
    });
    let said = notes.join("\n");
    let home_real = std::fs::canonicalize(home.path()).unwrap();
    assert!(said.contains(home_real.to_str().unwrap()), "{said}");
    assert!(!said.contains(project.path().to_str().unwrap()), "{said}");
}
