//! `lancet run`: resolves the configuration (defaults < user file < project
//! file < environment < flags), builds the provider, tools and permissions,
//! and drives the loop, printing events as text or JSON lines.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
use lancet::agent::types::Message;

use crate::cli::{FormatChoice, ProviderChoice, RunArgs};
use crate::error::{Error, Exit};
use crate::style;

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

fn layers(root: &Path) -> Result<Layer, Error> {
    let mut layer = config::defaults();
    let user = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|d| d.join("lancet").join("config.toml"));
    for path in user.into_iter().chain([root.join(".lancet.toml")]) {
        if let Ok(text) = std::fs::read_to_string(&path) {
            let over = Layer::parse(&text, &path.display().to_string()).map_err(Error::Config)?;
            layer = layer.merged(over);
        }
    }
    Ok(layer)
}

fn settings(args: &RunArgs, models: &Models) -> Result<Settings, Error> {
    let layer = layers(&args.root)?;
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

fn permissions(s: &Settings) -> Result<Permissions, Error> {
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

pub(crate) fn run(args: &RunArgs) -> Result<Exit, Error> {
    let models = Models::builtin().map_err(Error::Models)?;
    let s = settings(args, &models)?;
    let rules = permissions(&s)?;
    let ws = Workspace::open(&args.root).map_err(|source| Error::RunRoot {
        root: args.root.clone(),
        source,
    })?;
    let provider_failed = |source| Error::Provider {
        source,
        base_url: s.base_url.clone(),
        model: s.model.clone(),
    };
    let mut pc = ProviderConfig::new(s.wire, s.base_url.clone(), s.model.clone());
    pc.api_key = s.api_key.clone();
    let provider = Provider::new(pc).map_err(provider_failed)?;
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
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
            _ = tokio::signal::ctrl_c() => None,
        }
    });
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
            Ending::Answered => ("done", style::GOOD),
            Ending::MaxTurns => (
                "stopped: the turn limit was reached (raise it with --max-turns)",
                style::NOTICE,
            ),
            Ending::Repeating => (
                "stopped: the model repeated the same failing call",
                style::NOTICE,
            ),
            Ending::NoTerminal => (
                "stopped: a call needed your confirmation and there is no terminal (pass --yes, or allow it in .lancet.toml)",
                style::NOTICE,
            ),
        };
        let cost = cost.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        anstream::eprintln!(
            "\n{} — {} turn{}, {} tokens in, {} out{cost}",
            style::paint(tint, why),
            outcome.turns,
            if outcome.turns == 1 { "" } else { "s" },
            outcome.usage.input_tokens,
            outcome.usage.output_tokens
        );
    }
    Ok(match outcome.ending {
        Ending::Answered => Exit::Success,
        Ending::MaxTurns | Ending::Repeating | Ending::NoTerminal => Exit::Failed,
    })
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
    if let Event::ToolResult {
        is_error: true,
        content,
        ..
    } = e
    {
        let first = content.lines().next().unwrap_or("");
        anstream::println!("{}", style::paint(style::BAD, &format!("  ✗ {first}")));
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
