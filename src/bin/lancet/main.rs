//! The `lancet` command: the engine as a standalone patch tool.
//!
//! Binary-only code lives here (argument parsing, terminal output, exit
//! statuses), so the library's API cannot grow by accident. Every command is
//! one variant of [`Command`], dispatched in one `match`. The command-line
//! contract (flags, exit statuses, the JSON report) is fixed by DESIGN.md:
//! other tools script it.

mod cli;
#[cfg(feature = "agent")]
mod run;
mod style;

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;
use lancet::{ApplyOptions, Format, MatchOptions, Tier, Workspace, WorkspaceError, feedback};

use cli::{ApplyArgs, Cli, Command, DiffArgs, FormatChoice, FormatsArgs, UndoArgs, ViewArgs};
use style::Style;

/// Exit statuses of the contract.
mod status {
    pub(crate) const OK: u8 = 0;
    pub(crate) const FAILED: u8 = 1;
    pub(crate) const USAGE: u8 = 2;
    pub(crate) const IO: u8 = 3;
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                status::USAGE
            } else {
                status::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = match cli.command {
        Command::Apply(args) => apply(args),
        Command::View(args) => view(args),
        Command::Diff(args) => diff(args),
        Command::Undo(args) => undo(args),
        Command::Formats(args) => formats(args),
        #[cfg(feature = "agent")]
        Command::Run(args) => run::run(args),
    };
    ExitCode::from(code)
}

fn usage(msg: &str) -> u8 {
    eprintln!("lancet: {msg}");
    status::USAGE
}

/// Input no format could parse: exit 2, with the report object under `--json`.
fn malformed(msg: &str, json: bool) -> u8 {
    if json {
        let v = serde_json::json!({"ok": false, "written": false, "files": [], "message": msg});
        println!("{v}");
        return status::USAGE;
    }
    usage(msg)
}

fn open_root(root: &Path) -> Result<Workspace, u8> {
    Workspace::open(root).map_err(|e| match e {
        WorkspaceError::Io { .. } => {
            eprintln!("lancet: cannot open the root {}: {e}", root.display());
            status::IO
        }
        _ => usage(&format!(
            "the root {} is not a directory (-C names the workspace root)",
            root.display()
        )),
    })
}

