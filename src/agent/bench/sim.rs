//! Simulated models, served the way a real one is: an OpenAI-compatible
//! Chat Completions server on 127.0.0.1, streaming, with tool calls and
//! usage, so each simulated turn goes through the real provider, loop,
//! tools, engine and feedback.
//!
//! `sim:perfect` knows the task's real change (its `after/` or reference
//! solution) and writes it with the format's own renderer
//! ([`Format::render`]): in text mode the rendered text is its reply; in tool
//! mode the same rendering becomes the edit tool's arguments (the diff and
//! patch formats carry the text as is; search/replace and hashline are the
//! rendering parsed back into its edits, written as the tool's JSON; whole
//! file is the new content). It reads each file first (the tools refuse an
//! edit of an unread file), edits, then answers without a tool call.
//!
//! `sim:<mistake>` writes the same turns with the mistake made in the edit
//! (`mistakes`), and after a failed edit the perfect one (or, stubborn, the
//! mistake again). `replay:DIR` registers the recorded turns (`replay`),
//! served with their recorded token counts.
//!
//! Each job registers a [`Script`] and gets a model name that names it; the
//! server answers a request from the script its model names, from how
//! many assistant turns the conversation already holds and from whether
//! the job's last edit failed (set by the runner on the registration), so
//! it keeps no state per connection and any number of jobs share one server.
//!
//! Owns: the simulated answers and the loopback server. Does not own: the
//! wire's client side (the provider) or judging the result (the runner).
//!
//! Invariant: the server listens on 127.0.0.1 only, bounds every request
//! (head and body size), and answers a request naming no registered script
//! with a 404, which the provider does not retry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::mistakes::{self, Mistake};
use super::{Mode, SimProfile, Task};
use crate::Format;
use crate::agent::words;
use crate::format::{Action, AnchorOp, EditOp};

/// The most bytes of one request the server reads (head and body).
const MAX_REQUEST: usize = 64 << 20;

/// What a simulated model says on one turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    /// Tool calls: `(name, arguments as JSON text)`.
    Calls(Vec<(String, String)>),
    /// A reply without tool calls.
    Text(String),
    /// A recorded assistant message (`replay:`): its text, its tool calls
    /// `(id, name, arguments)`, and the tokens the recorded turn used.
    Recorded {
        /// The reply's text (may be empty).
        text: String,
        /// Its tool calls.
        calls: Vec<(String, String, String)>,
        /// Tokens as recorded.
        usage: crate::agent::types::Usage,
    },
}

/// A job's simulated conversation.
///
/// A simulated model's script is its turns in order (reads, the edit, the
/// answer) and the turn it sends instead of the next one after a failed
/// edit (the correction, or for a stubborn profile the mistake again);
/// past the end, the last turn again. A replay's script is the recorded
/// turns in order, and past the end nothing (the server says so).
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    turns: Vec<Turn>,
    /// The edit turn's index and what follows a failed edit.
    retry: Option<(usize, Turn)>,
    /// Past the end: the last turn again.
    repeat_last: bool,
}

impl Script {
    /// A replay: `turns` in order, nothing after them.
    pub fn replay(turns: Vec<Turn>) -> Script {
        Script {
            turns,
            retry: None,
            repeat_last: false,
        }
    }

    /// The turn after `n` assistant turns, `failed` saying whether the last
    /// edit attempt failed.
    pub fn turn(&self, n: usize, failed: bool) -> Option<&Turn> {
        if let Some((at, retry)) = &self.retry
            && n > *at
            && failed
        {
            return Some(retry);
        }
        self.turns.get(n).or(if self.repeat_last {
            self.turns.last()
        } else {
            None
        })
    }

    /// The turns, in order (the retry aside).
    pub fn turns(&self) -> &[Turn] {
        &self.turns
    }
}

/// Why `sim:perfect` cannot write a task's change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RenderProblem {
    /// The task has no known good result to render.
    #[error("the task has no after/ or reference solution")]
    NoReference,
    /// A file is not UTF-8 text.
    #[error("{path} is not UTF-8 text")]
    NotText {
        /// The file.
        path: String,
    },
    /// The change deletes a file, which renderers do not write.
    #[error("{path} is deleted, which the renderers do not write")]
    Deletion {
        /// The file.
        path: String,
    },
    /// The rendering does not parse back in its own format.
    #[error("the {format} rendering of {path} does not parse: {error}")]
    Unparsable {
        /// The format.
        format: &'static str,
        /// The file.
        path: String,
        /// The parser's error.
        error: crate::ParseError,
    },
}

