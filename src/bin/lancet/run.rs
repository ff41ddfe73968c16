//! `lancet run`: resolves the configuration (defaults < user file < project
//! file < environment < flags), builds the provider, tools and permissions,
//! and drives the loop, printing events as text or JSON lines.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Args;
use lancet::Workspace;
use lancet::agent::config::{self, Layer, WireKind};
use lancet::agent::models::{EditMode, Models};
use lancet::agent::permissions::{
    Answer, Effect, Mode, NoTerminal, Permissions, Prompter, Question, Rule,
};
use lancet::agent::provider::{Provider, ProviderConfig, Wire};
use lancet::agent::run::{self, Ending, Event, RunConfig};
use lancet::agent::session::{Entry, Session};
use lancet::agent::tools::{Tools, ToolsConfig};
use lancet::agent::types::{Message, ProviderError};

use crate::cli::FormatChoice;
use crate::status;

/// Exit status of `run` when the provider failed after retries.
const PROVIDER: u8 = 3;

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// What the agent should do.
    pub(crate) task: String,
    /// Model as the provider names it (default: config, else LANCET_MODEL).
    #[arg(short, long)]
    pub(crate) model: Option<String>,
    /// openai, anthropic, or a profile name from the configuration.
    #[arg(long)]
    pub(crate) provider: Option<String>,
    /// Endpoint (default: profile, else OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the public one).
    #[arg(long)]
    pub(crate) base_url: Option<String>,
    /// The edit format (auto: from models.toml).
    #[arg(short = 'f', long, value_enum)]
    pub(crate) edit_format: Option<FormatChoice>,
    /// The model writes edits in its reply instead of calling the edit tool.
    #[arg(long)]
    pub(crate) text_mode: bool,
    /// read-only, ask or auto.
    #[arg(long)]
    pub(crate) permission: Option<String>,
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
}

/// Everything a run needs, resolved from the layers.
struct Settings {
    wire: Wire,
    base_url: String,
    api_key: Option<String>,
    model: String,
    format: lancet::Format,
    text_mode: bool,
    mode: Mode,
    max_turns: u32,
    bash_timeout: u64,
    context_window: Option<u64>,
    layer: Layer,
}

fn layers(root: &Path) -> Result<Layer, String> {
    let mut layer = config::defaults();
    let user = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("lancet").join("config.toml"));
    for path in user.into_iter().chain([root.join(".lancet.toml")]) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            let over = Layer::parse(&text, &path.display().to_string())
                .map_err(|e| format!("{}: {}", e.source_name, e.message))?;
            layer = layer.merged(over);
        }
    }
    Ok(layer)
}

