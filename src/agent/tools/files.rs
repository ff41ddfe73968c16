//! The file tools: `read`, `write` and `edit` (and text mode's edits in a
//! reply, which go through the same path).
//!
//! **Read-before-edit.** An edit is refused when a file it touches exists
//! and the model has not read it; when the file changed on disk since the
//! read, the engine refuses it as stale (the record's hash is its
//! [`ApplyOptions::expected_hashes`](crate::ApplyOptions::expected_hashes))
//! and the model is told what changed and to read it again. lancet's own
//! writes update the record's hash, so the edit after an edit is not falsely
//! stale (EDIT-SCENARIOS 48). The record's *view* — what the model was
//! shown — changes only with reads and writes: it is the hashline snapshot
//! ([`ApplyOptions::seen`](crate::ApplyOptions::seen)) that relocates
//! anchors whose lines moved since the model saw them.
//!
//! **Edits** go through the engine: the chosen format's tool-call form is
//! parsed by [`Format::parse_tool_call`], planned by [`plan`](crate::plan),
//! confirmed when the permissions ask (the question shows the diff), and
//! committed all or nothing. The model reads the engine's feedback words.
//!
//! Owns: the read records and what these three tools do with files. Does not
//! own: confinement (the [`Workspace`](crate::Workspace)), the permission
//! checks (the parent module), or any words (the agent's `words` module).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::File;
use std::ops::Range;
use std::path::Path;

use super::args::{ReadArgs, WriteArgs};
use super::open::{NotText, Opened, Page, kind_of, open_regular, read_capped};
use super::types::{EditAttempt, EditEvent, READ_WHOLE_MAX, Refusal, Tool, ToolOutcome};
use super::{Record, Tools, refuse};
use crate::agent::permissions::Decision;
use crate::agent::words;
use crate::format::render_unified;
use crate::report::{ApplyReport, EditError, FileReport, FileStatus};
use crate::workspace::{Change, WorkspaceError, content_hash};
use crate::{DecodeError, Document, Format, Patch};

/// Longest line `read` shows in full, in characters.
const MAX_LINE_CHARS: usize = 2000;
/// Most lines of a stale file's diff shown to the model.
const STALE_DIFF_LINES: usize = 40;
/// Most lines of fresh hashline anchors shown after an edit.
const FRESH_LINES: usize = 80;

