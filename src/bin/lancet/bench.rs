//! `lancet bench`: reads the task sources, resolves each model as `lancet
//! run` would (configuration layers, environment, the same provider code),
//! runs the jobs (`lancet::agent::bench`) — all, or one `--shard` of the
//! tasks — appends each finished job to `results.jsonl`, prints the summary
//! table and verdicts (or JSON events), writes `report.json` and
//! `report.html`, and with `--recommend` writes the measured choice per model
//! into a models.toml. `bench report DIR...` merges results directories and
//! writes the same reports.
//!
//! Flags of the contract that are not built yet (unknown `sim:` profiles,
//! and `mutate:` in a build without the `syntax` feature) are usage errors
//! that say so, never ignored. Each job's transcript goes to
//! `<out>/transcripts/`, which `replay:<out>` answers from.
//!
//! On a terminal (stderr is one, and no `--json`) a progress bar is drawn
//! on stderr — jobs done of all, passes, rate, time left, the last job —
//! at most ten times a second, and cleared before anything else is
//! printed (the summary, an interruption's note). Elsewhere nothing of it.
//!
//! A model of a provider profile with `rpm` or `max_concurrency` gets that
//! profile's limiter as its provider's gate; every model of one profile
//! shares it (`bench::limits`). `sim:` and `replay:` are not limited.
//!
//! Exit status: 0 finished (whatever the pass rates), 1 interrupted (the
//! results so far are kept), 2 usage error, 3 every model failed to answer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use lancet::Format;
use lancet::agent::bench::limits::Limits;
use lancet::agent::bench::replay::Recording;
use lancet::agent::bench::report::Report;
use lancet::agent::bench::shard::{self, Shard};
use lancet::agent::bench::{
    self, Backend, BenchConfig, BenchSandbox, Job, Key, Mode, Model, Progress, Record, RunEnd,
    SimProfile, Skipped, Source,
};
use lancet::agent::models::Models;
use lancet::agent::provider::Gate;
use lancet::agent::sandbox;

use crate::cli::{BenchArgs, BenchCommand, BenchMode, ProviderChoice, RunArgs};
use crate::error::{Error, Exit};
use crate::run;

/// A run's arguments for resolving one provider model as `lancet run` does.
fn run_args(model: Option<String>, provider: Option<ProviderChoice>) -> RunArgs {
    RunArgs {
        task: None,
        model,
        provider,
        base_url: None,
        edit_format: None,
        text_mode: false,
        permission: None,
        yes: true,
        max_turns: None,
        json: false,
        root: PathBuf::from("."),
        resume: false,
        trust: false,
        sandbox: None,
    }
}

/// The models of `-m`, resolved.
fn models(names: &[String], catalogue: &Models) -> Result<Vec<Model>, Error> {
    let root = Path::new(".");
    let layer = run::layers(&run_args(None, None), root)?;
    let mut out = Vec::new();
    // One limiter per profile, shared by every model of it.
    let mut gates: HashMap<String, Option<Arc<dyn Gate>>> = HashMap::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if let Some(profile) = name.strip_prefix("sim:") {
            let profile = SimProfile::from_name(profile).ok_or_else(|| {
                let built: Vec<String> = SimProfile::all()
                    .iter()
                    .map(|p| format!("sim:{}", p.name()))
                    .collect();
                Error::BenchNotBuilt {
                    what: format!("the simulated model `{name}` (built: {})", built.join(", ")),
                }
            })?;
            out.push(Model {
                label: name.to_owned(),
                backend: Backend::Sim(profile),
                prices: None,
            });
            continue;
        }
        if let Some(dir) = name.strip_prefix("replay:") {
            let dir = Path::new(dir);
            let recording = Recording::open(dir).map_err(|source| Error::BenchOut {
                path: dir.to_path_buf(),
                source,
            })?;
            out.push(Model {
                label: name.to_owned(),
                backend: Backend::Replay(Arc::new(recording)),
                prices: None,
            });
            continue;
        }
        // `openai:NAME`, `anthropic:NAME`, `PROFILE:NAME`; anything else
        // (Ollama's `qwen2.5-coder:7b` included) is a bare name.
        let (provider, model) = match name.split_once(':') {
            Some(("openai", m)) => (Some(ProviderChoice::OpenAi), m),
            Some(("anthropic", m)) => (Some(ProviderChoice::Anthropic), m),
            Some((p, m)) if layer.providers.contains_key(p) => {
                (Some(ProviderChoice::Profile(p.to_owned())), m)
            }
            _ => (None, name),
        };
        // The profile `lancet run` would read (the flag's, else the
        // configuration's provider), for its request limits.
        let profile = provider
            .clone()
            .or_else(|| layer.provider.as_deref().map(ProviderChoice::from_name))
            .map(|p| p.name().to_owned());
        let s = run::settings(&run_args(Some(model.to_owned()), provider), root, catalogue)?;
        let prices = catalogue
            .lookup(&s.model)
            .and_then(|e| Some((e.price_in?, e.price_out?)));
        let mut pc = run::provider_config(&s);
        if let Some(profile) = profile {
            pc.gate = gates
                .entry(profile)
                .or_insert_with_key(|profile| {
                    layer.providers.get(profile).and_then(|p| {
                        Limits {
                            rpm: p.rpm,
                            max_concurrency: p.max_concurrency,
                        }
                        .gate()
                    })
                })
                .clone();
        }
        out.push(Model {
            label: name.to_owned(),
            backend: Backend::Provider(Box::new(pc)),
            prices,
        });
    }
    if out.is_empty() {
        return Err(Error::BenchMissing("at least one model (-m)"));
    }
    Ok(out)
}

