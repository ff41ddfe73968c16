//! The binary's exit statuses and its one error type.
//!
//! Every command returns `Result<Exit, Error>`; `main` alone prints an
//! [`Error`] (as `lancet: …` on stderr, or as the report object under
//! `apply --json`) and turns it into its [`Exit`]. An error is data: the
//! paths, values and library errors it is about; its status comes from what
//! it is, never from its wording.
//!
//! Owns: the exit statuses of DESIGN.md's contract and the words of the
//! binary's own failures. Does not own: the engine's words for edits and
//! input (`lancet::feedback`, which `Display` calls) or the agent's words
//! for the model.

use std::path::PathBuf;
use std::process::ExitCode;

use lancet::{ApplyReport, DecodeError, WorkspaceError};

/// How a command ended, as DESIGN.md numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// 0: done (apply: every edit applied; run: the model answered; diff:
    /// the files are the same).
    Success,
    /// 1: apply: an edit could not be applied; run: stopped without an
    /// answer; diff: the files differ; undo: nothing was undone.
    Failed,
    /// 2: malformed input, a usage or a configuration error.
    Usage,
    /// 3 (apply, undo): the disk failed.
    Io,
    /// 3 (run): the provider failed after its retries.
    #[cfg(feature = "agent")]
    Provider,
    /// `lancet sandbox`: the status of its own failure (125 the sandbox
    /// could not be set up, 126 cannot run, 127 not found); on success the
    /// command replaced lancet and its status is the command's.
    #[cfg(feature = "agent")]
    Sandbox(u8),
}

