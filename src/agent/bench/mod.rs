//! The benchmark behind `lancet bench`: tasks × models × formats × modes,
//! every attempt through the same agent loop ([`run`](super::run::run)),
//! tools and engine as `lancet run`, so what it measures is what a user gets.
//!
//! - `task`: tasks and their sources (a task directory, react-edit, EditEval).
//! - `sim`: simulated models (`sim:perfect`, `sim:<mistake>`), served over
//!   a loopback OpenAI-compatible HTTP server, so the real provider, loop,
//!   tools and feedback carry every simulated turn.
//! - `mistakes`: the mistakes `sim:` profiles make, and what each claims.
//! - `replay`: each job's transcript, and `replay:DIR` answering from them.
//! - `runner`: one job (a task for one model, format and mode) in a fresh
//!   temporary workspace, bounded tries, a timeout, classification of the
//!   failure; many jobs with bounded concurrency, resumable and stoppable.
//! - `summary`: per model × format × mode pass rates with Wilson intervals,
//!   tries, tokens, failures by kind; `report.json`.
//! - `paired`: the exact McNemar test between formats of one model, the
//!   verdicts (best format, distinguishable or not) and `--recommend`'s choice.
//! - `place`: whether a result changed something the task leaves alone.
//! - `shard`: `--shard K/N` and merging results (`bench report`).
//! - `report`: `report.json` from records; `html`: `report.html`.
//! - `recommend`: writing the choice into a models.toml, comments kept.
//! - `limits`: per-provider requests per minute and in flight, shared by
//!   every job of one provider (the provider's gate).
//! - `mutate` (feature `syntax`): bug-fix tasks generated from a source tree
//!   (`mutate:DIR[:N]`), one seeded mutation of one file each.
//!
//! Owns: the benchmark's data ([`Record`], one line of `results.jsonl`, shared
//! by the runner and the report) and its run. Does not own: resolving
//! provider names from configuration and environment (the CLI, as for
//! `lancet run`), words for people (`words`), or anything of the engine.
//!
//! Invariant: a [`Record`] is written only for a job that finished (passed,
//! failed, or timed out); an interrupted job leaves no record, so a rerun
//! with the same results file does it again and nothing twice.

pub mod mistakes;
#[cfg(feature = "syntax")]
pub mod mutate;
pub mod replay;
pub mod runner;
pub mod sim;
pub mod summary;
pub mod task;

pub mod html;
pub mod limits;
pub mod paired;
pub mod place;
pub mod recommend;
pub mod report;
pub mod shard;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::provider::ProviderConfig;
use super::sandbox::SandboxMode;
use crate::Format;

pub use super::words::bench_table as table;
pub use super::words::{
    bench_bar_message as bar_message, bench_bar_template as bar_template,
    bench_conflict as conflict_text, bench_models_header as models_header,
    bench_recommend_no_pass as recommend_no_pass, bench_recommend_not_real as recommend_not_real,
    bench_recommend_reason as recommend_reason, bench_recommended as recommended_text,
    bench_verdicts as verdicts_text,
};
pub use mistakes::{Claim, Mistake};
pub use runner::{Job, Progress, RunEnd, run};
pub use summary::{Row, Summary, wilson};
pub use task::{Check, Files, Skipped, Source, Task, TaskError};

/// How edits are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Through the `edit` tool.
    Tool,
    /// Written in the reply.
    Text,
}

impl Mode {
    /// Both modes, tool first.
    pub const ALL: &'static [Mode] = &[Mode::Tool, Mode::Text];

    /// `tool` or `text`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Tool => "tool",
            Mode::Text => "text",
        }
    }
}

/// Why a job did not pass (`results.jsonl`'s `failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The last edit could not be parsed in the format (or was malformed:
    /// overlapping edits, a placeholder, an edit the engine calls invalid).
    Parse,
    /// The text or lines to change were not found (or the file was missing).
    NotFound,
    /// The text to change matched in more than one place.
    Ambiguous,
    /// The edit was against content the file no longer has (hashline anchors,
    /// or an edit of a file not read first).
    Stale,
    /// The syntax guard refused the edit.
    Syntax,
    /// Edits applied, but the files are not the expected ones.
    WrongResult,
    /// The model never attempted an edit.
    NoEdit,
    /// The provider failed (after its retries).
    Provider,
    /// The job ran out of time.
    Timeout,
    /// Edits applied and the files may be right, but the task's check failed.
    CheckFailed,
}

