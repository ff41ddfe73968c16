//! `lancet bench`: reads the task sources, resolves each model as `lancet
//! run` would (configuration layers, environment, the same provider code),
//! runs the jobs (`lancet::agent::bench`), appends each finished job to
//! `results.jsonl`, and prints the summary table (or JSON events) and writes
//! `report.json`.
//!
//! Flags of the contract that are not built yet (`--shard`, `--recommend`,
//! `bench report`, `replay:`, `sim:` profiles other than `perfect`) are
//! usage errors that say so, never ignored; so is `mutate:` in a build
//! without the `syntax` feature.
//!
//! Exit status: 0 finished (whatever the pass rates), 1 interrupted (the
//! results so far are kept), 2 usage error, 3 every model failed to answer.

use std::collections::{BTreeSet, HashSet};
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use lancet::Format;
use lancet::agent::bench::{
    self, Backend, BenchConfig, BenchSandbox, Job, Key, Mode, Model, Progress, Record, RunEnd,
    SimProfile, Source, Summary,
};
use lancet::agent::models::Models;
use lancet::agent::sandbox;

use crate::cli::{BenchArgs, BenchMode, ProviderChoice, RunArgs};
use crate::error::{Error, Exit};
use crate::run;

/// A run's arguments for resolving one provider model as `lancet run` does.
fn run_args(model: Option<String>, provider: Option<ProviderChoice>) -> RunArgs {
    RunArgs {
        task: String::new(),
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
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if let Some(profile) = name.strip_prefix("sim:") {
            let profile = SimProfile::from_name(profile).ok_or_else(|| Error::BenchNotBuilt {
                what: format!("the simulated model `{name}` (built: sim:perfect)"),
            })?;
            out.push(Model {
                label: name.to_owned(),
                backend: Backend::Sim(profile),
                prices: None,
            });
            continue;
        }
        if name.starts_with("replay:") {
            return Err(Error::BenchNotBuilt {
                what: "replay:".to_owned(),
            });
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
        let s = run::settings(&run_args(Some(model.to_owned()), provider), root, catalogue)?;
        let prices = catalogue
            .lookup(&s.model)
            .and_then(|e| Some((e.price_in?, e.price_out?)));
        out.push(Model {
            label: name.to_owned(),
            backend: Backend::Provider(Box::new(run::provider_config(&s))),
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
    format!(
        "{y:04}{m:02}{d:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The records already in `results.jsonl` (a half-written last line, from
/// an interrupted write, is skipped).
fn done(path: &Path) -> Result<Vec<Record>, Error> {
    let file = match std::fs::File::open(path) {
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
    if args.command.is_some() {
        return Err(Error::BenchNotBuilt {
            what: "bench report".to_owned(),
        });
    }
    if args.shard.is_some() {
        return Err(Error::BenchNotBuilt {
            what: "--shard".to_owned(),
        });
    }
    if args.recommend.is_some() {
        return Err(Error::BenchNotBuilt {
            what: "--recommend".to_owned(),
        });
    }
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
        tasks.extend(t.into_iter().map(Arc::new));
        skipped.extend(s);
    }
    let catalogue = Models::builtin().map_err(Error::Models)?;
    let models = models(&args.models, &catalogue)?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new(".lancet/bench").join(timestamp()));
    std::fs::create_dir_all(&out_dir).map_err(|source| Error::BenchOut {
        path: out_dir.clone(),
        source,
    })?;
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
    let mut results = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&results_path)
        .map_err(|source| Error::BenchOut {
            path: results_path.clone(),
            source,
        })?;
    let total = jobs.len();
    let json = args.json;
    if json {
        emit(&serde_json::json!({
            "event": "start", "jobs": total, "already_done": records.len(),
            "out": out_dir.display().to_string(),
        }));
    }
    let live = !json && std::io::stderr().is_terminal();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
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
        if json {
            if let Ok(mut v) = serde_json::to_value(&record) {
                v["event"] = "result".into();
                emit(&v);
            }
        }
        fresh.push(record);
        if live {
            let passed = fresh.iter().filter(|r| r.pass).count();
            eprint!("\r[{}/{total}] passed {passed}", fresh.len());
        }
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
    if live {
        eprintln!();
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
    let summary = Summary::of(&records, &skipped);
    let report_path = out_dir.join("report.json");
    let report = serde_json::json!({
        "interrupted": end == RunEnd::Interrupted,
        "records": records.len(),
        "summary": summary,
    });
    std::fs::write(&report_path, format!("{report:#}\n")).map_err(|source| Error::BenchOut {
        path: report_path.clone(),
        source,
    })?;
    if json {
        emit(&serde_json::json!({
            "event": "summary", "interrupted": end == RunEnd::Interrupted,
            "rows": summary.rows, "skipped": summary.skipped,
            "results": results_path.display().to_string(),
            "report": report_path.display().to_string(),
        }));
    } else {
        print!("{}", bench::table(&summary));
        eprintln!(
            "results: {}\nreport: {}",
            results_path.display(),
            report_path.display()
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