/// `sim:perfect`'s script for a task in a format and mode: read every file
/// the change touches, make the change, answer. When the change cannot be
/// written, the script only answers (and the problem is returned with it,
/// for the record).
pub fn perfect(task: &Task, format: Format, mode: Mode) -> (Script, Option<RenderProblem>) {
    script(task, format, mode, SimProfile::Perfect, 1)
}

/// A profile's script for a task in a format and mode: read every file the
/// change touches, make the change (with the profile's mistake, where it
/// has a place), answer; after a failed edit, the correction (or, when
/// stubborn, the same edit again).
pub fn script(
    task: &Task,
    format: Format,
    mode: Mode,
    profile: SimProfile,
    seed: u64,
) -> (Script, Option<RenderProblem>) {
    let done = Turn::Text(words::bench_sim_done());
    let made = changes(task).and_then(|c| {
        // Without a mistake there is always a turn (`None` is only for a
        // mistake with no place); the answer stands in for the impossible.
        let good = edit_turn(&c, format, mode, None)?.unwrap_or_else(|| done.clone());
        let (first, retry) = match profile {
            SimProfile::Perfect => (good.clone(), good),
            SimProfile::Mistaken { mistake, stubborn } => {
                let content: Vec<&str> = c
                    .iter()
                    .flat_map(|c| [c.path.as_str(), &c.before, &c.after])
                    .collect();
                let mut rng = mistakes::Rng::new(seed, mistake, &content);
                let bad = edit_turn(&c, format, mode, Some((mistake, &mut rng)))?
                    .unwrap_or_else(|| good.clone());
                let retry = if stubborn { bad.clone() } else { good };
                (bad, retry)
            }
        };
        Ok((c, first, retry))
    });
    match made {
        Ok((changes, edit, retry)) => {
            let reads = changes
                .iter()
                .filter(|c| !c.before.is_empty() || task.before.contains_key(&c.path))
                .map(|c| ("read".to_owned(), json!({"path": c.path}).to_string()))
                .collect::<Vec<_>>();
            let mut turns = Vec::new();
            if !reads.is_empty() {
                turns.push(Turn::Calls(reads));
            }
            let at = turns.len();
            turns.push(edit);
            turns.push(done);
            let script = Script {
                turns,
                retry: Some((at, retry)),
                repeat_last: true,
            };
            (script, None)
        }
        Err(problem) => (
            Script {
                turns: vec![done],
                retry: None,
                repeat_last: true,
            },
            Some(problem),
        ),
    }
}

/// One file's change.
struct Change {
    path: String,
    before: String,
    after: String,
}

/// The files whose content differs between `before/` and the reference.
fn changes(task: &Task) -> Result<Vec<Change>, RenderProblem> {
    let reference = task.reference().ok_or(RenderProblem::NoReference)?;
    // The text as the model sees it: the read tool shows a file without its
    // BOM (the engine keeps the BOM apart), so a perfect model never writes
    // one; a whole-file content starting with U+FEFF would be a second BOM.
    let text = |path: &str, bytes: &[u8]| {
        let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        String::from_utf8(bytes.to_vec()).map_err(|_| RenderProblem::NotText {
            path: path.to_owned(),
        })
    };
    let mut out = Vec::new();
    for (path, before) in &task.before {
        if !reference.contains_key(path) {
            return Err(RenderProblem::Deletion { path: path.clone() });
        }
        let after = &reference[path];
        if before != after {
            out.push(Change {
                path: path.clone(),
                before: text(path, before)?,
                after: text(path, after)?,
            });
        }
    }
    for (path, after) in reference {
        if !task.before.contains_key(path) {
            out.push(Change {
                path: path.clone(),
                before: String::new(),
                after: text(path, after)?,
            });
        }
    }
    Ok(out)
}

