//! The bash tool's OS sandbox: what a command may write and whether it may
//! reach the network, enforced by the kernel rather than guessed from the
//! command's text.
//!
//! The permission rules read a command before it runs; they cannot see
//! through `sh -c`, `eval`, variables or interpreters, and never will. The
//! sandbox does not read the command at all: on Linux, the process that
//! becomes the command restricts itself with **Landlock** (writes only
//! beneath the allowed paths; with ABI ≥ 4 no TCP bind or connect; with
//! ABI ≥ 6 no abstract unix sockets outside the sandbox) and, for no network,
//! moves into a fresh **network namespace** (`unshare(CLONE_NEWNET)`, with a
//! user namespace first when the process is not privileged), where only a
//! loopback that is down exists, so UDP and everything else fails too. Reads
//! are never restricted. Elsewhere, or where Landlock is off, [`probe`] says
//! why no sandbox holds, and commands run as before (the permission rules
//! still apply).
//!
//! The crate forbids `unsafe`, so there is no `pre_exec` hook: the bash tool
//! runs the lancet executable itself ([`launcher`], [`wrap`]), whose
//! `sandbox` subcommand calls [`restrict_current_process`] and then replaces
//! itself with the command (`exec`). The process the tool spawned — its
//! process group, its pipes, its timeout — is the command's.
//!
//! | mode | writes | network |
//! |---|---|---|
//! | `workspace-write` | the root, [`TEMP_DIRS`], extra dirs, [`DEVICES`] | off unless allowed |
//! | `read-only` | [`DEVICES`] only | off unless allowed |
//! | `off` | anywhere the user may | on |
//!
//! Owns: the policy as data, probing what the system can enforce, enforcing
//! it on the current process, the launcher's command line, and recognising
//! a failure the sandbox probably caused. Does not own: the words (the
//! agent's `words` module), reading the environment or the configuration
//! (the binary), or spawning commands (the tools). Invariant: a restriction
//! that was asked for and could not be applied is either an error (the
//! command does not run) or reported in [`Enforced`]; never silently dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::permissions::Mode;
use super::words;

/// Temporary directories writable in `workspace-write` mode (when they
/// exist). `$TMPDIR` is added by the binary: the library reads no environment.
/// `/dev/shm` is here because POSIX shared memory and semaphores (Python's
/// `multiprocessing`, for one) live there.
pub const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// Device files writable in every sandboxed mode (when they exist): the
/// sinks and sources ordinary commands open for writing (`> /dev/null`), and
/// the terminal ones a command run by hand may use. Writing to them changes
/// no file. Standard output and error need no rule: they are pipes or a
/// terminal opened before the sandbox.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// How much the bash tool's commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum SandboxMode {
    /// Read everything; write nothing but [`DEVICES`]; no network unless allowed.
    ReadOnly,
    /// Read everything; write only beneath the root, [`TEMP_DIRS`] and the
    /// extra dirs (and [`DEVICES`]); no network unless allowed.
    WorkspaceWrite,
    /// No sandbox: commands may do whatever the user may.
    Off,
}

impl SandboxMode {
    /// Every mode, as the command line lists them.
    pub const ALL: &'static [SandboxMode] = &[
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::Off,
    ];

    /// The command-line and configuration name.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }

    /// The mode named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<SandboxMode> {
        SandboxMode::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The default for a permission mode: `read-only` for `read-only`,
    /// `workspace-write` for `ask` and `auto`.
    pub fn for_permission(mode: Mode) -> SandboxMode {
        match mode {
            Mode::ReadOnly => SandboxMode::ReadOnly,
            _ => SandboxMode::WorkspaceWrite,
        }
    }
}

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    mode: SandboxMode,
    root: PathBuf,
    writable: Vec<PathBuf>,
    network: bool,
}

impl SandboxPolicy {
    /// A policy for `root` in `mode`, with no extra writable dirs and no network.
    pub fn new(mode: SandboxMode, root: impl Into<PathBuf>) -> SandboxPolicy {
        SandboxPolicy {
            mode,
            root: root.into(),
            writable: Vec::new(),
            network: false,
        }
    }