fn formats(names: &[String]) -> Result<Vec<Format>, Error> {
    let mut out = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if name == "all" {
            out.extend(Format::ALL.iter().copied());
            continue;
        }
        out.push(Format::from_name(name).ok_or_else(|| Error::UnknownFormat {
            name: name.to_owned(),
        })?);
    }
    let mut seen = HashSet::new();
    out.retain(|f| seen.insert(*f));
    if out.is_empty() {
        return Err(Error::BenchMissing("at least one format (-f)"));
    }
    Ok(out)
}

/// UTC `YYYYMMDD-HHMMSS` (the default results directory's name).
fn timestamp() -> String {
    let (y, m, d, rest) = civil_now();
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// UTC `YYYY-MM-DD` (a recommendation's date).
fn today() -> String {
    let (y, m, d, _) = civil_now();
    format!("{y:04}-{m:02}-{d:02}")
}

/// Today's UTC year, month, day, and the seconds into it.
fn civil_now() -> (i64, i64, i64, u64) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d, rest)
}

/// The default results directory, `.lancet/bench/<timestamp>` in the
/// current directory, made through the workspace's state directory: a
/// repository's `.lancet` or `.lancet/bench` that is a symlink (or anything
/// but a real directory of its own) is refused, never written through.
fn default_out() -> Result<PathBuf, Error> {
    let here = Path::new(".");
    let refused = |e: lancet::WorkspaceError| Error::BenchOut {
        path: here.join(".lancet/bench"),
        source: std::io::Error::other(e),
    };
    let ws = lancet::Workspace::open(here).map_err(refused)?;
    let dir = ws.state_dirs(&["bench", &timestamp()]).map_err(refused)?;
    Ok(dir.path().to_path_buf())
}

/// Options that open `results.jsonl` without following a symlink or waiting
/// on a FIFO planted in its place (a non-regular file is refused after).
fn results_options() -> std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut options = std::fs::OpenOptions::new();
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    options.custom_flags(flags.bits() as i32);
    options
}

/// `results.jsonl` opened with `options` (see [`results_options`]): a
/// regular file, or an error saying what is there instead.
fn open_results(options: &std::fs::OpenOptions, path: &Path) -> std::io::Result<std::fs::File> {
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(
            "not a regular file; results.jsonl must be one",
        ));
    }
    Ok(file)
}

