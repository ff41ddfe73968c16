//! Finding and ending every process a command started, also those that left
//! its process group or its parent: nothing a command starts outlives it.
//!
//! A process group is not enough: `setsid cmd &` starts a session of its
//! own, `nohup cmd &` and `(cmd &)` leave orphans that the kernel hands to
//! init. So every command carries a **marker** in its environment
//! (`LANCET_COMMAND=<lancet's pid>-<n>`), which every descendant inherits;
//! when the command ends or times out, a [`Scope`] scans `/proc` for the
//! processes started since the command's shell that are in its group, carry
//! its marker, or descend from one that does, and ends them: SIGTERM, a
//! grace period, SIGKILL, each signal sent through a pidfd after checking
//! the process's start time, so a recycled pid is never hit. It then checks
//! that they are gone and says how many it ended and how many survived:
//! the result never claims more than was seen.
//!
//! `lancet run` also makes itself a **child subreaper** ([`adopt_orphans`]):
//! orphans are handed to lancet instead of init, so a descendant that
//! cleared its environment is still lancet's, and [`end_descendants`] ends
//! every process below lancet when it exits (normally, on Ctrl-C, SIGTERM or
//! SIGHUP). The orphans a scope ends are lancet's children then, and it
//! reaps them; it never waits on a pid it did not find (tokio waits on the
//! shells), so it cannot steal another child's exit status.
//!
//! What holds where: **Linux** — everything above. **Other Unix** — the
//! process group only: it is signalled, and processes that left it cannot
//! be seen, so the result says only the group was killed. **Elsewhere** —
//! the shell alone. Known gap (Linux): a process that both clears its
//! environment and leaves the group while its command runs is ended only
//! when lancet exits (and then only under `lancet run`, the subreaper).
//!
//! Owns: markers, `/proc` scans, signals to single processes, reaping.
//! Does not own: spawning or the process group (the `process` module), or
//! the words of the result.

use std::time::Duration;

use super::types::Background;

/// The environment variable that marks a command's processes.
pub(super) const MARKER: &str = "LANCET_COMMAND";

/// How often a scope looks again while it waits for processes to end.
const POLL: Duration = Duration::from_millis(20);
/// How long SIGKILLed processes get to disappear before they count as
/// survivors (a process stuck in the kernel cannot die at once).
#[cfg(target_os = "linux")]
const KILL_WAIT: Duration = Duration::from_millis(1000);

