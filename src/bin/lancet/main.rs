//! The `lancet` command: the engine as a standalone patch tool, and the agent.
//!
//! Binary-only code lives here (argument parsing, terminal output, exit
//! statuses), so the library's API cannot grow by accident. Every command is
//! one variant of [`Command`], dispatched in one `match`; each returns
//! `Result<Exit, Error>`, and `main` alone prints an error and picks the exit
//! status from it. The command-line contract (flags, exit statuses, the JSON
//! report) is fixed by DESIGN.md: other tools script it.

#[cfg(feature = "agent")]
mod bench;
mod cli;
mod error;
#[cfg(feature = "agent")]
mod markdown;
#[cfg(feature = "agent")]
mod mcp;
#[cfg(feature = "agent")]
mod run;
#[cfg(feature = "agent")]
mod sandbox;
#[cfg(feature = "agent")]
mod session;
#[cfg(feature = "agent")]
mod session_ask;
#[cfg(feature = "agent")]
mod session_line;
#[cfg(feature = "agent")]
mod settings;
mod style;
#[cfg(feature = "agent")]
mod trust;

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use lancet::{ApplyOptions, Format, MatchOptions, Tier, Workspace, WorkspaceError};

use cli::{ApplyArgs, Cli, Command, DiffArgs, FormatChoice, FormatsArgs, UndoArgs, ViewArgs};
use error::{Error, Exit};

fn main() -> ExitCode {
    let cli = match Cli::parse_args() {
        Ok(cli) => cli,
        Err(e) => {
            let exit = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Success
            };
            let _ = e.print();
            return exit.into();
        }
    };
    // `apply --json` answers every outcome, failures of any exit status
    // included, with its report object on stdout: scripts parse one shape.
    let json_report = matches!(&cli.command, Command::Apply(a) if a.json);
    let result = match cli.command {
        Command::Apply(args) => apply(&args),
        Command::View(args) => view(&args),
        Command::Diff(args) => diff(&args),
        Command::Undo(args) => undo(&args),
        Command::Formats(args) => formats(&args),
        #[cfg(feature = "agent")]
        Command::Run(args) => run::run(&args),
        #[cfg(feature = "agent")]
        Command::Sandbox(args) => Ok(Exit::Sandbox(sandbox::sandbox(args))),
        #[cfg(feature = "agent")]
        Command::Bench(args) => bench::bench(&args),
        #[cfg(feature = "agent")]
        Command::Mcp(args) => mcp::mcp(&args),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(e) => {
            if json_report {
                println!("{}", error_report(&e));
            }
            anstream::eprintln!("lancet: {}", style::paint(style::BAD, &printable(&e)));
            e.exit().into()
        }
    }
}

/// An error as `apply --json`'s report object: the planned files when there
/// is a plan, and the error's words as the message.
fn error_report(e: &Error) -> lancet::ReportJson {
    let mut report = match e {
        Error::Commit {
            report: Some(report),
            ..
        } => lancet::feedback::json_report(report),
        _ => lancet::ReportJson::malformed(String::new()),
    };
    report.ok = false;
    report.written = false;
    report.message = e.to_string();
    report
}

/// `text` and a newline on stdout (or stderr) in one write, as `anstream`'s
/// macros print: a reader that closed the pipe early is no failure (the
/// runtime ignores SIGPIPE, so `println!` would panic there), and any other
/// error panics as theirs do.
fn print_plain(text: &str, on_stdout: bool) {
    use std::io::Write;
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    let written = if on_stdout {
        std::io::stdout().lock().write_all(line.as_bytes())
    } else {
        std::io::stderr().lock().write_all(line.as_bytes())
    };
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        let stream = if on_stdout { "stdout" } else { "stderr" };
        panic!("failed printing to {stream}: {e}");
    }
}

/// An error's words with control characters escaped: they quote paths,
/// configuration files and servers' answers, none of which may move the
/// cursor or retitle the terminal.
fn printable(e: &Error) -> String {
    let mut out = String::new();
    for c in e.to_string().chars() {
        if c.is_control() && c != '\n' && c != '\t' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn read_input(input: Option<&Path>) -> Result<String, Error> {
    let bytes = match input {
        Some(p) if p != Path::new("-") => std::fs::read(p).map_err(|source| Error::Read {
            what: "the edits file ",
            path: p.to_path_buf(),
            source,
        })?,
        _ => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(Error::NoEdits);
            }
            let mut buf = Vec::new();
            stdin.read_to_end(&mut buf).map_err(Error::Stdin)?;
            buf
        }
    };
    String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        offset: e.utf8_error().valid_up_to(),
    })
}