impl Exit {
    /// The process's exit status.
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Io => 3,
            #[cfg(feature = "agent")]
            Exit::Provider => 3,
            #[cfg(feature = "agent")]
            Exit::Sandbox(code) => code,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The file of edits (or a file to diff or view) cannot be read.
    #[error("cannot read {what}{}: {source}", path.display())]
    Read {
        /// What the file is to the command (`"the edits file "`, or empty).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// `apply` with no input file and a terminal on stdin.
    #[error("no edits given: pass a file of edits, or pipe them on standard input")]
    NoEdits,
    /// Standard input could not be read.
    #[error("cannot read standard input: {0}")]
    Stdin(std::io::Error),
    /// The edits are not UTF-8.
    #[error("the edits are not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Where the first invalid byte is.
        offset: usize,
    },
    /// No format could parse the input; the words are the engine's
    /// (`lancet::feedback::parse_error`).
    #[error("{}", lancet::feedback::parse_error(error, *format))]
    Malformed {
        /// Why it does not parse.
        error: lancet::ParseError,
        /// The format it was parsed as (`None`: none was recognised).
        format: Option<&'static str>,
    },
    /// `--reverse` or `--strip` on input that is not a unified diff.
    #[error("--reverse and --strip apply to unified diffs; the input is in another format")]
    DiffOnly,
    /// The root cannot be opened.
    #[error("{}", root_words(path, source))]
    Root {
        /// The root as given.
        path: PathBuf,
        /// Why.
        source: WorkspaceError,
    },
    /// The commit failed; nothing was written. Under `--json` the planned
    /// report is printed with it.
    #[error("{}", lancet::feedback::workspace_error(source))]
    Commit {
        /// Why.
        source: WorkspaceError,
        /// The plan's report (kept only under `--json`).
        report: Option<Box<ApplyReport>>,
    },
    /// `undo` with an empty journal.
    #[error("nothing to undo: no apply is recorded in {}", root.display())]
    NothingToUndo {
        /// The canonical root.
        root: PathBuf,
    },
    /// `undo` would overwrite later changes.
    #[error("{0}; nothing was changed. Undo would overwrite changes made after the apply.")]
    UndoConflict(WorkspaceError),
    /// `undo` failed otherwise.
    #[error("undo failed: {}", lancet::feedback::workspace_error(.0))]
    Undo(WorkspaceError),
    /// Another lancet holds the root's lock past the wait.
    #[error("{}", lancet::feedback::workspace_error(.0))]
    Locked(WorkspaceError),
    /// `view` of something that is not a regular file lancet may read (a
    /// FIFO, a device, a file over the size limit).
    #[error("{}", lancet::feedback::workspace_error(.0))]
    Unviewable(WorkspaceError),
    /// `view` of a file that is not text.
    #[error("{}: {source}", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
        /// Why.
        source: DecodeError,
    },
    /// `--lines` that is not `A:B`.
    #[error("--lines takes A:B with 1-based line numbers (got {0:?})")]
    BadRange(String),
    /// `formats NAME` with an unknown name.
    #[error("unknown format {name:?}; available: {}", crate::cli::format_names().join(", "))]
    UnknownFormat {
        /// The name given.
        name: String,
    },
    /// models.toml (built in) does not parse.
    #[cfg(feature = "agent")]
    #[error("models.toml: {0}")]
    Models(lancet::agent::models::ModelsError),
    /// No model from the flags, the configuration or the environment.
    #[cfg(feature = "agent")]
    #[error("no model: pass --model, set `model` in .lancet.toml, or set LANCET_MODEL")]
    NoModel,
    /// `--provider` or `provider` names neither a wire nor a profile.
    #[cfg(feature = "agent")]
    #[error(
        "unknown provider `{name}`: use openai, anthropic, or a profile under [providers] in the configuration"
    )]
    UnknownProvider {
        /// The name given.
        name: String,
    },
    /// The configuration's `edit_format` is not a format.
    #[cfg(feature = "agent")]
    #[error("unknown edit format `{name}`: use auto, {}", crate::cli::format_names().join(", "))]
    UnknownEditFormat {
        /// The name given.
        name: String,
    },
    /// The configuration's `permission` is not a mode.
    #[cfg(feature = "agent")]
    #[error("unknown permission mode `{name}`: use {}", mode_names())]
    UnknownPermission {
        /// The name given.
        name: String,
    },
    /// A configuration file does not parse.
    #[cfg(feature = "agent")]
    #[error(transparent)]
    Config(lancet::agent::config::ConfigError),
    /// A permission rule does not parse.
    #[cfg(feature = "agent")]
    #[error("permission rule `{rule}`: {source}")]
    BadRule {
        /// The rule as written.
        rule: String,
        /// Why.
        source: lancet::agent::permissions::RuleError,
    },
    /// The root of `lancet run` cannot be used.
    #[cfg(feature = "agent")]
    #[error("{}: {source}", root.display())]
    RunRoot {
        /// The root as given.
        root: PathBuf,
        /// Why.
        source: WorkspaceError,
    },
    /// `--resume` with no session.
    #[cfg(feature = "agent")]
    #[error("--resume: there is no session in this root yet")]
    NoSession,
    /// `--resume` could not read the last session.
    #[cfg(feature = "agent")]
    #[error("--resume: {0}")]
    Resume(std::io::Error),
    /// The async runtime could not start.
    #[cfg(feature = "agent")]
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The provider failed after its retries.
    #[cfg(feature = "agent")]
    #[error("{}", provider_words(source, base_url, model, *idle))]
    Provider {
        /// What failed (boxed: it is by far the largest variant).
        source: Box<lancet::agent::types::ProviderError>,
        /// The endpoint.
        base_url: String,
        /// The model.
        model: String,
        /// The idle timeout in force (quoted when it ended the reply).
        idle: std::time::Duration,
    },
    /// A sandbox setting (`--sandbox`, `sandbox`, `sandbox_writable`) that
    /// cannot be used.
    #[cfg(feature = "agent")]
    #[error("{0}")]
    SandboxSetting(String),
    /// An endpoint lancet cannot send requests to (not a URL, not http(s),
    /// no host); said before anything is sent.
    #[cfg(feature = "agent")]
    #[error("{origin} is not an endpoint lancet can use ({url:?}): {why}")]
    BadBaseUrl {
        /// The value.
        url: String,
        /// Where it was set.
        origin: Origin,
        /// What is wrong with it.
        why: UrlProblem,
    },
    /// Ctrl-C: the run was abandoned.
    #[cfg(feature = "agent")]
    #[error("interrupted; the session so far is saved (continue with --resume)")]
    Interrupted,
    /// The session's terminal failed (the line editor's error).
    #[cfg(feature = "agent")]
    #[error("the session's terminal failed: {0}")]
    Session(String),
    /// `bench`: a flag, source or model kind that is not built yet.
    #[cfg(feature = "agent")]
    #[error("{what} is not built yet (README.md, \"Benchmark\", lists what is)")]
    BenchNotBuilt {
        /// The flag or kind, as given.
        what: String,
    },
    /// `bench` without task sources or models.
    #[cfg(feature = "agent")]
    #[error("bench needs {0}")]
    BenchMissing(&'static str),
    /// `bench`: a task source cannot be read.
    #[cfg(feature = "agent")]
    #[error("task source: {0}")]
    BenchTasks(#[from] lancet::agent::bench::TaskError),
    /// `bench`: the results directory cannot be used.
    #[cfg(feature = "agent")]
    #[error("{}: {source}", path.display())]
    BenchOut {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// `bench --shard`: not K/N.
    #[cfg(feature = "agent")]
    #[error(transparent)]
    BenchShard(#[from] lancet::agent::bench::shard::ShardError),
    /// `bench --recommend`: the models.toml cannot be edited.
    #[cfg(feature = "agent")]
    #[error("{}: {source}", path.display())]
    BenchRecommend {
        /// The file.
        path: PathBuf,
        /// Why.
        source: lancet::agent::bench::recommend::RecommendError,
    },
    /// The user's models.toml does not parse.
    #[cfg(feature = "agent")]
    #[error("{}: {source}", path.display())]
    UserModels {
        /// The file.
        path: PathBuf,
        /// Why.
        source: lancet::agent::models::ModelsError,
    },
}

/// Where a setting came from, as an error names it.
#[cfg(feature = "agent")]
#[derive(Debug)]
pub(crate) enum Origin {
    /// A command-line flag (`--base-url`).
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// A key of a configuration file.
    Config {
        /// The key, dotted (`providers.local.base_url`).
        key: String,
        /// The file.
        file: PathBuf,
    },
}

#[cfg(feature = "agent")]
impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(name) | Origin::Env(name) => f.write_str(name),
            Origin::Config { key, file } => write!(f, "`{key}` in {}", file.display()),
        }
    }
}

