//! The command line, as DESIGN.md's contract fixes it (clap derive).
//!
//! Only parsing lives here; `main.rs` and `run.rs` run the commands. Value
//! lists come from the library where it has them: `--format` and
//! `--edit-format` accept `auto` and every [`Format::ALL`] name, `--permission`
//! every [`Mode::ALL`](lancet::agent::permissions::Mode::ALL) name, so a new
//! format or mode needs no change here.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

#[cfg(feature = "agent")]
use clap::builder::NonEmptyStringValueParser;
use clap::builder::TypedValueParser;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::error::ErrorKind;
use clap::{Args, FromArgMatches, Parser, Subcommand, ValueEnum};
use lancet::Format;

/// Applies edits written by language models to source files.
#[derive(Debug, Parser)]
#[command(name = "lancet", version, about, propagate_version = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `apply`'s one-line help (the whole tree's and [`Cli::parse_args`]'s).
const APPLY_ABOUT: &str = "Apply edits (search/replace blocks, …) to the files they name";

impl Cli {
    /// Parses this process's command line (see [`Cli::parse_from`]).
    pub(crate) fn parse_args() -> Result<Cli, clap::Error> {
        Cli::parse_from(std::env::args_os().collect())
    }

    /// Parses `args` (the program's name first). `lancet apply …` is parsed
    /// against the `apply` subcommand alone: it is a short process whose
    /// start-up is a large part of a small edit, and building every other
    /// subcommand's arguments is work (and pages of code touched) it does
    /// not need. Its values, help, version and errors are the whole tree's
    /// (`apply_alone_parses_as_the_whole_tree` compares them).
    fn parse_from(args: Vec<OsString>) -> Result<Cli, clap::Error> {
        if args.get(1).is_some_and(|a| a == "apply") {
            let program = args
                .first()
                .map(Path::new)
                .and_then(Path::file_name)
                .map_or_else(|| "lancet".into(), OsStr::to_string_lossy);
            let apply = ApplyArgs::augment_args(
                clap::Command::new("apply")
                    .bin_name(format!("{program} apply"))
                    .display_name("lancet-apply")
                    .version(env!("CARGO_PKG_VERSION"))
                    .about(APPLY_ABOUT),
            );
            // Taken from the matches, not copied out of a clone of them.
            let mut matches = apply.try_get_matches_from(&args[1..])?;
            let apply = ApplyArgs::from_arg_matches_mut(&mut matches)?;
            return Ok(Cli {
                command: Command::Apply(apply),
            });
        }
        #[cfg(feature = "agent")]
        if let Some(cli) = session(&args) {
            return Ok(cli);
        }
        let cli = Cli::try_parse_from(args.iter())?;
        #[cfg(feature = "agent")]
        if matches!(&cli.command, Command::Run(r) if r.task.is_none()) && !interactive() {
            // Off a terminal a task is required, with today's error.
            use clap::CommandFactory as _;
            Cli::command()
                .mut_subcommand("run", |c| c.mut_arg("task", |a| a.required(true)))
                .try_get_matches_from(args)?;
        }
        Ok(cli)
    }
}

/// Whether a person is there: stdin and stdout are both terminals.
#[cfg(feature = "agent")]
pub(crate) fn interactive() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// `lancet [RUN OPTIONS]` on a terminal: `lancet run [RUN OPTIONS]` without
/// a task (the session). Anything else (a subcommand, `--help`, a task, no
/// terminal) is left to the whole tree, whose errors stay as they were.
#[cfg(feature = "agent")]
fn session(args: &[OsString]) -> Option<Cli> {
    let bare = match args.get(1).and_then(|a| a.to_str()) {
        None => args.len() == 1,
        Some(a) => a.starts_with('-') && !matches!(a, "-h" | "--help" | "-V" | "--version"),
    };
    if !bare || !interactive() {
        return None;
    }
    let mut run = vec![
        args.first().cloned().unwrap_or_else(|| "lancet".into()),
        "run".into(),
    ];
    run.extend(args.iter().skip(1).cloned());
    match Cli::try_parse_from(run) {
        Ok(cli) if matches!(&cli.command, Command::Run(r) if r.task.is_none()) => Some(cli),
        _ => None,
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    #[command(about = APPLY_ABOUT)]
    Apply(ApplyArgs),
    /// Show a file the way an edit format presents it to a model.
    View(ViewArgs),
    /// Print the unified diff of two files (exit 0: same, 1: different).
    Diff(DiffArgs),
    /// Revert the last apply in a root.
    Undo(UndoArgs),
    /// List the edit formats, or print one format's model instructions.
    Formats(FormatsArgs),
    /// The agent: a model works on the task with tools, in this root.
    #[cfg(feature = "agent")]
    Run(RunArgs),
    /// Run a command as the bash tool would: in the OS sandbox, in the root.
    #[cfg(feature = "agent")]
    Sandbox(crate::sandbox::SandboxArgs),
    /// The benchmark: tasks × models × formats × modes, through the agent loop.
    #[cfg(feature = "agent")]
    Bench(BenchArgs),
    /// MCP servers from the configuration: list them and their tools, or call one tool.
    #[cfg(feature = "agent")]
    Mcp(crate::mcp::McpArgs),
}

/// Every format's command-line name, in [`Format::ALL`]'s order.
pub(crate) fn format_names() -> Vec<&'static str> {
    Format::ALL.iter().map(|f| f.name()).collect()
}