/// The records already in `results.jsonl` (a half-written last line, from
/// an interrupted write, is skipped).
fn done(path: &Path) -> Result<Vec<Record>, Error> {
    let file = match open_results(results_options().read(true), path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::BenchOut {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let mut out = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.map_err(|source| Error::BenchOut {
            path: path.to_path_buf(),
            source,
        })?;
        if let Ok(r) = serde_json::from_str::<Record>(&line) {
            out.push(r);
        }
    }
    Ok(out)
}

fn emit(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

pub(crate) fn bench(args: &BenchArgs) -> Result<Exit, Error> {
    if let Some(BenchCommand::Report { dirs, out }) = &args.command {
        return report(dirs, out.as_deref());
    }
    let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
    let formats = formats(&args.formats)?;
    let modes = match args.mode {
        BenchMode::Tool => vec![Mode::Tool],
        BenchMode::Text => vec![Mode::Text],
        BenchMode::Both => Mode::ALL.to_vec(),
    };
    let mut tasks = Vec::new();
    let mut skipped = Vec::new();
    for spec in &args.tasks {
        let source = Source::parse(spec);
        #[cfg(feature = "syntax")]
        if let Source::Mutate(dir, n) = &source {
            // Generated here rather than through `task::load`, to say what
            // the generation made and rejected.
            let asked = n.unwrap_or(bench::mutate::DEFAULT_COUNT);
            let generated =
                bench::mutate::generate(dir, asked, args.seed).map_err(bench::TaskError::from)?;
            eprintln!(
                "{}",
                bench::mutate::generated_line(spec, asked, &generated.stats)
            );
            let limit = args.limit.unwrap_or(usize::MAX);
            tasks.extend(generated.tasks.into_iter().take(limit).map(Arc::new));
            continue;
        }
        let (t, s) = bench::task::load_seeded(&source, args.limit, args.seed)?;
        tasks.extend(
            t.into_iter()
                .filter(|t| shard.is_none_or(|s| s.holds(&t.id)))
                .map(Arc::new),
        );
        skipped.extend(s);
    }
    let catalogue = run::catalogue()?;
    let models = models(&args.models, &catalogue)?;
    // What `--recommend` writes for each model: the name `lancet run` looks up.
    let patterns: Vec<(String, Option<String>)> = models
        .iter()
        .map(|m| {
            let name = match &m.backend {
                Backend::Provider(pc) => Some(pc.model.clone()),
                _ => None,
            };
            (m.label.clone(), name)
        })
        .collect();
    let recommend_to = match &args.recommend {
        None => None,
        Some(Some(path)) => Some(path.clone()),
        Some(None) => Some(crate::trust::user_models().ok_or(Error::BenchMissing(
            "a models.toml path for --recommend=PATH (there is no HOME or XDG_CONFIG_HOME)",
        ))?),
    };
    let out_dir = match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|source| Error::BenchOut {
                path: dir.clone(),
                source,
            })?;
            dir.clone()
        }
        None => default_out()?,
    };
    let results_path = out_dir.join("results.jsonl");
    let mut records = done(&results_path)?;
    let finished: HashSet<Key> = records.iter().map(Record::key).collect();
    let mut jobs = Vec::new();
    for model in models.into_iter().map(Arc::new) {
        for &format in &formats {
            for &mode in &modes {
                for task in &tasks {
                    let job = Job {
                        task: Arc::clone(task),
                        model: Arc::clone(&model),
                        format,
                        mode,
                    };
                    if !finished.contains(&job.key()) {
                        jobs.push(job);
                    }
                }
            }
        }
    }
    let scratch = std::env::temp_dir();
    let mut config = BenchConfig::new(scratch.clone());
    config.formats = formats;
    config.modes = modes;
    config.tries = args.tries;
    config.seed = args.seed;
    config.jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from))
        .max(1);
    config.sandbox = bench_sandbox(&scratch)?;
    // The reply and job limits of the configuration (`lancet run`'s layers).
    let layer = run::layers(&run_args(None, None), Path::new("."))?;
    config.max_tokens = layer.max_tokens.unwrap_or(config.max_tokens);
    config.loop_repeats = layer.loop_repeats.unwrap_or(config.loop_repeats);
    config.task_timeout = layer
        .task_timeout
        .map_or(config.task_timeout, std::time::Duration::from_secs);
    config.transcripts = Some(out_dir.join("transcripts"));
    let mut results = open_results(results_options().create(true).append(true), &results_path)
        .map_err(|source| Error::BenchOut {
            path: results_path.clone(),
            source,
        })?;
    let total = jobs.len();
    let json = args.json;
    if json {
        emit(&serde_json::json!({
            "event": "start", "jobs": total, "already_done": records.len(),
            "shard": args.shard,
            "out": out_dir.display().to_string(),
        }));
    }
    let bar = shows_bar(json, std::io::stderr().is_terminal()).then(|| progress_bar(total));
    let mut passed = 0;
    let runtime = crate::run::runtime()?;
    let mut fresh: Vec<Record> = Vec::new();
    let mut write_error = None;
    let mut on = |p: Progress| {
        let Progress::Finished(record) = p else {
            return;
        };
        if let Ok(line) = serde_json::to_string(&record) {
            // One write per line, so an interruption leaves whole lines.
            if let Err(e) = results.write_all(format!("{line}\n").as_bytes()) {
                write_error.get_or_insert(e);
            }
        }
        if json && let Ok(mut v) = serde_json::to_value(&record) {
            v["event"] = "result".into();
            emit(&v);
        }
        if let Some(bar) = &bar {
            passed += usize::from(record.pass);
            // Position first: a draw between the two never shows more
            // passes than jobs done.
            bar.inc(1);
            bar.set_message(bench::bar_message(passed, &record.key()));
        }
        fresh.push(record);
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let end = runtime.block_on(async {
        let signal = tokio::spawn(async move {
            run::interrupted().await;
            let _ = stop_tx.send(true);
        });
        let end = bench::run(jobs, &config, stop_rx, &mut on).await;
        signal.abort();
        end
    });
    lancet::agent::tools::end_descendants();
    // Before anything else is printed, finished or interrupted: a summary
    // written over a live bar would be garbled.
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let end = end.map_err(|source| Error::BenchOut {
        path: out_dir.clone(),
        source,
    })?;
    if let Some(source) = write_error {
        return Err(Error::BenchOut {
            path: results_path,
            source,
        });
    }
    let every_model_failed = !fresh.is_empty() && {
        let labels: BTreeSet<&str> = fresh.iter().map(|r| r.model.as_str()).collect();
        labels.iter().all(|m| {
            fresh
                .iter()
                .filter(|r| r.model == *m)
                .all(|r| r.failure == Some(bench::FailureKind::Provider))
        })
    };
    records.extend(fresh);
    let report = Report::of(&records, &skipped, end == RunEnd::Interrupted, Vec::new());
    let (report_path, html_path) = write_report(&out_dir, &report)?;
    let recommended = match &recommend_to {
        Some(path) if end == RunEnd::Finished => recommend(&records, &patterns, path, json)?,
        _ => Vec::new(),
    };
    if json {
        emit(&serde_json::json!({
            "event": "summary", "interrupted": end == RunEnd::Interrupted,
            "rows": report.summary.rows, "skipped": report.summary.skipped,
            "verdicts": report.verdicts, "wrong_place": report.wrong_place,
            "recommended": recommended,
            "results": results_path.display().to_string(),
            "report": report_path.display().to_string(),
            "html": html_path.display().to_string(),
        }));
    } else {
        print!("{}", bench::table(&report.summary));
        print!(
            "{}",
            bench::verdicts_text(&report.verdicts, report.wrong_place)
        );
        eprintln!(
            "results: {}\nreport: {}\n        {}",
            results_path.display(),
            report_path.display(),
            html_path.display()
        );
    }
    Ok(match end {
        RunEnd::Interrupted => {
            eprintln!("lancet: interrupted; the finished jobs are kept (rerun with -o to go on)");
            Exit::Failed
        }
        RunEnd::Finished if every_model_failed => Exit::Provider,
        RunEnd::Finished => Exit::Success,
    })
}