impl FailureKind {
    /// Every kind, in the contract's order.
    pub const ALL: &'static [FailureKind] = &[
        FailureKind::Parse,
        FailureKind::NotFound,
        FailureKind::Ambiguous,
        FailureKind::Stale,
        FailureKind::Syntax,
        FailureKind::WrongResult,
        FailureKind::NoEdit,
        FailureKind::Provider,
        FailureKind::Timeout,
        FailureKind::CheckFailed,
    ];

    /// The name in `results.jsonl`.
    pub fn name(self) -> &'static str {
        match self {
            FailureKind::Parse => "parse",
            FailureKind::NotFound => "not_found",
            FailureKind::Ambiguous => "ambiguous",
            FailureKind::Stale => "stale",
            FailureKind::Syntax => "syntax",
            FailureKind::WrongResult => "wrong_result",
            FailureKind::NoEdit => "no_edit",
            FailureKind::Provider => "provider",
            FailureKind::Timeout => "timeout",
            FailureKind::CheckFailed => "check_failed",
        }
    }
}

/// One finished job: a line of `results.jsonl`. The fields DESIGN.md names
/// come first and are never removed; the rest are additions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The task's id.
    pub task: String,
    /// Its source's label.
    pub source: String,
    /// The model as named on the command line.
    pub model: String,
    /// The format's name.
    pub format: String,
    /// `tool` or `text`.
    pub mode: Mode,
    /// Whether the result passed.
    pub pass: bool,
    /// Model turns that attempted edits (see the runner on tries).
    pub tries: u32,
    /// Why it did not pass.
    pub failure: Option<FailureKind>,
    /// Prompt tokens, summed over the turns.
    pub tokens_in: u64,
    /// Completion tokens, summed over the turns.
    pub tokens_out: u64,
    /// Cost in dollars when the model's prices are known.
    pub cost: Option<f64>,
    /// Wall-clock milliseconds of the job (workspace, model, check).
    pub ms: u64,
    /// Model turns taken.
    #[serde(default)]
    pub turns: u32,
    /// The provider's error, or the check's failure, for a person (not a kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The result changed something the expected change leaves alone
    /// (another file, or another part of the file): see `place`.
    #[serde(default)]
    pub wrong_place: bool,
    /// The loosest matcher tier among the edits the job wrote (`exact` …
    /// `fuzzy`, `anchor` for hashline); absent when none was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// How the agent loop ended ([`Ending::name`](crate::agent::run::Ending::name):
    /// `answered`, `truncated` for a reply cut off at `max_tokens`, `looping`,
    /// `max_turns`, `repeating`, `stopped` when the tries were used up…);
    /// absent when it did not end by itself (the provider failed, the time
    /// ran out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<String>,
}

impl Record {
    /// What identifies a job: a rerun skips records with a key it has.
    pub fn key(&self) -> Key {
        Key {
            task: self.task.clone(),
            source: self.source.clone(),
            model: self.model.clone(),
            format: self.format.clone(),
            mode: self.mode,
        }
    }
}

/// A job's identity (task, source, model, format, mode).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The task.
    pub task: String,
    /// Its source.
    pub source: String,
    /// The model.
    pub model: String,
    /// The format.
    pub format: String,
    /// The mode.
    pub mode: Mode,
}

/// A simulated model's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimProfile {
    /// Renders the task's real change in the format, exactly.
    Perfect,
    /// Makes a mistake in the first edit (see `mistakes`); after the
    /// engine's feedback, the perfect edit, or when stubborn the same
    /// mistake again.
    Mistaken {
        /// The mistake.
        mistake: Mistake,
        /// Whether the retry repeats it.
        stubborn: bool,
    },
}

