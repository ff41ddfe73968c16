//! The apply pipeline: parsed patch → per-file resolution → one plan that is
//! written all at once, or not at all.
//!
//! [`plan`] reads every file the patch names through the [`Workspace`],
//! resolves every edit in memory (pure: [`resolve_file`]), and returns a
//! [`Plan`] holding the report and the bytes to write. Nothing touches the
//! disk until [`Plan::commit`], which hands every change to the workspace in
//! one transaction. By default a single failed edit means nothing is written;
//! with [`ApplyOptions::partial`] the edits that resolved are written and the
//! rest reported.
//!
//! Edits are resolved against the file as it was (snapshot mode), so their
//! order in the input does not matter and overlapping edits are a conflict.
//! [`ApplyOptions::sequential`] resolves each edit against the result of the
//! previous ones instead (MultiEdit semantics).
//!
//! [`apply_text`] runs the same plan over one file held in memory: text in,
//! text out, for an editor plug-in or another agent — no workspace, no disk.
//! [`resolve_file`] is the pure core both use: one document, its edits, the
//! new document.
//!
//! Owns: grouping a patch by file, file-level actions (create, delete,
//! rename, mode), all-or-nothing, the syntax guard's verdict per file, and the
//! report with its message. Does not own: locating text (formats and the
//! matcher), the words (feedback), or the disk (the workspace). It is the top
//! of the engine's layers: it uses everything below and nothing uses it.

use std::collections::HashMap;

use crate::edit::{TextEdit, TextEditBuilder};
use crate::feedback;
use crate::format::{Action, EditOp, Format, Patch, Resolution, ResolveContext};
use crate::matcher::MatchOptions;
use crate::report::{
    ApplyReport, EditError, EditReport, EditStatus, FileReport, FileStatus, ParseError,
    PathProblem, SyntaxPolicy, Warning,
};
use crate::text::Document;
use crate::workspace::{
    Change, CommitOptions, Workspace, WorkspaceError, WorkspaceLock, content_hash,
};

/// How an apply behaves. `Default` is the CLI's default.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ApplyOptions {
    /// Matcher options (loosest tier, fuzzy thresholds).
    pub matching: MatchOptions,
    /// Write the edits that apply even when others fail.
    pub partial: bool,
    /// Resolve each edit against the result of the previous ones.
    pub sequential: bool,
    /// The file for edits that name none.
    pub default_path: Option<String>,
    /// Content hashes the caller read files at; a file that differs now is stale.
    pub expected_hashes: HashMap<String, u64>,
    /// The files as the model last saw them (hashline anchors that moved are
    /// relocated by their content).
    pub seen: HashMap<String, Document>,
    /// What to do when an edit introduces a syntax error (needs the `syntax` feature).
    pub syntax: SyntaxPolicy,
    /// Write files that lack write permission for their owner (refused
    /// otherwise: someone marked them read-only on purpose).
    pub force: bool,
    /// Keep no undo journal entry for the commit (see [`CommitOptions::no_undo`]).
    pub no_undo: bool,
    /// Flush each written file to disk before it replaces the original (see
    /// [`CommitOptions::fsync`]; off by default).
    pub fsync: bool,
}

/// A resolved apply, ready to be written.
#[derive(Debug)]
pub struct Plan {
    report: ApplyReport,
    /// What each line of the report's message speaks for.
    outline: Vec<feedback::Subject>,
    /// What changes on disk, per file, in input order.
    writes: Vec<PlannedFile>,
    /// [`ApplyOptions::force`], for the commit.
    force: bool,
    /// [`ApplyOptions::no_undo`], for the commit.
    no_undo: bool,
    /// [`ApplyOptions::fsync`], for the commit.
    fsync: bool,
}

/// One file's planned change: `after` at `new_path` (or nothing: deleted).
#[derive(Debug)]
struct PlannedFile {
    path: String,
    /// Content hash when read (`None`: the file did not exist).
    hash: Option<u64>,
    before: Document,
    /// The content afterwards; `None` when the file is deleted.
    after: Option<Document>,
    /// Where the content goes, when it moves.
    new_path: Option<String>,
    /// The mode afterwards, when it changes.
    mode: Option<u32>,
}

impl Plan {
    /// The report (with `written: false` until committed).
    pub fn report(&self) -> &ApplyReport {
        &self.report
    }

    /// For each line of the report's message, what it speaks for (a file, an
    /// edit, a note, the summary), so a terminal can tint it by its status.
    pub fn outline(&self) -> &[feedback::Subject] {
        &self.outline
    }

    /// The unified diff of everything the plan would write (`/dev/null` for
    /// files it creates or deletes), with `context` lines of context.
    pub fn unified_diff(&self, context: usize) -> String {
        self.writes
            .iter()
            .map(|w| {
                let old = w.hash.is_some().then_some(w.path.as_str());
                let new = w
                    .after
                    .as_ref()
                    .map(|_| w.new_path.as_deref().unwrap_or(&w.path));
                let after = w.after.as_ref().map_or("", Document::text);
                let mut text =
                    crate::format::render_unified(old, new, w.before.text(), after, context);
                if text.is_empty() && (w.new_path.is_some() || w.mode.is_some() || old.is_none()) {
                    // No content change: say what does change, as git does.
                    let (a, b) = (old.unwrap_or(&w.path), new.unwrap_or(&w.path));
                    text = format!("--- a/{a}\n+++ b/{b}\n");
                }
                text
            })
            .collect()
    }

    /// Whether there is anything to write.
    pub fn has_changes(&self) -> bool {
        !self.writes.is_empty()
    }

    /// Writes every change in one transaction (under the root's lock) and
    /// returns the final report.
    pub fn commit(self, ws: &Workspace) -> Result<ApplyReport, WorkspaceError> {
        if self.writes.is_empty() {
            return Ok(self.report);
        }
        let lock = ws.lock()?;
        self.commit_locked(&lock)
    }