/// A value parser over the names a library type gives its values: the
/// accepted list, the error for anything else and `--help`'s list all come
/// from `all` and `name`.
#[derive(Clone)]
pub(crate) struct Named<T: 'static> {
    all: &'static [T],
    name: fn(T) -> &'static str,
}

impl<T: Copy + Send + Sync + 'static> TypedValueParser for Named<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<T, clap::Error> {
        let names = self.all.iter().map(|&v| (self.name)(v));
        let given = PossibleValuesParser::new(names).parse_ref(cmd, arg, value)?;
        self.all
            .iter()
            .copied()
            .find(|&v| (self.name)(v) == given)
            .ok_or_else(|| clap::Error::new(ErrorKind::InvalidValue).with_cmd(cmd))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            self.all.iter().map(|&v| PossibleValue::new((self.name)(v))),
        ))
    }
}

/// The formats, for `lancet view` (which needs one).
fn formats() -> Named<Format> {
    Named {
        all: Format::ALL,
        name: Format::name,
    }
}

/// `--format` / `--edit-format`: `auto` or a format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatChoice {
    /// Detect it (apply) or take it from models.toml (run).
    Auto,
    /// This format.
    Given(Format),
}

/// Parses `auto` or any [`Format::ALL`] name.
#[derive(Clone)]
pub(crate) struct FormatChoiceParser;

