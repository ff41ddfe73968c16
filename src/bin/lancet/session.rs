//! The interactive session: `lancet` (or `lancet run` without a task) on a
//! terminal. Each line typed is one more task on the same conversation,
//! through the same loop as `lancet run`, recorded in the same JSONL
//! transcript (`--resume` and `/resume` continue it); a line starting with
//! `/` is a command (`words::SESSION_COMMANDS`).
//!
//! Ctrl-C during a turn drops the turn's future — the model's stream, and a
//! running command with its whole process group (`tools::process`) — then
//! ends anything left below lancet ([`end_descendants`]) and reads the
//! conversation back from the transcript, where every message up to the cut
//! was recorded as it happened; the cut turn is recorded as a reply saying
//! it was interrupted (with what had streamed), so the next line follows a
//! conversation the model can read honestly.
//!
//! Owns: the read–run loop, the commands, what a turn shows. Does not own:
//! the loop itself (`lancet::agent::run`), settings (`run.rs`), questions
//! (`session_ask.rs`), the line editor (`session_line.rs`), Markdown
//! (`markdown.rs`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use lancet::agent::permissions::{Layout, Mode, for_terminal};
use lancet::agent::provider::Provider;
use lancet::agent::run::{self, Ending, Event, RunConfig};
use lancet::agent::session::words;
use lancet::agent::session::{Entry, Session};
use lancet::agent::task;
use lancet::agent::tools::{Tools, end_descendants};
use lancet::agent::types::{Block, Message, Role};
use rustyline::error::ReadlineError;

use crate::cli::RunArgs;
use crate::error::{Error, Exit};
use crate::markdown::{self, Markdown};
use crate::run::{Prepared, prepare, provider_config};
use crate::session_ask::{Always, Approved, Asker};
use crate::session_line::Line;
use crate::style;

/// Everything a session holds between lines.
struct State {
    p: Prepared,
    root: PathBuf,
    tools: Tools,
    config: RunConfig,
    transcript: Option<Session>,
    messages: Vec<Message>,
    /// The session's "always" answers (kept across `/mode` and `/format`).
    always: Arc<Mutex<Always>>,
    /// Set by Ctrl-C.
    cut: Arc<AtomicBool>,
    /// The diff of the edit the person just approved in `ask` mode: it was
    /// shown with the question, so its edit event does not show it again.
    approved: Approved,
    /// Tokens and model turns of this session.
    tokens: (u64, u64),
    turns: u32,
    /// The last request's size in tokens (its input and output).
    last_context: Option<u64>,
    /// Each file an edit changed, as it was before the session's first edit
    /// of it (`None`: it did not exist).
    before: BTreeMap<String, Option<String>>,
}