/// The turn that makes the change; with a mistake, the turn that makes it
/// with the mistake (`None` inside when the mistake has no place here).
fn edit_turn(
    changes: &[Change],
    format: Format,
    mode: Mode,
    mistake: Option<(Mistake, &mut mistakes::Rng)>,
) -> Result<Option<Turn>, RenderProblem> {
    let mut renders: Vec<String> = changes
        .iter()
        .map(|c| format.render(&c.path, &c.before, &c.after))
        .collect();
    let mut truncated = false;
    // Which file's rendering carries the mistake.
    let mut mistaken = None;
    if let Some((mistake, rng)) = mistake {
        if mistake == Mistake::Truncated {
            truncated = true;
        } else {
            // One mistake per reply: in the first file that gives it a place.
            mistaken = changes.iter().zip(renders.iter_mut()).position(|(c, r)| {
                match mistakes::inject(mistake, format, &c.path, &c.before, &c.after, r, rng) {
                    Some(bad) => {
                        *r = bad;
                        true
                    }
                    None => false,
                }
            });
            if mistaken.is_none() {
                return Ok(None);
            }
        }
    }
    Ok(Some(match mode {
        Mode::Text => {
            let text = join_renders(format, &renders);
            Turn::Text(if truncated {
                mistakes::truncate_text(&text)
            } else {
                text
            })
        }
        Mode::Tool => {
            let mut calls = Vec::new();
            for (k, (c, r)) in changes.iter().zip(&renders).enumerate() {
                let args = if mistaken == Some(k) {
                    mistaken_tool_args(format, c, r)
                } else {
                    tool_args(format, c, r)?
                };
                for args in args {
                    calls.push(("edit".to_owned(), args.to_string()));
                }
            }
            if truncated {
                // The reply stops inside the last call's arguments.
                if let Some((_, args)) = calls.last_mut() {
                    *args = mistakes::truncate_json(args);
                }
            }
            Turn::Calls(calls)
        }
    }))
}

/// One reply holding several files' renderings. An apply_patch envelope
/// holds every file of a change (its prompt says so, and its parser reads
/// one envelope per reply), so the envelopes become one; the other formats'
/// renderings follow one another.
fn join_renders(format: Format, renders: &[String]) -> String {
    const BEGIN: &str = "*** Begin Patch\n";
    const END: &str = "*** End Patch\n";
    if format != Format::ApplyPatch || renders.len() < 2 {
        return renders.join("\n");
    }
    let mut out = String::from(BEGIN);
    for r in renders {
        let body = r.strip_prefix(BEGIN).unwrap_or(r);
        out.push_str(body.strip_suffix(END).unwrap_or(body));
    }
    out.push_str(END);
    out
}

/// The edit tool's arguments for one file's change from a rendering with a
/// mistake: the diff and patch formats carry the text as is; search/replace
/// and hashline are read back from it line by line, without the parser's
/// repairs (and search/replace without widening), so the mistake reaches the
/// tool as made; whole file is the content of its fence.
fn mistaken_tool_args(format: Format, c: &Change, rendered: &str) -> Vec<Value> {
    match format {
        Format::UnifiedDiff => vec![json!({ "diff": rendered })],
        Format::ApplyPatch => vec![json!({ "input": rendered })],
        Format::Whole => {
            let content = whole_content(rendered).unwrap_or_else(|| c.after.clone());
            vec![json!({ "path": c.path, "content": content })]
        }
        Format::SearchReplace => {
            let edits: Vec<Value> = blocks(rendered)
                .into_iter()
                .map(|(search, replace)| {
                    // As quoted: widening it would undo a mistake of too
                    // little context.
                    let mut old = search.join("\n");
                    let mut new = replace.join("\n");
                    if !search.is_empty() && c.before.contains(&format!("{old}\n")) {
                        old.push('\n');
                        new.push('\n');
                    }
                    json!({ "old_string": old, "new_string": new })
                })
                .collect();
            vec![json!({ "path": c.path, "edits": edits })]
        }
        Format::Hashline => hashline_calls(rendered, &c.path),
    }
}

