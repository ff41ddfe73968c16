//! Running jobs: each task for one model, format and mode, in a fresh
//! temporary copy of its `before/` files, through the real agent loop.
//!
//! A job's workspace is a new directory under the configured scratch
//! directory, removed when the job ends however it ends (and only if the
//! job made it). The tools are `lancet run`'s, with permissions `auto`, no
//! terminal, and the bash tool's sandbox when one is configured (the task's
//! check runs in it too); the system prompt is `lancet run`'s.
//!
//! **Tries.** A try is one model turn that attempts edits: one or more
//! `edit` calls, or a text-mode reply holding edits. The engine's answer
//! (applied, or why not) goes back to the model as the loop always sends
//! it, and the model may try again. When the `tries`-th try has a failed
//! edit, the run is stopped before the model is asked again
//! ([`run_until`](crate::agent::run::run_until)). A try whose
//! edits apply does not stop the run: the model may go on (to check its
//! work, or make another edit, which counts as a try) and ends by answering.
//! The turn limit is `tries + extra_turns`, for reading, exploring and the
//! final answer. Edits written with the `write` tool are not tries (they
//! bypass the format), but their result is judged like any other.
//!
//! **Judging.** Pass = the workspace's files are byte-identical to `after/`
//! (when the task has it; the `.lancet/` state directory aside) and the
//! task's check exits 0 (when it has one). A failure is classified from the
//! data the tools return for the last edit attempt
//! ([`EditAttempt`]), never from the words the model reads:
//! `classify` has the rules.
//!
//! **Transcripts.** With `transcripts` configured, each job's conversation
//! is recorded as it runs and kept when the job finishes (`replay`); a
//! simulated model is told whether each try failed (from the same data the
//! judging reads), which is when its script sends its retry.
//!
//! Owns: workspaces, the job's loop and its stop, the check, judging, and
//! running many jobs (bounded, stoppable). Does not own: writing records
//! anywhere (the caller gets each one as it finishes) or resolving models.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::replay::Transcript;
use super::sim::{self, Script, SimServer};
use super::task::{Check, EDITEVAL_HARNESS, Files};
use super::{Backend, BenchConfig, FailureKind, Key, Mode, Model, Record, Task};
use crate::agent::permissions::{self, NoTerminal, Permissions};
use crate::agent::provider::{Provider, ProviderConfig, Wire};
use crate::agent::run::{self, Event, RunConfig};
use crate::agent::sandbox::{Sandbox, SandboxPolicy};
use crate::agent::tools::{EditAttempt, Tools, ToolsConfig};
use crate::agent::types::{Limit, Message, ProviderError};
use crate::agent::words;
use crate::{EditStatus, Format, ParseError, Tier, Workspace};

/// One job: a task for one model, in one format and mode.
#[derive(Debug, Clone)]
pub struct Job {
    /// The task.
    pub task: Arc<Task>,
    /// The model.
    pub model: Arc<Model>,
    /// The format.
    pub format: Format,
    /// The mode.
    pub mode: Mode,
}

impl Job {
    /// The job's identity, as its record will carry it.
    pub fn key(&self) -> Key {
        Key {
            task: self.task.id.clone(),
            source: self.task.source.clone(),
            model: self.model.label.clone(),
            format: self.format.name().to_owned(),
            mode: self.mode,
        }
    }
}

/// What the runner reports as it goes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Progress {
    /// A job finished; its record.
    Finished(Record),
}

/// How a run of jobs ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every job finished.
    Finished,
    /// Stopped: jobs in flight were dropped without a record.
    Interrupted,
}

/// What every job shares.
struct Shared {
    config: BenchConfig,
    sim: Option<SimServer>,
    /// By model label: the provider, or why it could not be built.
    providers: HashMap<String, Result<Arc<Provider>, String>>,
    counter: AtomicU64,
}

