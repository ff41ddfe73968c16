//! Security: the bash tool's OS sandbox and `lancet sandbox`.
//!
//! Item pinned throughout: "the deny-list cannot see through `sh -c`,
//! `eval`, variables or interpreters (46 working variants of its own
//! categories got through) and never will" — so commands run under the OS
//! sandbox (Landlock + a network namespace on Linux), which does not read the
//! command at all. Every test drives the real binary. Each asks the
//! library's `probe()` whether this system can hold a sandbox; where it
//! cannot, the test prints why and checks the honest path instead: the
//! command runs, and lancet says that no sandbox is active.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use lancet::agent::sandbox::{SandboxSupport, TEMP_DIRS, probe};
use serde_json::json;

use crate::agent_run::{events, of, run};
use crate::llm_server::{LlmServer, Scripted};

/// The Landlock ABI, or `None` after printing why no sandbox holds here.
fn landlock() -> Option<u32> {
    match probe() {
        SandboxSupport::Landlock { abi } => Some(abi),
        other => {
            eprintln!(
                "no sandbox on this system ({other:?}): checking the honest no-sandbox path instead"
            );
            None
        }
    }
}

/// `lancet sandbox ARGS` with `-C root`, no terminal, and `TMPDIR` unset so
/// only the built-in temp dirs are writable.
fn sandbox(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .arg("sandbox")
        .args(["-C", root.to_str().unwrap()])
        .args(args)
        .env_remove("TMPDIR")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `lancet sandbox -- sh -c SCRIPT`.
fn sh(root: &Path, mode: &[&str], script: &str) -> Output {
    let mut args = mode.to_vec();
    args.extend(["--", "sh", "-c", script]);
    sandbox(root, &args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A directory outside the root and outside every temp dir the sandbox
/// lets commands write to: under cargo's per-target temp dir.
fn outside() -> Option<tempfile::TempDir> {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    if TEMP_DIRS.iter().any(|t| base.starts_with(t)) {
        eprintln!(
            "{} is under a temp dir the sandbox allows, so no outside dir can be made here: skipping",
            base.display()
        );
        return None;
    }
    Some(
        tempfile::Builder::new()
            .prefix("lancet-outside")
            .tempdir_in(base)
            .unwrap(),
    )
}

fn shq(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// A write the sandbox must stop: the command failed, said why (permission
/// denied, as the kernel answered), and nothing appeared.
fn assert_stopped(out: &Output, target: &Path) {
    assert!(!target.exists(), "{} was written", target.display());
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
/// Item: writes go to the root and the temp dirs, not elsewhere.
fn writes_inside_the_root_and_tmp_pass_writes_outside_are_refused() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let Some(out_dir) = outside() else { return };
    let inside = root.path().join("inside");
    let out = sh(root.path(), &[], "echo x > inside");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "x\n");
    let tmp = tempfile::tempdir_in("/tmp").unwrap();
    let in_tmp = tmp.path().join("t");
    let out = sh(root.path(), &[], &format!("echo t > {}", shq(&in_tmp)));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(in_tmp.exists());
    let target = out_dir.path().join("f");
    let out = sh(root.path(), &[], &format!("echo x > {}", shq(&target)));
    if abi.is_none() {
        assert!(text(&out.stderr).contains("no sandbox is active"));
        assert!(target.exists(), "without a sandbox the command runs");
        return;
    }
    assert_stopped(&out, &target);
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
/// Item: read-only mode refuses writes even inside the root.
fn read_only_mode_refuses_writes_inside_the_root() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("f");
    let out = sh(root.path(), &["--mode", "read-only"], "echo x > f");
    if abi.is_none() {
        assert!(target.exists());
        return;
    }
    assert_stopped(&out, &target);
    // Reading and writing to /dev/null still work.
    std::fs::write(root.path().join("r"), "data\n").unwrap();
    let out = sh(
        root.path(),
        &["--mode", "read-only"],
        "cat r; cat /etc/hostname > /dev/null && echo ok",
    );
    assert_eq!(text(&out.stdout), "data\nok\n", "{}", text(&out.stderr));
}

#[test]
/// Item: `rm -rf` of another directory's files does nothing.
fn rm_rf_outside_the_root_removes_nothing() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let Some(out_dir) = outside() else { return };
    std::fs::create_dir(out_dir.path().join("sub")).unwrap();
    std::fs::write(out_dir.path().join("keep"), "precious").unwrap();
    std::fs::write(out_dir.path().join("sub/keep"), "precious").unwrap();
    let dir = shq(out_dir.path());
    let out = sh(root.path(), &[], &format!("rm -rf {dir}/* {dir}"));
    if abi.is_none() {
        assert!(!out_dir.path().exists());
        return;
    }
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(out_dir.path().join("keep")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.path().join("sub/keep")).unwrap(),
        "precious"
    );
}

/// Whether `program` runs here (interpreters are optional on test machines).
fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
/// Item: the deny-list's blind spots — `sh -c`, `eval`, variables,
/// interpreters, other writers — are all stopped by the sandbox.
fn evasions_the_deny_list_cannot_see_are_stopped() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let Some(out_dir) = outside() else { return };
    std::fs::write(root.path().join("src"), "x\n").unwrap();
    let o = out_dir.path().display().to_string();
    let mut variants = vec![
        ("sh -c", format!("sh -c 'echo x > \"{o}/a\"'")),
        ("eval", format!("eval 'echo x > \"{o}/b\"'")),
        ("variable", format!("t=\"{o}/c\"; echo x > \"$t\"")),
        (
            "base64",
            format!(
                "echo {} | base64 -d | sh",
                base64(&format!("echo x > '{o}/d'"))
            ),
        ),
        ("cp", format!("cp src \"{o}/e\"")),
        ("tee", format!("echo x | tee \"{o}/f\"")),
        ("touch", format!("touch \"{o}/g\"")),
        ("mkdir", format!("mkdir \"{o}/h\"")),
        ("ln -s", format!("ln -s /etc/passwd \"{o}/i\"")),
        ("mv", format!("mv src \"{o}/j\"")),
        ("dd", format!("echo x | dd of=\"{o}/k\" 2>/dev/null")),
        (
            "a symlink in the root",
            format!("ln -s \"{o}\" esc && echo x > esc/n"),
        ),
    ];
    if have("python3") {
        variants.push((
            "python3",
            format!("python3 -c 'open(\"{o}/l\", \"w\").write(\"x\")'"),
        ));
    } else {
        eprintln!("python3 is not installed: its variant is skipped");
    }
    if have("perl") {
        variants.push(("perl", format!("perl -e 'open(F, \">{o}/m\") or exit 1'")));
    } else {
        eprintln!("perl is not installed: its variant is skipped");
    }
    for (name, script) in &variants {
        let out = sh(root.path(), &[], script);
        let made: Vec<_> = std::fs::read_dir(out_dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        if abi.is_none() {
            continue;
        }
        assert!(
            made.is_empty(),
            "{name}: `{script}` wrote {made:?}; stderr: {}",
            text(&out.stderr)
        );
        assert_ne!(out.status.code(), Some(0), "{name}: `{script}` succeeded");
    }
    if abi.is_none() {
        let made = std::fs::read_dir(out_dir.path()).unwrap().count();
        assert!(made > 0, "without a sandbox the variants write");
    }
}

#[test]
/// Item: a hard link made in the root to a file outside does not carry
/// writes out (Landlock refuses to link a file across into the root).
/// Root and victim share a filesystem, so the link itself is possible:
/// `--mode off` shows the attack works without the sandbox.
fn a_hard_link_into_the_root_does_not_reach_outside() {
    let abi = landlock();
    let Some(out_dir) = outside() else { return };
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let victim = out_dir.path().join("victim");
    std::fs::write(&victim, "orig\n").unwrap();
    let script = format!("ln {} hl && echo pwned > hl", shq(&victim));
    let out = sh(root.path(), &["--mode", "off"], &script);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "pwned\n");
    std::fs::write(&victim, "orig\n").unwrap();
    std::fs::remove_file(root.path().join("hl")).unwrap();
    let out = sh(root.path(), &[], &script);
    if abi.is_none() {
        return;
    }
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "orig\n");
}

