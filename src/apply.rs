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

use std::collections::HashMap;

use crate::edit::{TextEdit, TextEditBuilder};
use crate::feedback;
use crate::format::{Action, EditOp, Patch, Resolution, ResolveContext};
use crate::matcher::MatchOptions;
use crate::report::{
    ApplyReport, EditError, EditReport, EditStatus, FileReport, FileStatus, PathProblem, Warning,
};
use crate::text::Document;
use crate::workspace::{Change, Workspace, WorkspaceError, content_hash};

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
}

/// A resolved apply, ready to be written.
#[derive(Debug)]
pub struct Plan {
    report: ApplyReport,
    /// Files whose content changes: path, content hash when read (None: new), before, after.
    writes: Vec<PlannedWrite>,
}

#[derive(Debug)]
struct PlannedWrite {
    path: String,
    hash: Option<u64>,
    before: Document,
    after: Document,
}

impl Plan {
    /// The report (with `written: false` until committed).
    pub fn report(&self) -> &ApplyReport {
        &self.report
    }

    /// `(path, before, after)` texts of every file whose content changes.
    pub fn diffs(&self) -> impl Iterator<Item = (&str, &str, &str)> + '_ {
        self.writes
            .iter()
            .map(|w| (w.path.as_str(), w.before.text(), w.after.text()))
    }

    /// Whether there is anything to write.
    pub fn has_changes(&self) -> bool {
        !self.writes.is_empty()
    }

    /// Writes every change in one transaction and returns the final report.
    pub fn commit(mut self, ws: &Workspace) -> Result<ApplyReport, WorkspaceError> {
        if self.writes.is_empty() {
            return Ok(self.report);
        }
        // Bytes are built here, one file at a time, so a plan holds each text once.
        let changes: Vec<Change> = self
            .writes
            .drain(..)
            .map(|w| Change::Write {
                bytes: w.after.to_bytes(),
                path: w.path,
                expected_hash: w.hash,
                mode: None,
            })
            .collect();
        ws.commit(&changes)?;
        self.report.written = true;
        Ok(self.report)
    }

    /// The report, writing nothing.
    pub fn into_report(self) -> ApplyReport {
        self.report
    }
}

/// One file's edits, gathered from the patch.
struct FileWork<'p> {
    path: Option<String>,
    edits: Vec<(usize, &'p EditOp)>,
}

fn group<'a>(patch: &'a Patch, default_path: Option<&String>) -> Vec<FileWork<'a>> {
    let mut files: Vec<FileWork<'_>> = Vec::new();
    let mut index = 0;
    for change in &patch.changes {
        let path = change.path.clone().or_else(|| default_path.cloned());
        let Action::Edit(ops) = &change.action;
        let slot = match files.iter().position(|f| f.path == path) {
            Some(i) => i,
            None => {
                files.push(FileWork {
                    path: path.clone(),
                    edits: Vec::new(),
                });
                files.len() - 1
            }
        };
        for op in ops {
            files[slot].edits.push((index, op));
            index += 1;
        }
    }
    files
}