/// Whether the progress bar is drawn: only for a person at a terminal, and
/// never with `--json` (its events are the progress then).
fn shows_bar(json: bool, stderr_is_terminal: bool) -> bool {
    !json && stderr_is_terminal
}

/// The progress bar on stderr for `total` jobs, redrawn at most ten times a
/// second (and each half second, so the rate and time left stay current
/// while no job finishes).
fn progress_bar(total: usize) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(u64::try_from(total).unwrap_or(u64::MAX)),
        ProgressDrawTarget::stderr_with_hz(10),
    );
    // The template is a constant (a test parses it); a default bar is
    // better than none.
    let style = ProgressStyle::with_template(bench::bar_template())
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.1}", state.per_sec());
            },
        )
        .progress_chars("=> ");
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

/// The bash tool's sandbox for the jobs, as `lancet run` would set it up
/// (the configuration's mode, network and writable directories), probed once.
fn bench_sandbox(scratch: &Path) -> Result<Option<BenchSandbox>, Error> {
    let layer = run::layers(&run_args(None, None), Path::new("."))?;
    let mode = match layer.sandbox.as_deref() {
        Some(name) => crate::sandbox::mode(name).map_err(Error::SandboxSetting)?,
        None => sandbox::SandboxMode::WorkspaceWrite,
    };
    let network = layer.sandbox_network.unwrap_or(false);
    let writable =
        crate::sandbox::writable_dirs(&layer.sandbox_writable).map_err(Error::SandboxSetting)?;
    let jail = crate::sandbox::for_run(scratch, mode, network, &writable);
    let Some(sandbox) = jail.sandbox else {
        return Ok(None);
    };
    Ok(Some(BenchSandbox {
        mode,
        network,
        writable,
        exe: sandbox.exe().to_path_buf(),
        prompt_note: sandbox::prompt_note(jail.enforced.as_ref()),
    }))
}