/// The edit tool's arguments from the format's own rendering, read
/// through its parser (the diff and patch formats carry the text as is;
/// search/replace and hashline are the rendering parsed back into its
/// edits, written as the tool's JSON; whole file is the new content).
fn tool_args(format: Format, c: &Change, rendered: &str) -> Result<Vec<Value>, RenderProblem> {
    let parsed = || {
        format
            .parse(rendered)
            .map_err(|error| RenderProblem::Unparsable {
                format: format.name(),
                path: c.path.clone(),
                error,
            })
    };
    Ok(match format {
        Format::UnifiedDiff => vec![json!({ "diff": rendered })],
        Format::ApplyPatch => vec![json!({ "input": rendered })],
        Format::Whole => vec![json!({ "path": c.path, "content": c.after })],
        Format::SearchReplace => {
            let mut edits = Vec::new();
            for op in parsed()?.ops() {
                if let EditOp::SearchReplace(b) = op
                    && let Some(split) = b.splits.first()
                {
                    let (old, new) = fragment(&c.before, &split.search, &split.replace);
                    edits.push(json!({ "old_string": old, "new_string": new }));
                }
            }
            vec![json!({ "path": c.path, "edits": edits })]
        }
        Format::Hashline => {
            let anchor = |a: &crate::format::Anchor| format!("{}:{}", a.line, a.hash);
            let mut out = Vec::new();
            for change in parsed()?.changes {
                let mut edits = Vec::new();
                if let Action::Remove(_) = change.action {
                    edits.push(json!({ "op": "delete_file" }));
                }
                for op in change.action.ops() {
                    let EditOp::Anchor(a) = op else { continue };
                    edits.push(match &a.op {
                        AnchorOp::Replace { start, end, lines } => json!({
                            "op": "replace", "start": anchor(start), "end": anchor(end), "lines": lines,
                        }),
                        AnchorOp::InsertAfter { anchor: at, lines } => json!({
                            "op": "insert_after", "anchor": anchor(at), "lines": lines,
                        }),
                        AnchorOp::InsertBefore { anchor: at, lines } => json!({
                            "op": "insert_before", "anchor": anchor(at), "lines": lines,
                        }),
                        AnchorOp::SetFile { lines } => json!({ "op": "set_file", "lines": lines }),
                    });
                }
                let path = change.path.unwrap_or_else(|| c.path.clone());
                out.push(json!({ "path": path, "edits": edits }));
            }
            out
        }
    })
}

/// The content of a whole-file rendering (path line, fence, content, fence).
fn whole_content(rendered: &str) -> Option<String> {
    let mut lines = rendered.split_inclusive('\n');
    lines.next()?;
    let fence = lines.next()?.trim_end().to_owned();
    let body: Vec<&str> = lines.collect();
    let end = body.iter().rposition(|l| l.trim_end() == fence)?;
    Some(body[..end].concat())
}

/// The SEARCH and REPLACE lines of each block of a search/replace rendering.
fn blocks(rendered: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut state = 0;
    let (mut search, mut replace) = (Vec::new(), Vec::new());
    for l in rendered.lines() {
        match (state, l) {
            (0, "<<<<<<< SEARCH") => state = 1,
            (1, "=======") => state = 2,
            (2, ">>>>>>> REPLACE") => {
                out.push((std::mem::take(&mut search), std::mem::take(&mut replace)));
                state = 0;
            }
            (1, _) => search.push(l.to_owned()),
            (2, _) => replace.push(l.to_owned()),
            _ => {}
        }
    }
    out
}

/// A hashline rendering as the tool's calls (`@@ file`, `@@ replace A B`,
/// `@@ set file`, `+` payload lines).
fn hashline_calls(rendered: &str, default_path: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut path = default_path.to_owned();
    let mut edits: Vec<Value> = Vec::new();
    let flush = |path: &str, edits: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !edits.is_empty() {
            out.push(json!({ "path": path, "edits": std::mem::take(edits) }));
        }
    };
    for l in rendered.lines() {
        if let Some(p) = l.strip_prefix("@@ file ") {
            flush(&path, &mut edits, &mut out);
            p.clone_into(&mut path);
        } else if let Some(rest) = l.strip_prefix("@@ replace ") {
            let (start, end) = rest.split_once(' ').unwrap_or((rest, rest));
            edits.push(json!({ "op": "replace", "start": start, "end": end, "lines": [] }));
        } else if l == "@@ set file" {
            edits.push(json!({ "op": "set_file", "lines": [] }));
        } else if let Some(line) = l.strip_prefix('+')
            && let Some(Value::Array(lines)) = edits.last_mut().and_then(|e| e.get_mut("lines"))
        {
            lines.push(Value::String(line.to_owned()));
        }
    }
    flush(&path, &mut edits, &mut out);
    out
}