pub(crate) fn session(args: &RunArgs) -> Result<Exit, Error> {
    let mut p = prepare(args)?;
    let root = p.ws.root().to_path_buf();
    let runtime = crate::run::runtime()?;
    p.start_mcp(&runtime);
    // Ctrl-C while a turn runs (the terminal is cooked then; at the prompt
    // the line editor reads it as a key): a flag for a question that waits,
    // and a counter a turn waits on.
    let cut = Arc::new(AtomicBool::new(false));
    let (cut_tx, mut cut_rx) = tokio::sync::watch::channel(0u64);
    // Registered here, before the first turn (a listener's first poll may
    // come late, and until then SIGINT would do what it did before: an
    // ignored one, under a shell that ignores it, would be lost).
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupts = runtime
            .block_on(async { signal(SignalKind::interrupt()) })
            .map_err(Error::Runtime)?;
        let cut = cut.clone();
        runtime.spawn(async move {
            while interrupts.recv().await.is_some() {
                cut.store(true, Ordering::SeqCst);
                cut_tx.send_modify(|n| *n += 1);
            }
        });
    }
    #[cfg(not(unix))]
    {
        let cut = cut.clone();
        runtime.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                cut.store(true, Ordering::SeqCst);
                cut_tx.send_modify(|n| *n += 1);
            }
        });
    }
    // SIGTERM or SIGHUP (the terminal closed): nothing outlives the session.
    #[cfg(unix)]
    if let (Ok(mut term), Ok(mut hup)) = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        )
    }) {
        runtime.spawn(async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = hup.recv() => {}
            }
            end_descendants();
            std::process::exit(1);
        });
    }
    let always = Arc::new(Mutex::new(Always::default()));
    let approved = Approved::default();
    let config = p.config();
    let tools = tools(&p, &root, &always, &cut, &approved);
    anstream::eprintln!("lancet: {}", p.jail);
    let mut st = State {
        root,
        tools,
        config,
        transcript: None,
        messages: Vec::new(),
        always,
        cut,
        approved,
        tokens: (0, 0),
        turns: 0,
        last_context: None,
        before: BTreeMap::new(),
        p,
    };
    anstream::print!(
        "{}",
        style::paint(
            style::GOOD,
            &words::session_banner(
                &st.p.s.model,
                st.p.s.format.name(),
                st.p.s.mode.name(),
                &st.root
            )
        )
    );
    if args.resume {
        st.resume()?;
    }
    let mut line = Line::new(&st.root).map_err(|e| Error::Session(e.to_string()))?;
    let mut ctrl_c_once = false;
    loop {
        let text = match read_message(&mut line) {
            Ok(text) => text,
            Err(ReadlineError::Interrupted) => {
                let empty = line.empty_ctrl_c.load(Ordering::SeqCst);
                if empty && ctrl_c_once {
                    break;
                }
                ctrl_c_once = empty;
                if empty {
                    anstream::eprintln!(
                        "{}",
                        style::paint(style::NOTICE, words::SESSION_CTRL_C_AGAIN)
                    );
                }
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                line.save();
                return Err(Error::Session(e.to_string()));
            }
        };
        ctrl_c_once = false;
        let trimmed = text.trim();
        if trimmed.is_empty() {
            continue;
        }
        line.save();
        if trimmed.starts_with('/') {
            if !st.command(trimmed)? {
                break;
            }
            continue;
        }
        st.turn(text, &runtime, &mut cut_rx);
    }
    line.save();
    end_descendants();
    Ok(Exit::Success)
}

/// One message: a line, and more while a line ends with `\`.
fn read_message(line: &mut Line) -> Result<String, ReadlineError> {
    let mut text = line.editor.readline("› ")?;
    while text.ends_with('\\') {
        text.pop();
        text.push('\n');
        text.push_str(&line.editor.readline("… ")?);
    }
    Ok(text)
}

/// The tools, with the session's prompter.
fn tools(
    p: &Prepared,
    root: &Path,
    always: &Arc<Mutex<Always>>,
    cut: &Arc<AtomicBool>,
    approved: &Approved,
) -> Tools {
    let mut tc = p.tc.clone();
    tc.format = p.s.format;
    tc.text_mode = p.s.text_mode;
    let asker = Asker::new(
        root.to_path_buf(),
        always.clone(),
        cut.clone(),
        approved.clone(),
    );
    p.tools(tc, Box::new(asker))
}

/// The current time in milliseconds (a transcript's id).
fn now() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// A line of the session's own, on stderr.
fn say(tint: anstyle::Style, text: &str) {
    anstream::eprintln!("{}", style::paint(tint, text));
}

impl State {
    /// Records an entry in the transcript, when there is one.
    fn record(&mut self, entry: &Entry) {
        if let Some(t) = self.transcript.as_mut() {
            // A transcript that cannot be written does not stop the work.
            let _ = t.record(entry);
        }
    }