/// Writes report.json and report.html into `dir`: their paths.
fn write_report(dir: &Path, report: &Report) -> Result<(PathBuf, PathBuf), Error> {
    let json_path = dir.join("report.json");
    let html_path = dir.join("report.html");
    let value = serde_json::to_value(report).map_err(|e| Error::BenchOut {
        path: json_path.clone(),
        source: std::io::Error::other(e),
    })?;
    for (path, text) in [
        (&json_path, format!("{value:#}\n")),
        (&html_path, bench::html::render(report)),
    ] {
        replace_file(dir, path, &text).map_err(|source| Error::BenchOut {
            path: path.clone(),
            source,
        })?;
    }
    Ok((json_path, html_path))
}

/// Writes `path` (in `dir`) whole: a new file beside it, renamed over it —
/// so a reader never sees half a report, and a symlink or FIFO someone put
/// at `path` is replaced, never written through.
fn replace_file(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    let (tmp, mut file) = tempfile_in(dir)?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `--recommend`: per real model of this run that passed anything, the
/// measured choice written into the models.toml at `path` (made, with a
/// header, when absent). What was written, as JSON.
fn recommend(
    records: &[Record],
    patterns: &[(String, Option<String>)],
    path: &Path,
    json: bool,
) -> Result<Vec<serde_json::Value>, Error> {
    let date = today();
    let mut entries = Vec::new();
    let mut written = Vec::new();
    for r in bench::paired::recommend(records) {
        let Some((_, name)) = patterns.iter().find(|(label, _)| *label == r.model) else {
            continue;
        };
        let Some(name) = name else {
            if !json {
                crate::settings::note(&bench::recommend_not_real(&r.model));
            }
            continue;
        };
        // Nothing passed (a provider that never answered, say): no evidence
        // for any format, so the entry is left as it is.
        if r.best.passed == 0 {
            if !json {
                crate::settings::note(&bench::recommend_no_pass(&r.model));
            }
            continue;
        }
        entries.push(bench::recommend::Entry {
            pattern: name.clone(),
            format: r.choice.format.clone(),
            mode: r.choice.mode.name().to_owned(),
            reason: bench::recommend_reason(&r, &date),
        });
        written.push(serde_json::json!({
            "model": r.model, "pattern": name, "format": r.choice.format,
            "mode": r.choice.mode, "distinguishable": r.distinguishable,
            "path": path.display().to_string(),
        }));
    }
    if entries.is_empty() {
        return Ok(written);
    }
    let failed = |source: std::io::Error| Error::BenchOut {
        path: path.to_path_buf(),
        source,
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bench::models_header(),
        Err(e) => return Err(failed(e)),
    };
    let out = bench::recommend::write_entries(&text, &entries).map_err(|source| {
        Error::BenchRecommend {
            path: path.to_path_buf(),
            source,
        }
    })?;
    // Whole or not at all: a new file beside it, renamed over it.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(failed)?;
    replace_file(&dir, path, &out).map_err(failed)?;
    if !json {
        for e in &entries {
            eprintln!(
                "lancet: {}",
                bench::recommended_text(&e.pattern, &e.format, &e.mode, path)
            );
        }
    }
    Ok(written)
}

/// A new file in `dir` under a name no one else has (created exclusively).
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut n = 0u32;
    loop {
        let path = dir.join(format!(".lancet-write-{}-{n}", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// What an earlier run left in `dir`: its skipped tasks and whether it was
/// interrupted (report.json; absent or unreadable: none, no).
fn earlier_report(dir: &Path) -> (Vec<Skipped>, bool) {
    let Ok(text) = std::fs::read_to_string(dir.join("report.json")) else {
        return (Vec::new(), false);
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return (Vec::new(), false);
    };
    let skipped = v["summary"]["skipped"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            Some(Skipped {
                source: s["source"].as_str()?.to_owned(),
                id: s["task"].as_str()?.to_owned(),
                reason: s["reason"].as_str()?.to_owned(),
            })
        })
        .collect();
    (skipped, v["interrupted"] == true)
}

/// `bench report DIR... [-o OUT]`: merges the directories' results (one
/// record per job; a duplicate with another outcome is reported and the
/// first kept), appends to OUT's results.jsonl what it lacks, and writes
/// OUT's report.json and report.html.
fn report(dirs: &[PathBuf], out: Option<&Path>) -> Result<Exit, Error> {
    let out_dir = out.map_or_else(|| dirs[0].clone(), Path::to_path_buf);
    let mut sets = Vec::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    let mut interrupted = false;
    for dir in dirs {
        let path = dir.join("results.jsonl");
        if !path.is_file() {
            return Err(Error::BenchOut {
                path,
                source: std::io::Error::from(std::io::ErrorKind::NotFound),
            });
        }
        sets.push(done(&path)?);
        let (s, i) = earlier_report(dir);
        interrupted |= i;
        for s in s {
            if !skipped.iter().any(|k| k.source == s.source && k.id == s.id) {
                skipped.push(s);
            }
        }
    }
    std::fs::create_dir_all(&out_dir).map_err(|source| Error::BenchOut {
        path: out_dir.clone(),
        source,
    })?;
    let results_path = out_dir.join("results.jsonl");
    let present: HashSet<Key> = done(&results_path)?.iter().map(Record::key).collect();
    let merged = shard::merge(sets);
    for c in &merged.conflicts {
        crate::settings::note(&bench::conflict_text(c));
    }
    let mut lines = String::new();
    for r in merged
        .records
        .iter()
        .filter(|r| !present.contains(&r.key()))
    {
        if let Ok(line) = serde_json::to_string(r) {
            lines.push_str(&line);
            lines.push('\n');
        }
    }
    if !lines.is_empty() {
        let mut file = open_results(results_options().create(true).append(true), &results_path)
            .and_then(|mut f| f.write_all(lines.as_bytes()).map(|()| f))
            .map_err(|source| Error::BenchOut {
                path: results_path.clone(),
                source,
            })?;
        let _ = file.flush();
    }
    let report = Report::of(&merged.records, &skipped, interrupted, merged.conflicts);
    let (report_path, html_path) = write_report(&out_dir, &report)?;
    print!("{}", bench::table(&report.summary));
    print!(
        "{}",
        bench::verdicts_text(&report.verdicts, report.wrong_place)
    );
    eprintln!(
        "results: {}\nreport: {}\n        {}",
        results_path.display(),
        report_path.display(),
        html_path.display()
    );
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bar is drawn only on a terminal without `--json`: scripts (stderr
    /// not a terminal) and `--json` readers see none of it.
    #[test]
    fn the_bar_shows_only_on_a_terminal_without_json() {
        assert!(shows_bar(false, true));
        assert!(!shows_bar(false, false));
        assert!(!shows_bar(true, true));
        assert!(!shows_bar(true, false));
    }

    #[test]
    fn the_bar_template_parses() {
        assert!(ProgressStyle::with_template(bench::bar_template()).is_ok());
    }
}