impl Tools {
    pub(super) fn read(&mut self, a: ReadArgs) -> ToolOutcome {
        if let Err(o) = self.gate(Tool::Read, &a.path, "") {
            return *o;
        }
        let abs = match self.ws.resolve(&a.path) {
            Ok(abs) => abs,
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &e)),
        };
        let (file, size) = match self.open(&a.path) {
            Ok(opened) => opened,
            Err(o) => return *o,
        };
        let limit = a
            .limit
            .unwrap_or(self.config.read_lines)
            .clamp(1, self.config.read_lines.max(1));
        let start = a.offset.unwrap_or(1).max(1) - 1;
        if size > READ_WHOLE_MAX {
            return read_page(&a.path, file, size, start, limit);
        }
        let bytes = match read_capped(file, size, READ_WHOLE_MAX) {
            Ok(Some(bytes)) => bytes,
            // It grew past the limit since it was measured: page it.
            Ok(None) => match self.open(&a.path) {
                Ok((file, size)) => return read_page(&a.path, file, size, start, limit),
                Err(o) => return *o,
            },
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &io_at(&abs, e))),
        };
        let hash = content_hash(&bytes);
        let doc = match Document::from_vec(bytes) {
            Ok(d) => d,
            Err(e) => return ToolOutcome::error(words::not_text(&a.path, &e)),
        };
        let total = doc.line_count();
        if total > 0 && start >= total {
            return ToolOutcome::error(words::past_end(&a.path, start + 1, total));
        }
        let end = (start + limit).min(total);
        let content = if total == 0 {
            words::empty_file(&a.path)
        } else {
            let mut view = cut_long_lines(&self.config.format.view(&doc, Some(start..end)));
            if start > 0 || end < total {
                view.push_str(&words::page(start + 1, end, total));
            }
            view
        };
        self.read.insert(
            abs,
            Record {
                hash,
                known: doc.clone(),
                view: doc,
            },
        );
        ToolOutcome::ok(content)
    }

    /// Opens `path` for reading when it is a regular file; anything else is
    /// the outcome to return.
    fn open(&self, path: &str) -> Result<(File, u64), Box<ToolOutcome>> {
        let refused = |content: String| Err(Box::new(ToolOutcome::error(content)));
        match open_regular(&self.ws, path) {
            Ok(Opened::File(file, size)) => Ok((file, size)),
            Ok(Opened::Missing) => refused(words::not_found(path)),
            Ok(Opened::Directory) => refused(words::path_error(
                path,
                &WorkspaceError::IsDirectory {
                    path: path.to_owned(),
                },
            )),
            Ok(Opened::Special(kind)) => refused(words::not_regular(path, kind)),
            Err(e) => refused(words::path_error(path, &e)),
        }
    }

    /// A file's hash and content as they are now, when it is a regular text
    /// file small enough to read whole; `None` otherwise (after a write, or
    /// to show what changed: never worth blocking or a flood of memory).
    fn current(&self, path: &str) -> Option<(u64, Document)> {
        let Ok(Opened::File(file, size)) = open_regular(&self.ws, path) else {
            return None;
        };
        let bytes = read_capped(file, size, READ_WHOLE_MAX).ok()??;
        let hash = content_hash(&bytes);
        Some((hash, Document::from_vec(bytes).ok()?))
    }

    pub(super) fn write(&mut self, a: WriteArgs) -> ToolOutcome {
        // Refusals that need no question come first.
        let decision = self.decide(Tool::Write, std::slice::from_ref(&a.path));
        if let Decision::Deny(d) = decision {
            return refuse(Tool::Write, &a.path, Refusal::Denied(d));
        }
        let abs = match self.ws.resolve(&a.path) {
            Ok(abs) => abs,
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &e)),
        };
        if let Err(o) = self.claim(std::slice::from_ref(&a.path)) {
            return *o;
        }
        // Only whether something is there: a file is never read to find out.
        match std::fs::symlink_metadata(&abs) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return ToolOutcome::error(words::path_error(&a.path, &io_at(&abs, e))),
            Ok(m) if m.is_dir() => {
                let e = WorkspaceError::IsDirectory {
                    path: a.path.clone(),
                };
                return ToolOutcome::error(words::path_error(&a.path, &e));
            }
            Ok(m) => match kind_of(&m) {
                Some(kind) => return ToolOutcome::error(words::not_regular(&a.path, kind)),
                None => return ToolOutcome::error(words::exists(&a.path, self.config.text_mode)),
            },
        }
        let diff = render_unified(None, Some(&a.path), "", &a.content, 3);
        if let Err(o) = self.settle(decision, Tool::Write, &a.path, &diff) {
            return *o;
        }
        let bytes = a.content.into_bytes();
        let hash = content_hash(&bytes);
        let doc = Document::from_bytes(&bytes).unwrap_or_default();
        let lines = doc.line_count();
        let change = Change::Write {
            path: a.path.clone(),
            bytes,
            expected_hash: None,
            mode: None,
        };
        if let Err(e) = self.ws.commit(&[change]) {
            return ToolOutcome::error(words::write_failed(&a.path, &e));
        }
        self.read.insert(
            abs,
            Record {
                hash,
                known: doc.clone(),
                view: doc,
            },
        );
        let message = words::created(&a.path, lines);
        let report = ApplyReport {
            ok: true,
            written: true,
            files: vec![FileReport {
                path: a.path,
                new_path: None,
                status: FileStatus::Created,
                edits: Vec::new(),
                error: None,
                mode: None,
            }],
            notes: Vec::new(),
            message: message.clone(),
        };
        ToolOutcome {
            edit: Some(EditEvent {
                report_json: crate::feedback::json_report(&report).to_value(),
                diff,
            }),
            ..ToolOutcome::ok(message)
        }
    }

    /// Plans, confirms and commits a parsed edit, read-before-edit enforced.
    pub(super) fn apply(&mut self, patch: &Patch) -> ToolOutcome {
        let mut paths: Vec<String> = Vec::new();
        for c in &patch.changes {
            for p in c.path.iter().chain(c.rename_to.iter()) {
                if !paths.contains(p) {
                    paths.push(p.clone());
                }
            }
        }
        let decision = self.decide(Tool::Edit, &paths);
        let subject = paths.join(", ");
        if let Decision::Deny(d) = decision {
            return refuse(Tool::Edit, &subject, Refusal::Denied(d));
        }
        // Read-before-edit. A path the workspace refuses is left to the
        // engine, which words it for the model.
        let mut opts = self.config.apply.clone();
        let mut unread = Vec::new();
        for p in &paths {
            let Ok(abs) = self.ws.resolve(p) else {
                continue;
            };
            // Whether it exists, and what it is, without reading it: a FIFO
            // or a device is refused before the engine would open it, and a
            // file too large to read whole before the engine would read it.
            let exists = match std::fs::symlink_metadata(&abs) {
                Ok(m) if m.is_dir() => false,
                Ok(m) => match kind_of(&m) {
                    Some(kind) => return ToolOutcome::error(words::not_regular(p, kind)),
                    None if m.len() > READ_WHOLE_MAX => {
                        return ToolOutcome::error(words::too_large_to_edit(p, m.len()));
                    }
                    None => true,
                },
                Err(_) => false,
            };
            match self.read.get(&abs) {
                Some(r) => {
                    opts.expected_hashes.insert(p.clone(), r.hash);
                    opts.seen.insert(p.clone(), r.view.clone());
                }
                None if exists => unread.push(p.clone()),
                None => {}
            }
        }
        if !unread.is_empty() {
            return ToolOutcome::error(words::not_read(&unread));
        }
        // Another sub-agent editing one of the files: refused, naming it.
        if let Err(o) = self.claim(&paths) {
            return *o;
        }
        let planned = crate::plan(&self.ws, patch, &opts);
        let report = planned.report();
        if !planned.has_changes() {
            let mut content = report.message.clone();
            content.push_str(&self.stale_details(report));
            if content.trim().is_empty() {
                content = words::nothing_to_do();
            }
            return ToolOutcome {
                is_error: !report.ok,
                attempt: Some(EditAttempt::Planned(Box::new(report.clone()))),
                ..ToolOutcome::ok(content)
            };
        }
        let diff = planned.unified_diff(3);
        if let Err(o) = self.settle(decision, Tool::Edit, &subject, &diff) {
            return *o;
        }
        let before: HashMap<String, Document> = self.known_docs(&paths);
        let report = match planned.commit(&self.ws) {
            Ok(r) => r,
            Err(e) => return ToolOutcome::error(words::commit_failed(&e)),
        };
        self.after_write(&paths);
        let mut content = report.message.clone();
        if self.config.format == Format::Hashline {
            content.push_str(&self.fresh_anchors(&paths, &before));
        }
        ToolOutcome {
            is_error: !report.ok,
            edit: Some(EditEvent {
                report_json: crate::feedback::json_report(&report).to_value(),
                diff,
            }),
            attempt: Some(EditAttempt::Planned(Box::new(report))),
            ..ToolOutcome::ok(content)
        }
    }

    /// The files' content as lancet last knew it, by path as written.
    fn known_docs(&self, paths: &[String]) -> HashMap<String, Document> {
        paths
            .iter()
            .filter_map(|p| {
                let abs = self.ws.resolve(p).ok()?;
                Some((p.clone(), self.read.get(&abs)?.known.clone()))
            })
            .collect()
    }

    /// Brings the read records up to date with what an edit wrote.
    fn after_write(&mut self, paths: &[String]) {
        for p in paths {
            let Ok(abs) = self.ws.resolve(p) else {
                continue;
            };
            match self.current(p) {
                Some((hash, doc)) => match self.read.get_mut(&abs) {
                    Some(r) => {
                        r.hash = hash;
                        r.known = doc;
                    }
                    // A file the edit created: the model wrote all of it.
                    None => {
                        self.read.insert(
                            abs,
                            Record {
                                hash,
                                known: doc.clone(),
                                view: doc,
                            },
                        );
                    }
                },
                None => {
                    self.read.remove(&abs);
                }
            }
        }
    }

    /// For each file the engine found stale: what changed on disk since the read.
    fn stale_details(&self, report: &ApplyReport) -> String {
        let mut out = String::new();
        for f in &report.files {
            let stale = matches!(f.error, Some(EditError::Stale))
                || f.edits
                    .iter()
                    .any(|e| matches!(e.error, Some(EditError::Stale)));
            if !stale {
                continue;
            }
            let Ok(abs) = self.ws.resolve(&f.path) else {
                continue;
            };
            let Some(record) = self.read.get(&abs) else {
                continue;
            };
            let now = self
                .current(&f.path)
                .map(|(_, doc)| doc)
                .unwrap_or_default();
            let diff = render_unified(
                Some(&f.path),
                Some(&f.path),
                record.known.text(),
                now.text(),
                1,
            );
            out.push_str(&words::stale_diff(&f.path, &diff, STALE_DIFF_LINES));
        }
        out
    }

    /// After a hashline edit: the changed lines with their new anchors.
    fn fresh_anchors(&self, paths: &[String], before: &HashMap<String, Document>) -> String {
        let mut out = String::new();
        let mut budget = FRESH_LINES;
        for p in paths {
            let Some((_, after)) = self.current(p) else {
                continue;
            };
            let old = before.get(p).cloned().unwrap_or_default();
            let ranges = changed_ranges(&old, &after, 2);
            if ranges.is_empty() || budget == 0 {
                continue;
            }
            let mut shown = String::new();
            for r in ranges {
                let r = r.start..r.end.min(r.start + budget);
                budget -= r.len();
                if !shown.is_empty() {
                    shown.push_str("…\n");
                }
                shown.push_str(&cut_long_lines(&Format::Hashline.view(&after, Some(r))));
                if budget == 0 {
                    break;
                }
            }
            out.push_str(&words::fresh_anchors(p, &shown));
        }
        out
    }
}