/// Reads and resolves every file of `patch`; writes nothing.
pub fn plan(ws: &Workspace, patch: &Patch, opts: &ApplyOptions) -> Plan {
    let mut files = Vec::new();
    let mut writes = Vec::new();
    let mut originals: HashMap<String, Document> = HashMap::new();
    for work in group(patch, opts.default_path.as_ref()) {
        let (report, outcome) = plan_file(ws, &work, opts);
        if let Some(o) = outcome {
            match o.after {
                Some(after) => writes.push(PlannedWrite {
                    path: report.path.clone(),
                    hash: o.hash,
                    before: o.before,
                    after,
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
    for w in &writes {
        originals.insert(w.path.clone(), w.before.clone());
    }
    let mut report = ApplyReport {
        ok,
        written: false,
        files,
        message: String::new(),
    };
    report.message = feedback::apply_message(&report, &originals, opts.partial);
    Plan { report, writes }
}

/// What a file becomes: `after` is `None` when it is not written.
struct Outcome {
    before: Document,
    after: Option<Document>,
    hash: Option<u64>,
}

fn plan_file(
    ws: &Workspace,
    work: &FileWork<'_>,
    opts: &ApplyOptions,
) -> (FileReport, Option<Outcome>) {
    let mut report = FileReport {
        path: work.path.clone().unwrap_or_default(),
        new_path: None,
        status: FileStatus::Failed,
        edits: work
            .edits
            .iter()
            .map(|(i, op)| EditReport::new(*i, op.source_line()))
            .collect(),
        error: None,
    };
    let fail_all = |report: &mut FileReport, e: EditError| {
        for edit in &mut report.edits {
            edit.fail(e.clone());
        }
        report.error = Some(e);
    };
    let Some(path) = &work.path else {
        fail_all(&mut report, EditError::NoPath);
        return (report, None);
    };
    let state = match ws.read(path) {
        Ok(s) => s,
        Err(WorkspaceError::Io { source, .. }) => {
            fail_all(
                &mut report,
                EditError::Unreadable {
                    kind: source.kind(),
                },
            );
            return (report, None);
        }
        Err(e) => {
            let why = match e {
                WorkspaceError::Absolute { .. } => PathProblem::Absolute,
                WorkspaceError::Reserved { .. } => PathProblem::Reserved,
                WorkspaceError::IsDirectory { .. } => PathProblem::Directory,
                WorkspaceError::InvalidPath { .. } => PathProblem::Invalid,
                _ => PathProblem::Outside,
            };
            fail_all(&mut report, EditError::PathRefused { why });
            return (report, None);
        }
    };
    let exists = state.is_some();
    let hash = state.as_ref().map(|s| s.hash);
    if let (Some(expected), Some(now)) = (opts.expected_hashes.get(path), hash) {
        if *expected != now {
            fail_all(&mut report, EditError::Stale);
            return (report, None);
        }
    }
    let doc = match state {
        Some(s) => match Document::from_vec(s.bytes) {
            Ok(d) => d,
            Err(e) => {
                fail_all(&mut report, EditError::Undecodable(e));
                return (report, None);
            }
        },
        None => Document::default(),
    };
    let ops: Vec<&EditOp> = work.edits.iter().map(|(_, op)| *op).collect();
    let ctx = ResolveContext {
        exists,
        matching: &opts.matching,
    };
    let after = resolve_file(&doc, &ops, &ctx, opts.sequential, &mut report.edits);
    let all_ok = report.edits.iter().all(|e| e.status.is_ok());
    let creates = !exists && report.edits.iter().any(|e| e.status == EditStatus::Applied);
    if !exists && !creates {
        // Nothing to create: the edits of a missing file failed because it is missing.
        for e in &mut report.edits {
            if e.status == EditStatus::NotFound {
                e.fail(EditError::FileMissing);
            }
        }
    }
    report.status = if !all_ok && !opts.partial || !exists && !creates {
        FileStatus::Failed
    } else if creates {
        FileStatus::Created
    } else if after == doc {
        FileStatus::Unchanged
    } else {
        FileStatus::Modified
    };
    let written = matches!(report.status, FileStatus::Created | FileStatus::Modified);
    let outcome = Outcome {
        before: doc,
        after: written.then_some(after),
        hash,
    };
    (report, Some(outcome))
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
    let mut resolved: Vec<Option<Resolution>> = Vec::with_capacity(ops.len());
    for (op, report) in ops.iter().zip(reports.iter_mut()) {
        match op.resolve(doc, ctx) {
            Ok(res) => {
                record(report, &res);
                resolved.push(Some(res));
            }
            Err(e) => {
                report.fail(e);
                resolved.push(None);
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
    explain_dependencies(doc, ops, ctx, &resolved, reports);
    doc.apply(&edit)
}

fn add_resolution(b: &mut TextEditBuilder, res: &Resolution, origin: usize) {
    if res.status != EditStatus::Applied {
        return;
    }
    for p in &res.pieces {
        b.replace(p.range.clone(), p.lines.clone(), origin);
    }
    if let Some(w) = res.final_newline {
        b.set_final_newline(w, origin);
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

/// The content hash the workspace uses, for callers tracking what they read.
pub fn hash_of(bytes: &[u8]) -> u64 {
    content_hash(bytes)
}
