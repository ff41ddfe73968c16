//! `lancet run`: resolves the configuration (defaults < user file < project
//! file < environment < flags), builds the provider, tools and permissions,
//! and drives the loop, printing events as text or JSON lines.
//!
//! The project's `.lancet.toml` counts only as far as the user trusts it
//! (`trust.rs`: by hash, `--trust`, or a question on a terminal); untrusted,
//! it may only narrow the user's settings, and stderr says which keys were
//! ignored. Every endpoint is checked (http or https, with a host) before a
//! request is made, and an error names the flag, variable or file key that
//! set it.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lancet::Workspace;
use lancet::agent::config::{Layer, Trusted, WireKind};
use lancet::agent::models::{EditMode, Models};
use lancet::agent::permissions::{
    Answer, Effect, Layout, Mode, NoTerminal, Permissions, Prompter, Question, Rule, confirmation,
    for_terminal,
};
use lancet::agent::provider::{Provider, ProviderConfig, Wire};
use lancet::agent::run::{self, Ending, Event, RunConfig};
use lancet::agent::sandbox::{self, SandboxMode};
use lancet::agent::session::{Entry, Session};
use lancet::agent::task::{self, TaskConfig};
use lancet::agent::tools::{Tools, ToolsConfig};
use lancet::agent::types::Message;

use crate::cli::{FormatChoice, ProviderChoice, RunArgs};
use crate::error::{Error, Exit, Origin, UrlProblem};
use crate::{settings, style, trust};

/// Everything a run needs, resolved from the layers.
pub(crate) struct Settings {
    pub(crate) wire: Wire,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) model: String,
    pub(crate) format: lancet::Format,
    pub(crate) text_mode: bool,
    pub(crate) mode: Mode,
    pub(crate) max_turns: u32,
    pub(crate) max_tokens: u32,
    pub(crate) loop_repeats: u32,
    pub(crate) bash_timeout: u64,
    pub(crate) context_window: Option<u64>,
    pub(crate) sandbox: SandboxMode,
    pub(crate) sandbox_network: bool,
    pub(crate) sandbox_writable: Vec<PathBuf>,
    // The provider's limits (seconds, bytes), the profile's over the top level's.
    pub(crate) idle_timeout: Option<u64>,
    pub(crate) turn_timeout: Option<u64>,
    pub(crate) max_retries: Option<u32>,
    pub(crate) max_reply_bytes: Option<u64>,
    pub(crate) layer: Layer,
}

/// A one-line note on stderr.
fn note(text: &str) {
    anstream::eprintln!(
        "{}",
        style::paint(style::NOTICE, &format!("lancet: note: {text}"))
    );
}

/// Refuses an endpoint lancet cannot send requests to, naming where it was set.
fn check_url(url: &str, origin: impl FnOnce() -> Origin) -> Result<(), Error> {
    let why = match reqwest::Url::parse(url) {
        Err(_) => Some(UrlProblem::NotUrl),
        Ok(u) if !matches!(u.scheme(), "http" | "https") => {
            Some(UrlProblem::Scheme(u.scheme().to_owned()))
        }
        Ok(u) if u.host_str().is_none_or(str::is_empty) => Some(UrlProblem::NoHost),
        Ok(_) => None,
    };
    match why {
        None => Ok(()),
        Some(why) => Err(Error::BadBaseUrl {
            url: url.to_owned(),
            origin: origin(),
            why,
        }),
    }
}

/// Every endpoint a configuration file sets.
fn check_urls(layer: &Layer, file: &Path) -> Result<(), Error> {
    let at = |key: String| {
        let file = file.to_path_buf();
        move || Origin::Config { key, file }
    };
    if let Some(url) = &layer.base_url {
        check_url(url, at("base_url".to_owned()))?;
    }
    for (name, profile) in &layer.providers {
        if let Some(url) = &profile.base_url {
            check_url(url, at(format!("providers.{name}.base_url")))?;
        }
    }
    Ok(())
}

/// The configuration files, merged: the defaults, the user's file, and the
/// project's `.lancet.toml` as far as the user trusts it.
pub(crate) fn layers(args: &RunArgs, root: &Path) -> Result<Layer, Error> {
    layers_trusting(args.trust, root)
}