/// A search/replace block as the tool's `old_string`/`new_string`: whole
/// lines (with the break after the last when the file has one there),
/// widened by the lines around it until `old_string` occurs once in the
/// file as a substring — the tool matches substrings first, where a block's
/// lines are unique only as lines.
fn fragment(before: &str, search: &[String], replace: &[String]) -> (String, String) {
    let mut old = search.join("\n");
    let mut new = replace.join("\n");
    if search.is_empty() {
        return (old, new);
    }
    if before.contains(&format!("{old}\n")) {
        old.push('\n');
        new.push('\n');
    }
    if before.matches(&old).count() <= 1 {
        return (old, new);
    }
    let lines: Vec<&str> = before.split('\n').collect();
    let plain = |l: &str| l.strip_suffix('\r').unwrap_or(l).to_owned();
    let Some(at) = lines
        .windows(search.len())
        .position(|w| w.iter().map(|l| plain(l)).eq(search.iter().cloned()))
    else {
        return (old, new);
    };
    let (mut first, mut last) = (at, at + search.len());
    while before.matches(&old).count() > 1 && (first > 0 || last < lines.len()) {
        if first > 0 {
            first -= 1;
            old = format!("{}\n{old}", lines[first]);
            new = format!("{}\n{new}", lines[first]);
        } else {
            let next = lines[last];
            last += 1;
            let tail = if last < lines.len() { "\n" } else { "" };
            old = format!("{old}{next}{tail}");
            new = format!("{new}{next}{tail}");
        }
    }
    (old, new)
}

/// A registered script and whether the job's last edit attempt failed (set
/// by the runner from the tools' data: the simulated model reads the
/// engine's verdict as a real one reads its words).
type Entry = (Arc<Script>, Arc<AtomicBool>);

/// The registered scripts by id.
type Scripts = Arc<Mutex<HashMap<u64, Entry>>>;

/// The loopback server simulated models answer from.
#[derive(Debug)]
pub struct SimServer {
    base_url: String,
    scripts: Scripts,
    next: AtomicU64,
    accept: tokio::task::JoinHandle<()>,
}

/// A script's registration; dropping it removes the script.
#[derive(Debug)]
pub struct Registration {
    model: String,
    id: u64,
    failed: Arc<AtomicBool>,
    scripts: Scripts,
}

impl Registration {
    /// The model name that selects the script (the request's `model`).
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Tells the script whether the last edit attempt failed.
    pub fn set_failed(&self, failed: bool) {
        self.failed.store(failed, Ordering::Relaxed);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.scripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl SimServer {
    /// Starts the server on 127.0.0.1 (a free port), on the current runtime.
    ///
    /// # Errors
    ///
    /// The listener cannot be bound.
    pub async fn start() -> std::io::Result<SimServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let scripts: Scripts = Arc::default();
        let shared = Arc::clone(&scripts);
        let accept = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let scripts = Arc::clone(&shared);
                tokio::spawn(async move {
                    // A client that goes away mid-request ends only its connection.
                    let _ = serve(sock, &scripts).await;
                });
            }
        });
        Ok(SimServer {
            base_url,
            scripts,
            next: AtomicU64::new(1),
            accept,
        })
    }

    /// The endpoint to give an OpenAI-compatible provider.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Registers a script for `profile`; requests naming the returned model get it.
    pub fn register(&self, profile: SimProfile, script: Script) -> Registration {
        self.register_as(&format!("sim:{}", profile.name()), script)
    }

    /// Registers a script under a name (`sim:PROFILE`, `replay`); requests
    /// naming the returned model get it.
    pub fn register_as(&self, name: &str, script: Script) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let failed = Arc::new(AtomicBool::new(false));
        self.scripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, (Arc::new(script), Arc::clone(&failed)));
        Registration {
            model: format!("{name}/{id}"),
            id,
            failed,
            scripts: Arc::clone(&self.scripts),
        }
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Answers requests on one connection (keep-alive) until it closes.
async fn serve(mut sock: TcpStream, scripts: &Mutex<HashMap<u64, Entry>>) -> std::io::Result<()> {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            if buf.len() > MAX_REQUEST || sock.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if length > MAX_REQUEST {
            return Ok(());
        }
        while buf.len() < head_end + length {
            if sock.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        }
        let body: Vec<u8> = buf.drain(..head_end + length).skip(head_end).collect();
        let path_ok = head
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("POST ") && l.contains("/chat/completions"));
        let answer = if path_ok {
            serde_json::from_slice::<Value>(&body)
                .ok()
                .map_or(Err(Unanswered::NoScript), |req| {
                    answer(&req, body.len(), scripts)
                })
        } else {
            Err(Unanswered::NoScript)
        };
        let response = match answer {
            Ok(stream) => format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{stream}",
                stream.len()
            ),
            Err(why) => {
                let message = match why {
                    Unanswered::NoScript => "no simulated model by that name".to_owned(),
                    Unanswered::Exhausted => words::bench_replay_exhausted(),
                };
                let body = json!({"error": {"message": message, "type": "not_found"}}).to_string();
                format!(
                    "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
        };
        sock.write_all(response.as_bytes()).await?;
    }
}