/// Runs `jobs`, at most `config.jobs` at a time, handing each record to
/// `on` as its job finishes. Stops (dropping the jobs in flight) when `stop`
/// turns true.
///
/// # Errors
///
/// The simulated models' server cannot be started.
pub async fn run(
    jobs: Vec<Job>,
    config: &BenchConfig,
    mut stop: watch::Receiver<bool>,
    on: &mut (dyn FnMut(Progress) + Send),
) -> std::io::Result<RunEnd> {
    let sim = if jobs
        .iter()
        .any(|j| matches!(j.model.backend, Backend::Sim(_) | Backend::Replay(_)))
    {
        Some(SimServer::start().await?)
    } else {
        None
    };
    let mut providers = HashMap::new();
    for job in &jobs {
        if providers.contains_key(&job.model.label) {
            continue;
        }
        let pc = match (&job.model.backend, &sim) {
            (Backend::Provider(pc), _) => Some((**pc).clone()),
            (Backend::Sim(_) | Backend::Replay(_), Some(server)) => {
                let mut pc = ProviderConfig::new(Wire::OpenAi, server.base_url(), "sim");
                // The simulation answers at once: silence is a bug, and is
                // reported sooner than a real endpoint's minute allows.
                pc.idle_timeout = Duration::from_secs(30);
                Some(pc)
            }
            (Backend::Sim(_) | Backend::Replay(_), None) => None,
        };
        let provider = pc
            .ok_or_else(String::new)
            .and_then(|pc| Provider::new(pc).map_err(|e| e.to_string()))
            .map(Arc::new);
        providers.insert(job.model.label.clone(), provider);
    }
    let shared = Arc::new(Shared {
        config: config.clone(),
        sim,
        providers,
        counter: AtomicU64::new(0),
    });
    let mut queue = jobs.into_iter();
    let mut set = JoinSet::new();
    let width = config.jobs.max(1);
    loop {
        while set.len() < width {
            let Some(job) = queue.next() else { break };
            set.spawn(run_job(job, Arc::clone(&shared)));
        }
        if set.is_empty() {
            return Ok(RunEnd::Finished);
        }
        tokio::select! {
            biased;
            changed = stop.changed() => {
                // A dropped sender is no stop: the caller went away without asking.
                if changed.is_ok() && *stop.borrow() {
                    set.abort_all();
                    while set.join_next().await.is_some() {}
                    return Ok(RunEnd::Interrupted);
                }
            }
            Some(done) = set.join_next() => {
                if let Ok(record) = done {
                    on(Progress::Finished(record));
                }
            }
        }
    }
}