/// [`layers`], with `--trust` given as `trust` (`lancet mcp` has the same
/// question and the same answer).
pub(crate) fn layers_trusting(trust: bool, root: &Path) -> Result<Layer, Error> {
    let settings::Files {
        layer,
        trusted,
        user_file,
        project,
    } = settings::read(root, check_urls)?;
    let file = root.join(".lancet.toml");
    let Some((text, mut project)) = project else {
        return Ok(layer);
    };
    crate::sandbox::no_loosening_from_the_project(&mut project);
    let narrowed = project.clone().untrusted_project(&layer);
    let chosen = if narrowed.ignored.is_empty() {
        narrowed
    } else if trusts(
        trust,
        root,
        &text,
        &trusted,
        user_file.as_deref(),
        &narrowed.ignored,
    ) {
        project.trusted_project()
    } else {
        note(&format!(
            "{} is not trusted, so it may only narrow your settings; ignored: {} (pass --trust, or answer y when asked on a terminal, to use them)",
            file.display(),
            narrowed.ignored.join(", ")
        ));
        narrowed
    };
    if chosen.ignored.contains(&"trusted") {
        note(&format!(
            "`trusted` in {} is ignored: only your own configuration may trust a project",
            file.display()
        ));
    }
    check_urls(&chosen.layer, &file)?;
    Ok(layer.merged(chosen.layer))
}

/// Whether the user trusts the project at `root` with this `.lancet.toml`
/// text, which sets `wanted` (keys only trust allows): remembered in
/// `entries`, or now (`--trust`, or yes on a terminal), which is remembered
/// in `user_file`.
fn trusts(
    trust: bool,
    root: &Path,
    text: &str,
    entries: &[Trusted],
    user_file: Option<&Path>,
    wanted: &[&str],
) -> bool {
    let file = root.join(".lancet.toml");
    let sha256 = trust::digest(text);
    if trust::is_trusted(entries, root, &sha256) {
        return true;
    }
    let now = trust || (std::io::stdin().is_terminal() && trust::ask(&file, wanted));
    if !now {
        return false;
    }
    match user_file.map(|f| (f, trust::remember(f, root, &sha256))) {
        Some((f, Ok(()))) => note(&format!(
            "{} is trusted as it is now (remembered in {}; a change to it needs trust again)",
            file.display(),
            f.display()
        )),
        Some((f, Err(e))) => note(&format!(
            "the trust is for this run only: {} could not be written ({e})",
            f.display()
        )),
        None => note("the trust is for this run only: there is no HOME to remember it in"),
    }
    true
}