/// Standard base64 of `s` (so the test needs no crate for it).
fn base64(s: &str) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in s.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A client command that opens a TCP connection to 127.0.0.1:`port`, or
/// `None` (printed) when this machine has no program to do it with.
fn tcp_client(port: u16) -> Option<Vec<String>> {
    if have("python3") {
        let code =
            format!("import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)");
        return Some(vec!["python3".into(), "-c".into(), code]);
    }
    if have("bash") {
        let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
        return Some(vec!["bash".into(), "-c".into(), script]);
    }
    eprintln!("neither python3 nor bash is installed: no TCP client to test with");
    None
}

/// Whether a connection reaches `listener` within a short wait.
fn accepted(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    let end = Instant::now() + Duration::from_millis(500);
    while Instant::now() < end {
        if listener.accept().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The `enforced` object `lancet sandbox --json` reports.
fn enforced(root: &Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend(args);
    let out = sandbox(root, &all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["enforced"].clone()
}

#[test]
/// Item: no network unless allowed — a TCP connect to a listener on
/// 127.0.0.1 fails in the sandbox and succeeds with `--mode off` or
/// `--network`.
fn tcp_to_loopback_is_refused_unless_the_network_is_allowed() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some(client) = tcp_client(port) else {
        return;
    };
    let client: Vec<&str> = client.iter().map(String::as_str).collect();
    let with = |mode: &[&str]| {
        let mut args = mode.to_vec();
        args.push("--");
        args.extend(&client);
        sandbox(root.path(), &args)
    };
    let out = with(&["--mode", "off"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        accepted(&listener),
        "--mode off: the connection did not arrive"
    );
    let out = with(&["--network"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        accepted(&listener),
        "--network: the connection did not arrive"
    );
    let out = with(&[]);
    let network = &enforced(root.path(), &[])["network"];
    if abi.is_none() {
        assert_eq!(out.status.code(), Some(0));
        return;
    }
    if network["tcp"] == false && network["namespace"] == false {
        // Said, not hidden: old Landlock and no namespaces.
        let words = text(&sandbox(root.path(), &[]).stdout);
        assert!(words.contains("network NOT restricted"), "{words}");
        eprintln!("this system can keep no command off the network: {words}");
        return;
    }
    assert_ne!(
        out.status.code(),
        Some(0),
        "the sandboxed connect succeeded"
    );
    assert!(!accepted(&listener), "a sandboxed connection arrived");
}

#[test]
/// Item: probe at start-up and say what is enforced: `lancet sandbox`
/// without a command names the Landlock ABI, the writable dirs and how the
/// network is kept off; `--json` gives it as data.
fn lancet_sandbox_says_what_is_enforced() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let out = sandbox(root.path(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let words = text(&out.stdout);
    let e = enforced(root.path(), &["--mode", "read-only"]);
    let Some(abi) = abi else {
        assert!(
            words.contains("no sandbox is active on this system"),
            "{words}"
        );
        assert!(e.is_null());
        return;
    };
    assert!(words.contains(&format!("landlock ABI {abi}")), "{words}");
    let root_name = std::fs::canonicalize(root.path()).unwrap();
    assert!(words.contains(&root_name.display().to_string()), "{words}");
    assert_eq!(e["mode"], "read-only");
    assert_eq!(e["abi"], abi);
    assert_eq!(e["network"]["network"], "off");
    let writable: Vec<&str> = e["writable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        writable.iter().all(|p| p.starts_with("/dev/")),
        "{writable:?}"
    );
    let open = enforced(root.path(), &["--network"]);
    assert_eq!(open["network"]["network"], "allowed");
}

#[test]
/// Item: `lancet sandbox` fails closed and by the conventions of `env`:
/// a root that does not exist is 125 (nothing ran), a missing command 127.
fn lancet_sandbox_exit_statuses() {
    let root = tempfile::tempdir().unwrap();
    let out = sandbox(&root.path().join("missing"), &["--", "true"]);
    assert_eq!(out.status.code(), Some(125), "{}", text(&out.stderr));
    let out = sandbox(root.path(), &["--", "no-such-command-lancet-test"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out.stderr));
    let out = sh(root.path(), &[], "exit 7");
    assert_eq!(out.status.code(), Some(7));
    let out = sandbox(root.path(), &["--mode", "sideways", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A `lancet run` in `root` whose model runs `command` with the bash tool,
/// then answers; its `--json` events. `extra` goes before the task.
fn run_command(root: &Path, command: &str, extra: &[&str]) -> Vec<serde_json::Value> {
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[("c1", "bash", &json!({"command": command}).to_string())],
        ),
        Scripted::openai_text("Done."),
    ]);
    let url = server.openai_base_url();
    let mut args = vec!["--base-url", &url, "-m", "gpt-4o", "--yes", "--json"];
    args.extend(extra);
    args.push("write the file");
    let out = run(root, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    events(&out)
}

#[test]
/// Item: the bash tool runs its commands under the sandbox. A model's
/// command writing outside the root leaves nothing there, the tool result
/// tells the model the sandbox stopped it and that only the user can allow
/// it, and the session event says what holds. `sandbox = "off"` in the
/// user's configuration lets the same command through.
fn the_bash_tool_is_sandboxed_and_says_so() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let Some(out_dir) = outside() else { return };
    let target = out_dir.path().join("pwned");
    let command = format!("echo pwned > {}", shq(&target));
    let ev = run_command(root.path(), &command, &[]);
    let session = &of(&ev, "session")[0];
    let said = session["sandbox"].as_str().unwrap();
    let results = of(&ev, "tool_result");
    let content = results[0]["content"].as_str().unwrap();
    if abi.is_none() {
        assert!(said.contains("no sandbox is active"), "{said}");
        assert!(target.exists());
        return;
    }
    assert!(said.contains("sandbox workspace-write"), "{said}");
    assert!(
        !target.exists(),
        "the model's command wrote outside the root"
    );
    assert!(content.contains("Permission denied"), "{content}");
    assert!(
        content.contains("The sandbox (workspace-write)") && content.contains("--sandbox off"),
        "{content}"
    );
    // The flag turns it off for one run; the user's configuration, too.
    let ev = run_command(root.path(), &command, &["--sandbox", "off"]);
    assert!(
        target.exists(),
        "--sandbox off: the command did not run freely"
    );
    assert!(
        of(&ev, "session")[0]["sandbox"]
            .as_str()
            .unwrap()
            .contains("sandbox off")
    );
    std::fs::remove_file(&target).unwrap();
    let user = root.path().join(".no-user-config/lancet");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("config.toml"), "sandbox = \"off\"\n").unwrap();
    run_command(root.path(), &command, &[]);
    assert!(
        target.exists(),
        "sandbox = \"off\": the command did not run freely"
    );
}

#[test]
/// Item: the user can widen the sandbox without turning it off:
/// `sandbox_writable` in their configuration lets commands write beneath
/// those dirs, and nowhere else.
fn sandbox_writable_in_the_configuration_widens_writes() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let (Some(allowed), Some(other)) = (outside(), outside()) else {
        return;
    };
    let user = root.path().join(".no-user-config/lancet");
    std::fs::create_dir_all(&user).unwrap();
    let config = format!(
        "sandbox_writable = [{:?}]\n",
        allowed.path().display().to_string()
    );
    std::fs::write(user.join("config.toml"), config).unwrap();
    let (a, b) = (allowed.path().join("a"), other.path().join("b"));
    let ev = run_command(
        root.path(),
        &format!("echo a > {}; echo b > {}", shq(&a), shq(&b)),
        &[],
    );
    assert!(a.exists(), "{ev:?}");
    if abi.is_some() {
        assert!(!b.exists(), "a dir not in sandbox_writable was written");
        let said = of(&ev, "session")[0]["sandbox"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            said.contains(&allowed.path().display().to_string()),
            "{said}"
        );
    }
    std::fs::write(
        user.join("config.toml"),
        "sandbox_writable = [\"relative/dir\"]\n",
    )
    .unwrap();
    let out = run(root.path(), &["-m", "gpt-4o", "--yes", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
/// Item (hostile repository): a project's `.lancet.toml` — which comes with
/// the repository, and which sandboxed commands may write — cannot turn
/// the sandbox off or widen it; it is said that the keys were ignored.
fn a_projects_configuration_cannot_loosen_the_sandbox() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let Some(out_dir) = outside() else { return };
    let project = format!(
        "sandbox = \"off\"\nsandbox_network = true\nsandbox_writable = [{:?}]\n",
        out_dir.path().display().to_string()
    );
    std::fs::write(root.path().join(".lancet.toml"), project).unwrap();
    let target = out_dir.path().join("pwned");
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[(
                "c1",
                "bash",
                &json!({"command": format!("echo x > {}", shq(&target))}).to_string(),
            )],
        ),
        Scripted::openai_text("Done."),
    ]);
    let url = server.openai_base_url();
    let out = run(
        root.path(),
        &["--base-url", &url, "-m", "gpt-4o", "--yes", "--json", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("ignored sandbox = \"off\", sandbox_network = true, sandbox_writable"),
        "{stderr}"
    );
    if abi.is_some() {
        assert!(
            !target.exists(),
            "the project's file switched the sandbox off"
        );
        let said = of(&events(&out), "session")[0]["sandbox"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            said.contains("sandbox workspace-write") && said.contains("no network"),
            "{said}"
        );
    }
    // Tightening is the project's to ask: read-only holds.
    std::fs::write(
        root.path().join(".lancet.toml"),
        "sandbox = \"read-only\"\n",
    )
    .unwrap();
    let ev = run_command(root.path(), "echo x > inside", &[]);
    let said = of(&ev, "session")[0]["sandbox"]
        .as_str()
        .unwrap()
        .to_owned();
    if abi.is_some() {
        assert!(said.contains("sandbox read-only"), "{said}");
        assert!(!root.path().join("inside").exists());
    }
}

#[test]
/// Item: the model's commands cannot reach the network — not even the
/// model server lancet itself talks to on 127.0.0.1 — and the system
/// prompt tells the model so; `sandbox_network = true` allows it.
fn the_bash_tool_has_no_network_unless_configured() {
    let abi = landlock();
    let root = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let Some(client) = tcp_client(port) else {
        return;
    };
    let command = client[..2].join(" ") + &format!(" \"{}\"", client[2]);
    let server = LlmServer::start(vec![
        Scripted::openai_turn(
            "",
            &[("c1", "bash", &json!({"command": command}).to_string())],
        ),
        Scripted::openai_text("Done."),
    ]);
    let url = server.openai_base_url();
    let out = run(
        root.path(),
        &[
            "--base-url",
            &url,
            "-m",
            "gpt-4o",
            "--yes",
            "--json",
            "connect",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let system = server.requests()[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let network = &enforced(root.path(), &[])["network"];
    if abi.is_none() || (network["tcp"] == false && network["namespace"] == false) {
        assert!(!system.contains("sandboxed"), "{system}");
        return;
    }
    assert!(
        !accepted(&listener),
        "the model's command reached 127.0.0.1"
    );
    assert!(system.contains("sandboxed (workspace-write)"), "{system}");
    let user = root.path().join(".no-user-config/lancet");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("config.toml"), "sandbox_network = true\n").unwrap();
    let ev = run_command(root.path(), &command, &[]);
    assert!(
        accepted(&listener),
        "sandbox_network = true: no connection arrived"
    );
    let said = of(&ev, "session")[0]["sandbox"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(said.contains("network allowed"), "{said}");
}

#[test]
/// Item: in human mode, what holds is said once, on stderr.
fn lancet_run_says_once_what_holds() {
    let root = tempfile::tempdir().unwrap();
    let server = LlmServer::start(vec![Scripted::openai_text("Nothing to do.")]);
    let url = server.openai_base_url();
    let out = run(
        root.path(),
        &["--base-url", &url, "-m", "gpt-4o", "--yes", "hi"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let lines = stderr.lines().filter(|l| l.contains("sandbox")).count();
    assert_eq!(lines, 1, "{stderr}");
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("sandbox"),
        "stdout is the model's: {stdout}"
    );
}