/// A job's directory, removed when dropped — only if this job made it: a
/// path someone else created first (the scratch directory is shared) is
/// never deleted.
struct Scratch {
    path: PathBuf,
    made: AtomicBool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.made.load(Ordering::Relaxed) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// What the job's loop saw, kept outside the loop's future so that a
/// timeout or a stop leaves it readable.
#[derive(Debug, Default)]
struct Seen {
    tries: u32,
    turns: u32,
    tokens_in: u64,
    tokens_out: u64,
    /// The turn (by number) that last counted a try.
    try_turn: u32,
    /// The last edit attempt and whether it failed.
    last: Option<(EditAttempt, bool)>,
    /// The loosest matcher tier among the edits written.
    tier: Option<Tier>,
    /// How the loop ended, when it did.
    ending: Option<run::Ending>,
}

/// How the loop ended.
#[derive(Debug)]
enum Ended {
    /// It ended (an answer, the turn limit, the tries used up, a repeated call).
    Ran,
    /// The provider failed.
    Provider(String),
    /// The job's time ran out.
    Timeout,
}

async fn run_job(job: Job, shared: Arc<Shared>) -> Record {
    let started = Instant::now();
    let c = &shared.config;
    let n = shared.counter.fetch_add(1, Ordering::Relaxed);
    let dir = c
        .scratch
        .join(format!("lancet-bench-{}-{n}", std::process::id()));
    let scratch = Scratch {
        path: dir.clone(),
        made: AtomicBool::new(false),
    };
    let mut seen = Seen::default();
    let mut detail = None;
    // The transcript: one that cannot be made does not stop the job.
    let mut transcript = c
        .transcripts
        .as_deref()
        .and_then(|dir| Transcript::start(dir, &job.key()).ok());
    let ended = match tokio::time::timeout(
        c.task_timeout,
        attempt(
            &job,
            &shared,
            &scratch,
            &mut seen,
            &mut detail,
            &mut transcript,
        ),
    )
    .await
    {
        Ok(ended) => ended,
        Err(_) => Ended::Timeout,
    };
    let mut wrong_place = false;
    let (files_ok, check_ok, changed) = match ended {
        Ended::Ran => {
            let (files_ok, changed) = match compare(&dir, &job.task) {
                Ok((files_ok, changed, wrong)) => {
                    wrong_place = wrong;
                    (files_ok, changed)
                }
                Err(e) => {
                    detail = Some(e.to_string());
                    (Some(false), true)
                }
            };
            let check_ok = match &job.task.check {
                None => None,
                Some(check) => {
                    let (ok, why) = run_check(check, &dir, c).await;
                    if !ok {
                        detail = detail.or(why);
                    }
                    Some(ok)
                }
            };
            (files_ok, check_ok, changed)
        }
        Ended::Provider(ref e) => {
            detail = Some(e.clone());
            (None, None, false)
        }
        Ended::Timeout => (None, None, false),
    };
    drop(scratch);
    if let Some(t) = transcript {
        // A transcript that cannot take its name is lost, not the job.
        let _ = t.finish();
    }
    let failure = classify(
        &ended,
        seen.tries,
        seen.last.as_ref().map(|(a, failed)| (a, *failed)),
        files_ok,
        check_ok,
        changed,
    );
    let cost = job
        .model
        .prices
        .map(|(i, o)| (seen.tokens_in as f64 * i + seen.tokens_out as f64 * o) / 1_000_000.0);
    Record {
        task: job.task.id.clone(),
        source: job.task.source.clone(),
        model: job.model.label.clone(),
        format: job.format.name().to_owned(),
        mode: job.mode,
        pass: failure.is_none(),
        tries: seen.tries,
        failure,
        tokens_in: seen.tokens_in,
        tokens_out: seen.tokens_out,
        cost,
        ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        turns: seen.turns,
        detail: if failure.is_none() { None } else { detail },
        wrong_place,
        tier: seen.tier.map(|t| t.name().to_owned()),
        ending: seen.ending.map(|e| e.name().to_owned()),
    }
}

/// Sets up the workspace and runs the loop.
async fn attempt(
    job: &Job,
    shared: &Shared,
    scratch: &Scratch,
    seen: &mut Seen,
    detail: &mut Option<String>,
    transcript: &mut Option<Transcript>,
) -> Ended {
    let c = &shared.config;
    let dir = scratch.path.as_path();
    // A fresh directory of our own: it must not exist yet.
    if let Err(e) = std::fs::create_dir(dir) {
        return Ended::Provider(words::bench_workspace_failed(&e));
    }
    scratch.made.store(true, Ordering::Relaxed);
    if let Err(e) = write_tree(dir, &job.task.before) {
        return Ended::Provider(words::bench_workspace_failed(&e));
    }
    let ws = match Workspace::open(dir) {
        Ok(ws) => ws,
        Err(e) => return Ended::Provider(words::bench_workspace_failed(&e)),
    };
    let provider = match shared.providers.get(&job.model.label) {
        Some(Ok(p)) => Arc::clone(p),
        Some(Err(e)) => return Ended::Provider(e.clone()),
        None => return Ended::Provider(String::new()),
    };
    let text_mode = job.mode == Mode::Text;
    let mut tc = ToolsConfig {
        format: job.format,
        text_mode,
        ..ToolsConfig::default()
    };
    let mut system = run::system_prompt(job.format.instructions(), text_mode, None);
    if let Some(s) = &c.sandbox {
        let mut policy = SandboxPolicy::new(s.mode, ws.root()).with_network(s.network);
        for w in &s.writable {
            policy = policy.with_writable(w);
        }
        tc.sandbox = Some(Sandbox::new(policy, &s.exe));
        system.push_str(&s.prompt_note);
    }
    let mut tools = Tools::new(
        ws,
        tc,
        Permissions::new(permissions::Mode::Auto),
        Box::new(NoTerminal),
    );
    // A simulated or replayed model: its script, and the model name that selects it.
    let registration = match (&job.model.backend, &shared.sim) {
        (Backend::Sim(profile), Some(server)) => {
            let (script, problem) = sim::script(&job.task, job.format, job.mode, *profile, c.seed);
            *detail = problem.map(|p| p.to_string());
            Some(server.register(*profile, script))
        }
        (Backend::Replay(recording), Some(server)) => match recording.turns(&job.key()) {
            Ok(turns) => Some(server.register_as("replay", Script::replay(turns))),
            Err(why) => return Ended::Provider(why),
        },
        _ => None,
    };
    let model = registration
        .as_ref()
        .map_or_else(|| provider.model().to_owned(), |r| r.model().to_owned());
    let config = RunConfig {
        model,
        system,
        max_turns: c.tries + c.extra_turns,
        max_tokens: c.max_tokens,
        context_window: None,
        loop_repeats: c.loop_repeats,
    };
    let messages = vec![Message::user(job.task.instruction.clone())];
    let used_up = AtomicBool::new(false);
    let tries = c.tries;
    let mut on_event = |e: Event| match e {
        Event::Usage {
            input_tokens,
            output_tokens,
        } => {
            seen.turns += 1;
            seen.tokens_in += input_tokens;
            seen.tokens_out += output_tokens;
        }
        // A reply the repetition guard stopped was a turn, whose usage
        // never arrived.
        Event::Looping { .. } => seen.turns += 1,
        Event::ToolResult {
            name,
            attempt,
            is_error,
            ..
        } => {
            // An edit call whose arguments are not JSON at all never
            // reaches the format, so it carries no attempt; it was one all
            // the same, and unparsable. (A call cut off at `max_tokens` is
            // not run and carries `EditAttempt::CutOff`, also `parse`.)
            let attempt = match attempt {
                Some(a) => a,
                None if is_error && name == "edit" && job.mode == Mode::Tool => {
                    EditAttempt::Unparsed(ParseError::BadArguments {
                        field: "json".to_owned(),
                        expected: "a JSON object",
                    })
                }
                None => return,
            };
            let failed_before =
                seen.try_turn == seen.turns && seen.last.as_ref().is_some_and(|(_, f)| *f);
            if seen.try_turn != seen.turns {
                seen.try_turn = seen.turns;
                seen.tries += 1;
            }
            if let Some(r) = &registration {
                // A try fails when any of its edits does.
                r.set_failed(is_error || failed_before);
            }
            if let EditAttempt::Planned(report) = &attempt
                && report.written
            {
                let loosest = report.edits().filter_map(|e| e.tier).max();
                seen.tier = seen.tier.max(loosest);
            }
            seen.last = Some((attempt, is_error));
            if is_error && seen.tries >= tries {
                used_up.store(true, Ordering::Relaxed);
            }
        }
        _ => {}
    };
    let stop = || used_up.load(Ordering::Relaxed);
    let session = transcript.as_mut().and_then(Transcript::session);
    let result = run::run_until(
        &provider,
        &mut tools,
        session,
        messages,
        &config,
        &mut on_event,
        &stop,
    )
    .await;
    drop(registration);
    match result {
        Ok(outcome) => {
            seen.ending = Some(outcome.ending);
            Ended::Ran
        }
        // A turn past its wall-clock limit is the time running out, not
        // the provider failing.
        Err(e @ ProviderError::LimitReached(Limit::Turn(_))) => {
            *detail = Some(e.to_string());
            Ended::Timeout
        }
        Err(e) => Ended::Provider(e.to_string()),
    }
}

/// Writes `files` under `dir` (a fresh directory of the job's own).
fn write_tree(dir: &Path, files: &Files) -> std::io::Result<()> {
    for (rel, bytes) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    Ok(())
}

/// Whether the workspace holds exactly `after/` (`None` when the task has
/// none), whether it changed from `before/`, and whether it changed
/// something `after/` leaves alone ([`place`](super::place)).
fn compare(dir: &Path, task: &Task) -> std::io::Result<(Option<bool>, bool, bool)> {
    let now = read_back(dir)?;
    let changed = now != task.before;
    let wrong = super::place::wrong_place(&task.before, task.after.as_ref(), &now);
    Ok((task.after.as_ref().map(|a| *a == now), changed, wrong))
}

/// The workspace's regular files (the state directory `.lancet/` aside);
/// anything else in it makes it differ from every expectation.
fn read_back(dir: &Path) -> std::io::Result<Files> {
    fn walk(root: &Path, dir: &Path, out: &mut Files) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if rel == ".lancet" {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else if kind.is_file() {
                out.insert(rel, std::fs::read(&path)?);
            } else {
                // A symlink or special file is never an expected result.
                out.insert(rel, b"\0not a regular file".to_vec());
            }
        }
        Ok(())
    }
    let mut out = Files::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

/// Runs the task's check in the workspace (in the sandbox when one is
/// configured): whether it passed, and why not.
async fn run_check(check: &Check, dir: &Path, c: &BenchConfig) -> (bool, Option<String>) {
    let (argv, stdin): (Vec<std::ffi::OsString>, Option<String>) = match check {
        Check::Command(cmd) => (vec!["sh".into(), "-c".into(), cmd.into()], None),
        Check::Python {
            file,
            test,
            context,
        } => (
            vec![
                "python3".into(),
                "-c".into(),
                EDITEVAL_HARNESS.into(),
                dir.join(file).into(),
            ],
            Some(serde_json::json!({"test": test, "context": context}).to_string()),
        ),
    };
    let (program, args) = match &c.sandbox {
        Some(s) => {
            let mut policy = SandboxPolicy::new(s.mode, dir).with_network(s.network);
            for w in &s.writable {
                policy = policy.with_writable(w);
            }
            let (program, mut args) = crate::agent::sandbox::launcher(&policy, &s.exe);
            args.extend(argv);
            (program.into_os_string(), args)
        }
        None => {
            let mut argv = argv.into_iter();
            let program = argv.next().unwrap_or_default();
            (program, argv.collect())
        }
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return (false, Some(words::bench_check_failed_to_start(&e))),
    };
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(text.as_bytes()).await;
    }
    match tokio::time::timeout(c.check_timeout, child.wait_with_output()).await {
        Ok(Ok(out)) if out.status.success() => (true, None),
        Ok(Ok(out)) => (
            false,
            Some(words::bench_check_failed(
                out.status.code(),
                &String::from_utf8_lossy(&out.stderr),
            )),
        ),
        Ok(Err(e)) => (false, Some(words::bench_check_failed_to_start(&e))),
        Err(_) => (false, Some(words::bench_check_timed_out(c.check_timeout))),
    }
}