    /// Runs one task on the conversation.
    fn turn(
        &mut self,
        task: String,
        runtime: &tokio::runtime::Runtime,
        cut_rx: &mut tokio::sync::watch::Receiver<u64>,
    ) {
        if self.transcript.is_none() {
            self.transcript = Session::create(&self.root, now()).ok();
            let start = Entry::Start {
                model: self.p.s.model.clone(),
                format: self.p.s.format.name().to_owned(),
                task: task.clone(),
            };
            self.record(&start);
        }
        let message = Message::user(task);
        self.record(&Entry::Message {
            message: message.clone(),
        });
        self.messages.push(message);
        let before_turn = self.messages.clone();
        self.cut.store(false, Ordering::SeqCst);
        cut_rx.borrow_and_update();
        let mut md = Markdown::default();
        // What streamed since the last tool result (the cut turn's words).
        let mut partial = String::new();
        let mut usage_seen: Option<u64> = None;
        let mut looped: Option<String> = None;
        let State {
            p,
            tools,
            transcript,
            config,
            before,
            approved,
            ..
        } = self;
        let ws = &p.ws;
        let mut show = |e: Event| {
            match &e {
                Event::Text { text } => partial.push_str(text),
                Event::ToolResult { .. } => partial.clear(),
                Event::Usage {
                    input_tokens,
                    output_tokens,
                } => usage_seen = Some(input_tokens + output_tokens),
                // Right after the edit, before anything else changes the file
                // (a sub-agent's edit too).
                Event::Edit { diff, .. } => remember_before(ws, before, diff),
                Event::Agent { event, .. } => {
                    if let Event::Edit { diff, .. } = &**event {
                        remember_before(ws, before, diff);
                    }
                }
                Event::Looping { chunk, repeats } => {
                    looped = Some(run::ending_looping(chunk, *repeats));
                }
                _ => {}
            }
            print_event(&e, &mut md, approved);
        };
        let provider: &Provider = &p.provider;
        let result = runtime.block_on(async {
            tokio::select! {
                r = run::run(provider, tools, transcript.as_mut(), before_turn.clone(), config, &mut show) => Some(r),
                _ = cut_rx.changed() => None,
            }
        });
        // Whatever was cut, nothing a command started outlives the turn.
        end_descendants();
        let rest = md.finish();
        if !rest.is_empty() {
            anstream::print!("{rest}");
        }
        let _ = std::io::stdout().flush();
        if let Some(n) = usage_seen {
            self.last_context = Some(n);
        }
        match result {
            Some(Ok(outcome)) => {
                self.messages = outcome.messages;
                self.tokens.0 += outcome.usage.input_tokens;
                self.tokens.1 += outcome.usage.output_tokens;
                self.turns += outcome.turns;
                match outcome.ending {
                    Ending::Answered => {}
                    Ending::Truncated => {
                        say(style::NOTICE, &run::ending_truncated(self.p.s.max_tokens))
                    }
                    Ending::Looping => say(style::NOTICE, &looped.unwrap_or_default()),
                    other => say(style::NOTICE, &format!("stopped: {}", other.name())),
                }
            }
            Some(Err(e)) => {
                let e = self.p.provider_failed(e);
                say(style::BAD, &format!("lancet: {e}"));
                self.reload(&before_turn);
            }
            None => {
                eprintln!();
                say(style::NOTICE, words::SESSION_TURN_STOPPED);
                self.reload(&before_turn);
                if self.messages.last().is_some_and(|m| m.role == Role::User) {
                    let note = Message {
                        role: Role::Assistant,
                        blocks: vec![Block::Text {
                            text: words::session_interrupted(&partial),
                        }],
                    };
                    self.record(&Entry::Message {
                        message: note.clone(),
                    });
                    self.messages.push(note);
                }
            }
        }
        self.status();
    }

    /// The conversation as the transcript holds it after a turn that did
    /// not finish (or as it was before the turn, without a transcript).
    fn reload(&mut self, before_turn: &[Message]) {
        self.messages = match self.transcript.as_ref().map(|t| t.messages(&self.root)) {
            Some(Ok(messages)) if !messages.is_empty() => messages,
            _ => before_turn.to_vec(),
        };
    }