fn settings(args: &RunArgs, models: &Models) -> Result<Settings, String> {
    let layer = layers(&args.root)?;
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let provider_name = args.provider.clone().or(layer.provider.clone());
    let profile = provider_name
        .as_deref()
        .and_then(|p| layer.providers.get(p))
        .cloned()
        .unwrap_or_default();
    let model = args
        .model
        .clone()
        .or(profile.model.clone())
        .or(layer.model.clone())
        .or(env("LANCET_MODEL"))
        .ok_or("no model: pass --model, set `model` in .lancet.toml, or set LANCET_MODEL")?;
    let wire = match (provider_name.as_deref(), profile.wire) {
        (_, Some(WireKind::Anthropic)) | (Some("anthropic"), _) => Wire::Anthropic,
        (_, Some(WireKind::Openai)) | (Some("openai"), _) => Wire::OpenAi,
        (Some(p), None) if !layer.providers.contains_key(p) => {
            return Err(format!(
                "unknown provider `{p}`: use openai, anthropic, or a profile under [providers] in the configuration"
            ));
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
    let base_url = args
        .base_url
        .clone()
        .or(profile.base_url.clone())
        .or(layer.base_url.clone())
        .or(env(url_env))
        .unwrap_or_else(|| public.to_owned());
    let api_key = env(profile.api_key_env.as_deref().unwrap_or(key_env));
    let entry = models.lookup(&model);
    let choice = match args.edit_format {
        Some(c) => c.name().to_owned(),
        None => layer.edit_format.clone().unwrap_or_else(|| "auto".into()),
    };
    let format = if choice == "auto" {
        entry.map_or(lancet::Format::SearchReplace, |e| e.format())
    } else {
        lancet::Format::from_name(&choice).ok_or_else(|| {
            format!("unknown edit format `{choice}`: use auto, search-replace, udiff, hashline, whole or apply-patch")
        })?
    };
    let text_mode = args.text_mode
        || (args.edit_format.is_none() && entry.is_some_and(|e| e.mode == EditMode::Text));
    let permission = if args.yes {
        "auto".to_owned()
    } else {
        args.permission
            .clone()
            .or(layer.permission.clone())
            .unwrap_or_else(|| "ask".into())
    };
    let mode = Mode::from_name(&permission).ok_or_else(|| {
        format!("unknown permission mode `{permission}`: use read-only, ask or auto")
    })?;
    Ok(Settings {
        wire,
        base_url,
        api_key,
        model,
        format,
        text_mode,
        mode,
        max_turns: args.max_turns.or(layer.max_turns).unwrap_or(50),
        bash_timeout: layer.bash_timeout.unwrap_or(120),
        context_window: profile.context_window,
        layer,
    })
}

fn permissions(s: &Settings) -> Result<Permissions, String> {
    let parse = |rules: &[String]| -> Result<Vec<Rule>, String> {
        rules
            .iter()
            .map(|r| {
                r.parse::<Rule>()
                    .map_err(|e| format!("permission rule `{r}`: {e}"))
            })
            .collect()
    };
    let p = &s.layer.permissions;
    Ok(Permissions::new(s.mode)
        .with(Effect::Deny, parse(&p.deny)?)
        .with(Effect::Ask, parse(&p.ask)?)
        .with(Effect::Allow, parse(&p.allow)?))
}

/// Asks on the terminal: the question on stderr, the answer from stdin.
struct Terminal;

impl Prompter for Terminal {
    fn confirm(&mut self, q: &Question<'_>) -> Answer {
        let mut err = std::io::stderr();
        let _ = writeln!(err, "\n{}", q.detail.trim_end());
        let _ = write!(err, "Allow {} {}? [y/N] ", q.tool, q.subject);
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => Answer::NoTerminal,
            Ok(_) if matches!(line.trim(), "y" | "Y" | "yes") => Answer::Yes,
            Ok(_) => Answer::No,
        }
    }
}

pub(crate) fn run(args: RunArgs) -> u8 {
    // Orphans of the bash tool's commands come to lancet, not init, so they
    // can be ended (Linux; elsewhere the process group is what holds).
    lancet::agent::tools::adopt_orphans();
    let models = match Models::builtin() {
        Ok(m) => m,
        Err(e) => return crate::usage(&format!("models.toml: {e}")),
    };
    let s = match settings(&args, &models) {
        Ok(s) => s,
        Err(msg) => return crate::usage(&msg),
    };
    let rules = match permissions(&s) {
        Ok(p) => p,
        Err(msg) => return crate::usage(&msg),
    };
    let ws = match Workspace::open(&args.root) {
        Ok(ws) => ws,
        Err(e) => return crate::usage(&format!("{}: {e}", args.root.display())),
    };
    let mut pc = ProviderConfig::new(s.wire, s.base_url.clone(), s.model.clone());
    pc.api_key = s.api_key.clone();
    let provider = match Provider::new(pc) {
        Ok(p) => p,
        Err(e) => return provider_failed(&e, &s),
    };
    let prompter: Box<dyn Prompter> = if std::io::stdin().is_terminal() {
        Box::new(Terminal)
    } else {
        Box::new(NoTerminal)
    };
    let mut tc = ToolsConfig::default();
    tc.format = s.format;
    tc.text_mode = s.text_mode;
    tc.bash_timeout = Duration::from_secs(s.bash_timeout);
    let mut tools = Tools::new(ws, tc, rules, prompter);
    let agents = std::fs::read_to_string(args.root.join("AGENTS.md")).ok();
    let config = RunConfig {
        model: s.model.clone(),
        system: run::system_prompt(s.format.instructions(), s.text_mode, agents.as_deref()),
        max_turns: s.max_turns,
        max_tokens: 8192,
        context_window: s.context_window,
    };
    // The transcript: the last one continued, or a new one.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let (mut session, mut messages) = match args.resume {
        true => match Session::resume_last(&args.root) {
            Ok(Some((session, messages))) => (Some(session), messages),
            Ok(None) => return crate::usage("--resume: there is no session in this root yet"),
            Err(e) => return crate::usage(&format!("--resume: {e}")),
        },
        false => (Session::create(&args.root, now).ok(), Vec::new()),
    };
    if let Some(session) = session.as_mut() {
        let _ = session.record(&Entry::Start {
            model: s.model.clone(),
            format: s.format.name().to_owned(),
            task: args.task.clone(),
        });
    }
    let task = Message::user(args.task.clone());
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
        }));
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return crate::usage(&format!("cannot start the runtime: {e}")),
    };
    // Whether stdout ends mid-line (streamed text without its newline).
    let mut open_line = false;
    let mut show = |e: Event| {
        if let Event::Text { text } = &e {
            open_line = !text.ends_with('\n');
        } else if !matches!(e, Event::Usage { .. }) {
            open_line = false;
        }
        show(&e, json);
    };
    let result = runtime.block_on(async {
        tokio::select! {
            r = run::run(&provider, &mut tools, session.as_mut(), messages, &config, &mut show) => Some(r),
            () = interrupted() => None,
        }
    });
    // Nothing a command started outlives lancet, however the run ended
    // (before anything is printed: after SIGHUP the terminal may be gone).
    lancet::agent::tools::end_descendants();
    if open_line && !json {
        println!();
    }
    let outcome = match result {
        None => {
            eprintln!(
                "\nlancet: interrupted; the session so far is saved (continue with --resume)"
            );
            return status::FAILED;
        }
        Some(Err(e)) => return provider_failed(&e, &s),
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
        let why = match outcome.ending {
            Ending::Answered => "done",
            Ending::MaxTurns => "stopped: the turn limit was reached (raise it with --max-turns)",
            Ending::Repeating => "stopped: the model repeated the same failing call",
            Ending::NoTerminal => {
                "stopped: a call needed your confirmation and there is no terminal (pass --yes, or allow it in .lancet.toml)"
            }
        };
        let cost = cost.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        eprintln!(
            "\n{why} — {} turn{}, {} tokens in, {} out{cost}",
            outcome.turns,
            if outcome.turns == 1 { "" } else { "s" },
            outcome.usage.input_tokens,
            outcome.usage.output_tokens
        );
    }
    match outcome.ending {
        Ending::Answered => status::OK,
        _ => status::FAILED,
    }
}