/// Why a job did not pass (`None`: it passed).
///
/// In order: the provider failing or the time running out name themselves;
/// a result that meets every expectation passes; no edit attempted and
/// nothing changed is `no_edit`; when the last attempt failed, its data
/// decides (unparsable: `parse`; refused before the engine, e.g. a file
/// not read first: `stale`; the first failed edit's status: not found,
/// ambiguous, stale, syntax; a conflict between the call's own edits or an
/// edit the engine calls invalid: `parse`; a file-level error such as a
/// missing file: `not_found`); otherwise the edits applied and the files
/// are wrong (`wrong_result`) or the check failed (`check_failed`).
fn classify(
    ended: &Ended,
    tries: u32,
    last: Option<(&EditAttempt, bool)>,
    files_ok: Option<bool>,
    check_ok: Option<bool>,
    changed: bool,
) -> Option<FailureKind> {
    match ended {
        Ended::Provider(_) => return Some(FailureKind::Provider),
        Ended::Timeout => return Some(FailureKind::Timeout),
        Ended::Ran => {}
    }
    if files_ok != Some(false) && check_ok != Some(false) {
        return None;
    }
    if tries == 0 && !changed {
        return Some(FailureKind::NoEdit);
    }
    if let Some((attempt, true)) = last {
        return Some(match attempt {
            // A cut-off edit could not be read: the model's reply ended in it.
            EditAttempt::Unparsed(_) | EditAttempt::CutOff => FailureKind::Parse,
            EditAttempt::Refused => FailureKind::Stale,
            EditAttempt::Planned(report) => {
                let status = report.edits().map(|e| e.status).find(|s| !s.is_ok());
                match status {
                    Some(EditStatus::NotFound) => FailureKind::NotFound,
                    Some(EditStatus::Ambiguous) => FailureKind::Ambiguous,
                    Some(EditStatus::Stale) => FailureKind::Stale,
                    Some(EditStatus::SyntaxError) => FailureKind::Syntax,
                    Some(_) => FailureKind::Parse,
                    None if report.files.iter().any(|f| f.error.is_some()) => FailureKind::NotFound,
                    None => FailureKind::WrongResult,
                }
            }
        });
    }
    if files_ok == Some(false) {
        Some(FailureKind::WrongResult)
    } else {
        Some(FailureKind::CheckFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's scratch path that someone else created first is not deleted
    /// (the job fails to make its directory and leaves the path alone).
    #[test]
    fn a_scratch_path_made_by_someone_else_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("lancet-bench-1-0");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("keep"), "x").unwrap();
        let scratch = Scratch {
            path: theirs.clone(),
            made: AtomicBool::new(false),
        };
        assert!(std::fs::create_dir(&scratch.path).is_err());
        drop(scratch);
        assert!(theirs.join("keep").exists());
        let ours = Scratch {
            path: dir.path().join("lancet-bench-1-1"),
            made: AtomicBool::new(true),
        };
        std::fs::create_dir(&ours.path).unwrap();
        let path = ours.path.clone();
        drop(ours);
        assert!(!path.exists());
    }

    #[test]
    fn classification_follows_the_data() {
        let ran = Ended::Ran;
        assert_eq!(classify(&ran, 1, None, Some(true), None, true), None);
        assert_eq!(
            classify(&ran, 0, None, Some(false), None, false),
            Some(FailureKind::NoEdit)
        );
        let unparsed = EditAttempt::Unparsed(crate::ParseError::NoEdits);
        assert_eq!(
            classify(&ran, 2, Some((&unparsed, true)), Some(false), None, false),
            Some(FailureKind::Parse)
        );
        assert_eq!(
            classify(
                &ran,
                1,
                Some((&EditAttempt::Refused, true)),
                Some(false),
                None,
                false
            ),
            Some(FailureKind::Stale)
        );
        assert_eq!(
            classify(&ran, 1, Some((&unparsed, false)), Some(false), None, true),
            Some(FailureKind::WrongResult)
        );
        assert_eq!(
            classify(&ran, 1, None, None, Some(false), true),
            Some(FailureKind::CheckFailed)
        );
        assert_eq!(
            classify(&Ended::Timeout, 0, None, None, None, false),
            Some(FailureKind::Timeout)
        );
        assert_eq!(
            classify(&Ended::Provider(String::new()), 0, None, None, None, false),
            Some(FailureKind::Provider)
        );
    }
}