impl SimProfile {
    /// Every profile: perfect, then each mistake and its stubborn variant.
    pub fn all() -> Vec<SimProfile> {
        let mut out = vec![SimProfile::Perfect];
        for &mistake in Mistake::ALL {
            for stubborn in [false, true] {
                out.push(SimProfile::Mistaken { mistake, stubborn });
            }
        }
        out
    }

    /// The profile's name after `sim:`.
    pub fn name(self) -> &'static str {
        match self {
            SimProfile::Perfect => "perfect",
            SimProfile::Mistaken {
                mistake,
                stubborn: false,
            } => mistake.name(),
            SimProfile::Mistaken {
                mistake,
                stubborn: true,
            } => mistake.stubborn_name(),
        }
    }

    /// The profile called `name`, if it is built.
    pub fn from_name(name: &str) -> Option<SimProfile> {
        SimProfile::all().into_iter().find(|p| p.name() == name)
    }
}

/// How a model is reached.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Backend {
    /// A simulated model, served on loopback by the benchmark itself.
    Sim(SimProfile),
    /// A real endpoint, resolved by the caller as `lancet run` resolves one.
    Provider(Box<ProviderConfig>),
    /// Recorded transcripts (`replay:DIR`), answered turn by turn on loopback.
    Replay(Arc<replay::Recording>),
}

/// A model under test.
#[derive(Debug, Clone)]
pub struct Model {
    /// The name as given on the command line (results' `model`).
    pub label: String,
    /// How it is reached.
    pub backend: Backend,
    /// Prices per million tokens (input, output), when known.
    pub prices: Option<(f64, f64)>,
}

/// The bash tool's sandbox for every job: each job's workspace is its root.
#[derive(Debug, Clone)]
pub struct BenchSandbox {
    /// The mode.
    pub mode: SandboxMode,
    /// Whether commands may use the network.
    pub network: bool,
    /// Extra writable directories.
    pub writable: Vec<PathBuf>,
    /// The lancet executable that enforces it.
    pub exe: PathBuf,
    /// The sandbox's paragraph of the system prompt.
    pub prompt_note: String,
}

/// How a benchmark runs, as a value.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BenchConfig {
    /// Formats to measure.
    pub formats: Vec<Format>,
    /// Modes to measure.
    pub modes: Vec<Mode>,
    /// Model turns that may attempt edits, each after the engine's feedback on the last.
    pub tries: u32,
    /// Jobs in flight.
    pub jobs: usize,
    /// For simulated models (and, later, generated tasks).
    pub seed: u64,
    /// A job's wall-clock limit (model turns, tools and check).
    pub task_timeout: Duration,
    /// A check command's limit (inside the job's).
    pub check_timeout: Duration,
    /// Model turns besides the tries: reading, exploring, answering.
    pub extra_turns: u32,
    /// The most tokens per reply.
    pub max_tokens: u32,
    /// Back-to-back copies of one chunk of a reply's text that stop it as a
    /// loop (0: no guard; see [`RunConfig`](crate::agent::run::RunConfig)).
    pub loop_repeats: u32,
    /// The bash tool's sandbox (`None`: commands run unconfined).
    pub sandbox: Option<BenchSandbox>,
    /// Where job workspaces are made (each in a fresh directory of its own).
    pub scratch: PathBuf,
    /// Where each finished job's transcript is written (`None`: nowhere).
    pub transcripts: Option<PathBuf>,
}

impl BenchConfig {
    /// The defaults (every format, tool mode, 2 tries, 2 jobs, seed 1, 600 s
    /// per job, 60 s per check, 8 extra turns, 8192 tokens per reply, the
    /// default repetition guard), with job workspaces in `scratch`.
    pub fn new(scratch: PathBuf) -> BenchConfig {
        BenchConfig {
            formats: Format::ALL.to_vec(),
            modes: vec![Mode::Tool],
            tries: 2,
            jobs: 2,
            seed: 1,
            task_timeout: Duration::from_secs(600),
            check_timeout: Duration::from_secs(60),
            extra_turns: 8,
            max_tokens: 8192,
            loop_repeats: crate::agent::guard::DEFAULT_LOOP_REPEATS,
            sandbox: None,
            scratch,
            transcripts: None,
        }
    }
}