    /// The status line: model, format, mode, tokens, context use, cost.
    fn status(&self) {
        let cost = self
            .p
            .models
            .lookup(&self.p.s.model)
            .and_then(|m| m.cost(self.tokens.0, self.tokens.1));
        let context = self.last_context.zip(self.config.context_window);
        let line = words::session_status(
            &self.p.s.model,
            self.p.s.format.name(),
            self.p.s.mode.name(),
            self.tokens,
            context,
            cost,
        );
        anstream::eprintln!("{}", style::paint(style::DIM, &line));
    }

    /// Continues the last transcript.
    fn resume(&mut self) -> Result<(), Error> {
        match Session::resume_last(&self.root) {
            Ok(Some((t, messages))) => {
                say(style::GOOD, &words::session_resumed(t.id(), messages.len()));
                self.transcript = Some(t);
                self.messages = messages;
                self.tools.forget_reads();
                Ok(())
            }
            Ok(None) => {
                say(style::NOTICE, words::SESSION_NOTHING_TO_RESUME);
                Ok(())
            }
            Err(e) => Err(Error::Resume(e)),
        }
    }

    /// Rebuilds what depends on the settings (after `/model`, `/format`, `/mode`).
    fn rebuilt(&mut self) -> Result<(), Error> {
        self.p.rules = crate::run::permissions(&self.p.s)?;
        self.p.provider =
            Provider::new(provider_config(&self.p.s)).map_err(|e| self.p.provider_failed(e))?;
        self.config = self.p.config();
        self.tools = tools(&self.p, &self.root, &self.always, &self.cut, &self.approved);
        Ok(())
    }

