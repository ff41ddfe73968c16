//! `lancet sandbox [--mode M] [-C DIR] -- CMD…`: runs CMD exactly as the
//! bash tool would — confined by the OS sandbox, in DIR — by restricting
//! this very process and then replacing it with CMD (`exec`), so CMD keeps
//! the pid, process group and pipes the caller gave it. The bash tool runs
//! its commands through here; people run it to see what a policy allows.
//! Without a command it says what would be enforced (`--json`: as data),
//! which is also how `lancet run` learns it at start-up ([`for_run`]).
//!
//! Also reads the environment the library may not: `$TMPDIR` joins the
//! writable dirs. Exit status: CMD's own; 125 when the sandbox cannot be set
//! up (CMD did not run), 126 when CMD cannot be run, 127 when it is not found
//! — the conventions of `env`, `timeout` and `chroot`.

use std::ffi::OsString;
#[cfg(unix)]
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use lancet::agent::config::Layer;
use lancet::agent::sandbox::{
    self, Enforced, Sandbox, SandboxError, SandboxMode, SandboxPolicy, SandboxSupport,
};
use serde_json::json;

/// The sandbox could not be set up; the command did not run.
const SETUP: u8 = 125;
/// The command could not be run.
const CANNOT_RUN: u8 = 126;
/// The command was not found.
const NOT_FOUND: u8 = 127;

#[derive(Debug, Args)]
pub(crate) struct SandboxArgs {
    /// read-only, workspace-write or off.
    #[arg(long, value_name = "MODE", default_value = "workspace-write", value_parser = mode)]
    pub(crate) mode: SandboxMode,
    /// The workspace root: writable in workspace-write mode, and CMD's working directory.
    #[arg(short = 'C', long, default_value = ".")]
    pub(crate) root: PathBuf,
    /// Also allow writes beneath DIR (workspace-write; may be repeated).
    #[arg(long, value_name = "DIR")]
    pub(crate) writable: Vec<PathBuf>,
    /// Allow the network.
    #[arg(long)]
    pub(crate) network: bool,
    /// Without a command: print what is enforced as one JSON object.
    #[arg(long)]
    pub(crate) json: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub(crate) command: Vec<OsString>,
}

/// The `--mode` / `--sandbox` value parser.
pub(crate) fn mode(name: &str) -> Result<SandboxMode, String> {
    SandboxMode::from_name(name).ok_or_else(|| {
        format!("unknown sandbox mode `{name}`: use read-only, workspace-write or off")
    })
}

pub(crate) fn sandbox(args: SandboxArgs) -> u8 {
    let root = match std::fs::canonicalize(&args.root) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "lancet sandbox: cannot open the root {}: {e}",
                args.root.display()
            );
            return SETUP;
        }
    };
    let mut policy = SandboxPolicy::new(args.mode, &root).with_network(args.network);
    for dir in args.writable.iter().chain(tmpdir().as_ref()) {
        policy = policy.with_writable(dir);
    }
    let outcome = sandbox::restrict_current_process(&policy);
    let (enforced, summary) = match &outcome {
        Ok(e) => (Some(e), sandbox::describe(e)),
        Err(SandboxError::Unavailable(why)) => (None, sandbox::describe_unavailable(why)),
        Err(e) => {
            eprintln!("lancet sandbox: cannot set up the sandbox, so the command was not run: {e}");
            return SETUP;
        }
    };
    let Some((program, rest)) = args.command.split_first() else {
        if args.json {
            println!("{}", json!({"sandbox": summary, "enforced": enforced}));
        } else {
            println!("{summary}");
        }
        return crate::error::Exit::Success.code();
    };
    if enforced.is_none() {
        // Said every time: whoever runs this by hand must not believe CMD is confined.
        eprintln!("lancet: {summary}");
    }
    let mut cmd = Command::new(program);
    cmd.args(rest).current_dir(&root);
    become_command(cmd, Path::new(program))
}

/// Replaces this process with `cmd`; returns only when that failed.
#[cfg(unix)]
fn become_command(mut cmd: Command, program: &Path) -> u8 {
    let e = cmd.exec();
    cannot_run(program, &e)
}

/// No `exec` here: run `cmd` as a child and pass its status on.
#[cfg(not(unix))]
fn become_command(mut cmd: Command, program: &Path) -> u8 {
    match cmd.status() {
        Ok(s) => s
            .code()
            .map_or(CANNOT_RUN, |c| u8::try_from(c).unwrap_or(CANNOT_RUN)),
        Err(e) => cannot_run(program, &e),
    }
}

fn cannot_run(program: &Path, e: &std::io::Error) -> u8 {
    eprintln!("lancet sandbox: cannot run {}: {e}", program.display());
    if e.kind() == std::io::ErrorKind::NotFound {
        NOT_FOUND
    } else {
        CANNOT_RUN
    }
}