    /// Also lets `workspace-write` commands write beneath `dir` (e.g. `$TMPDIR`).
    pub fn with_writable(mut self, dir: impl Into<PathBuf>) -> SandboxPolicy {
        let dir = dir.into();
        if !self.writable.contains(&dir) {
            self.writable.push(dir);
        }
        self
    }

    /// Whether commands may use the network.
    pub fn with_network(mut self, allowed: bool) -> SandboxPolicy {
        self.network = allowed;
        self
    }

    /// The mode.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// The workspace root (the commands' working directory).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The extra writable dirs given with [`with_writable`](Self::with_writable).
    pub fn extra_writable(&self) -> &[PathBuf] {
        &self.writable
    }

    /// Whether the network is allowed (always, in `off` mode).
    pub fn network(&self) -> bool {
        self.network || self.mode == SandboxMode::Off
    }

    /// Every path writes are allowed beneath, in order: the root, the temp
    /// dirs and the extra dirs (`workspace-write` only), then the devices.
    /// Empty in `off` mode (nothing is restricted).
    pub fn writable_paths(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        match self.mode {
            SandboxMode::Off => return out,
            SandboxMode::WorkspaceWrite => {
                out.push(self.root.clone());
                out.extend(TEMP_DIRS.iter().map(PathBuf::from));
                out.extend(self.writable.iter().cloned());
            }
            SandboxMode::ReadOnly => {}
        }
        out.extend(DEVICES.iter().map(PathBuf::from));
        out
    }
}

/// Why this system offers no sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unavailable {
    /// Not Linux: Landlock is Linux's.
    Os {
        /// The operating system (`std::env::consts::OS`).
        os: String,
    },
    /// The kernel has Landlock but it is not enabled (not in the `lsm=` boot list).
    NotEnabled,
    /// The kernel was built without Landlock (or is older than Linux 5.13).
    NotInKernel,
}

/// What this system can enforce, found by [`probe`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum SandboxSupport {
    /// Landlock is available, with this ABI version (the best both the kernel
    /// and lancet know).
    Landlock {
        /// The Landlock ABI version.
        abi: u32,
    },
    /// No sandbox can hold here.
    Unavailable(Unavailable),
}

/// How the network is kept from a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "network", rename_all = "snake_case")]
#[non_exhaustive]
pub enum NetworkEnforced {
    /// The policy allows the network.
    Allowed,
    /// The policy wants no network; what holds.
    Off {
        /// Landlock refuses every TCP bind and connect (ABI ≥ 4).
        tcp: bool,
        /// The command is in a network namespace of its own: no interface
        /// is up, so every kind of traffic (UDP, other hosts, loopback) fails.
        namespace: bool,
    },
}

impl Enforced {
    /// Nothing enforced: `off` mode.
    pub fn off() -> Enforced {
        Enforced {
            mode: SandboxMode::Off,
            abi: None,
            writable: Vec::new(),
            network: NetworkEnforced::Allowed,
        }
    }
}

impl NetworkEnforced {
    /// Whether anything keeps the command off the network.
    pub fn restricted(self) -> bool {
        matches!(self, NetworkEnforced::Off { tcp, namespace } if tcp || namespace)
    }
}

/// What [`restrict_current_process`] put in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Enforced {
    /// The policy's mode.
    pub mode: SandboxMode,
    /// The Landlock ABI in use (`None` in `off` mode).
    pub abi: Option<u32>,
    /// The existing paths writes are allowed beneath (empty in `off` mode,
    /// where nothing is restricted).
    pub writable: Vec<PathBuf>,
    /// The network.
    pub network: NetworkEnforced,
}

