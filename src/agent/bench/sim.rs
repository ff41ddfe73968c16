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
//! Each job registers a [`Script`] and gets a model name that names it; the
//! server answers a request from the script its model names and from how
//! many assistant turns the conversation already holds, so it keeps no
//! state per connection and any number of jobs share one server.
//!
//! Owns: the simulated answers and the loopback server. Does not own: the
//! wire's client side (the provider) or judging the result (the runner).
//!
//! Invariant: the server listens on 127.0.0.1 only, bounds every request
//! (head and body size), and answers a request naming no registered script
//! with a 404, which the provider does not retry.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

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
}

/// A job's simulated conversation: the turn for each number of assistant
/// turns so far; past the end, the last.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    turns: Vec<Turn>,
}

impl Script {
    /// The turn after `n` assistant turns.
    pub fn turn(&self, n: usize) -> Option<&Turn> {
        self.turns.get(n).or(self.turns.last())
    }

    /// The turns, in order.
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
    let done = Turn::Text(words::bench_sim_done());
    match changes(task).and_then(|c| edit_turn(&c, format, mode).map(|t| (c, t))) {
        Ok((changes, edit)) => {
            let reads = changes
                .iter()
                .filter(|c| !c.before.is_empty() || task.before.contains_key(&c.path))
                .map(|c| ("read".to_owned(), json!({"path": c.path}).to_string()))
                .collect::<Vec<_>>();
            let mut turns = Vec::new();
            if !reads.is_empty() {
                turns.push(Turn::Calls(reads));
            }
            turns.push(edit);
            turns.push(done);
            (Script { turns }, None)
        }
        Err(problem) => (Script { turns: vec![done] }, Some(problem)),
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

/// The turn that makes the change.
fn edit_turn(changes: &[Change], format: Format, mode: Mode) -> Result<Turn, RenderProblem> {
    match mode {
        Mode::Text => {
            let renders: Vec<String> = changes
                .iter()
                .map(|c| format.render(&c.path, &c.before, &c.after))
                .collect();
            Ok(Turn::Text(join_renders(format, &renders)))
        }
        Mode::Tool => {
            let mut calls = Vec::new();
            for c in changes {
                for args in tool_args(format, c)? {
                    calls.push(("edit".to_owned(), args.to_string()));
                }
            }
            Ok(Turn::Calls(calls))
        }
    }
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

/// The edit tool's arguments for one file's change, from the format's own
/// rendering.
fn tool_args(format: Format, c: &Change) -> Result<Vec<Value>, RenderProblem> {
    let rendered = format.render(&c.path, &c.before, &c.after);
    let parsed = || {
        format
            .parse(&rendered)
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
                if let EditOp::SearchReplace(b) = op {
                    if let Some(split) = b.splits.first() {
                        let (old, new) = fragment(&c.before, &split.search, &split.replace);
                        edits.push(json!({ "old_string": old, "new_string": new }));
                    }
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
                out.push(json!({ "path": change.path.unwrap_or_else(|| c.path.clone()), "edits": edits }));
            }
            out
        }
    })
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

/// The loopback server simulated models answer from.
#[derive(Debug)]
pub struct SimServer {
    base_url: String,
    scripts: Arc<Mutex<HashMap<u64, Arc<Script>>>>,
    next: AtomicU64,
    accept: tokio::task::JoinHandle<()>,
}

/// A script's registration; dropping it removes the script.
#[derive(Debug)]
pub struct Registration {
    model: String,
    id: u64,
    scripts: Arc<Mutex<HashMap<u64, Arc<Script>>>>,
}

impl Registration {
    /// The model name that selects the script (the request's `model`).
    pub fn model(&self) -> &str {
        &self.model
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
        let scripts: Arc<Mutex<HashMap<u64, Arc<Script>>>> = Arc::default();
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
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.scripts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, Arc::new(script));
        Registration {
            model: format!("sim:{}/{id}", profile.name()),
            id,
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
async fn serve(
    mut sock: TcpStream,
    scripts: &Mutex<HashMap<u64, Arc<Script>>>,
) -> std::io::Result<()> {
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
                .and_then(|req| answer(&req, body.len(), scripts))
        } else {
            None
        };
        let response = match answer {
            Some(stream) => format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{stream}",
                stream.len()
            ),
            None => {
                let body =
                    r#"{"error":{"message":"no simulated model by that name","type":"not_found"}}"#;
                format!(
                    "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                )
            }
        };
        sock.write_all(response.as_bytes()).await?;
    }
}

/// The SSE stream answering one request, if its model names a script.
fn answer(req: &Value, size: usize, scripts: &Mutex<HashMap<u64, Arc<Script>>>) -> Option<String> {
    let id: u64 = req["model"].as_str()?.rsplit_once('/')?.1.parse().ok()?;
    let script = scripts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .cloned()?;
    let n = req["messages"]
        .as_array()?
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    let turn = script.turn(n)?;
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let (mut out, written, finish) = match turn {
        Turn::Text(text) => (
            chunk(json!({"role": "assistant", "content": text}), None),
            text.len(),
            "stop",
        ),
        Turn::Calls(calls) => {
            let list: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(k, (name, args))| json!({"index": k, "id": format!("call_{k}"), "type": "function", "function": {"name": name, "arguments": args}}))
                .collect();
            let written = calls.iter().map(|(n, a)| n.len() + a.len()).sum();
            (
                chunk(json!({"role": "assistant", "tool_calls": list}), None),
                written,
                "tool_calls",
            )
        }
    };
    out.push_str(&chunk(json!({}), Some(finish)));
    // Tokens are estimated (4 bytes each): the simulation has no tokenizer.
    let usage = json!({"object": "chat.completion.chunk", "choices": [], "usage": {
        "prompt_tokens": size.div_ceil(4), "completion_tokens": written.div_ceil(4).max(1)}});
    out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
    Some(out)
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