/// `$TMPDIR`, when it names an absolute directory other than `/` (which
/// would make every write allowed).
fn tmpdir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("TMPDIR")?);
    (dir.is_absolute() && dir.parent().is_some()).then_some(dir)
}

/// Drops the sandbox keys of a project's `.lancet.toml` that would loosen
/// the sandbox — `sandbox = "off"` or `"workspace-write"`,
/// `sandbox_network = true`, `sandbox_writable` — saying so for the ones
/// that can only loosen. The file comes with the repository, and a command
/// in the sandbox may write it: a repository must not be able to switch off
/// the sandbox meant to contain it. Tightening (`read-only`,
/// `sandbox_network = false`) stays.
pub(crate) fn no_loosening_from_the_project(layer: &mut Layer) {
    let mut dropped = Vec::new();
    match layer.sandbox.as_deref().map(SandboxMode::from_name) {
        // Looser than read-only, the default's equal at best: the user's
        // own choice (or the default) stands, and nothing needs saying.
        Some(Some(SandboxMode::WorkspaceWrite)) => layer.sandbox = None,
        Some(Some(SandboxMode::Off)) => {
            layer.sandbox = None;
            dropped.push("sandbox = \"off\"".to_owned());
        }
        // Absent, read-only, or a wrong name (reported as a usage error).
        _ => {}
    }
    if layer.sandbox_network == Some(true) {
        layer.sandbox_network = None;
        dropped.push("sandbox_network = true".to_owned());
    }
    if !layer.sandbox_writable.is_empty() {
        dropped.push(format!(
            "sandbox_writable = {:?}",
            std::mem::take(&mut layer.sandbox_writable)
        ));
    }
    if !dropped.is_empty() {
        eprintln!(
            "lancet: .lancet.toml: ignored {} (a project's file may tighten the sandbox, never loosen it; set these in your own configuration or pass --sandbox)",
            dropped.join(", ")
        );
    }
}

/// The configuration's `sandbox_writable` as paths: absolute, or `~/…`
/// under `$HOME`. A relative path is an error: relative to what the user
/// meant (the root? the shell's directory?) cannot be known.
pub(crate) fn writable_dirs(dirs: &[String]) -> Result<Vec<PathBuf>, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    dirs.iter()
        .map(|d| {
            let path = match (d.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(d),
            };
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(format!(
                    "sandbox_writable: `{d}` is not an absolute path (write /abs/dir or ~/dir)"
                ))
            }
        })
        .collect()
}

/// What `lancet run` needs to know about the sandbox, found once at start-up.
pub(crate) struct ForRun {
    /// What the bash tool runs its commands through (`None`: directly).
    pub(crate) sandbox: Option<Sandbox>,
    /// One line for the person (stderr, or the `session` event's `sandbox`).
    pub(crate) summary: String,
    /// What holds, for the system prompt (`None`: nothing).
    pub(crate) enforced: Option<Enforced>,
}

/// The sandbox for `lancet run`: asks this system what holds by running
/// `lancet sandbox --json` with the run's policy — the one honest way to know
/// whether a network namespace can be made, since trying it here would move
/// `lancet run` itself into it.
pub(crate) fn for_run(
    root: &Path,
    mode: SandboxMode,
    network: bool,
    writable: &[PathBuf],
) -> ForRun {
    let mut policy = SandboxPolicy::new(mode, root).with_network(network);
    for dir in writable {
        policy = policy.with_writable(dir);
    }
    if mode == SandboxMode::Off {
        return ForRun {
            sandbox: None,
            summary: sandbox::describe(&Enforced::off()),
            enforced: None,
        };
    }
    if let SandboxSupport::Unavailable(why) = sandbox::probe() {
        return ForRun {
            sandbox: None,
            summary: sandbox::describe_unavailable(&why),
            enforced: None,
        };
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            return ForRun {
                sandbox: None,
                summary: format!(
                    "no sandbox is active: lancet cannot find its own executable to run commands through ({e}); commands run with your full rights (the permission rules still apply)"
                ),
                enforced: None,
            };
        }
    };
    let (program, mut args) = sandbox::launcher(&policy, &exe);
    args.insert(1, "--json".into());
    let answer = Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output();
    let enforced = answer.as_ref().ok().and_then(|out| {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        serde_json::from_value::<Enforced>(v.get("enforced")?.clone()).ok()
    });
    let summary = match (&enforced, &answer) {
        (Some(e), _) => sandbox::describe(e),
        (None, Ok(out)) => format!(
            "the sandbox cannot be set up ({}); every command will fail until it can, or until lancet runs with --sandbox off",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        (None, Err(e)) => format!(
            "the sandbox cannot be set up (lancet cannot run itself: {e}); every command will fail until it can, or until lancet runs with --sandbox off"
        ),
    };
    // Even when the check failed, commands go through the launcher: it
    // refuses to run them unconfined, which is the safe way to fail.
    ForRun {
        sandbox: Some(Sandbox::new(policy, exe)),
        summary,
        enforced,
    }
}