/// Why a request got no answer (a 404, which the provider does not retry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unanswered {
    /// Its model names no registered script.
    NoScript,
    /// A replay's recording has no more turns.
    Exhausted,
}

/// The SSE stream answering one request, if its model names a script with
/// a turn to give.
fn answer(
    req: &Value,
    size: usize,
    scripts: &Mutex<HashMap<u64, Entry>>,
) -> Result<String, Unanswered> {
    let id: u64 = req["model"]
        .as_str()
        .and_then(|m| m.rsplit_once('/'))
        .and_then(|(_, id)| id.parse().ok())
        .ok_or(Unanswered::NoScript)?;
    let (script, failed) = scripts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .cloned()
        .ok_or(Unanswered::NoScript)?;
    let n = req["messages"]
        .as_array()
        .ok_or(Unanswered::NoScript)?
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    let turn = script
        .turn(n, failed.load(Ordering::Relaxed))
        .ok_or(Unanswered::Exhausted)?;
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let calls_json = |calls: &mut dyn Iterator<Item = (String, &str, &str)>| -> Vec<Value> {
        calls
            .enumerate()
            .map(|(k, (id, name, args))| json!({"index": k, "id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect()
    };
    // Tokens are estimated (4 bytes each): the simulation has no tokenizer.
    // A replay's are the recorded ones.
    let estimate = |written: usize| (size.div_ceil(4) as u64, written.div_ceil(4).max(1) as u64);
    let (mut out, (tokens_in, tokens_out), finish) = match turn {
        Turn::Text(text) => (
            chunk(json!({"role": "assistant", "content": text}), None),
            estimate(text.len()),
            "stop",
        ),
        Turn::Calls(calls) => {
            let list = calls_json(
                &mut calls
                    .iter()
                    .enumerate()
                    .map(|(k, (n, a))| (format!("call_{k}"), n.as_str(), a.as_str())),
            );
            let written = calls.iter().map(|(n, a)| n.len() + a.len()).sum();
            (
                chunk(json!({"role": "assistant", "tool_calls": list}), None),
                estimate(written),
                "tool_calls",
            )
        }
        Turn::Recorded { text, calls, usage } => {
            let mut delta = json!({"role": "assistant"});
            if !text.is_empty() {
                delta["content"] = text.clone().into();
            }
            if !calls.is_empty() {
                delta["tool_calls"] = calls_json(
                    &mut calls
                        .iter()
                        .map(|(id, n, a)| (id.clone(), n.as_str(), a.as_str())),
                )
                .into();
            }
            let finish = if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            };
            (
                chunk(delta, None),
                (usage.input_tokens, usage.output_tokens),
                finish,
            )
        }
    };
    out.push_str(&chunk(json!({}), Some(finish)));
    let usage = json!({"object": "chat.completion.chunk", "choices": [], "usage": {
        "prompt_tokens": tokens_in, "completion_tokens": tokens_out}});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_widen_until_unique_as_substrings() {
        let before = "    x = 1\nx = 1\ny = 2\n";
        let (old, new) = fragment(before, &["x = 1".into()], &["x = 3".into()]);
        assert_eq!(before.matches(&old).count(), 1);
        assert_eq!(before.replacen(&old, &new, 1), "    x = 1\nx = 3\ny = 2\n");
    }

    #[test]
    fn fragments_keep_a_missing_final_newline() {
        let before = "a\nb";
        let (old, new) = fragment(before, &["b".into()], &["c".into()]);
        assert_eq!(before.replacen(&old, &new, 1), "a\nc");
    }
}