pub(crate) fn settings(args: &RunArgs, root: &Path, models: &Models) -> Result<Settings, Error> {
    let layer = layers(args, root)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let provider = args
        .provider
        .clone()
        .or_else(|| layer.provider.as_deref().map(ProviderChoice::from_name));
    // A profile may carry a wire's name too (to set its endpoint or key).
    let profile = provider
        .as_ref()
        .and_then(|p| layer.providers.get(p.name()))
        .cloned()
        .unwrap_or_default();
    let model = args
        .model
        .clone()
        .or(profile.model.clone())
        .or(layer.model.clone())
        .or(env("LANCET_MODEL"))
        .ok_or(Error::NoModel)?;
    let wire = match (&provider, profile.wire) {
        (_, Some(WireKind::Anthropic)) | (Some(ProviderChoice::Anthropic), _) => Wire::Anthropic,
        (_, Some(WireKind::Openai)) | (Some(ProviderChoice::OpenAi), _) => Wire::OpenAi,
        (Some(ProviderChoice::Profile(name)), None) if !layer.providers.contains_key(name) => {
            return Err(Error::UnknownProvider { name: name.clone() });
        }
        _ if model.starts_with("claude") => Wire::Anthropic,
        _ => Wire::OpenAi,
    };
    let (url_env, key_env, public) = match wire {
        Wire::Anthropic => (
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "https://api.anthropic.com",
        ),
        _ => (
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
            "https://api.openai.com/v1",
        ),
    };
    // (Configured endpoints were checked where their file was read.)
    let base_url = match (
        &args.base_url,
        profile.base_url.clone().or(layer.base_url.clone()),
    ) {
        (Some(url), _) => {
            check_url(url, || Origin::Flag("--base-url"))?;
            url.clone()
        }
        (None, Some(url)) => url,
        (None, None) => match env(url_env) {
            Some(url) => {
                check_url(&url, || Origin::Env(url_env))?;
                url
            }
            None => public.to_owned(),
        },
    };
    let api_key = env(profile.api_key_env.as_deref().unwrap_or(key_env));
    let entry = models.lookup(&model);
    let choice = match args.edit_format {
        Some(c) => c,
        None => match layer.edit_format.as_deref() {
            None | Some("auto") => FormatChoice::Auto,
            Some(name) => {
                FormatChoice::Given(lancet::Format::from_name(name).ok_or_else(|| {
                    Error::UnknownEditFormat {
                        name: name.to_owned(),
                    }
                })?)
            }
        },
    };
    let format = match choice {
        FormatChoice::Auto => entry.map_or(lancet::Format::SearchReplace, |e| e.format()),
        FormatChoice::Given(f) => f,
    };
    let text_mode = args.text_mode
        || (args.edit_format.is_none() && entry.is_some_and(|e| e.mode == EditMode::Text));
    let mode = if args.yes {
        Mode::Auto
    } else if let Some(mode) = args.permission {
        mode
    } else {
        match layer.permission.as_deref() {
            None => Mode::Ask,
            Some(name) => Mode::from_name(name).ok_or_else(|| Error::UnknownPermission {
                name: name.to_owned(),
            })?,
        }
    };
    let sandbox = match (args.sandbox, layer.sandbox.as_deref()) {
        (Some(m), _) => m,
        (None, Some(name)) => crate::sandbox::mode(name).map_err(Error::SandboxSetting)?,
        (None, None) => SandboxMode::for_permission(mode),
    };
    let sandbox_writable =
        crate::sandbox::writable_dirs(&layer.sandbox_writable).map_err(Error::SandboxSetting)?;
    Ok(Settings {
        sandbox,
        sandbox_network: layer.sandbox_network.unwrap_or(false),
        sandbox_writable,
        wire,
        base_url,
        api_key,
        model,
        format,
        text_mode,
        mode,
        max_turns: args.max_turns.or(layer.max_turns).unwrap_or(50),
        max_tokens: layer.max_tokens.unwrap_or(8192),
        loop_repeats: layer
            .loop_repeats
            .unwrap_or(lancet::agent::guard::DEFAULT_LOOP_REPEATS),
        bash_timeout: layer.bash_timeout.unwrap_or(120),
        context_window: profile.context_window,
        idle_timeout: profile.idle_timeout.or(layer.idle_timeout),
        turn_timeout: profile.turn_timeout.or(layer.turn_timeout),
        max_retries: profile.max_retries.or(layer.max_retries),
        max_reply_bytes: profile.max_reply_bytes.or(layer.max_reply_bytes),
        layer,
    })
}

pub(crate) fn permissions(s: &Settings) -> Result<Permissions, Error> {
    let parse = |rules: &[String]| -> Result<Vec<Rule>, Error> {
        rules
            .iter()
            .map(|r| {
                r.parse::<Rule>().map_err(|source| Error::BadRule {
                    rule: r.clone(),
                    source,
                })
            })
            .collect()
    };
    let p = &s.layer.permissions;
    Ok(Permissions::new(s.mode)
        .with(Effect::Deny, parse(&p.deny)?)
        .with(Effect::Ask, parse(&p.ask)?)
        .with(Effect::Allow, parse(&p.allow)?))
}

/// The provider's configuration from the settings (shared with `bench`).
pub(crate) fn provider_config(s: &Settings) -> ProviderConfig {
    let mut pc = ProviderConfig::new(s.wire, s.base_url.clone(), s.model.clone());
    pc.api_key = s.api_key.clone();
    pc.idle_timeout = s.idle_timeout.map_or(pc.idle_timeout, Duration::from_secs);
    pc.turn_timeout = s.turn_timeout.map_or(pc.turn_timeout, Duration::from_secs);
    pc.retry.max_retries = s.max_retries.unwrap_or(pc.retry.max_retries);
    pc.max_reply_bytes = s.max_reply_bytes.map_or(pc.max_reply_bytes, |n| {
        usize::try_from(n).unwrap_or(usize::MAX)
    });
    pc
}

/// Asks on the terminal: the question on stderr, the answer from stdin.
struct Terminal;

impl Prompter for Terminal {
    fn confirm(&mut self, q: &Question<'_>) -> Answer {
        let mut err = std::io::stderr();
        let _ = write!(err, "{}", confirmation(q));
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => Answer::NoTerminal,
            Ok(_) if matches!(line.trim(), "y" | "Y" | "yes") => Answer::Yes,
            Ok(_) => Answer::No,
        }
    }
}