/// Why the sandbox could not be put in force. The command must not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// This system has no sandbox.
    #[error("no sandbox is available on this system: {0:?}")]
    Unavailable(Unavailable),
    /// The root cannot be opened.
    #[error("cannot open the root {path}: {source}")]
    Root {
        /// The root.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Landlock refused the ruleset or the restriction.
    #[error("landlock: {source}")]
    Landlock {
        /// The `landlock` crate's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A user namespace was entered but could not be set up; the process
    /// cannot go back, so the command must not run.
    #[error("cannot set up the user namespace for the network namespace: {source}")]
    Namespace {
        /// Why.
        source: std::io::Error,
    },
    /// The kernel accepted the ruleset but enforces none of it.
    #[error("landlock accepted the ruleset but enforces none of it")]
    NotEnforced,
}

/// What this system can enforce. Queries the kernel; restricts nothing.
pub fn probe() -> SandboxSupport {
    imp::probe()
}

/// Restricts the current process (and everything it will exec or start) to
/// `policy`: the last step of `lancet sandbox` before it becomes the command.
/// Call it while the process has a single thread: Landlock restricts the
/// calling thread, and a user namespace needs a single-threaded process.
///
/// In `off` mode nothing is done. On a system without a sandbox it is
/// [`SandboxError::Unavailable`]; the caller says so and decides.
pub fn restrict_current_process(policy: &SandboxPolicy) -> Result<Enforced, SandboxError> {
    if policy.mode == SandboxMode::Off {
        return Ok(Enforced::off());
    }
    imp::restrict(policy)
}

/// The command line that runs a command under `policy`: `exe` (the lancet
/// executable, which the caller names: the library never guesses it) and
/// its arguments up to and including `--`; the command's argv follows.
pub fn launcher(policy: &SandboxPolicy, exe: &Path) -> (PathBuf, Vec<OsString>) {
    let mut args: Vec<OsString> = vec![
        "sandbox".into(),
        "--mode".into(),
        policy.mode.name().into(),
        "-C".into(),
        policy.root.clone().into(),
    ];
    for dir in &policy.writable {
        args.push("--writable".into());
        args.push(dir.clone().into());
    }
    if policy.network {
        args.push("--network".into());
    }
    args.push("--".into());
    (exe.to_path_buf(), args)
}

/// A policy and the executable that enforces it: what the bash tool needs
/// to sandbox its commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    policy: SandboxPolicy,
    exe: PathBuf,
}