/// What is wrong with an endpoint.
#[cfg(feature = "agent")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum UrlProblem {
    /// It does not parse as a URL.
    NotUrl,
    /// Its scheme is not http or https.
    Scheme(String),
    /// It names no host.
    NoHost,
}

#[cfg(feature = "agent")]
impl std::fmt::Display for UrlProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UrlProblem::NotUrl => f.write_str("not a URL; write e.g. http://127.0.0.1:11434/v1"),
            UrlProblem::Scheme(s) => write!(f, "a {s}: URL; use http:// or https://"),
            UrlProblem::NoHost => f.write_str("it names no host"),
        }
    }
}

/// `read-only, ask or auto`.
#[cfg(feature = "agent")]
fn mode_names() -> String {
    let names: Vec<&str> = lancet::agent::permissions::Mode::ALL
        .iter()
        .map(|m| m.name())
        .collect();
    match names.split_last() {
        Some((last, init)) if !init.is_empty() => format!("{} or {last}", init.join(", ")),
        _ => names.join(""),
    }
}

/// At most 200 characters of a server's answer, on one line.
#[cfg(feature = "agent")]
fn clip(body: &str) -> String {
    let one: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

/// The provider gave up: what happened and what to do.
#[cfg(feature = "agent")]
fn provider_words(
    e: &lancet::agent::types::ProviderError,
    base_url: &str,
    model: &str,
    idle: std::time::Duration,
) -> String {
    use lancet::agent::types::{BaseUrlProblem, Limit, ProviderError};
    match e {
        ProviderError::Auth { .. } => format!(
            "the key was refused by {base_url}: check the API key in the environment (OPENAI_API_KEY / ANTHROPIC_API_KEY, or the profile's api_key_env)"
        ),
        ProviderError::ModelNotFound { .. } => format!(
            "{base_url} does not serve the model `{model}`: check --model (a local server must have it loaded)"
        ),
        ProviderError::Connection(msg) => format!(
            "cannot reach {base_url} ({msg}): is the server running, and is --base-url right?"
        ),
        ProviderError::ContextOverflow { .. } => format!(
            "the conversation no longer fits {model}'s context window, even after compaction: start a new session with a narrower task (or set context_window in the provider profile so lancet compacts earlier)"
        ),
        ProviderError::RateLimited { body } => format!(
            "{base_url} kept answering 429 (rate limited) through every retry ({}): wait a while and --resume, or check your plan's limits",
            clip(body)
        ),
        ProviderError::Server { status, body } => format!(
            "{base_url} kept failing with {status} through every retry ({}): the service is having trouble; try again later with --resume",
            clip(body)
        ),
        ProviderError::Refused { status, body } => format!(
            "{base_url} refused the request with {status} ({}): check the model name and the endpoint's API (--provider openai|anthropic)",
            clip(body)
        ),
        ProviderError::Timeout => format!(
            "{base_url} stopped sending anything (idle timeout, {} s): the server may be overloaded or the model too slow to load; try again with --resume, or raise idle_timeout in .lancet.toml",
            idle.as_secs_f64()
        ),
        ProviderError::Redirected {
            status,
            location,
            location_base,
        } => format!(
            "{base_url} redirected the request ({status}) to {}: lancet does not follow redirects, so that the key is not sent elsewhere; if that is the right server, point --base-url at {}",
            location.as_deref().unwrap_or("nowhere it named"),
            location_base.as_deref().unwrap_or("it")
        ),
        ProviderError::NotEventStream { content_type, body } => format!(
            "{base_url} answered with {} instead of an event stream ({}): is --base-url the model API's endpoint (…/v1 for an OpenAI-compatible server), and does it stream?",
            content_type.as_deref().unwrap_or("no content type"),
            clip(body)
        ),
        ProviderError::LimitReached(Limit::Turn(limit)) => format!(
            "the reply from {base_url} took longer than the turn limit ({} s, retries included): the server kept the reply open without finishing it; try again with --resume, or raise turn_timeout in .lancet.toml",
            limit.as_secs_f64()
        ),
        ProviderError::LimitReached(Limit::ReplyBytes(limit)) => format!(
            "the reply from {base_url} passed the reply size cap ({limit} bytes of text and tool arguments) and was cut off: the server or the model would not stop; raise max_reply_bytes in .lancet.toml if the reply was wanted"
        ),
        ProviderError::InvalidBaseUrl { url, problem } => {
            let what = match problem {
                BaseUrlProblem::Unparsable(reason) => format!("is not a URL ({reason})"),
                BaseUrlProblem::Scheme(scheme) => {
                    format!("is a {scheme}: URL, not http:// or https://")
                }
                BaseUrlProblem::NoHost => "names no host".to_owned(),
                BaseUrlProblem::QueryOrFragment => "has a ?query or #fragment".to_owned(),
                _ => "cannot be used".to_owned(),
            };
            format!(
                "the base URL `{url}` {what}: give the endpoint as http(s)://HOST[:PORT][/PATH], e.g. http://127.0.0.1:11434/v1 (--base-url, the profile's base_url, or OPENAI_BASE_URL / ANTHROPIC_BASE_URL)"
            )
        }
        other => format!(
            "{other} (from {base_url}): is it an OpenAI-compatible or Anthropic endpoint? (--provider)"
        ),
    }
}

/// The words for a root that cannot be opened.
fn root_words(path: &std::path::Path, e: &WorkspaceError) -> String {
    if e.is_io() {
        format!("cannot open the root {}: {e}", path.display())
    } else {
        format!(
            "the root {} is not a directory (-C names the workspace root)",
            path.display()
        )
    }
}

impl Error {
    /// The exit status this error ends the command with.
    pub(crate) fn exit(&self) -> Exit {
        let io = |e: &std::io::Error| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Exit::Usage
            } else {
                Exit::Io
            }
        };
        match self {
            Error::Read { source, .. } => io(source),
            Error::Stdin(_) => Exit::Io,
            Error::NoEdits
            | Error::NotUtf8 { .. }
            | Error::Malformed { .. }
            | Error::DiffOnly
            | Error::BadRange(_)
            | Error::UnknownFormat { .. } => Exit::Usage,
            Error::Root { source, .. } if source.is_io() => Exit::Io,
            Error::Root { .. } => Exit::Usage,
            Error::Commit { source, .. } | Error::Undo(source) if source.is_io() => Exit::Io,
            Error::Commit { .. }
            | Error::Undo(_)
            | Error::NothingToUndo { .. }
            | Error::UndoConflict(_)
            | Error::Locked(_)
            | Error::Unviewable(_)
            | Error::NotText { .. } => Exit::Failed,
            #[cfg(feature = "agent")]
            Error::Models(_)
            | Error::NoModel
            | Error::UnknownProvider { .. }
            | Error::UnknownEditFormat { .. }
            | Error::UnknownPermission { .. }
            | Error::Config(_)
            | Error::BadRule { .. }
            | Error::RunRoot { .. }
            | Error::NoSession
            | Error::Resume(_)
            | Error::Runtime(_)
            | Error::BadBaseUrl { .. }
            | Error::SandboxSetting(_) => Exit::Usage,
            #[cfg(feature = "agent")]
            Error::Provider { source, .. }
                if matches!(
                    **source,
                    lancet::agent::types::ProviderError::InvalidBaseUrl { .. }
                ) =>
            {
                Exit::Usage
            }
            #[cfg(feature = "agent")]
            Error::Provider { .. } => Exit::Provider,
            #[cfg(feature = "agent")]
            Error::Interrupted => Exit::Failed,
            #[cfg(feature = "agent")]
            Error::Session(_) => Exit::Io,
            #[cfg(feature = "agent")]
            Error::BenchNotBuilt { .. }
            | Error::BenchMissing(_)
            | Error::BenchTasks(_)
            | Error::BenchOut { .. }
            | Error::BenchShard(_)
            | Error::BenchRecommend { .. }
            | Error::UserModels { .. } => Exit::Usage,
        }
    }
}