/// The models table: the user's models.toml (`bench --recommend` writes
/// it), when there is one, in front of the built-in table.
pub(crate) fn catalogue() -> Result<Models, Error> {
    let builtin = Models::builtin().map_err(Error::Models)?;
    let Some(path) = trust::user_models() else {
        return Ok(builtin);
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Models::parse(&text)
            .map(|m| m.before(builtin))
            .map_err(|source| Error::UserModels { path, source }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(builtin),
        Err(e) => {
            note(&format!("{} is not read: {e}", path.display()));
            Ok(builtin)
        }
    }
}

/// What a one-shot run and a session share, made from the arguments: the
/// settings, the provider, the rules and the tools' configuration.
pub(crate) struct Prepared {
    pub(crate) models: Models,
    pub(crate) ws: Workspace,
    pub(crate) s: Settings,
    pub(crate) rules: Permissions,
    pub(crate) provider: Provider,
    pub(crate) tc: ToolsConfig,
    /// What the bash tool's commands are confined to, in words.
    pub(crate) jail: String,
    /// The project's AGENTS.md.
    agents: Option<String>,
    /// The system prompt's note on the sandbox.
    sandbox_note: String,
    /// The MCP servers, once started on the run's runtime ([`Prepared::start_mcp`]).
    pub(crate) mcp: Option<std::sync::Arc<lancet::agent::mcp::McpHub>>,
}

impl Prepared {
    /// Starts the configured MCP servers on `runtime` (their connections
    /// live there), saying once on stderr which were left out and why.
    pub(crate) fn start_mcp(&mut self, runtime: &tokio::runtime::Runtime) {
        self.mcp = crate::mcp::start(&self.s.layer, self.ws.root(), self.tc.max_output, runtime);
    }

    /// The tools over the workspace, with `tc` and `prompter`, offering the
    /// MCP servers' tools.
    pub(crate) fn tools(&self, tc: ToolsConfig, prompter: Box<dyn Prompter>) -> Tools {
        let tools = Tools::new(self.ws.clone(), tc, self.rules.clone(), prompter);
        match &self.mcp {
            Some(hub) => tools.with_mcp(hub.clone()),
            None => tools,
        }
    }

    /// The system prompt for an edit format and mode.
    pub(crate) fn system(&self, format: lancet::Format, text_mode: bool) -> String {
        let mut system =
            run::system_prompt(format.instructions(), text_mode, self.agents.as_deref());
        system.push_str(&self.sandbox_note);
        system
    }

    /// The loop's configuration from the settings.
    pub(crate) fn config(&self) -> RunConfig {
        RunConfig {
            model: self.s.model.clone(),
            system: self.system(self.s.format, self.s.text_mode),
            max_turns: self.s.max_turns,
            max_tokens: self.s.max_tokens,
            context_window: self.s.context_window,
            loop_repeats: self.s.loop_repeats,
        }
    }

    /// The provider's error, with the endpoint it came from.
    pub(crate) fn provider_failed(&self, source: lancet::agent::types::ProviderError) -> Error {
        Error::Provider {
            source: Box::new(source),
            base_url: self.s.base_url.clone(),
            model: self.s.model.clone(),
            idle: provider_config(&self.s).idle_timeout,
        }
    }
}

/// Reads the configuration and builds what a run needs.
pub(crate) fn prepare(args: &RunArgs) -> Result<Prepared, Error> {
    // Orphans of the bash tool's commands come to lancet, not init, so they
    // can be ended (Linux; elsewhere the process group is what holds).
    lancet::agent::tools::adopt_orphans();
    let models = catalogue()?;
    let ws = Workspace::open(&args.root).map_err(|source| Error::RunRoot {
        root: args.root.clone(),
        source,
    })?;
    let s = settings(args, ws.root(), &models)?;
    let rules = permissions(&s)?;
    let agents = match trust::project_file(ws.root(), "AGENTS.md", trust::AGENTS_CAP) {
        Ok(text) => text,
        Err(refused) => {
            note(&refused.to_string());
            None
        }
    };
    let pc = provider_config(&s);
    let idle = pc.idle_timeout;
    let provider = Provider::new(pc).map_err(|source| Error::Provider {
        source: Box::new(source),
        base_url: s.base_url.clone(),
        model: s.model.clone(),
        idle,
    })?;
    let mut tc = ToolsConfig::default();
    tc.format = s.format;
    tc.text_mode = s.text_mode;
    tc.bash_timeout = Duration::from_secs(s.bash_timeout);
    tc.apply.fsync = s.layer.fsync.unwrap_or(false);
    // Found once, said once: what the bash tool's commands are confined to.
    let jail =
        crate::sandbox::for_run(ws.root(), s.sandbox, s.sandbox_network, &s.sandbox_writable);
    tc.sandbox = jail.sandbox;
    tc.task = Some(TaskConfig {
        parallel: s
            .layer
            .task
            .parallel
            .map_or(task::DEFAULT_PARALLEL, |n| (n as usize).max(1)),
        max_turns: s
            .layer
            .task
            .max_turns
            .unwrap_or(task::DEFAULT_MAX_TURNS)
            .max(1),
    });
    Ok(Prepared {
        models,
        ws,
        rules,
        provider,
        tc,
        jail: jail.summary,
        agents,
        sandbox_note: sandbox::prompt_note(jail.enforced.as_ref()),
        s,
        mcp: None,
    })
}

/// The runtime every agent command runs on: two workers (the model's
/// stream, tools and MCP servers wait on I/O, not on the CPU).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

pub(crate) fn run(args: &RunArgs) -> Result<Exit, Error> {
    let Some(task) = args.task.clone() else {
        // No task (on a terminal: the parser says so otherwise): a session.
        return crate::session::session(args);
    };
    let mut p = prepare(args)?;
    let runtime = runtime()?;
    p.start_mcp(&runtime);
    let p = p;
    let provider_failed = |source| p.provider_failed(source);
    let prompter: Box<dyn Prompter> = if std::io::stdin().is_terminal() {
        Box::new(Terminal)
    } else {
        Box::new(NoTerminal)
    };
    if !args.json {
        eprintln!("lancet: {}", p.jail);
    }
    let config = p.config();
    let (s, models, provider) = (&p.s, &p.models, &p.provider);
    let mut tools = p.tools(p.tc.clone(), prompter);
    // The transcript: the last one continued, or a new one.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let (mut session, mut messages) = if args.resume {
        match Session::resume_last(&args.root) {
            Ok(Some((session, messages))) => (Some(session), messages),
            Ok(None) => return Err(Error::NoSession),
            Err(e) => return Err(Error::Resume(e)),
        }
    } else {
        (Session::create(&args.root, now).ok(), Vec::new())
    };
    if let Some(session) = session.as_mut() {
        let _ = session.record(&Entry::Start {
            model: s.model.clone(),
            format: s.format.name().to_owned(),
            task: task.clone(),
        });
    }
    let task = Message::user(task);
    if let Some(session) = session.as_mut() {
        let _ = session.record(&Entry::Message {
            message: task.clone(),
        });
    }
    messages.push(task);
    let json = args.json;
    if json {
        emit(&serde_json::json!({
            "event": "session",
            "id": session.as_ref().map(|s| s.id().to_owned()),
            "model": s.model,
            "format": s.format.name(),
            "text_mode": s.text_mode,
            "sandbox": p.jail,
        }));
    }
    // Whether stdout ends mid-line (streamed text without its newline).
    let mut open_line = false;
    // The repetition guard's finding, for the closing line.
    let mut looped: Option<String> = None;
    let mut show = |e: Event| {
        if let Event::Looping { chunk, repeats } = &e {
            looped = Some(run::ending_looping(chunk, *repeats));
        }
        if let Event::Text { text } = &e {
            open_line = !text.ends_with('\n');
        } else if !matches!(e, Event::Usage { .. }) {
            open_line = false;
        }
        show(&e, json);
    };
    let result = runtime.block_on(async {
        tokio::select! {
            r = run::run(provider, &mut tools, session.as_mut(), messages, &config, &mut show) => Some(r),
            () = interrupted() => None,
        }
    });
    // Nothing a command started outlives lancet, however the run ended
    // (before anything is printed: after SIGHUP the terminal may be gone);
    // the MCP servers are closed first (their processes are ended either way).
    if let Some(hub) = &p.mcp {
        runtime.block_on(hub.shutdown());
    }
    lancet::agent::tools::end_descendants();
    if open_line && !json {
        println!();
    }
    let outcome = match result {
        None => {
            // Past the terminal's `^C`.
            eprintln!();
            return Err(Error::Interrupted);
        }
        Some(Err(e)) => return Err(provider_failed(e)),
        Some(Ok(o)) => o,
    };
    let cost = models
        .lookup(&s.model)
        .and_then(|m| m.cost(outcome.usage.input_tokens, outcome.usage.output_tokens));
    if json {
        emit(&serde_json::json!({
            "event": "done",
            "ending": outcome.ending,
            "turns": outcome.turns,
            "input_tokens": outcome.usage.input_tokens,
            "output_tokens": outcome.usage.output_tokens,
            "cost": cost,
        }));
    } else {
        let (why, tint) = match outcome.ending {
            Ending::Answered => ("done".to_owned(), style::GOOD),
            Ending::MaxTurns => (
                "stopped: the turn limit was reached (raise it with --max-turns)".to_owned(),
                style::NOTICE,
            ),
            Ending::Repeating => (
                "stopped: the model repeated the same failing call".to_owned(),
                style::NOTICE,
            ),
            Ending::NoTerminal => (
                "stopped: a call needed your confirmation and there is no terminal (pass --yes, or allow it in .lancet.toml)".to_owned(),
                style::NOTICE,
            ),
            // `lancet run` never asks the loop to stop; the benchmark does.
            Ending::Stopped => ("stopped".to_owned(), style::NOTICE),
            Ending::Truncated => (run::ending_truncated(s.max_tokens), style::NOTICE),
            Ending::Looping => (looped.clone().unwrap_or_default(), style::NOTICE),
        };
        let cost = cost.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        anstream::eprintln!(
            "\n{} — {} turn{}, {} tokens in, {} out{cost}",
            style::paint(tint, &why),
            outcome.turns,
            if outcome.turns == 1 { "" } else { "s" },
            outcome.usage.input_tokens,
            outcome.usage.output_tokens
        );
    }
    Ok(match outcome.ending {
        Ending::Answered => Exit::Success,
        Ending::MaxTurns
        | Ending::Repeating
        | Ending::NoTerminal
        | Ending::Stopped
        | Ending::Truncated
        | Ending::Looping => Exit::Failed,
    })
}