impl TypedValueParser for FormatChoiceParser {
    type Value = FormatChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<FormatChoice, clap::Error> {
        let names = std::iter::once("auto").chain(format_names());
        let given = PossibleValuesParser::new(names).parse_ref(cmd, arg, value)?;
        Ok(Format::from_name(&given).map_or(FormatChoice::Auto, FormatChoice::Given))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        let names = std::iter::once("auto").chain(format_names());
        Some(Box::new(names.map(PossibleValue::new)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MaxTier {
    Exact,
    Whitespace,
    Indent,
    Unicode,
    Fuzzy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SyntaxPolicy {
    Reject,
    Warn,
    Off,
}

#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
    /// A file of edits; '-' or absent: standard input.
    pub(crate) input: Option<PathBuf>,
    /// The edit format (auto: detect it from the input).
    #[arg(short, long, value_parser = FormatChoiceParser, default_value = "auto")]
    pub(crate) format: FormatChoice,
    /// Workspace root; every path resolves inside it.
    #[arg(short = 'C', long, default_value = ".")]
    pub(crate) root: PathBuf,
    /// Target for input that names no file (bare blocks, whole file).
    #[arg(long, value_name = "PATH")]
    pub(crate) file: Option<String>,
    /// Strip N leading path components (unified diffs; default: a/ b/ detected).
    #[arg(short = 'p', long, value_name = "N")]
    pub(crate) strip: Option<usize>,
    /// Print the unified diff of what would change; write nothing.
    #[arg(short = 'n', long)]
    pub(crate) dry_run: bool,
    /// Write nothing; report by exit status only.
    #[arg(long, conflicts_with = "dry_run")]
    pub(crate) check: bool,
    /// Print one JSON report instead of the human summary.
    #[arg(long)]
    pub(crate) json: bool,
    /// Loosest matching tier allowed.
    #[arg(long, value_enum, default_value = "fuzzy")]
    pub(crate) max_tier: MaxTier,
    /// Apply what applies and skip what fails (default: all or nothing).
    #[arg(long)]
    pub(crate) partial: bool,
    /// What to do when an edit introduces a syntax error (needs the `syntax` feature).
    #[arg(long, value_enum)]
    pub(crate) syntax: Option<SyntaxPolicy>,
    /// Apply a unified diff in reverse.
    #[arg(short = 'R', long)]
    pub(crate) reverse: bool,
    /// Write files that are read-only (no write permission for their owner).
    #[arg(long)]
    pub(crate) force: bool,
    /// Keep no undo journal entry (nothing under .lancet/; `lancet undo`
    /// cannot revert this apply).
    #[arg(long)]
    pub(crate) no_undo: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ViewArgs {
    /// The file to show.
    pub(crate) file: PathBuf,
    /// The format whose view to use.
    #[arg(short, long, value_parser = formats(), default_value = "search-replace")]
    pub(crate) format: Format,
    /// Only lines A:B (1-based, inclusive; A: or :B open-ended).
    #[arg(long, value_name = "A:B")]
    pub(crate) lines: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DiffArgs {
    /// The old file.
    pub(crate) old: PathBuf,
    /// The new file.
    pub(crate) new: PathBuf,
    /// Lines of context.
    #[arg(short = 'U', long = "unified", default_value_t = 3, value_name = "N")]
    pub(crate) context: usize,
}

#[derive(Debug, Args)]
pub(crate) struct UndoArgs {
    /// Workspace root.
    #[arg(short = 'C', long, default_value = ".")]
    pub(crate) root: PathBuf,
}

#[derive(Debug, Args)]
pub(crate) struct FormatsArgs {
    /// A format whose model instructions to print.
    pub(crate) name: Option<String>,
}

/// `--provider`: one of the two wires, or a profile of the configuration.
#[cfg(feature = "agent")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProviderChoice {
    /// OpenAI-compatible Chat Completions.
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// A `[providers.NAME]` profile.
    Profile(String),
}

#[cfg(feature = "agent")]
impl ProviderChoice {
    /// `openai`, `anthropic`, or the profile's name.
    pub(crate) fn from_name(name: &str) -> ProviderChoice {
        match name {
            "openai" => ProviderChoice::OpenAi,
            "anthropic" => ProviderChoice::Anthropic,
            other => ProviderChoice::Profile(other.to_owned()),
        }
    }

    /// The name it was given as (a profile may be called `openai` too).
    pub(crate) fn name(&self) -> &str {
        match self {
            ProviderChoice::OpenAi => "openai",
            ProviderChoice::Anthropic => "anthropic",
            ProviderChoice::Profile(name) => name,
        }
    }
}

/// Parses `openai`, `anthropic` or any other (non-empty) profile name; help
/// lists the two wires.
#[cfg(feature = "agent")]
#[derive(Clone)]
pub(crate) struct ProviderParser;

#[cfg(feature = "agent")]
impl TypedValueParser for ProviderParser {
    type Value = ProviderChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<ProviderChoice, clap::Error> {
        let name = NonEmptyStringValueParser::new().parse_ref(cmd, arg, value)?;
        Ok(ProviderChoice::from_name(&name))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            ["openai", "anthropic"].into_iter().map(PossibleValue::new),
        ))
    }
}

/// The permission modes.
#[cfg(feature = "agent")]
fn modes() -> Named<lancet::agent::permissions::Mode> {
    use lancet::agent::permissions::Mode;
    Named {
        all: Mode::ALL,
        name: Mode::name,
    }
}

#[cfg(feature = "agent")]
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What the agent should do (none, on a terminal: the interactive session).
    pub(crate) task: Option<String>,
    /// Model as the provider names it (default: config, else LANCET_MODEL).
    #[arg(short, long)]
    pub(crate) model: Option<String>,
    /// openai, anthropic, or a profile name from the configuration.
    #[arg(long, value_parser = ProviderParser)]
    pub(crate) provider: Option<ProviderChoice>,
    /// Endpoint (default: profile, else OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the public one).
    #[arg(long)]
    pub(crate) base_url: Option<String>,
    /// The edit format (auto: from models.toml).
    #[arg(short = 'f', long, value_parser = FormatChoiceParser)]
    pub(crate) edit_format: Option<FormatChoice>,
    /// The model writes edits in its reply instead of calling the edit tool.
    #[arg(long)]
    pub(crate) text_mode: bool,
    /// What runs without asking.
    #[arg(long, value_parser = modes())]
    pub(crate) permission: Option<lancet::agent::permissions::Mode>,
    /// The same as --permission auto.
    #[arg(short = 'y', long)]
    pub(crate) yes: bool,
    /// The most model turns.
    #[arg(long)]
    pub(crate) max_turns: Option<u32>,
    /// One JSON event per line on stdout.
    #[arg(long)]
    pub(crate) json: bool,
    /// Workspace root; every path resolves inside it.
    #[arg(short = 'C', long, default_value = ".")]
    pub(crate) root: PathBuf,
    /// Continue the last session in this root.
    #[arg(long)]
    pub(crate) resume: bool,
    /// Trust this project's .lancet.toml as it is now (remembered in the user's configuration).
    #[arg(long)]
    pub(crate) trust: bool,
    /// The bash tool's OS sandbox: read-only, workspace-write or off
    /// (default: config, else read-only for --permission read-only, else workspace-write).
    #[arg(long, value_name = "MODE", value_parser = crate::sandbox::mode)]
    pub(crate) sandbox: Option<lancet::agent::sandbox::SandboxMode>,
}

/// `bench --mode`.
#[cfg(feature = "agent")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchMode {
    /// Edits through the edit tool.
    Tool,
    /// Edits written in the reply.
    Text,
    /// Both, as separate jobs.
    Both,
}

#[cfg(feature = "agent")]
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    pub(crate) command: Option<BenchCommand>,
    /// Task sources: DIR, react-edit:DIR, editeval:FILE, mutate:DIR[:N].
    #[arg(short, long = "tasks", value_name = "SOURCE", num_args = 1.., required = true)]
    pub(crate) tasks: Vec<String>,
    /// Comma list: openai:NAME, anthropic:NAME, PROFILE:NAME, a bare name, sim:PROFILE, replay:DIR.
    #[arg(
        short,
        long = "models",
        value_name = "LIST",
        value_delimiter = ',',
        required = true
    )]
    pub(crate) models: Vec<String>,
    /// Comma list of formats, or `all`.
    #[arg(
        short,
        long = "formats",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "all"
    )]
    pub(crate) formats: Vec<String>,
    /// How edits are sent.
    #[arg(long, value_enum, default_value = "tool")]
    pub(crate) mode: BenchMode,
    /// Attempts per task, each after the engine's feedback.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) tries: u32,
    /// Tasks in flight (default: cores).
    #[arg(short, long)]
    pub(crate) jobs: Option<usize>,
    /// For generated tasks and simulated models.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// The first N tasks of each source.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// results.jsonl (appended; a rerun skips what is done) and report.json
    /// (default: .lancet/bench/<timestamp>).
    #[arg(short, long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Run the K-th of N slices of the task list (merge with `bench report`).
    #[arg(long, value_name = "K/N")]
    pub(crate) shard: Option<String>,
    /// Write the best format per model into models.toml (PATH, default: the
    /// user's models.toml, which `lancet run --edit-format auto` reads first).
    #[arg(long, value_name = "PATH", num_args = 0..=1, require_equals = true)]
    pub(crate) recommend: Option<Option<PathBuf>>,
    /// One JSON event per line on stdout instead of the progress line.
    #[arg(long)]
    pub(crate) json: bool,
}