    /// [`commit`](Self::commit) under a lock the caller took before
    /// [`plan`]: nobody else's apply can come between the plan and its writes.
    pub fn commit_locked(
        mut self,
        lock: &WorkspaceLock<'_>,
    ) -> Result<ApplyReport, WorkspaceError> {
        if self.writes.is_empty() {
            return Ok(self.report);
        }
        // Bytes are built here, one file at a time, so a plan holds each text once.
        let mut changes: Vec<Change> = Vec::new();
        // What was read of each change's file, so the commit need not read
        // it again (its last look still hashes every file on disk).
        let mut originals: Vec<Option<Vec<u8>>> = Vec::new();
        for w in self.writes.drain(..) {
            let moved = w.new_path.is_some();
            let deleted = w.after.is_none();
            let mut before = w.hash.map(|_| w.before.into_bytes());
            if let Some(after) = w.after {
                changes.push(Change::Write {
                    // The text's own buffer: a large file is not copied once more.
                    bytes: after.into_bytes(),
                    path: w.new_path.clone().unwrap_or_else(|| w.path.clone()),
                    // A new path must be free; the old one is checked by its delete.
                    expected_hash: if moved { None } else { w.hash },
                    mode: w.mode,
                });
                originals.push(if moved { None } else { before.take() });
            }
            if let (true, Some(hash)) = (moved || deleted, w.hash) {
                changes.push(Change::Delete {
                    path: w.path,
                    expected_hash: hash,
                });
                originals.push(before.take());
            }
        }
        let opts = CommitOptions {
            force: self.force,
            no_undo: self.no_undo,
            fsync: self.fsync,
        };
        lock.commit_read(&changes, &opts, originals)?;
        self.report.written = true;
        Ok(self.report)
    }

    /// The report, writing nothing.
    pub fn into_report(self) -> ApplyReport {
        self.report
    }
}

/// One file's edits, gathered from the patch.
#[derive(Clone)]
struct FileWork<'p> {
    path: Option<String>,
    kind: Kind,
    rename_to: Option<String>,
    mode: Option<u32>,
    base_blob: Option<String>,
    result_blob: Option<String>,
    edits: Vec<(usize, &'p EditOp)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Edit,
    Create,
    Delete,
    Remove,
}

/// Groups the patch by file. Plain edits of one file merge (search/replace
/// blocks naming it several times); a creation, deletion, rename or mode
/// change stands alone.
fn group<'a>(patch: &'a Patch, default_path: Option<&String>) -> Vec<FileWork<'a>> {
    let mut files: Vec<FileWork<'_>> = Vec::new();
    let mut index = 0;
    for change in &patch.changes {
        let path = change.path.clone().or_else(|| default_path.cloned());
        let kind = match change.action {
            Action::Edit(_) => Kind::Edit,
            Action::Create(_) => Kind::Create,
            Action::Delete(_) => Kind::Delete,
            Action::Remove(_) => Kind::Remove,
        };
        let plain = kind == Kind::Edit && change.rename_to.is_none() && change.mode.is_none();
        let slot = files.iter().position(|f| {
            plain
                && f.path == path
                && f.kind == Kind::Edit
                && f.rename_to.is_none()
                && f.mode.is_none()
        });
        let slot = slot.unwrap_or_else(|| {
            files.push(FileWork {
                path: path.clone(),
                kind,
                rename_to: change.rename_to.clone(),
                mode: change.mode,
                base_blob: change.base_blob.clone(),
                result_blob: change.result_blob.clone(),
                edits: Vec::new(),
            });
            files.len() - 1
        });
        for op in change.action.ops() {
            files[slot].edits.push((index, op));
            index += 1;
        }
    }
    files
}

/// A file as a plan reads it: its bytes, their content hash, its mode.
struct Read {
    bytes: Vec<u8>,
    hash: u64,
    mode: Option<u32>,
}

/// Where a plan reads files: the [`Workspace`], or one file in memory
/// ([`apply_text`]).
trait Files {
    /// The file at `path` (`None`: it does not exist), or why it cannot be read.
    fn read(&self, path: &str) -> Result<Option<Read>, WorkspaceError>;
    /// The file at `path`, which a change will write: refused unread when it
    /// may not be written at all (a symlink, a special file, lancet's own
    /// configuration…), else as [`read`](Files::read) gives it.
    fn read_for_write(&self, path: &str) -> Result<Option<Read>, WorkspaceError>;
    /// Whether something other than a directory stands at `path`, found
    /// without reading it: a regular file, or anything the later checks of
    /// a write to it must refuse (a FIFO, a symlink out of the root…).
    fn present(&self, path: &str) -> bool;
}

impl Files for Workspace {
    fn read_for_write(&self, path: &str) -> Result<Option<Read>, WorkspaceError> {
        Ok(Workspace::read_for_write(self, path)?.map(|s| Read {
            bytes: s.bytes,
            hash: s.hash,
            mode: s.mode,
        }))
    }

    fn present(&self, path: &str) -> bool {
        !matches!(
            self.open_file(path),
            Ok(None) | Err(WorkspaceError::IsDirectory { .. })
        )
    }

    fn read(&self, path: &str) -> Result<Option<Read>, WorkspaceError> {
        Ok(Workspace::read(self, path)?.map(|s| Read {
            bytes: s.bytes,
            hash: s.hash,
            mode: s.mode,
        }))
    }
}

/// One file's content, under its path; every other path is a missing file.
struct OneFile<'a> {
    path: &'a str,
    content: &'a str,
}