/// Ctrl-C, SIGTERM or SIGHUP (the terminal closed): each stops the run the
/// same way, the running command and what it started included.
async fn interrupted() {
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
    let mut out = std::io::stdout().lock();
    let _ = match e {
        Event::Text { text } => write!(out, "{text}"),
        Event::ToolCall { name, arguments } => {
            let mut args: String = arguments.chars().take(100).collect();
            if args.len() < arguments.len() {
                args.push('…');
            }
            writeln!(out, "\n→ {name} {args}")
        }
        Event::ToolResult {
            is_error: true,
            content,
            ..
        } => {
            writeln!(out, "  ✗ {}", content.lines().next().unwrap_or(""))
        }
        Event::Edit { diff, .. } => write!(out, "{diff}"),
        Event::Compacted { pruned, summary } => writeln!(
            out,
            "\n[context compacted: {}]",
            match summary {
                Some(_) => "earlier turns summarised".to_owned(),
                None => format!("old tool outputs pruned, ~{pruned} tokens"),
            }
        ),
        Event::ToolResult { .. } | Event::Usage { .. } => Ok(()),
    };
    let _ = out.flush();
}

/// At most 200 characters of a server's answer, on one line.
fn clip(body: &str) -> String {
    let one: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

/// The provider gave up: what happened and what to do, exit 3.
fn provider_failed(e: &ProviderError, s: &Settings) -> u8 {
    let what = match e {
        ProviderError::Auth { .. } => format!(
            "the key was refused by {}: check the API key in the environment (OPENAI_API_KEY / ANTHROPIC_API_KEY, or the profile's api_key_env)",
            s.base_url
        ),
        ProviderError::ModelNotFound { .. } => format!(
            "{} does not serve the model `{}`: check --model (a local server must have it loaded)",
            s.base_url, s.model
        ),
        ProviderError::Connection(msg) => format!(
            "cannot reach {} ({msg}): is the server running, and is --base-url right?",
            s.base_url
        ),
        ProviderError::ContextOverflow { .. } => format!(
            "the conversation no longer fits {}'s context window, even after compaction: start a new session with a narrower task (or set context_window in the provider profile so lancet compacts earlier)",
            s.model
        ),
        ProviderError::RateLimited { body } => format!(
            "{} kept answering 429 (rate limited) through every retry ({}): wait a while and --resume, or check your plan's limits",
            s.base_url,
            clip(body)
        ),
        ProviderError::Server { status, body } => format!(
            "{} kept failing with {status} through every retry ({}): the service is having trouble; try again later with --resume",
            s.base_url,
            clip(body)
        ),
        ProviderError::Refused { status, body } => format!(
            "{} refused the request with {status} ({}): check the model name and the endpoint's API (--provider openai|anthropic)",
            s.base_url,
            clip(body)
        ),
        ProviderError::Timeout => format!(
            "{} stopped sending anything (idle timeout): the server may be overloaded or the model too slow to load; try again with --resume",
            s.base_url
        ),
        other => format!(
            "{other} (from {}): is it an OpenAI-compatible or Anthropic endpoint? (--provider)",
            s.base_url
        ),
    };
    eprintln!("lancet: {what}");
    PROVIDER
}