/// A page of a file too large to read whole, read by streaming: what it
/// costs is the page, not the file. No read record is kept (the edit tool
/// refuses such a file), and the note says so.
fn read_page(path: &str, file: File, size: u64, start: usize, limit: usize) -> ToolOutcome {
    // Bytes kept per line: enough for MAX_LINE_CHARS characters of any width.
    let keep = MAX_LINE_CHARS * 4;
    let page = match Page::read(file, start, limit, keep) {
        Ok(Ok(page)) => page,
        Ok(Err(not_text)) => {
            let e = match not_text {
                NotText::Binary(offset) => DecodeError::Binary { offset },
                NotText::Utf16(big_endian) => DecodeError::Utf16 { big_endian },
            };
            return ToolOutcome::error(words::not_text(path, &e));
        }
        Err(e) => return ToolOutcome::error(words::path_error(path, &io_at(Path::new(path), e))),
    };
    if let Some(total) = page.total {
        return ToolOutcome::error(words::past_end(path, start + 1, total));
    }
    if page.lines.is_empty() {
        return ToolOutcome::error(words::scan_stopped(path, start + 1));
    }
    let last = start + page.lines.len();
    let width = last.to_string().len();
    let mut out = String::new();
    for (i, line) in page.lines.iter().enumerate() {
        let text = String::from_utf8_lossy(&line.head);
        let (kept, beyond) = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((at, _)) => (&text[..at], text[at..].chars().count()),
            None => (&*text, 0),
        };
        let _ = write!(out, "{:>width$} | {kept}", start + i + 1);
        // What was past the kept bytes was counted, not kept.
        let cut = beyond + line.cut_chars;
        if cut > 0 {
            out.push_str(&words::line_cut(cut));
        }
        out.push('\n');
    }
    if page.stopped {
        out.push_str(&words::scan_stopped(path, start + 1));
    } else {
        out.push_str(&words::page_streamed(start + 1, last, size, page.more));
    }
    ToolOutcome::ok(out)
}