fn open_root(root: &Path) -> Result<Workspace, Error> {
    Workspace::open(root).map_err(|source| Error::Root {
        path: root.to_path_buf(),
        source,
    })
}

/// What the configuration says for `apply` (`undo`, `fsync`); a build
/// without the agent reads no configuration.
#[cfg(feature = "agent")]
fn apply_settings(root: &Path) -> Result<settings::ApplySettings, Error> {
    settings::apply_settings(root)
}

/// The defaults: journal on, no flushing.
#[cfg(not(feature = "agent"))]
#[derive(Default)]
struct ApplySettings {
    journal_off: bool,
    fsync: bool,
}

#[cfg(not(feature = "agent"))]
fn apply_settings(_root: &Path) -> Result<ApplySettings, Error> {
    Ok(ApplySettings::default())
}

fn apply(args: &ApplyArgs) -> Result<Exit, Error> {
    let input = read_input(args.input.as_deref())?;
    let format = match args.format {
        FormatChoice::Auto => Format::detect(&input).ok_or(Error::Malformed {
            error: lancet::ParseError::Unrecognised,
            format: None,
        })?,
        FormatChoice::Given(f) => f,
    };
    if (args.reverse || args.strip.is_some()) && format != Format::UnifiedDiff {
        return Err(Error::DiffOnly);
    }
    if !cfg!(feature = "syntax")
        && matches!(
            args.syntax,
            Some(cli::SyntaxPolicy::Reject | cli::SyntaxPolicy::Warn)
        )
    {
        // Said rather than silently ignored: a script relying on the guard must know.
        eprintln!("lancet: note: --syntax has no effect: this build has no syntax guard");
    }
    let diff_opts = lancet::DiffOptions {
        strip: args.strip,
        reverse: args.reverse,
    };
    let patch = format
        .parse_with(&input, diff_opts)
        .map_err(|error| Error::Malformed {
            error,
            format: Some(format.name()),
        })?;
    let ws = open_root(&args.root)?;
    let write = !args.dry_run && !args.check;
    let mut matching = MatchOptions::default();
    matching.max_tier = args.max_tier.tier();
    let mut opts = ApplyOptions::default();
    opts.matching = matching;
    opts.partial = args.partial;
    opts.force = args.force;
    let configured = if write {
        apply_settings(ws.root())?
    } else {
        Default::default()
    };
    opts.no_undo = args.no_undo || configured.journal_off;
    opts.fsync = configured.fsync;
    opts.default_path = args.file.clone();
    opts.syntax = match args.syntax {
        Some(cli::SyntaxPolicy::Warn) => lancet::SyntaxPolicy::Warn,
        Some(cli::SyntaxPolicy::Off) => lancet::SyntaxPolicy::Off,
        // Reject by default: broken code never reaches disk silently.
        Some(cli::SyntaxPolicy::Reject) | None => lancet::SyntaxPolicy::Reject,
    };
    // Held from the plan through the commit: another lancet applying here
    // waits, so neither plans against a file the other is about to replace.
    // A root that cannot be locked (a file system without advisory locks) is
    // still read; its commit, if it has anything to write, checks each file's
    // identity on its own.
    let lock = match write.then(|| ws.lock()).transpose() {
        Ok(lock) => lock,
        Err(e @ WorkspaceError::Busy { .. }) => return Err(Error::Locked(e)),
        Err(_) => None,
    };
    let plan = lancet::plan(&ws, &patch, &opts);
    let io_failure = plan
        .report()
        .files
        .iter()
        .any(|f| matches!(f.error, Some(lancet::EditError::Unreadable { .. })));
    let outline = plan.outline().to_vec();
    // Only a dry run shows the diff; computing it costs a full text diff per file.
    let diff_text = if args.dry_run {
        plan.unified_diff(3)
    } else {
        String::new()
    };
    let report = if write {
        // The report goes out with the error under --json; only then is it kept.
        let planned = args.json.then(|| Box::new(plan.report().clone()));
        let committed = match &lock {
            Some(lock) => plan.commit_locked(lock),
            None => plan.commit(&ws),
        };
        committed.map_err(|source| Error::Commit {
            source,
            report: planned,
        })?
    } else {
        plan.into_report()
    };
    if args.json {
        let json = lancet::feedback::json_report(&report);
        let json = if args.dry_run {
            json.with_diff(diff_text)
        } else {
            json
        };
        println!("{json}");
    } else if !args.check {
        let on_stdout = report.ok && !args.dry_run;
        // Tinted only where colour is wanted; an untinted message is printed
        // by std in one write (see `style::message`).
        let colour = anstream::ColorChoice::Never
            != if on_stdout {
                anstream::AutoStream::choice(&std::io::stdout())
            } else {
                anstream::AutoStream::choice(&std::io::stderr())
            };
        let message = style::message(&report, &outline, colour);
        if args.dry_run {
            print!("{diff_text}");
        }
        match (colour, on_stdout) {
            (true, true) => anstream::println!("{message}"),
            (true, false) => anstream::eprintln!("{message}"),
            (false, on_stdout) => print_plain(&message, on_stdout),
        }
        if args.dry_run {
            eprintln!("(dry run: nothing was written)");
        }
    }
    Ok(if io_failure {
        Exit::Io
    } else if report.ok {
        Exit::Success
    } else {
        Exit::Failed
    })
}