impl Files for OneFile<'_> {
    /// In memory nothing is on disk to refuse.
    fn read_for_write(&self, path: &str) -> Result<Option<Read>, WorkspaceError> {
        self.read(path)
    }

    fn present(&self, path: &str) -> bool {
        same_path(path, self.path)
    }

    fn read(&self, path: &str) -> Result<Option<Read>, WorkspaceError> {
        Ok(same_path(path, self.path).then(|| Read {
            bytes: self.content.as_bytes().to_vec(),
            hash: content_hash(self.content.as_bytes()),
            mode: None,
        }))
    }
}

/// Whether two relative paths name one file (`./a.py` is `a.py`).
fn same_path(a: &str, b: &str) -> bool {
    let bare = |p: &'_ str| -> String {
        let mut p = p;
        while let Some(rest) = p.strip_prefix("./") {
            p = rest;
        }
        p.to_owned()
    };
    bare(a) == bare(b)
}

/// Reads and resolves every file of `patch`; writes nothing.
pub fn plan(ws: &Workspace, patch: &Patch, opts: &ApplyOptions) -> Plan {
    plan_in(ws, patch, opts, opts.default_path.as_ref())
}

/// What [`apply_text`] gives back.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TextOutcome {
    /// The file's new content: the edits applied (under
    /// [`partial`](ApplyOptions::partial), those that applied); the content as
    /// given when nothing changes or, all or nothing, when an edit failed;
    /// `None` when the edits delete the file.
    pub text: Option<String>,
    /// What became of each edit, with the message a model would be shown
    /// (`written` is false: nothing is written anywhere).
    pub report: ApplyReport,
}

/// Applies edits written in `format` (model text, or the format's tool-call
/// arguments as a JSON object) to one file's content in memory: no
/// workspace, no disk. For an editor plug-in, or an agent holding the file.
///
/// `path` is the file's name as the edits use it (it also picks the syntax
/// guard's language). Edits that name no file apply to it; edits naming
/// another file find no such file (they fail as missing, and what they would
/// create is reported but not returned). Options are those of [`plan`].
///
/// ```
/// use lancet::{ApplyOptions, Format, apply_text};
///
/// let content = "def total(items):\n    return sum(items)\n";
/// let reply = "app.py\n<<<<<<< SEARCH\n    return sum(items)\n=======\n    return sum(items, 0)\n>>>>>>> REPLACE\n";
/// let out = apply_text(Format::SearchReplace, reply, "app.py", content, &ApplyOptions::default())?;
/// assert!(out.report.ok);
/// assert_eq!(out.text.as_deref(), Some("def total(items):\n    return sum(items, 0)\n"));
/// assert_eq!(out.report.message, "edit 1: applied to app.py at line 2");
/// # Ok::<(), lancet::ParseError>(())
/// ```
pub fn apply_text(
    format: Format,
    edits: &str,
    path: &str,
    content: &str,
    opts: &ApplyOptions,
) -> Result<TextOutcome, ParseError> {
    let patch = format.parse(edits)?;
    let default_path = opts.default_path.clone().unwrap_or_else(|| path.to_owned());
    let plan = plan_in(
        &OneFile { path, content },
        &patch,
        opts,
        Some(&default_path),
    );
    let written = plan.writes.iter().find(|w| same_path(&w.path, path));
    let text = match written {
        Some(w) => w.after.as_ref().map(|after| {
            let bom = if after.has_bom() { "\u{feff}" } else { "" };
            format!("{bom}{}", after.text())
        }),
        None => Some(content.to_owned()),
    };
    Ok(TextOutcome {
        text,
        report: plan.report,
    })
}

/// [`plan`] over any source of files.
fn plan_in(
    files_in: &dyn Files,
    patch: &Patch,
    opts: &ApplyOptions,
    default_path: Option<&String>,
) -> Plan {
    let mut files = Vec::new();
    let mut writes = Vec::new();
    let mut originals: HashMap<String, Document> = HashMap::new();
    let mut touched: Vec<String> = Vec::new();
    // A whole-file block under a bare name (`benchsuite`) is that file where
    // the root holds one (anything there but a directory: the file's checks
    // then speak); else it is dropped, with a note. Looked at, not read: the
    // plan reads it once, below.
    let settled = crate::format::whole::settle_bare_names(patch, |name| files_in.present(name));
    let patch = settled.as_ref().unwrap_or(patch);
    let works = group(patch, default_path);
    // Files the patch deletes: a file it creates with their content is a
    // rename a `--no-renames` diff wrote as a deletion and a creation.
    let gone: Vec<String> = works
        .iter()
        .filter(|w| matches!(w.kind, Kind::Delete | Kind::Remove))
        .filter_map(|w| w.path.clone())
        .collect();
    for work in works {
        let (mut report, mut outcome) = plan_file(files_in, &work, opts, &gone);
        // A file someone made read-only is not rewritten behind their back.
        if let Some(o) = outcome
            .as_mut()
            .filter(|o| o.change.is_some() && o.readonly)
            && !opts.force
        {
            fail_all(
                &mut report,
                EditError::PathRefused {
                    why: PathProblem::ReadOnly,
                },
            );
            o.change = None;
        }
        // Two changes to one path (other than merged edits) would race: refuse the later.
        let paths: Vec<String> = [Some(report.path.clone()), report.new_path.clone()]
            .into_iter()
            .flatten()
            .collect();
        if let Some(dup) = paths.iter().find(|p| !p.is_empty() && touched.contains(p)) {
            let e = EditError::PathTwice { path: dup.clone() };
            for edit in &mut report.edits {
                edit.fail(e.clone());
            }
            report.error = Some(e);
            report.status = FileStatus::Failed;
            files.push(report);
            continue;
        }
        touched.extend(paths);
        if let Some(o) = outcome {
            match o.change {
                Some((after, new_path, mode)) => writes.push(PlannedFile {
                    path: report.path.clone(),
                    hash: o.hash,
                    before: o.before,
                    after,
                    new_path,
                    mode,
                }),
                None => {
                    originals.insert(report.path.clone(), o.before);
                }
            }
        }
        files.push(report);
    }
    let ok = files
        .iter()
        .all(|f| f.error.is_none() && f.edits.iter().all(|e| e.status.is_ok()));
    if !ok && !opts.partial {
        // All or nothing: what would have been written is only reported.
        for w in writes.drain(..) {
            originals.insert(w.path, w.before);
        }
    }
    let mut report = ApplyReport {
        ok,
        written: false,
        files,
        notes: patch.notes.clone(),
        message: String::new(),
    };
    // The feedback quotes the files as they were: borrowed, not copied.
    let mut before: HashMap<&str, &Document> =
        originals.iter().map(|(p, d)| (p.as_str(), d)).collect();
    before.extend(writes.iter().map(|w| (w.path.as_str(), &w.before)));
    let (message, outline) = feedback::apply_message_outlined(&report, &before, opts.partial);
    report.message = message;
    Plan {
        report,
        outline,
        writes,
        force: opts.force,
        no_undo: opts.no_undo,
        fsync: opts.fsync,
    }
}