    /// Runs a slash command; `false` to leave.
    fn command(&mut self, line: &str) -> Result<bool, Error> {
        let (name, arg) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(n, a)| (n, a.trim()));
        match (name, arg) {
            ("/help", _) => anstream::print!("{}", words::session_help()),
            ("/exit" | "/quit", _) => return Ok(false),
            ("/model", "") => say(
                style::BAD,
                &words::session_usage("/model", "a model's name"),
            ),
            ("/model", model) => {
                self.p.s.model = model.to_owned();
                self.rebuilt()?;
                say(style::GOOD, &words::session_changed("the model", model));
            }
            ("/format", f) => match lancet::Format::from_name(f) {
                Some(format) => {
                    self.p.s.format = format;
                    self.rebuilt()?;
                    say(
                        style::GOOD,
                        &words::session_changed("the edit format", format.name()),
                    );
                }
                None => {
                    let names: Vec<&str> = lancet::Format::ALL.iter().map(|f| f.name()).collect();
                    say(
                        style::BAD,
                        &words::session_usage("/format", &names.join(", ")),
                    );
                }
            },
            ("/mode", m) => match Mode::from_name(m) {
                Some(mode) => {
                    self.p.s.mode = mode;
                    self.rebuilt()?;
                    say(
                        style::GOOD,
                        &words::session_changed("the mode", mode.name()),
                    );
                }
                None => say(
                    style::BAD,
                    &words::session_usage("/mode", "read-only, ask or auto"),
                ),
            },
            ("/diff", _) => self.diff(),
            ("/undo", _) => self.undo(),
            ("/compact", _) => self.compact(),
            ("/cost", _) => {
                let cost = self
                    .p
                    .models
                    .lookup(&self.p.s.model)
                    .and_then(|m| m.cost(self.tokens.0, self.tokens.1));
                say(
                    style::GOOD,
                    &words::session_cost(self.turns, self.tokens, cost),
                );
            }
            ("/clear", _) => {
                self.transcript = None;
                self.messages.clear();
                self.last_context = None;
                self.tools.forget_reads();
                say(style::GOOD, words::SESSION_CLEARED);
            }
            ("/resume", _) => self.resume()?,
            _ => say(style::BAD, &words::session_unknown_command(name)),
        }
        Ok(true)
    }

    /// `/diff`: each file an edit changed, against how it was before the session changed it.
    fn diff(&self) {
        let mut out = String::new();
        for (path, before) in &self.before {
            let now = read(&self.p.ws, path);
            if now.as_deref() == before.as_deref() {
                continue;
            }
            let a = if before.is_some() {
                format!("a/{path}")
            } else {
                "/dev/null".to_owned()
            };
            let b = if now.is_some() {
                format!("b/{path}")
            } else {
                "/dev/null".to_owned()
            };
            let text = similar::TextDiff::from_lines(
                before.as_deref().unwrap_or(""),
                now.as_deref().unwrap_or(""),
            )
            .unified_diff()
            .context_radius(3)
            .missing_newline_hint(true)
            .header(&a, &b)
            .to_string();
            out.push_str(&text);
        }
        if out.is_empty() {
            say(style::NOTICE, words::SESSION_NO_DIFF);
        } else {
            anstream::print!("{}", markdown::diff(&out));
        }
    }

    /// `/undo`: the last apply, through the journal (as `lancet undo`).
    fn undo(&mut self) {
        match self.p.ws.undo() {
            Ok(receipt) => {
                say(
                    style::GOOD,
                    &words::session_undone(&receipt.restored, &receipt.removed),
                );
                // What the model read may have changed under it.
                self.tools.forget_reads();
            }
            Err(lancet::WorkspaceError::NothingToUndo) => say(
                style::NOTICE,
                &Error::NothingToUndo {
                    root: self.root.clone(),
                }
                .to_string(),
            ),
            Err(e) => say(style::BAD, &Error::Undo(e).to_string()),
        }
    }

    /// `/compact`: keeps the last two turns the person typed (and what
    /// followed them), with a note in place of the rest naming the
    /// session's first task; recorded as a compaction, so `--resume` reads
    /// the same conversation.
    fn compact(&mut self) {
        let typed: Vec<usize> = self
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| {
                m.role == Role::User
                    && !m.blocks.is_empty()
                    && m.blocks.iter().all(|b| matches!(b, Block::Text { .. }))
            })
            .map(|(i, _)| i)
            .collect();
        let keep_from = match typed.len() {
            0..=2 => 0,
            n => typed[n - 2],
        };
        if keep_from == 0 {
            say(
                style::NOTICE,
                &words::session_compacted(0, self.messages.len()),
            );
            return;
        }
        let first = self.messages.first().map(Message::text).unwrap_or_default();
        let mut kept = self.messages.split_off(keep_from);
        let dropped = self.messages.len();
        let note = words::session_compact_note(dropped, &first);
        if let Some(Block::Text { text }) = kept.first_mut().and_then(|m| m.blocks.first_mut()) {
            *text = format!("{note}\n\n{text}");
        }
        self.messages = kept;
        self.tools.forget_reads();
        let entry = Entry::Compacted {
            summary: note,
            messages: self.messages.clone(),
        };
        self.record(&entry);
        say(
            style::GOOD,
            &words::session_compacted(dropped, self.messages.len()),
        );
    }
}

/// Remembers, for each file in an edit's diff not seen before, what it
/// was before the edit (the diff reversed onto the file as it is now).
fn remember_before(
    ws: &lancet::Workspace,
    before: &mut BTreeMap<String, Option<String>>,
    diff: &str,
) {
    for file in split_files(diff) {
        if let Some(old) = &file.old
            && !before.contains_key(old)
        {
            let after = file
                .new
                .as_deref()
                .and_then(|n| read(ws, n))
                .unwrap_or_default();
            let original = reverse(&after, &file.hunks);
            before.insert(old.clone(), Some(original));
        }
        if let Some(new) = &file.new
            && file.old.as_ref() != Some(new)
            && !before.contains_key(new)
        {
            before.insert(new.clone(), None);
        }
    }
}

/// A file's text in the workspace, `None` when it is missing or unreadable.
fn read(ws: &lancet::Workspace, path: &str) -> Option<String> {
    let abs = ws.resolve(path).ok()?;
    let bytes = lancet::read_regular_file(&abs, lancet::MAX_FILE_BYTES).ok()?;
    String::from_utf8(bytes).ok()
}