impl Sandbox {
    /// Commands run under `policy` through `exe sandbox … -- CMD` (`exe` is
    /// the lancet executable: `std::env::current_exe()` in the binary).
    pub fn new(policy: SandboxPolicy, exe: impl Into<PathBuf>) -> Sandbox {
        Sandbox {
            policy,
            exe: exe.into(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.policy
    }

    /// The executable that enforces it.
    pub fn exe(&self) -> &Path {
        &self.exe
    }
}

/// `program args…` as the bash tool runs it: through the [`launcher`] when a
/// sandbox is set and its mode is not `off`, unchanged otherwise.
pub fn wrap(sandbox: Option<&Sandbox>, program: &str, args: &[&str]) -> (OsString, Vec<OsString>) {
    let args = args.iter().map(OsString::from);
    match sandbox.filter(|s| s.policy.mode != SandboxMode::Off) {
        None => (program.into(), args.collect()),
        Some(s) => {
            let (exe, mut out) = launcher(&s.policy, &s.exe);
            out.push(program.into());
            out.extend(args);
            (exe.into(), out)
        }
    }
}

/// A note for the model when a sandboxed command failed and its output
/// looks like the sandbox's doing (permission denied, read-only file system,
/// network unreachable, names that do not resolve): what the sandbox forbids
/// and that only the user can allow it. `None` otherwise.
pub(crate) fn denial_note(sandbox: Option<&Sandbox>, failed: bool, output: &str) -> Option<String> {
    let policy = &sandbox?.policy;
    if !failed || policy.mode == SandboxMode::Off || !looks_denied(output, policy.network()) {
        return None;
    }
    Some(words::sandbox_denied(policy.mode, policy.network()))
}

/// Output of a command the sandbox stopped. This reads another program's
/// words, the only evidence there is: the kernel's answer (EACCES, EPERM,
/// EROFS, ENETUNREACH) reaches the model only as the program printed it.
/// A false match costs one line of advice, never a changed result.
fn looks_denied(output: &str, network_allowed: bool) -> bool {
    const WRITE: &[&str] = &[
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
        "EACCES",
        "EPERM",
        "EROFS",
    ];
    const NETWORK: &[&str] = &[
        "Network is unreachable",
        "ENETUNREACH",
        "Temporary failure in name resolution",
        "Could not resolve host",
        "Name or service not known",
        "No address associated with hostname",
        "getaddrinfo",
    ];
    WRITE.iter().any(|s| output.contains(s))
        || (!network_allowed && NETWORK.iter().any(|s| output.contains(s)))
}

/// One line saying what is enforced (for the start-up note and `lancet sandbox`).
pub fn describe(enforced: &Enforced) -> String {
    words::sandbox_enforced(enforced)
}

/// One line saying that no sandbox holds, and why.
pub fn describe_unavailable(why: &Unavailable) -> String {
    words::sandbox_unavailable(why)
}

/// What the system prompt says about the sandbox (empty when none holds:
/// the model then has nothing to plan around).
pub fn prompt_note(enforced: Option<&Enforced>) -> String {
    words::sandbox_prompt(enforced)
}

#[cfg(target_os = "linux")]
mod imp {
    //! Landlock and namespaces, through the `landlock` crate and rustix.

    use std::io;
    use std::path::Path;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
        PathBeneath, PathFd, RestrictSelf, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
        Scope,
    };

    use super::{
        Enforced, NetworkEnforced, SandboxError, SandboxPolicy, SandboxSupport, Unavailable,
    };

    /// The kernel's Landlock status, without restricting anything: a
    /// `RestrictSelf` with no flags and no `no_new_privs` makes no call but
    /// the version query.
    fn status() -> LandlockStatus {
        match RestrictSelf::default().no_new_privs(false).apply() {
            Ok(s) => s.landlock,
            // The crate makes no system call that can fail here; were it to,
            // the honest answer is that no sandbox can be promised.
            Err(_) => LandlockStatus::NotImplemented,
        }
    }

    fn support(status: LandlockStatus) -> Result<ABI, Unavailable> {
        match status {
            LandlockStatus::Available { effective_abi, .. }
                if effective_abi != ABI::Unsupported =>
            {
                Ok(effective_abi)
            }
            LandlockStatus::NotEnabled => Err(Unavailable::NotEnabled),
            _ => Err(Unavailable::NotInKernel),
        }
    }

    fn abi_number(abi: ABI) -> u32 {
        abi as u32
    }

    pub(super) fn probe() -> SandboxSupport {
        match support(status()) {
            Ok(abi) => SandboxSupport::Landlock {
                abi: abi_number(abi),
            },
            Err(why) => SandboxSupport::Unavailable(why),
        }
    }

    fn landlock(e: impl std::error::Error + Send + Sync + 'static) -> SandboxError {
        SandboxError::Landlock {
            source: Box::new(e),
        }
    }

    pub(super) fn restrict(policy: &SandboxPolicy) -> Result<Enforced, SandboxError> {
        let abi = support(status()).map_err(SandboxError::Unavailable)?;
        let root = policy.root();
        // The root must be there: a sandbox for a root that does not exist
        // would allow nothing, and the command would fail for a reason the
        // model cannot see.
        if let Err(source) = std::fs::metadata(root) {
            return Err(SandboxError::Root {
                path: root.to_path_buf(),
                source,
            });
        }
        let network_off = !policy.network();
        // The namespace first: a user namespace needs its uid map written,
        // which Landlock would refuse afterwards.
        let namespace = network_off && isolate_network()?;
        let write = AccessFs::from_write(abi);
        let net = AccessNet::from_all(abi);
        let tcp = network_off && !net.is_empty();
        let scope = Scope::from_all(abi) & Scope::AbstractUnixSocket;
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(write)
            .map_err(landlock)?;
        if tcp {
            ruleset = ruleset.handle_access(net).map_err(landlock)?;
        }
        if network_off && !scope.is_empty() {
            ruleset = ruleset.scope(scope).map_err(landlock)?;
        }
        let mut created = ruleset.create().map_err(landlock)?;
        let mut writable = Vec::new();
        for path in policy.writable_paths() {
            let Some((fd, access)) = opened(&path, abi) else {
                continue;
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(landlock)?;
            writable.push(path);
        }
        let status = created.restrict_self().map_err(landlock)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(SandboxError::NotEnforced);
        }
        let network = if network_off {
            NetworkEnforced::Off { tcp, namespace }
        } else {
            NetworkEnforced::Allowed
        };
        Ok(Enforced {
            mode: policy.mode(),
            abi: Some(abi_number(abi)),
            writable,
            network,
        })
    }

    /// A handle on `path` and the write rights to grant beneath it, or `None`
    /// when it does not exist (a missing `/dev/shm` or `$TMPDIR` is no error).
    /// A file (a device) takes only the rights a file can have.
    fn opened(path: &Path, abi: ABI) -> Option<(PathFd, BitFlags<AccessFs>)> {
        let meta = std::fs::metadata(path).ok()?;
        let fd = PathFd::new(path).ok()?;
        let write = AccessFs::from_write(abi);
        let access = if meta.is_dir() {
            write
        } else {
            write & AccessFs::from_file(abi)
        };
        Some((fd, access))
    }

    /// Moves this process into a network namespace of its own: directly when
    /// privileged, else inside a new user namespace that maps the user to
    /// themselves (so files keep their owner). `Ok(false)` when the system
    /// allows neither (containers often do not); an error only when a user
    /// namespace was entered and could not be set up.
    fn isolate_network() -> Result<bool, SandboxError> {
        use rustix::thread::UnshareFlags;
        if unshare(UnshareFlags::NEWNET).is_ok() {
            return Ok(true);
        }
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        if unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET).is_err() {
            return Ok(false);
        }
        let map = |file: &str, text: String| std::fs::write(file, text);
        // setgroups must be denied before an unprivileged gid map; kernels
        // older than 3.19 have no such file, and need nothing.
        match map("/proc/self/setgroups", "deny".into()) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(SandboxError::Namespace { source: e });
            }
            _ => {}
        }
        map("/proc/self/uid_map", format!("{uid} {uid} 1"))
            .and_then(|()| map("/proc/self/gid_map", format!("{gid} {gid} 1")))
            .map_err(|source| SandboxError::Namespace { source })?;
        Ok(true)
    }

    /// `unshare(2)`. rustix deprecates its safe wrapper because
    /// `CLONE_FILES` can pull a file table from under other threads; the
    /// flags used here (`NEWNET`, `NEWUSER`) touch no file table, and the
    /// process is single-threaded when it calls this.
    #[allow(deprecated)]
    fn unshare(flags: rustix::thread::UnshareFlags) -> io::Result<()> {
        rustix::thread::unshare(flags).map_err(io::Error::from)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    //! No sandbox outside Linux (yet): say so.

    use super::{Enforced, SandboxError, SandboxPolicy, SandboxSupport, Unavailable};

    fn why() -> Unavailable {
        Unavailable::Os {
            os: std::env::consts::OS.to_owned(),
        }
    }

    pub(super) fn probe() -> SandboxSupport {
        SandboxSupport::Unavailable(why())
    }

    pub(super) fn restrict(_: &SandboxPolicy) -> Result<Enforced, SandboxError> {
        Err(SandboxError::Unavailable(why()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_and_follow_permissions() {
        for &m in SandboxMode::ALL {
            assert_eq!(SandboxMode::from_name(m.name()), Some(m));
        }
        assert_eq!(SandboxMode::from_name("workspace_write"), None);
        assert_eq!(
            SandboxMode::for_permission(Mode::ReadOnly),
            SandboxMode::ReadOnly
        );
        assert_eq!(
            SandboxMode::for_permission(Mode::Ask),
            SandboxMode::WorkspaceWrite
        );
        assert_eq!(
            SandboxMode::for_permission(Mode::Auto),
            SandboxMode::WorkspaceWrite
        );
    }

    #[test]
    fn writable_paths_per_mode() {
        let ws = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w").with_writable("/t2");
        let paths = ws.writable_paths();
        assert_eq!(paths[0], PathBuf::from("/w"));
        assert!(paths.contains(&PathBuf::from("/tmp")));
        assert!(paths.contains(&PathBuf::from("/t2")));
        assert!(paths.contains(&PathBuf::from("/dev/null")));
        let ro = SandboxPolicy::new(SandboxMode::ReadOnly, "/w").with_writable("/t2");
        let paths = ro.writable_paths();
        assert!(!paths.contains(&PathBuf::from("/w")));
        assert!(!paths.contains(&PathBuf::from("/tmp")));
        assert!(!paths.contains(&PathBuf::from("/t2")));
        assert!(paths.contains(&PathBuf::from("/dev/null")));
        assert!(
            SandboxPolicy::new(SandboxMode::Off, "/w")
                .writable_paths()
                .is_empty()
        );
        assert!(SandboxPolicy::new(SandboxMode::Off, "/w").network());
        assert!(!ro.network());
    }

    #[test]
    fn launcher_and_wrap() {
        let p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w")
            .with_writable("/x")
            .with_network(true);
        let (exe, args) = launcher(&p, Path::new("/bin/lancet"));
        assert_eq!(exe, PathBuf::from("/bin/lancet"));
        assert_eq!(
            args,
            [
                "sandbox",
                "--mode",
                "workspace-write",
                "-C",
                "/w",
                "--writable",
                "/x",
                "--network",
                "--"
            ]
            .map(OsString::from)
        );
        let s = Sandbox::new(p, "/bin/lancet");
        let (program, args) = wrap(Some(&s), "sh", &["-c", "echo hi"]);
        assert_eq!(program, OsString::from("/bin/lancet"));
        assert_eq!(
            &args[args.len() - 4..],
            ["--", "sh", "-c", "echo hi"].map(OsString::from)
        );
        let (program, args) = wrap(None, "sh", &["-c", "echo hi"]);
        assert_eq!(program, OsString::from("sh"));
        assert_eq!(args, ["-c", "echo hi"].map(OsString::from));
        let off = Sandbox::new(SandboxPolicy::new(SandboxMode::Off, "/w"), "/bin/lancet");
        assert_eq!(wrap(Some(&off), "sh", &[]).0, OsString::from("sh"));
    }

    #[test]
    fn denial_note_needs_a_sandbox_a_failure_and_a_symptom() {
        let s = Sandbox::new(SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w"), "/l");
        let denied = "sh: 1: cannot create /etc/x: Permission denied\n";
        assert!(denial_note(Some(&s), true, denied).is_some());
        assert!(denial_note(Some(&s), false, denied).is_none());
        assert!(denial_note(None, true, denied).is_none());
        assert!(denial_note(Some(&s), true, "error: test failed\n").is_none());
        let net = "curl: (6) Could not resolve host: example.com\n";
        assert!(denial_note(Some(&s), true, net).is_some());
        let open = Sandbox::new(
            SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w").with_network(true),
            "/l",
        );
        assert!(denial_note(Some(&open), true, net).is_none());
        let off = Sandbox::new(SandboxPolicy::new(SandboxMode::Off, "/w"), "/l");
        assert!(denial_note(Some(&off), true, denied).is_none());
    }

    #[test]
    fn probe_says_what_holds() {
        // Whatever the machine, the probe answers and restricts nothing:
        // this test process can still write where it could.
        let support = probe();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("still-writable"), "x").unwrap();
        if cfg!(not(target_os = "linux")) {
            assert!(matches!(
                support,
                SandboxSupport::Unavailable(Unavailable::Os { .. })
            ));
        }
        if let SandboxSupport::Landlock { abi } = support {
            assert!(abi >= 1, "{support:?}");
        }
    }
}