/// What a file becomes: `change` is `None` when nothing is written, else the
/// content afterwards (`None`: deleted), where it goes, and its new mode.
struct Outcome {
    before: Document,
    hash: Option<u64>,
    change: Option<(Option<Document>, Option<String>, Option<u32>)>,
    /// The file has no write permission for its owner.
    readonly: bool,
}

impl Outcome {
    /// The file as read, with nothing to write.
    fn unchanged(before: Document, hash: Option<u64>) -> Outcome {
        Outcome {
            before,
            hash,
            change: None,
            readonly: false,
        }
    }
}

/// The whole file's change is already in place (created, moved or deleted before).
fn all_already_applied(report: &mut FileReport) {
    for e in &mut report.edits {
        e.status = EditStatus::AlreadyApplied;
    }
    report.status = FileStatus::Unchanged;
}

fn fail_all(report: &mut FileReport, e: EditError) {
    for edit in &mut report.edits {
        edit.fail(e.clone());
    }
    report.error = Some(e);
    report.status = FileStatus::Failed;
}

fn path_problem(e: &WorkspaceError) -> EditError {
    let why = match e {
        WorkspaceError::ParentNotDirectory { parent, .. } => {
            return EditError::ParentNotDirectory {
                parent: parent.clone(),
            };
        }
        WorkspaceError::ConfigFile { .. } => PathProblem::Config,
        WorkspaceError::NotRegular { found, .. } => PathProblem::NotRegular { found: *found },
        WorkspaceError::TooLarge { bytes, limit, .. } => PathProblem::TooLarge {
            bytes: *bytes,
            limit: *limit,
        },
        WorkspaceError::ReadOnly { .. } => PathProblem::ReadOnly,
        WorkspaceError::PathTooLong { bytes, .. } => PathProblem::TooLong { bytes: *bytes },
        WorkspaceError::PathChanged { .. } => PathProblem::Changed,
        _ => return path_problem_basic(e),
    };
    EditError::PathRefused { why }
}

/// The refusal of the destination of a move: the same problems, naming `to`.
fn destination_problem(to: &str, e: &WorkspaceError) -> EditError {
    match path_problem(e) {
        EditError::PathRefused { why } => EditError::DestinationRefused {
            to: to.to_owned(),
            why,
        },
        other => other,
    }
}

fn path_problem_basic(e: &WorkspaceError) -> EditError {
    match e {
        WorkspaceError::Io { source, .. } => EditError::Unreadable {
            kind: source.kind(),
        },
        WorkspaceError::Absolute { .. } => EditError::PathRefused {
            why: PathProblem::Absolute,
        },
        WorkspaceError::Reserved { .. } => EditError::PathRefused {
            why: PathProblem::Reserved,
        },
        WorkspaceError::IsDirectory { .. } => EditError::PathRefused {
            why: PathProblem::Directory,
        },
        WorkspaceError::InvalidPath { .. } => EditError::PathRefused {
            why: PathProblem::Invalid,
        },
        _ => EditError::PathRefused {
            why: PathProblem::Outside,
        },
    }
}