/// An I/O error at `abs`, as the workspace words it.
fn io_at(abs: &Path, source: std::io::Error) -> WorkspaceError {
    WorkspaceError::Io {
        path: abs.to_path_buf(),
        source,
    }
}

/// The new-document line ranges a change touched, widened by `context` and merged.
fn changed_ranges(old: &Document, new: &Document, context: usize) -> Vec<Range<usize>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out: Vec<Range<usize>> = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &a, &b) {
        let (tag, _, new_range) = op.as_tag_tuple();
        if tag == similar::DiffTag::Equal {
            continue;
        }
        let r = new_range.start.saturating_sub(context)..(new_range.end + context).min(b.len());
        if r.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Cuts lines longer than [`MAX_LINE_CHARS`].
fn cut_long_lines(view: &str) -> String {
    let mut out = String::with_capacity(view.len());
    for line in view.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        out.push_str(&cut_chars(body, MAX_LINE_CHARS));
        out.push_str(nl);
    }
    out
}

/// `s`, or its first `max` characters and how many were cut.
pub(super) fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => {
            let rest = s[at..].chars().count();
            format!("{}{}", &s[..at], words::line_cut(rest))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::tools::tests::{call, get, put, setup};
    use serde_json::json;
    use std::fs;

    #[tokio::test]
    async fn read_pages_and_numbers() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let text: String = (1..=25).map(|i| format!("line {i}\n")).collect();
        put(&dir, "f.txt", &text);
        t.config.read_lines = 10;
        let o = call(&mut t, "read", json!({"path": "f.txt"})).await;
        assert!(!o.is_error);
        assert!(
            o.content.starts_with(" 1 | line 1\n 2 | line 2\n"),
            "{}",
            o.content
        );
        assert!(
            o.content
                .ends_with("[lines 1-10 of 25; read on with offset=11]\n")
        );
        let o = call(
            &mut t,
            "read",
            json!({"path": "./f.txt", "offset": "21", "limit": 99}),
        )
        .await;
        assert_eq!(
            o.content,
            "21 | line 21\n22 | line 22\n23 | line 23\n24 | line 24\n25 | line 25\n[lines 21-25 of 25]\n"
        );
        let o = call(&mut t, "read", json!({"path": "f.txt", "offset": 26})).await;
        assert!(
            o.is_error && o.content.contains("past the end"),
            "{}",
            o.content
        );
        let o = call(&mut t, "read", json!({"path": "missing.txt"})).await;
        assert!(o.is_error && o.content.contains("does not exist"));
        put(&dir, "empty", "");
        let o = call(&mut t, "read", json!({"path": "empty"})).await;
        assert!(!o.is_error && o.content.contains("empty"));
        // The whole file in one page says nothing about pages.
        t.config.read_lines = 2000;
        let o = call(&mut t, "read", json!({"file_path": "f.txt"})).await;
        assert!(o.content.ends_with("25 | line 25\n"));
    }

    #[tokio::test]
    async fn read_shows_hashline_view() {
        let (dir, mut t) = setup(Format::Hashline);
        put(&dir, "a.py", "def f():\n    return 1\n");
        let o = call(&mut t, "read", json!({"path": "a.py"})).await;
        let want = format!(
            "1:{}|def f():\n2:{}|    return 1\n",
            crate::line_hash("def f():"),
            crate::line_hash("    return 1")
        );
        assert_eq!(o.content, want);
        assert!(
            t.specs()
                .iter()
                .any(|s| s.name == "read" && s.description.contains("LINE:HASH"))
        );
    }

    #[tokio::test]
    async fn write_creates_and_refuses_existing() {
        let (dir, mut t) = setup(Format::SearchReplace);
        let o = call(
            &mut t,
            "write",
            json!({"path": "new/a.txt", "content": "one\ntwo\n"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "new/a.txt"), "one\ntwo\n");
        let edit = o.edit.unwrap();
        assert_eq!(edit.report_json["files"][0]["status"], "created");
        assert!(edit.diff.contains("+++ b/new/a.txt") && edit.diff.contains("+two"));
        let o = call(
            &mut t,
            "write",
            json!({"path": "new/a.txt", "content": "x"}),
        )
        .await;
        assert!(
            o.is_error && o.content.contains("use edit"),
            "{}",
            o.content
        );
        assert_eq!(get(&dir, "new/a.txt"), "one\ntwo\n");
        // Written counts as read: it can be edited at once.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "new/a.txt", "old_string": "two", "new_string": "2"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "new/a.txt"), "one\n2\n");
    }

    #[tokio::test]
    async fn read_before_edit() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "a.py", "x = 1\ny = 2\n");
        let edit = json!({"path": "a.py", "old_string": "x = 1", "new_string": "x = 10"});
        // Not read: refused.
        let o = call(&mut t, "edit", edit.clone()).await;
        assert!(
            o.is_error && o.content.contains("have not read `a.py`"),
            "{}",
            o.content
        );
        assert_eq!(get(&dir, "a.py"), "x = 1\ny = 2\n");
        // Read, then changed by someone else: stale, with what changed.
        call(&mut t, "read", json!({"path": "a.py"})).await;
        put(&dir, "a.py", "x = 1\ny = 3\n");
        let o = call(&mut t, "edit", edit.clone()).await;
        assert!(
            o.is_error && o.content.contains("Read it again"),
            "{}",
            o.content
        );
        assert!(o.content.contains("+y = 3"), "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "x = 1\ny = 3\n");
        // Read again: applied, with its diff and report.
        call(&mut t, "read", json!({"path": "a.py"})).await;
        let o = call(&mut t, "edit", edit).await;
        assert!(!o.is_error, "{}", o.content);
        let ev = o.edit.unwrap();
        assert!(ev.diff.contains("-x = 1\n+x = 10\n"), "{}", ev.diff);
        assert_eq!(ev.report_json["ok"], true);
        assert_eq!(get(&dir, "a.py"), "x = 10\ny = 3\n");
        // lancet's own edit updated the record: the next edit is not stale.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "old_string": "y = 3", "new_string": "y = 30"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "x = 10\ny = 30\n");
        // Forgetting (after compaction) requires a new read.
        t.forget_reads();
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "old_string": "y = 30", "new_string": "y = 4"}),
        )
        .await;
        assert!(o.is_error);
    }

    #[tokio::test]
    async fn edit_search_replace_forms() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
        call(&mut t, "read", json!({"path": "a.rs"})).await;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.rs", "edits": [
                {"old_string": "fn a() {}", "new_string": "fn a() { 1 }"},
                {"old_string": "fn c() {}", "new_string": "fn c() { 3 }"},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.rs"), "fn a() { 1 }\nfn b() {}\nfn c() { 3 }\n");
        // A failed edit writes nothing and gives the engine's words.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.rs", "old_string": "fn zzz() {}", "new_string": "x"}),
        )
        .await;
        assert!(o.is_error && o.edit.is_none());
        assert!(o.content.contains("Nothing was written"), "{}", o.content);
        // Malformed arguments, as text or as fields.
        let o = t.call("edit", "{\"path\": ").await;
        assert!(
            o.is_error && o.content.contains("not valid JSON"),
            "{}",
            o.content
        );
        let o = call(&mut t, "edit", json!({"path": "a.rs", "old_string": 3})).await;
        assert!(
            o.is_error && o.content.contains("old_string"),
            "{}",
            o.content
        );
        // Creating a file through the edit tool needs no read.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "b.rs", "old_string": "", "new_string": "fn b() {}\n"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "b.rs"), "fn b() {}\n");
    }

    #[tokio::test]
    async fn edit_hashline_form() {
        let (dir, mut t) = setup(Format::Hashline);
        put(&dir, "a.py", "a = 1\nb = 2\nc = 3\n");
        call(&mut t, "read", json!({"path": "a.py"})).await;
        let anchor = |n: usize, line: &str| format!("{n}:{}", crate::line_hash(line));
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "edits": [
                {"op": "replace", "start": anchor(2, "b = 2"), "lines": ["b = 20"]},
                {"op": "insert_after", "anchor": anchor(3, "c = 3"), "lines": ["d = 4"]},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "a = 1\nb = 20\nc = 3\nd = 4\n");
        assert!(o.content.contains("fresh anchors"), "{}", o.content);
        assert!(o.content.contains(&format!("{}|d = 4", anchor(4, "d = 4"))));
        // The next edit uses the line numbers of the first read: line 1 is
        // where it was; a shifted line relocates through the read's view.
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "edits": [
                {"op": "delete", "start": anchor(1, "a = 1")},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "b = 20\nc = 3\nd = 4\n");
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.py", "edits": [
                {"op": "replace", "start": anchor(3, "c = 3"), "lines": ["c = 30"]},
            ]}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "b = 20\nc = 30\nd = 4\n");
    }

    #[tokio::test]
    async fn edit_udiff_apply_patch_and_whole_forms() {
        let (dir, mut t) = setup(Format::UnifiedDiff);
        put(&dir, "a.txt", "one\ntwo\nthree\n");
        call(&mut t, "read", json!({"path": "a.txt"})).await;
        let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n";
        let o = call(&mut t, "edit", json!({"diff": diff})).await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.txt"), "one\n2\nthree\n");

        t.config.format = Format::ApplyPatch;
        let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-2\n+two\n*** End Patch\n";
        let o = call(&mut t, "edit", json!({"input": patch})).await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.txt"), "one\ntwo\nthree\n");

        t.config.format = Format::Whole;
        let o = call(
            &mut t,
            "edit",
            json!({"path": "a.txt", "content": "1\n2\n3\n"}),
        )
        .await;
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.txt"), "1\n2\n3\n");
        assert_eq!(
            t.specs()
                .iter()
                .find(|s| s.name == "edit")
                .unwrap()
                .parameters["required"],
            json!(["path", "content"])
        );
    }

    #[tokio::test]
    async fn paths_cannot_escape() {
        let outer = tempfile::tempdir().unwrap();
        fs::write(outer.path().join("secret"), "s\n").unwrap();
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, "a.txt", "a\n");
        let escape = format!(
            "../{}/secret",
            outer.path().file_name().unwrap().to_string_lossy()
        );
        let abs = outer.path().join("secret").to_string_lossy().into_owned();
        for p in [escape.as_str(), abs.as_str(), ".git/config"] {
            let o = call(&mut t, "read", json!({"path": p})).await;
            assert!(o.is_error, "{p}: {}", o.content);
            let o = call(&mut t, "write", json!({"path": p, "content": "x"})).await;
            assert!(o.is_error, "{p}: {}", o.content);
            let o = call(
                &mut t,
                "edit",
                json!({"path": p, "old_string": "s", "new_string": "x"}),
            )
            .await;
            assert!(o.is_error, "{p}: {}", o.content);
        }
        let o = call(&mut t, "read", json!({"path": "../x"})).await;
        assert!(
            o.content.contains("outside the project root"),
            "{}",
            o.content
        );
        let o = call(&mut t, "list", json!({"path": ".."})).await;
        assert!(o.is_error);
        assert_eq!(
            fs::read_to_string(outer.path().join("secret")).unwrap(),
            "s\n"
        );
        assert!(!dir.path().join(".git").exists());
    }

    #[tokio::test]
    async fn text_mode_applies_reply_edits() {
        let (dir, mut t) = setup(Format::SearchReplace);
        t.config.text_mode = true;
        put(&dir, "a.py", "x = 1\n");
        let reply = "Here:\n\na.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n";
        let o = t.apply_text(reply).unwrap();
        assert!(o.is_error, "not read yet: {}", o.content);
        call(&mut t, "read", json!({"path": "a.py"})).await;
        let o = t.apply_text(reply).unwrap();
        assert!(!o.is_error, "{}", o.content);
        assert_eq!(get(&dir, "a.py"), "x = 2\n");
        assert!(t.apply_text("no edits here").is_none());
    }

    #[test]
    fn a_page_of_a_large_file_is_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let text: String = (1..=30)
            .map(|i| {
                if i == 12 {
                    format!("{long}\n")
                } else {
                    format!("line {i}\r\n")
                }
            })
            .collect();
        let p = dir.path().join("big.log");
        fs::write(&p, &text).unwrap();
        let open = || fs::File::open(&p).unwrap();
        let o = read_page("big.log", open(), 1 << 30, 9, 4);
        assert!(!o.is_error, "{}", o.content);
        let want = format!(
            "10 | line 10\n11 | line 11\n12 | {}{}\n13 | line 13\n",
            &long[..MAX_LINE_CHARS],
            words::line_cut(10)
        );
        assert!(o.content.starts_with(&want), "{}", o.content);
        assert!(
            o.content
                .ends_with(&words::page_streamed(10, 13, 1 << 30, true))
        );
        let o = read_page("big.log", open(), 1 << 30, 28, 10);
        assert!(
            o.content
                .ends_with(&words::page_streamed(29, 30, 1 << 30, false))
        );
        let o = read_page("big.log", open(), 1 << 30, 30, 10);
        assert!(o.is_error && o.content == words::past_end("big.log", 31, 30));
    }
}