fn diff(args: &DiffArgs) -> Result<Exit, Error> {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|source| Error::Read {
            what: "",
            path: p.to_path_buf(),
            source,
        })
    };
    let a = read(&args.old)?;
    let b = read(&args.new)?;
    if a == b {
        return Ok(Exit::Success);
    }
    match (std::str::from_utf8(&a), std::str::from_utf8(&b)) {
        (Ok(a), Ok(b)) if !a.contains('\0') && !b.contains('\0') => {
            let text = similar::TextDiff::from_lines(a, b)
                .unified_diff()
                .context_radius(args.context)
                .missing_newline_hint(true)
                .header(
                    &args.old.display().to_string(),
                    &args.new.display().to_string(),
                )
                .to_string();
            print!("{text}");
        }
        _ => println!(
            "Binary files {} and {} differ",
            args.old.display(),
            args.new.display()
        ),
    }
    Ok(Exit::Failed)
}

fn undo(args: &UndoArgs) -> Result<Exit, Error> {
    let ws = open_root(&args.root)?;
    match ws.undo() {
        Ok(receipt) => {
            for p in &receipt.restored {
                println!("restored {p}");
            }
            for p in &receipt.removed {
                println!("removed {p} (the apply had created it)");
            }
            Ok(Exit::Success)
        }
        Err(WorkspaceError::NothingToUndo) => Err(Error::NothingToUndo {
            root: ws.root().to_path_buf(),
        }),
        Err(e @ WorkspaceError::UndoConflict { .. }) => Err(Error::UndoConflict(e)),
        Err(e) => Err(Error::Undo(e)),
    }
}

fn view(args: &ViewArgs) -> Result<Exit, Error> {
    // A FIFO would block and a device would never end: refused before reading.
    let bytes = match lancet::read_regular_file(&args.file, lancet::MAX_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(WorkspaceError::Io { source, .. }) => {
            return Err(Error::Read {
                what: "",
                path: args.file.clone(),
                source,
            });
        }
        Err(e) => return Err(Error::Unviewable(e)),
    };
    let doc = lancet::Document::from_vec(bytes).map_err(|source| Error::NotText {
        path: args.file.clone(),
        source,
    })?;
    let range = args.lines.as_deref().map(parse_range).transpose()?;
    print!("{}", args.format.view(&doc, range));
    Ok(Exit::Success)
}

/// `A:B` (1-based, inclusive; either side may be omitted) to a 0-based half-open range.
fn parse_range(s: &str) -> Result<std::ops::Range<usize>, Error> {
    let bad = || Error::BadRange(s.to_owned());
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let a: usize = if a.is_empty() {
        1
    } else {
        a.parse().map_err(|_| bad())?
    };
    let b: usize = if b.is_empty() {
        usize::MAX
    } else {
        b.parse().map_err(|_| bad())?
    };
    if a == 0 || b < a {
        return Err(bad());
    }
    Ok(a - 1..b)
}

fn formats(args: &FormatsArgs) -> Result<Exit, Error> {
    match &args.name {
        None => {
            for f in Format::ALL {
                println!("{:<16} {}", f.name(), f.summary());
            }
            Ok(Exit::Success)
        }
        Some(name) => {
            let f = Format::from_name(name)
                .ok_or_else(|| Error::UnknownFormat { name: name.clone() })?;
            print!("{}", f.instructions());
            Ok(Exit::Success)
        }
    }
}

impl cli::MaxTier {
    fn tier(self) -> Tier {
        match self {
            cli::MaxTier::Exact => Tier::Exact,
            cli::MaxTier::Whitespace => Tier::Whitespace,
            cli::MaxTier::Indent => Tier::Indent,
            cli::MaxTier::Unicode => Tier::Unicode,
            cli::MaxTier::Fuzzy => Tier::Fuzzy,
        }
    }
}