#[cfg(feature = "agent")]
#[derive(Debug, Subcommand)]
pub(crate) enum BenchCommand {
    /// Rebuild report.json / report.html from one or more result dirs.
    Report {
        /// Result directories (their results.jsonl are merged).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where the merged results.jsonl (appended), report.json and
        /// report.html go (default: the first DIR).
        #[arg(short, long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a parse gave: the arguments, or the error as a person sees it.
    fn outcome(r: Result<Cli, clap::Error>) -> String {
        match r {
            Ok(cli) => format!("{:?}", cli.command),
            Err(e) => format!("{:?} {} {}", e.kind(), e.exit_code(), e.render()),
        }
    }

    #[test]
    fn apply_alone_parses_as_the_whole_tree() {
        let cases: &[&[&str]] = &[
            &[],
            &["edit.diff"],
            &["-"],
            &["--help"],
            &["-h"],
            &["-V"],
            &["--version"],
            &["--bogus"],
            &["-f", "udiff", "-p", "1", "-C", "/tmp", "--json", "x.diff"],
            &["--format", "nope", "x"],
            &["--format=search-replace", "--file", "a.rs", "--dry-run"],
            &["-p", "many"],
            &[
                "--max-tier",
                "exact",
                "--partial",
                "--syntax",
                "warn",
                "-R",
                "--force",
            ],
            &["--no-undo", "--check", "a", "b"],
            &["--syntax"],
            &["--", "--weird-name"],
        ];
        for program in ["lancet", "/usr/local/bin/lancet", "l0"] {
            for case in cases {
                let args: Vec<OsString> = [program, "apply"]
                    .iter()
                    .chain(case.iter())
                    .map(OsString::from)
                    .collect();
                let alone = outcome(Cli::parse_from(args.clone()));
                let whole = outcome(Cli::try_parse_from(args));
                assert_eq!(alone, whole, "{program} apply {case:?}");
            }
        }
    }
}