/// A new marker, unique among this process's commands (and, with the pid,
/// among every lancet running now).
pub(super) fn new_marker() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// Makes this process the reaper of its orphaned descendants (Linux:
/// `PR_SET_CHILD_SUBREAPER`), so nothing a command starts escapes to init.
/// Returns whether that holds. `lancet run` calls it at start; a library
/// user who runs the bash tool may call it too.
pub fn adopt_orphans() -> bool {
    #[cfg(target_os = "linux")]
    {
        let me = rustix::process::getpid();
        rustix::process::set_child_subreaper(Some(me)).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Ends every process below this one (children, their children, and
/// orphans a subreaper adopted), and every process still carrying one of
/// this process's markers: what `lancet run` does as it exits. Returns how
/// many it signalled. Elsewhere than Linux it does nothing and returns 0.
pub fn end_descendants() -> usize {
    #[cfg(target_os = "linux")]
    {
        linux::end_descendants()
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// One command, for finding what it started.
#[derive(Debug, Clone)]
pub(super) struct Scope {
    /// The shell's pid, which is also its process group's id.
    shell: u32,
    /// The value of [`MARKER`] in the command's environment.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    marker: String,
    /// The shell's start time (clock ticks since boot): nothing it started
    /// is older. `None` where there is no `/proc`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    since: Option<u64>,
}

impl Scope {
    /// The scope of the command whose shell is `shell`, marked `marker`.
    /// Call it right after the spawn, while the shell is certainly there.
    pub(super) fn new(shell: u32, marker: String) -> Scope {
        #[cfg(target_os = "linux")]
        let since = linux::stat(shell).map(|p| p.start);
        #[cfg(not(target_os = "linux"))]
        let since = None;
        Scope {
            shell,
            marker,
            since,
        }
    }

    /// Ends everything the command left running: SIGTERM, up to `grace` for
    /// it to go, SIGKILL for the rest; processes that appear meanwhile (a
    /// fork in flight) are found on the next look.
    pub(super) async fn end(&self, grace: Duration) -> Background {
        #[cfg(target_os = "linux")]
        if let Some(since) = self.since {
            return linux::end(self, since, grace).await;
        }
        // No /proc: the group is all that can be reached, and what left it
        // cannot be checked.
        if group_alive(self.shell) {
            signal_group(self.shell, Sig::Term);
            let deadline = tokio::time::Instant::now() + grace;
            while group_alive(self.shell) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
            }
            signal_group(self.shell, Sig::Kill);
        }
        Background::default()
    }

    /// The same at once: SIGKILL, no grace (for a call being abandoned, in
    /// a destructor, where nothing can be awaited).
    pub(super) fn end_now(&self) -> Background {
        #[cfg(target_os = "linux")]
        if let Some(since) = self.since {
            return linux::end_now(self, since);
        }
        signal_group(self.shell, Sig::Kill);
        Background::default()
    }
}

/// The two signals a scope sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Sig {
    /// Asks to stop (a grace period follows).
    Term,
    /// Stops at once.
    Kill,
}

/// Sends `sig` to the process group `pgid`; a group already gone is no
/// error (there is nothing left to end).
#[cfg(unix)]
fn signal_group(pgid: u32, sig: Sig) {
    use rustix::process::{Pid, kill_process_group};
    if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
        let _ = kill_process_group(pid, raw(sig));
    }
}

/// Without process groups, the shell alone is killed (by tokio's
/// `kill_on_drop` and `start_kill`).
#[cfg(not(unix))]
fn signal_group(_pgid: u32, _sig: Sig) {}

/// Whether the process group `pgid` has a member left.
#[cfg(unix)]
fn group_alive(pgid: u32) -> bool {
    use rustix::process::{Pid, test_kill_process_group};
    i32::try_from(pgid)
        .ok()
        .and_then(Pid::from_raw)
        .is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

#[cfg(not(unix))]
fn group_alive(_pgid: u32) -> bool {
    false
}

#[cfg(unix)]
fn raw(sig: Sig) -> rustix::process::Signal {
    match sig {
        Sig::Term => rustix::process::Signal::TERM,
        Sig::Kill => rustix::process::Signal::KILL,
    }
}

#[cfg(target_os = "linux")]
mod linux {
    //! The `/proc` side: snapshots, attribution, signals by pidfd, reaping.

    use std::collections::{HashMap, HashSet};
    use std::time::Duration;

    use rustix::process::{Pid, PidfdFlags, WaitOptions, pidfd_open, pidfd_send_signal};

    use super::{KILL_WAIT, MARKER, POLL, Scope, Sig, raw, signal_group};
    use crate::agent::tools::types::Background;

    /// One process as `/proc/<pid>/stat` shows it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(super) struct Proc {
        pub(super) pid: u32,
        pub(super) ppid: u32,
        pub(super) pgrp: u32,
        /// Clock ticks since boot: with the pid, its identity.
        pub(super) start: u64,
        pub(super) zombie: bool,
    }

    /// `/proc/<pid>/stat`, parsed; `None` when the process is gone.
    pub(super) fn stat(pid: u32) -> Option<Proc> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(pid, &text)
    }

    /// The fields after the command name (which may hold spaces and
    /// parentheses, so the last `)` ends it).
    fn parse_stat(pid: u32, text: &str) -> Option<Proc> {
        let rest = &text[text.rfind(')')? + 1..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        // state ppid pgrp session tty tpgid flags minflt cminflt majflt
        // cmajflt utime stime cutime cstime priority nice threads
        // itrealvalue starttime
        Some(Proc {
            pid,
            zombie: matches!(*f.first()?, "Z" | "X"),
            ppid: f.get(1)?.parse().ok()?,
            pgrp: f.get(2)?.parse().ok()?,
            start: f.get(19)?.parse().ok()?,
        })
    }

    /// Every process started at `since` or later.
    fn scan(since: u64) -> Vec<Proc> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut procs: Vec<Proc> = dir
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(stat)
            .filter(|p| p.start >= since)
            .collect();
        // Parents start no later than their children: one pass in this
        // order sees a parent before its children.
        procs.sort_by_key(|p| (p.start, p.pid));
        procs
    }

    /// Whether `pid`'s environment holds `MARKER=value` (or, with `prefix`,
    /// a value starting with it). Unreadable (another user's, or gone): no.
    fn marked(pid: u32, value: &str, prefix: bool) -> bool {
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let key = format!("{MARKER}=");
        env.split(|b| *b == 0).any(|var| {
            var.strip_prefix(key.as_bytes()).is_some_and(|v| {
                if prefix {
                    v.starts_with(value.as_bytes())
                } else {
                    v == value.as_bytes()
                }
            })
        })
    }

    /// The processes a command started that are still there (zombies
    /// included): in its group, marked with its marker, or below one that is.
    fn command_procs(scope: &Scope, since: u64) -> Vec<Proc> {
        let me = std::process::id();
        let mut found: HashSet<u32> = HashSet::new();
        let mut out = Vec::new();
        for p in scan(since) {
            if p.pid == me {
                continue;
            }
            let mine = p.pgrp == scope.shell
                || found.contains(&p.ppid)
                || (!p.zombie && marked(p.pid, &scope.marker, false));
            if mine {
                found.insert(p.pid);
                out.push(p);
            }
        }
        out
    }

    /// Whether `p` is still the live process that was scanned.
    fn alive(p: &Proc) -> bool {
        stat(p.pid).is_some_and(|now| now.start == p.start && !now.zombie)
    }

    /// Sends `sig` to `p` if it is still the process that was scanned: the
    /// pidfd pins the process, the start time read after proves it is `p`.
    fn signal(p: &Proc, sig: Sig) {
        let Some(pid) = i32::try_from(p.pid).ok().and_then(Pid::from_raw) else {
            return;
        };
        match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => {
                if alive(p) {
                    let _ = pidfd_send_signal(&fd, raw(sig));
                }
            }
            // Kernels before 5.3 have no pidfd: check, then signal.
            Err(_) => {
                if alive(p) {
                    let _ = rustix::process::kill_process(pid, raw(sig));
                }
            }
        }
    }

    /// Collects the zombies among `procs` that are this process's children
    /// (orphans it adopted as subreaper). The shell is tokio's to wait for.
    fn reap<'a>(procs: impl IntoIterator<Item = &'a Proc>, shell: u32) {
        let me = std::process::id();
        for p in procs {
            if p.pid == shell {
                continue;
            }
            let Some(now) = stat(p.pid) else { continue };
            if now.start != p.start || now.ppid != me || !now.zombie {
                continue;
            }
            if let Some(pid) = i32::try_from(p.pid).ok().and_then(Pid::from_raw) {
                let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
            }
        }
    }

    /// What became of the processes `seen` (the shell not counted).
    fn tally(seen: &HashMap<u32, Proc>, shell: u32) -> Background {
        let mut b = Background {
            checked: true,
            ..Background::default()
        };
        for p in seen.values().filter(|p| p.pid != shell) {
            if alive(p) {
                b.survived += 1;
            } else {
                b.ended += 1;
            }
        }
        b
    }

    /// What a scope has found so far.
    #[derive(Default)]
    struct Found {
        /// Every process seen alive, by pid.
        seen: HashMap<u32, Proc>,
        /// Every zombie seen (to reap the ones lancet adopted).
        dead: HashMap<u32, Proc>,
        /// The signals already sent.
        sent: HashSet<(u32, Sig)>,
    }

    /// One look: sends `sig` to what is alive and has not had it yet;
    /// returns whether anything is still alive.
    fn sweep(scope: &Scope, since: u64, sig: Sig, found: &mut Found) -> bool {
        let mut any = false;
        for p in command_procs(scope, since) {
            if p.zombie {
                found.dead.insert(p.pid, p);
                continue;
            }
            found.seen.insert(p.pid, p);
            any = true;
            if found.sent.insert((p.pid, sig)) {
                signal(&p, sig);
            }
        }
        any
    }

    /// Reaps what lancet adopted and says what became of what was seen.
    fn finish(scope: &Scope, found: &Found) -> Background {
        reap(found.seen.values().chain(found.dead.values()), scope.shell);
        tally(&found.seen, scope.shell)
    }

    pub(super) async fn end(scope: &Scope, since: u64, grace: Duration) -> Background {
        let mut found = Found::default();
        if sweep(scope, since, Sig::Term, &mut found) {
            signal_group(scope.shell, Sig::Term);
            let deadline = tokio::time::Instant::now() + grace;
            while tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
                if !sweep(scope, since, Sig::Term, &mut found) {
                    break;
                }
            }
            if sweep(scope, since, Sig::Kill, &mut found) {
                signal_group(scope.shell, Sig::Kill);
                let deadline = tokio::time::Instant::now() + KILL_WAIT;
                while tokio::time::Instant::now() < deadline {
                    tokio::time::sleep(POLL).await;
                    if !sweep(scope, since, Sig::Kill, &mut found) {
                        break;
                    }
                }
            }
        }
        finish(scope, &found)
    }

    pub(super) fn end_now(scope: &Scope, since: u64) -> Background {
        let mut found = Found::default();
        signal_group(scope.shell, Sig::Kill);
        // A few quick looks: SIGKILL leaves no time to fork, so what is
        // still found is what was forking while the last look was made.
        for _ in 0..5 {
            if !sweep(scope, since, Sig::Kill, &mut found) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        finish(scope, &found)
    }

    pub(super) fn end_descendants() -> usize {
        let me = std::process::id();
        let Some(mine) = stat(me) else { return 0 };
        let prefix = format!("{me}-");
        let mut killed = HashSet::new();
        for _ in 0..5 {
            // Below lancet: its children, theirs, and so on (a descendant
            // is never older than lancet), and anything carrying one of its
            // markers (an orphan that went to init without a subreaper).
            let mut below: HashSet<u32> = HashSet::from([me]);
            let mut any = false;
            for p in scan(mine.start) {
                if p.pid == me {
                    continue;
                }
                if !below.contains(&p.ppid) && (p.zombie || !marked(p.pid, &prefix, true)) {
                    continue;
                }
                below.insert(p.pid);
                if !p.zombie {
                    signal(&p, Sig::Kill);
                    killed.insert(p.pid);
                    any = true;
                }
            }
            if !any {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        killed.len()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_lines_parse_whatever_the_name() {
            let line =
                "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 0 0";
            let p = parse_stat(42, line).unwrap();
            assert_eq!(
                p,
                Proc {
                    pid: 42,
                    ppid: 1,
                    pgrp: 42,
                    start: 123456,
                    zombie: false
                }
            );
            assert!(parse_stat(1, "garbage").is_none());
            let me = stat(std::process::id()).unwrap();
            assert!(!me.zombie && me.start > 0);
        }
    }
}