fn read_input(input: Option<&Path>) -> Result<String, u8> {
    let bytes = match input {
        Some(p) if p != Path::new("-") => std::fs::read(p).map_err(|e| {
            eprintln!("lancet: cannot read the edits file {}: {e}", p.display());
            if e.kind() == std::io::ErrorKind::NotFound {
                status::USAGE
            } else {
                status::IO
            }
        })?,
        _ => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(usage(
                    "no edits given: pass a file of edits, or pipe them on standard input",
                ));
            }
            let mut buf = Vec::new();
            stdin.read_to_end(&mut buf).map_err(|e| {
                eprintln!("lancet: cannot read standard input: {e}");
                status::IO
            })?;
            buf
        }
    };
    String::from_utf8(bytes).map_err(|e| {
        usage(&format!(
            "the edits are not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn apply(args: ApplyArgs) -> u8 {
    let input = match read_input(args.input.as_deref()) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let format = match args.format {
        FormatChoice::Auto => match Format::detect(&input) {
            Some(f) => f,
            None => {
                let msg = feedback::parse_error(&lancet::ParseError::Unrecognised, None);
                return malformed(&msg, args.json);
            }
        },
        other => match other.available() {
            Some(f) => f,
            None => {
                return usage(&format!(
                    "the {} format is not available in this build yet; available: {}",
                    other.name(),
                    Format::ALL
                        .iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        },
    };
    if (args.reverse || args.strip.is_some()) && format != Format::UnifiedDiff {
        return usage(
            "--reverse and --strip apply to unified diffs; the input is in another format",
        );
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
    let patch = match format.parse_with(&input, diff_opts) {
        Ok(p) => p,
        Err(e) => return malformed(&feedback::parse_error(&e, Some(format.name())), args.json),
    };
    let ws = match open_root(&args.root) {
        Ok(ws) => ws,
        Err(code) => return code,
    };
    let mut matching = MatchOptions::default();
    matching.max_tier = args.max_tier.tier();
    let mut opts = ApplyOptions::default();
    opts.matching = matching;
    opts.partial = args.partial;
    opts.force = args.force;
    opts.default_path = args.file.clone();
    opts.syntax = match args.syntax {
        Some(cli::SyntaxPolicy::Warn) => lancet::SyntaxPolicy::Warn,
        Some(cli::SyntaxPolicy::Off) => lancet::SyntaxPolicy::Off,
        // Reject by default: broken code never reaches disk silently.
        Some(cli::SyntaxPolicy::Reject) | None => lancet::SyntaxPolicy::Reject,
    };
    let write = !args.dry_run && !args.check;
    // Held from the plan through the commit: another lancet applying here
    // waits, so neither plans against a file the other is about to replace.
    // A root that cannot be locked (a read-only file system) is still read;
    // its commit, if it has anything to write, fails on its own.
    let lock = match write.then(|| ws.lock()).transpose() {
        Ok(lock) => lock,
        Err(e @ WorkspaceError::Busy { .. }) => {
            eprintln!("lancet: {}", feedback::workspace_error(&e));
            return status::FAILED;
        }
        Err(_) => None,
    };
    let plan = lancet::plan(&ws, &patch, &opts);
    let io_failure = plan
        .report()
        .files
        .iter()
        .any(|f| matches!(f.error, Some(lancet::EditError::Unreadable { .. })));
    // Only a dry run shows the diff; computing it costs a full text diff per file.
    let diff_text = if args.dry_run {
        plan.unified_diff(3)
    } else {
        String::new()
    };
    let report = if write {
        let committed = match &lock {
            Some(lock) => plan.commit_locked(lock),
            None => plan.commit(&ws),
        };
        match committed {
            Ok(r) => r,
            Err(e) => {
                eprintln!("lancet: {}", feedback::workspace_error(&e));
                return if e.is_io() {
                    status::IO
                } else {
                    status::FAILED
                };
            }
        }
    } else {
        plan.into_report()
    };
    let style = Style::for_stream(std::io::stdout().is_terminal());
    if args.json {
        let mut v = report.to_json();
        if args.dry_run {
            v["diff"] = serde_json::json!(diff_text);
        }
        println!("{v}");
    } else if !args.check {
        if args.dry_run {
            print!("{diff_text}");
            eprintln!("{}", style.message(&report.message));
            eprintln!("(dry run: nothing was written)");
        } else if report.ok {
            println!("{}", style.message(&report.message));
        } else {
            eprintln!(
                "{}",
                Style::for_stream(std::io::stderr().is_terminal()).message(&report.message)
            );
        }
    }
    if io_failure {
        status::IO
    } else if report.ok {
        status::OK
    } else {
        status::FAILED
    }
}

fn diff(args: DiffArgs) -> u8 {
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| {
            eprintln!("lancet: cannot read {}: {e}", p.display());
            if e.kind() == std::io::ErrorKind::NotFound {
                status::USAGE
            } else {
                status::IO
            }
        })
    };
    let (a, b) = match (read(&args.old), read(&args.new)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(c), _) | (_, Err(c)) => return c,
    };
    if a == b {
        return status::OK;
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
    status::FAILED
}

fn undo(args: UndoArgs) -> u8 {
    let ws = match open_root(&args.root) {
        Ok(ws) => ws,
        Err(code) => return code,
    };
    match ws.undo() {
        Ok(receipt) => {
            for p in &receipt.restored {
                println!("restored {p}");
            }
            for p in &receipt.removed {
                println!("removed {p} (the apply had created it)");
            }
            status::OK
        }
        Err(WorkspaceError::NothingToUndo) => {
            eprintln!(
                "lancet: nothing to undo: no apply is recorded in {}",
                ws.root().display()
            );
            status::FAILED
        }
        Err(e @ WorkspaceError::UndoConflict { .. }) => {
            eprintln!(
                "lancet: {e}; nothing was changed. Undo would overwrite changes made after the apply."
            );
            status::FAILED
        }
        Err(e) => {
            eprintln!("lancet: undo failed: {}", feedback::workspace_error(&e));
            if e.is_io() {
                status::IO
            } else {
                status::FAILED
            }
        }
    }
}

fn view(args: ViewArgs) -> u8 {
    let format = match args.format.available() {
        Some(f) => f,
        None => {
            return usage(&format!(
                "the {} view is not available in this build yet",
                args.format.name()
            ));
        }
    };
    // A FIFO would block and a device would never end: refused before reading.
    let bytes = match lancet::read_regular_file(&args.file, lancet::MAX_FILE_BYTES) {
        Ok(b) => b,
        Err(WorkspaceError::Io { source, .. }) => {
            eprintln!("lancet: cannot read {}: {source}", args.file.display());
            return if source.kind() == std::io::ErrorKind::NotFound {
                status::USAGE
            } else {
                status::IO
            };
        }
        Err(e) => {
            eprintln!("lancet: {}", feedback::workspace_error(&e));
            return status::FAILED;
        }
    };
    let doc = match lancet::Document::from_vec(bytes) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("lancet: {}: {e}", args.file.display());
            return status::FAILED;
        }
    };
    let range = match args.lines.as_deref().map(parse_range).transpose() {
        Ok(r) => r,
        Err(msg) => return usage(&msg),
    };
    print!("{}", format.view(&doc, range));
    status::OK
}

/// `A:B` (1-based, inclusive; either side may be omitted) to a 0-based half-open range.
fn parse_range(s: &str) -> Result<std::ops::Range<usize>, String> {
    let bad = || format!("--lines takes A:B with 1-based line numbers (got {s:?})");
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

fn formats(args: FormatsArgs) -> u8 {
    match args.name {
        None => {
            for f in Format::ALL {
                println!("{:<16} {}", f.name(), f.summary());
            }
            status::OK
        }
        Some(name) => match Format::from_name(&name) {
            Some(f) => {
                print!("{}", f.instructions());
                status::OK
            }
            None => usage(&format!(
                "unknown format {name:?}; available: {}",
                Format::ALL
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        },
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