/// The git blob id of `bytes` (SHA-1 of `blob <len>\0` and the bytes), in hex.
fn git_blob_id(bytes: &[u8]) -> String {
    use sha1::Digest;
    use std::fmt::Write;
    // `sha1` uses the CPU's SHA instructions where it has them: a large
    // file's digest is a visible part of applying a git diff to it.
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    let mut hex = String::with_capacity(40);
    for b in h.finalize() {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// What a diff's `index` line says of the file: known (hashed), or deferred
/// until a resolution shows the answer could matter.
#[derive(Clone, Copy)]
enum BlobCheck {
    /// The file is the diff's pre-image (`verified`), or its post-image
    /// (`finished`).
    Known { verified: bool, finished: bool },
    /// Not hashed yet: see [`resolve_deferred`].
    Deferred,
}

impl BlobCheck {
    fn of(work: &FileWork<'_>, id: Option<&str>) -> BlobCheck {
        let blob = |prefix: &Option<String>| match (prefix, id) {
            (Some(p), Some(id)) if p.len() >= 7 => id.starts_with(p.as_str()),
            _ => false,
        };
        BlobCheck::Known {
            verified: blob(&work.base_blob),
            finished: blob(&work.result_blob)
                && work.kind == Kind::Edit
                && work.rename_to.is_none(),
        }
    }
}

/// Whether the blob ids may wait for the resolution: every edit is a hunk
/// with lines on its old side and stated line numbers, and the file cannot be
/// the diff's post-image because some hunk's new side is not at its stated
/// line (compared loosely, so that only a file that is certainly not the
/// post-image is spared the digest).
fn deferrable(doc: &Document, ops: &[&EditOp]) -> bool {
    let hunks = || {
        ops.iter().filter_map(|op| match op {
            EditOp::Hunk(h) => Some(h),
            _ => None,
        })
    };
    !ops.is_empty()
        && hunks().count() == ops.len()
        && hunks().all(|h| h.stated_start().is_some() && !h.old_lines().is_empty())
        && !hunks().all(|h| h.new_side_may_stand(doc))
}

/// Resolves hunks whose file was not hashed ([`BlobCheck::Deferred`]). First
/// as for a file of unknown origin; when every hunk was then found word for
/// word, alone and without a warning, at its stated line, a verified file
/// (the pre-image) would have placed each one there too, so the blob id
/// cannot change the result and is never computed. Otherwise the file is
/// hashed and resolved as it would have been eagerly: again with exact line
/// numbers if it is the pre-image, `None` if it is the post-image.
fn resolve_deferred(
    doc: &Document,
    ops: &[&EditOp],
    ctx: &ResolveContext<'_>,
    work: &FileWork<'_>,
    opts: &ApplyOptions,
    reports: &mut [EditReport],
) -> Option<Document> {
    let after = resolve_file(doc, ops, ctx, opts.sequential, reports);
    if !opts.sequential && placed_as_stated(ops, reports) {
        return Some(after);
    }
    match BlobCheck::of(work, Some(&git_blob_id(&doc.to_bytes()))) {
        BlobCheck::Known {
            finished: true,
            verified: false,
        } => None,
        BlobCheck::Known { verified: true, .. } => {
            for r in reports.iter_mut() {
                let mut fresh = EditReport::new(r.index, r.source_line);
                fresh.kind = r.kind;
                *r = fresh;
            }
            let ctx = ResolveContext {
                verified: true,
                ..ctx.clone()
            };
            Some(resolve_file(doc, ops, &ctx, opts.sequential, reports))
        }
        _ => Some(after),
    }
}

/// Whether every hunk was applied at its stated line, exactly, to its old
/// side's full length, with no warning: the placement step 0 of a verified
/// resolution makes (`udiff::resolve_hunk`).
fn placed_as_stated(ops: &[&EditOp], reports: &[EditReport]) -> bool {
    ops.iter().zip(reports).all(|(op, r)| match op {
        EditOp::Hunk(h) => {
            let start = h.stated_start();
            r.status == EditStatus::Applied
                && r.error.is_none()
                && r.tier == Some(crate::matcher::Tier::Exact)
                && r.warnings.is_empty()
                && r.lines
                    .as_ref()
                    .is_some_and(|l| Some(l.start) == start && l.len() == h.old_lines().len())
        }
        _ => false,
    })
}

fn plan_file(
    ws: &dyn Files,
    work: &FileWork<'_>,
    opts: &ApplyOptions,
    gone: &[String],
) -> (FileReport, Option<Outcome>) {
    let mut report = FileReport {
        path: work.path.clone().unwrap_or_default(),
        new_path: work.rename_to.clone(),
        status: FileStatus::Failed,
        edits: work
            .edits
            .iter()
            .map(|(i, op)| {
                let mut r = EditReport::new(*i, op.source_line());
                r.kind = op.kind();
                r
            })
            .collect(),
        error: None,
        mode: None,
    };
    let Some(path) = &work.path else {
        fail_all(&mut report, EditError::NoPath);
        return (report, None);
    };
    // Every change here writes (or deletes) the file: what may not be written
    // at all (a symlink, a FIFO, lancet's configuration) is refused unread.
    let state = match ws.read_for_write(path) {
        Ok(s) => s,
        Err(e) => {
            if let WorkspaceError::PathTooLong { path, .. } = &e {
                // A hostile path of megabytes is not echoed back whole, not even in JSON.
                report.path = path.clone();
            }
            fail_all(&mut report, path_problem(&e));
            return (report, None);
        }
    };
    let exists = state.is_some();
    let hash = state.as_ref().map(|s| s.hash);
    let old_mode = state.as_ref().and_then(|s| s.mode);
    if let (Some(expected), Some(now)) = (opts.expected_hashes.get(path), hash)
        && *expected != now
    {
        fail_all(&mut report, EditError::Stale);
        return (report, None);
    }
    // The git blob ids of the diff's `index` line: the file is exactly its
    // pre-image (line numbers are exact), or already its post-image (done).
    // One digest of the file answers both prefixes. Hashing is a visible part
    // of a small apply (the digest, and the CPU feature probe before the
    // first), so where the answer cannot change the outcome it is not asked
    // (`BlobCheck::Deferred`, see `resolve_deferred`); a large file is hashed
    // while its line table is built (`Document::from_vec_with`), in parallel.
    let wants_id = |p: &Option<String>| p.as_ref().is_some_and(|p| p.len() >= 7);
    let wanted = wants_id(&work.base_blob) || wants_id(&work.result_blob);
    let may_defer = wanted
        && work.kind == Kind::Edit
        && work.rename_to.is_none()
        && state
            .as_ref()
            .is_some_and(|s| s.bytes.len() < crate::text::SIDE_THREAD_MIN);
    let (doc, id) = match state {
        Some(s) => {
            let eager = wanted && !may_defer;
            match Document::from_vec_with(s.bytes, |b| eager.then(|| git_blob_id(b))) {
                (Ok(d), id) => (d, id),
                (Err(e), _) => {
                    fail_all(&mut report, EditError::Undecodable(e));
                    return (report, None);
                }
            }
        }
        None => (Document::default(), None),
    };
    let ops: Vec<&EditOp> = work.edits.iter().map(|(_, op)| *op).collect();
    let check = if may_defer && deferrable(&doc, &ops) {
        BlobCheck::Deferred
    } else {
        let id = id.or_else(|| wanted.then(|| git_blob_id(&doc.to_bytes())));
        BlobCheck::of(work, id.as_deref())
    };
    let (verified, finished) = match check {
        BlobCheck::Known { verified, finished } => (verified, finished),
        BlobCheck::Deferred => (false, false),
    };
    if let Some(to) = &work.rename_to {
        match ws.read_for_write(to) {
            Ok(None) => {}
            Ok(Some(_)) if !exists => {
                // Moved already: the old path is gone and the new one is there.
                // Its edits are checked (and finished) on the new path.
                let moved = FileWork {
                    path: Some(to.clone()),
                    kind: work.kind,
                    rename_to: None,
                    mode: work.mode,
                    base_blob: None,
                    result_blob: work.result_blob.clone(),
                    edits: work.edits.clone(),
                };
                let (mut r, outcome) = plan_file(ws, &moved, opts, gone);
                if r.status == FileStatus::Unchanged {
                    all_already_applied(&mut r);
                }
                return (r, outcome);
            }
            Ok(Some(_)) => {
                fail_all(&mut report, EditError::AlreadyExists { path: to.clone() });
                return (report, None);
            }
            Err(e) => {
                fail_all(&mut report, destination_problem(to, &e));
                return (report, None);
            }
        }
    }
    if finished && !ops.is_empty() && !verified {
        all_already_applied(&mut report);
        return (report, Some(Outcome::unchanged(doc, hash)));
    }
    let ctx = ResolveContext {
        exists,
        matching: &opts.matching,
        offset: 0,
        verified,
        seen: opts.seen.get(path),
        bracketed: false,
    };
    match work.kind {
        Kind::Create if exists => {
            // Already there with the content the patch creates: nothing to do.
            let empty = Document::default();
            let mut probe: Vec<EditReport> = report.edits.clone();
            let built = resolve_file(&empty, &ops, &ctx, false, &mut probe);
            if built == doc && probe.iter().all(|e| e.status.is_ok()) {
                all_already_applied(&mut report);
                return (report, Some(Outcome::unchanged(doc, hash)));
            }
            fail_all(&mut report, EditError::AlreadyExists { path: path.clone() });
            (report, Some(Outcome::unchanged(doc, hash)))
        }
        Kind::Remove if !exists => {
            fail_all(&mut report, EditError::FileMissing);
            (report, None)
        }
        Kind::Remove => {
            report.status = FileStatus::Deleted;
            let change = Some((None, None, None));
            (
                report,
                Some(Outcome {
                    before: doc,
                    hash,
                    change,
                    readonly: old_mode.is_some_and(|m| m & 0o200 == 0),
                }),
            )
        }
        Kind::Delete if !exists => {
            all_already_applied(&mut report);
            (report, None)
        }
        Kind::Edit if !exists && work.rename_to.is_some() => {
            fail_all(&mut report, EditError::FileMissing);
            (report, None)
        }
        _ => {
            let after = match check {
                BlobCheck::Known { .. } => {
                    resolve_file(&doc, &ops, &ctx, opts.sequential, &mut report.edits)
                }
                BlobCheck::Deferred => {
                    match resolve_deferred(&doc, &ops, &ctx, work, opts, &mut report.edits) {
                        Some(after) => after,
                        None => {
                            all_already_applied(&mut report);
                            return (report, Some(Outcome::unchanged(doc, hash)));
                        }
                    }
                }
            };
            let all_ok = report.edits.iter().all(|e| e.status.is_ok());
            // An edit creates a missing file only when its format says "new
            // content" (empty SEARCH, a whole file, `@@ set file`); a hunk or a
            // chunk that merely adds lines to a missing file is an error.
            let creates =
                !exists
                    && (work.kind == Kind::Create
                        || work.edits.iter().zip(&report.edits).any(|((_, op), e)| {
                            e.status == EditStatus::Applied && op.can_create()
                        }));
            if !exists && !creates {
                // Nothing to create: the edits of a missing file failed because it is missing.
                for e in &mut report.edits {
                    // Nothing to find (or anchor) in a file that is not there.
                    if matches!(
                        e.status,
                        EditStatus::NotFound | EditStatus::Stale | EditStatus::Applied
                    ) {
                        e.fail(EditError::FileMissing);
                    }
                }
                // A change with no edits (a mode change, a bare header) fails here too.
                report.error = Some(EditError::FileMissing);
                report.status = FileStatus::Failed;
                return (report, Some(Outcome::unchanged(doc, hash)));
            }
            if work.kind == Kind::Delete && all_ok && after.line_count() > 0 {
                // The hunks matched, but the file holds more than the patch deletes.
                let e = EditError::DeleteLeavesContent {
                    lines: after.line_count(),
                };
                fail_all(&mut report, e);
                return (report, Some(Outcome::unchanged(doc, hash)));
            }
            let mode = work.mode.filter(|m| Some(*m) != old_mode);
            let status = if !all_ok && !opts.partial {
                FileStatus::Failed
            } else if work.kind == Kind::Delete {
                FileStatus::Deleted
            } else if creates {
                FileStatus::Created
            } else if work.rename_to.is_some() {
                FileStatus::Renamed
            } else if after == doc && mode.is_none() {
                FileStatus::Unchanged
            } else {
                FileStatus::Modified
            };
            report.status = status;
            report.mode = mode;
            let writes_text = matches!(
                status,
                FileStatus::Created | FileStatus::Modified | FileStatus::Renamed
            );
            if writes_text && opts.syntax != SyntaxPolicy::Off {
                let target = work.rename_to.as_deref().unwrap_or(path);
                let moved_from = (!exists)
                    .then(|| moved_from(ws, gone, target, &after))
                    .flatten();
                if guard_syntax(
                    target,
                    exists.then_some(&doc).or(moved_from.as_ref()),
                    &after,
                    opts.syntax,
                    &mut report,
                ) {
                    // Refused: the file keeps its content, and so does every other file.
                    return (report, Some(Outcome::unchanged(doc, hash)));
                }
            }
            let change = match status {
                FileStatus::Deleted => Some((None, None, None)),
                FileStatus::Created | FileStatus::Modified | FileStatus::Renamed => Some((
                    Some(after),
                    work.rename_to.clone(),
                    mode.or(work.mode.filter(|_| creates)),
                )),
                _ => None,
            };
            (
                report,
                Some(Outcome {
                    before: doc,
                    hash,
                    change,
                    readonly: old_mode.is_some_and(|m| m & 0o200 == 0),
                }),
            )
        }
    }
}

/// The file among `gone` (deleted by the same patch) that a file created at
/// `target` continues — same extension, and at least half of the new lines
/// are its lines — so the syntax guard counts only errors the move added
/// (the grammar's blind spots in moved code are not the edit's). Read only
/// for a new file of a checked language.
fn moved_from(ws: &dyn Files, gone: &[String], target: &str, after: &Document) -> Option<Document> {
    let ext = |p: &str| {
        std::path::Path::new(p)
            .extension()
            .map(std::ffi::OsStr::to_owned)
    };
    let new_lines: std::collections::HashSet<&str> = after.lines().collect();
    gone.iter()
        .filter(|p| ext(p) == ext(target))
        .filter_map(|p| {
            let read = ws.read(p).ok()??;
            let doc = Document::from_vec(read.bytes).ok()?;
            let shared = doc.lines().filter(|l| new_lines.contains(l)).count();
            (shared * 2 >= after.line_count().max(1)).then_some((shared, doc))
        })
        .max_by_key(|(shared, _)| *shared)
        .map(|(_, doc)| doc)
}

/// The syntax guard on one file's change. Returns `true` when the change is
/// refused (new syntax errors under [`SyntaxPolicy::Reject`]).
#[cfg(feature = "syntax")]
fn guard_syntax(
    path: &str,
    before: Option<&Document>,
    after: &Document,
    policy: SyntaxPolicy,
    report: &mut FileReport,
) -> bool {
    use crate::syntax::{Verdict, check};
    let issues = match check(path, before, after) {
        Verdict::UnknownLanguage => return false,
        Verdict::TooLarge => {
            if let Some(e) = report.edits.first_mut() {
                e.warnings.push(Warning::SyntaxSkipped);
            }
            return false;
        }
        Verdict::Checked(issues) if issues.is_empty() => return false,
        Verdict::Checked(issues) => issues,
    };
    // Each error goes to the edit nearest above it (in the original's lines).
    let to_old = line_map(before, after);
    let mut per_edit: Vec<Vec<crate::report::SyntaxIssue>> = vec![Vec::new(); report.edits.len()];
    for issue in issues {
        let old = to_old(issue.line);
        let k = report
            .edits
            .iter()
            .enumerate()
            .filter(|(_, e)| e.status == EditStatus::Applied)
            .filter(|(_, e)| e.lines.as_ref().is_some_and(|r| r.start <= old))
            .max_by_key(|(_, e)| e.lines.as_ref().map_or(0, |r| r.start))
            .or_else(|| {
                report
                    .edits
                    .iter()
                    .enumerate()
                    .find(|(_, e)| e.status == EditStatus::Applied)
            })
            .map_or(0, |(k, _)| k);
        per_edit[k].push(issue);
    }
    let reject = policy == SyntaxPolicy::Reject;
    for (e, issues) in report.edits.iter_mut().zip(per_edit) {
        if issues.is_empty() {
            continue;
        }
        if reject {
            e.fail(EditError::Syntax { issues });
        } else {
            e.warnings.push(Warning::SyntaxBroken { issues });
        }
    }
    if reject {
        report.status = FileStatus::Failed;
        for e in &mut report.edits {
            if e.status == EditStatus::Applied {
                e.warnings.push(Warning::HeldBack);
            }
        }
    }
    reject
}

#[cfg(not(feature = "syntax"))]
fn guard_syntax(
    _: &str,
    _: Option<&Document>,
    _: &Document,
    _: SyntaxPolicy,
    _: &mut FileReport,
) -> bool {
    false
}

/// Maps a line of `after` to the line of `before` it stands for (or follows).
#[cfg(feature = "syntax")]
fn line_map(before: Option<&Document>, after: &Document) -> impl Fn(usize) -> usize {
    let old_len = before.map_or(0, Document::line_count);
    let runs = crate::splice::doc_line_diff(before.unwrap_or(&Document::default()), after);
    move |line: usize| {
        runs.iter()
            .find(|r| r.new.contains(&line) || (r.new.is_empty() && r.new.start == line))
            .map_or(old_len, |r| {
                if r.equal {
                    r.old.start + (line - r.new.start)
                } else {
                    r.old.start
                }
            })
    }
}

/// Resolves `ops` against `doc` and applies those that resolve; fills `reports`.
/// Returns the new document.
pub fn resolve_file(
    doc: &Document,
    ops: &[&EditOp],
    ctx: &ResolveContext<'_>,
    sequential: bool,
    reports: &mut [EditReport],
) -> Document {
    if sequential {
        let mut current = doc.clone();
        for (op, report) in ops.iter().zip(reports.iter_mut()) {
            match op.resolve(&current, ctx) {
                Ok(res) => {
                    let mut b = TextEditBuilder::new();
                    add_resolution(&mut b, &res, report.index);
                    record(report, &res);
                    report.warnings.push(Warning::Sequential);
                    // A single resolution's pieces are disjoint by construction.
                    if let Ok(edit) = b.finish() {
                        current = current.apply(&edit);
                    }
                }
                Err(e) => report.fail(e),
            }
        }
        return current;
    }
    if ops.len() >= 8 && !ctx.verified {
        // Many searches of one document: index its lines once. A verified
        // file (the diff's pre-image) is not searched: each hunk is checked
        // where it says it is.
        doc.warm_index();
    }
    let mut resolved: Vec<Option<Resolution>> = Vec::with_capacity(ops.len());
    // Each located edit that states its line teaches the next one how far the
    // file has shifted (hunks come in file order).
    let mut ctx = ctx.clone();
    for (op, report) in ops.iter().zip(reports.iter_mut()) {
        match op.resolve(doc, &ctx) {
            Ok(res) => {
                if let Some(offset) = res.offset {
                    ctx.offset = offset;
                }
                record(report, &res);
                resolved.push(Some(res));
            }
            Err(e) => {
                report.fail(e);
                resolved.push(None);
            }
        }
    }
    // An edit refused for want of a trustworthy position (a context-free hunk
    // whose text recurs) gets one more try when the edits before and after it
    // were found at the same offset: nothing can have shifted in between.
    for k in 0..ops.len() {
        let refused = matches!(
            reports[k].error,
            Some(EditError::Ambiguous { .. } | EditError::Unplaceable)
        );
        if resolved[k].is_some() || !refused {
            continue;
        }
        let offset_of = |r: &Option<Resolution>| r.as_ref().and_then(|r| r.offset);
        let before = resolved[..k].iter().rev().find_map(offset_of);
        let after = resolved[k + 1..].iter().find_map(offset_of);
        // The offset to trust, and the line the edit must then start at.
        let mut pinned = match (before, after) {
            (Some(a), Some(b)) if a == b => Some((a, None)),
            _ => None,
        };
        // Else the order of the hunks may place it: a diff's hunks come in
        // file order, so of its places only those between the edits placed
        // before and after it can be meant; exactly one is determined.
        if let (None, EditOp::Hunk(h), Some(EditError::Ambiguous { candidates, .. })) =
            (pinned, &ops[k], &reports[k].error)
        {
            let lines_of = |r: &Option<Resolution>| r.as_ref().and_then(|r| r.lines.clone());
            let low = resolved[..k]
                .iter()
                .rev()
                .find_map(lines_of)
                .map_or(0, |l| l.end);
            let high = resolved[k + 1..]
                .iter()
                .find_map(lines_of)
                .map_or(doc.line_count(), |l| l.start);
            let mut inside = candidates
                .iter()
                .filter(|c| low <= c.range.start && c.range.end <= high);
            if let (Some(only), None, Some(stated)) =
                (inside.next(), inside.next(), h.stated_start())
            {
                pinned = Some((
                    only.range.start as isize - stated as isize,
                    Some(only.range.start),
                ));
            }
        }
        if let Some((offset, start)) = pinned {
            let bracketed = ResolveContext {
                offset,
                bracketed: true,
                ..ctx.clone()
            };
            let placed = |res: &Resolution| {
                start.is_none_or(|s| res.lines.as_ref().is_some_and(|l| l.start == s))
            };
            if let Some(res) = ops[k].resolve(doc, &bracketed).ok().filter(placed) {
                reports[k].error = None;
                record(&mut reports[k], &res);
                resolved[k] = Some(res);
            }
        }
    }
    let edit = loop {
        let mut b = TextEditBuilder::new();
        for (res, report) in resolved.iter().zip(reports.iter()) {
            if let Some(res) = res {
                add_resolution(&mut b, res, report.index);
            }
        }
        match b.finish() {
            Ok(edit) => break edit,
            Err(c) => {
                // Both sides of a conflict fail; the rest is tried again.
                for (slot, report) in resolved.iter_mut().zip(reports.iter_mut()) {
                    if report.index == c.first || report.index == c.second {
                        let other = if report.index == c.first {
                            c.second
                        } else {
                            c.first
                        };
                        report.fail(EditError::Conflict {
                            other,
                            lines: c.lines.clone(),
                        });
                        *slot = None;
                    }
                }
            }
        }
    };
    explain_dependencies(doc, ops, &ctx, &resolved, reports);
    doc.apply(&edit)
}

fn add_resolution(b: &mut TextEditBuilder, res: &Resolution, origin: usize) {
    if res.status != EditStatus::Applied {
        return;
    }
    for p in &res.pieces {
        b.replace_ending(p.range.clone(), p.lines.clone(), p.eols.clone(), origin);
    }
    if let Some(w) = res.final_newline {
        b.set_final_newline(w, origin);
    }
    if let Some(eol) = res.eol {
        b.set_default_eol(eol);
    }
}

fn record(report: &mut EditReport, res: &Resolution) {
    report.status = res.status;
    report.tier = res.tier;
    report.similarity = res.similarity;
    report.lines = res.lines.clone();
    report.warnings.extend(res.warnings.iter().cloned());
}

/// A not-found edit whose text exists only after another edit applied: say so
/// (scenario 22), so the model sends it separately instead of retrying blindly.
fn explain_dependencies(
    doc: &Document,
    ops: &[&EditOp],
    ctx: &ResolveContext<'_>,
    resolved: &[Option<Resolution>],
    reports: &mut [EditReport],
) {
    // Each check re-resolves an edit; keep the cost bounded on very large batches.
    if ops.len() > 64 {
        return;
    }
    for k in 0..ops.len() {
        if !matches!(
            reports[k].error,
            Some(EditError::NotFound {
                after_edit: None,
                ..
            })
        ) {
            continue;
        }
        for (j, res) in resolved.iter().enumerate() {
            let Some(res) = res.as_ref().filter(|r| r.status == EditStatus::Applied) else {
                continue;
            };
            let mut b = TextEditBuilder::new();
            add_resolution(&mut b, res, reports[j].index);
            let Ok(edit): Result<TextEdit, _> = b.finish() else {
                continue;
            };
            let moved = doc.apply(&edit);
            if ops[k].resolve(&moved, ctx).is_ok() {
                let index = reports[j].index;
                if let Some(EditError::NotFound { after_edit, .. }) = &mut reports[k].error {
                    *after_edit = Some(index);
                }
                break;
            }
        }
    }
}