/// Ctrl-C, SIGTERM or SIGHUP (the terminal closed): each stops the run the
/// same way, the running command and what it started included.
pub(crate) async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = hup.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

fn emit(v: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn show(e: &Event, json: bool) {
    if json {
        if let Ok(v) = serde_json::to_value(e) {
            emit(&v);
        }
        return;
    }
    // Everything shown comes from the model, a tool or a file: a control
    // character in it is shown as an escape, never acted on by the terminal.
    let line = |t: &str| for_terminal(t, Layout::Line).into_owned();
    let block = |t: &str| for_terminal(t, Layout::Block).into_owned();
    if let Event::ToolResult {
        is_error: true,
        content,
        ..
    } = e
    {
        let first = content.lines().next().unwrap_or("");
        anstream::println!(
            "{}",
            style::paint(style::BAD, &format!("  ✗ {}", line(first)))
        );
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = match e {
        Event::Text { text } => write!(out, "{}", block(text)),
        Event::ToolCall { name, arguments } => {
            let mut args: String = arguments.chars().take(100).collect();
            if args.len() < arguments.len() {
                args.push('…');
            }
            writeln!(out, "\n→ {} {}", line(name), line(&args))
        }
        Event::Edit { diff, .. } => write!(out, "{}", block(diff)),
        Event::Compacted { pruned, summary } => writeln!(
            out,
            "\n[context compacted: {}]",
            match summary {
                Some(_) => "earlier turns summarised".to_owned(),
                None => format!("old tool outputs pruned, ~{pruned} tokens"),
            }
        ),
        Event::Truncated { max_tokens } => {
            writeln!(out, "\n[the reply was cut off at {max_tokens} tokens]")
        }
        Event::NoEdit { warning } => writeln!(out, "\n[warning: {}]", line(warning)),
        // A sub-agent: a line when it starts and ends, one per tool call.
        Event::TaskStart { agent, description } => {
            writeln!(out, "{}", task::started_line(agent, description))
        }
        Event::TaskEnd {
            agent,
            ending,
            turns,
            input_tokens,
            output_tokens,
            ..
        } => writeln!(
            out,
            "{}",
            task::ended_line(agent, ending, *turns, (*input_tokens, *output_tokens))
        ),
        Event::Agent { agent, event } => match &**event {
            Event::ToolCall { name, arguments } => {
                writeln!(out, "{}", task::call_line(agent, name, arguments))
            }
            _ => Ok(()),
        },
        // The closing line says it.
        Event::Looping { .. } | Event::ToolResult { .. } | Event::Usage { .. } => Ok(()),
    };
    let _ = out.flush();
}