/// One file's part of a unified diff.
#[derive(Debug, Default, PartialEq)]
struct FileDiff {
    old: Option<String>,
    new: Option<String>,
    hunks: Vec<Hunk>,
}

/// A hunk: where it starts in the new file (1-based, 0 for an empty one)
/// and its lines as written (`' '`, `-`, `+`, `\`).
#[derive(Debug, Default, PartialEq)]
struct Hunk {
    new_start: usize,
    lines: Vec<String>,
}

/// The files of a unified diff as the engine writes it.
fn split_files(diff: &str) -> Vec<FileDiff> {
    let path = |s: &str, prefix: &str| {
        let s = s.trim_end();
        if s == "/dev/null" {
            None
        } else {
            Some(s.strip_prefix(prefix).unwrap_or(s).to_owned())
        }
    };
    let mut files: Vec<FileDiff> = Vec::new();
    let mut lines = diff.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if let (Some(old), Some(next)) = (line.strip_prefix("--- "), lines.peek())
            && let Some(new) = next.strip_prefix("+++ ")
        {
            files.push(FileDiff {
                old: path(old, "a/"),
                new: path(new, "b/"),
                hunks: Vec::new(),
            });
            lines.next();
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if let Some(rest) = line.strip_prefix("@@ -") {
            // "@@ -a,b +c,d @@"
            let new_start = rest
                .split_once(" +")
                .and_then(|(_, r)| r.split([',', ' ']).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            file.hunks.push(Hunk {
                new_start,
                lines: Vec::new(),
            });
        } else if let Some(h) = file.hunks.last_mut() {
            h.lines.push(line.to_owned());
        }
    }
    files
}

/// The old side of `hunks`, given the new side's whole text.
fn reverse(after: &str, hunks: &[Hunk]) -> String {
    let after: Vec<&str> = after.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut at = 0;
    for h in hunks {
        // A hunk of an empty new side starts at 0; else at new_start - 1.
        let start = h.new_start.saturating_sub(1).max(at);
        for l in after.get(at..start.min(after.len())).unwrap_or(&[]) {
            out.push_str(l);
        }
        at = start;
        // Whether the last line written was the old side's (a `\` marker
        // after it means that side had no final newline).
        let mut last_old = false;
        for l in &h.lines {
            match l.as_bytes().first() {
                Some(b' ') => {
                    out.push_str(&l[1..]);
                    at += 1;
                    last_old = true;
                }
                Some(b'-') => {
                    out.push_str(&l[1..]);
                    last_old = true;
                }
                Some(b'+') => {
                    at += 1;
                    last_old = false;
                }
                Some(b'\\') if last_old && out.ends_with('\n') => {
                    out.pop();
                }
                _ => {}
            }
        }
    }
    for l in after.get(at.min(after.len())..).unwrap_or(&[]) {
        out.push_str(l);
    }
    out
}

/// Shows one event of a turn: text as Markdown, one line per tool call,
/// failures, and edits as coloured diffs.
fn print_event(e: &Event, md: &mut Markdown, approved: &Approved) {
    let line = |t: &str| for_terminal(t, Layout::Line).into_owned();
    let flush = |md: &mut Markdown| {
        let rest = md.finish();
        if !rest.is_empty() {
            anstream::print!("{rest}");
        }
    };
    let dim = |t: &str| anstream::println!("{}", style::paint(style::DIM, t));
    match e {
        Event::Text { text } => {
            let done = md.push(text);
            if !done.is_empty() {
                anstream::print!("{done}");
            }
        }
        Event::ToolCall { name, arguments } => {
            flush(md);
            anstream::println!(
                "{}",
                style::paint(
                    style::DIM,
                    &format!("→ {} {}", line(name), line(&call_subject(arguments)))
                )
            );
        }
        Event::ToolResult {
            is_error: true,
            content,
            ..
        } => {
            let first = content.lines().next().unwrap_or("");
            anstream::println!(
                "{}",
                style::paint(style::BAD, &format!("  ✗ {}", line(first)))
            );
        }
        Event::Edit { diff, .. } => {
            flush(md);
            if approved.take_if_shown(diff) {
                anstream::println!(
                    "{}",
                    style::paint(style::DIM, words::SESSION_APPLIED_AS_SHOWN)
                );
            } else {
                anstream::print!("{}", markdown::diff(diff));
            }
        }
        Event::Compacted { summary, pruned } => {
            flush(md);
            say(
                style::NOTICE,
                &words::session_context_compacted(summary.is_some(), *pruned),
            );
        }
        Event::Truncated { max_tokens } => {
            flush(md);
            say(style::NOTICE, &words::session_cut_off(*max_tokens));
        }
        Event::NoEdit { warning } => {
            flush(md);
            say(style::NOTICE, &words::session_warning(&line(warning)));
        }
        // A sub-agent: a line when it starts and ends, one per tool call.
        Event::TaskStart { agent, description } => {
            flush(md);
            dim(&task::started_line(agent, description));
        }
        Event::TaskEnd {
            agent,
            ending,
            turns,
            input_tokens,
            output_tokens,
            ..
        } => {
            flush(md);
            dim(&task::ended_line(
                agent,
                ending,
                *turns,
                (*input_tokens, *output_tokens),
            ));
        }
        Event::Agent { agent, event } => {
            if let Event::ToolCall { name, arguments } = &**event {
                flush(md);
                dim(&task::call_line(agent, name, &call_subject(arguments)));
            }
        }
        Event::Looping { .. } | Event::ToolResult { .. } | Event::Usage { .. } => {}
    }
    let _ = std::io::stdout().flush();
}

/// What a call is about, in a few words: its command or path, else its
/// arguments shortened.
fn call_subject(arguments: &str) -> String {
    let value: Option<serde_json::Value> = serde_json::from_str(arguments).ok();
    // (`description`: a `task` call's title.)
    let field = ["command", "path", "pattern", "file", "description"]
        .iter()
        .find_map(|k| value.as_ref()?.get(k)?.as_str().map(str::to_owned));
    let text = field.unwrap_or_else(|| arguments.to_owned());
    let first = text.lines().next().unwrap_or("");
    let mut short: String = first.chars().take(100).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;
    use lancet::agent::session::words::SESSION_COMMANDS;

    #[test]
    fn a_diff_reversed_gives_the_file_before() {
        let before = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n";
        let after = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk";
        let diff = similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(1)
            .missing_newline_hint(true)
            .header("a/x.rs", "b/x.rs")
            .to_string();
        let files = split_files(&diff);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].old.as_deref(), Some("x.rs"));
        assert_eq!(reverse(after, &files[0].hunks), before);
    }

    #[test]
    fn a_new_file_had_no_before() {
        let diff = "--- /dev/null\n+++ b/new.rs\n@@ -0,0 +1 @@\n+x\n";
        let files = split_files(diff);
        assert_eq!(files[0].old, None);
        assert_eq!(files[0].new.as_deref(), Some("new.rs"));
    }

    #[test]
    fn a_missing_final_newline_is_kept() {
        let before = "a\nb";
        let after = "a\nc\n";
        let diff = similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .missing_newline_hint(true)
            .header("a/x", "b/x")
            .to_string();
        assert_eq!(reverse(after, &split_files(&diff)[0].hunks), before);
    }

    #[test]
    fn a_call_is_one_short_line() {
        assert_eq!(
            call_subject(r#"{"command":"cargo test\nmore"}"#),
            "cargo test…"
        );
        assert_eq!(call_subject(r#"{"path":"src/a.rs"}"#), "src/a.rs");
    }

    #[test]
    fn every_command_is_handled_by_name() {
        // The names /help lists are the names `command` matches (a new
        // entry in words without a branch here would say "no command").
        let source = include_str!("session.rs");
        for (name, _) in SESSION_COMMANDS {
            let name = name.split(' ').next().unwrap_or(name);
            assert!(source.contains(&format!("(\"{name}\"")), "{name}");
        }
    }
}
