//! The workspace: the only place lancet touches the disk.
//!
//! A [`Workspace`] is a canonical root directory. Every path a model or a
//! person writes goes through [`Workspace::resolve`], which confines it to the
//! root: absolute paths, `..` escapes, symlink escapes and the reserved
//! `.lancet/` and `.git/` directories are refused before a byte is read.
//! [`Workspace::commit`] applies a set of [`Change`]s all or nothing: it
//! re-checks every file against the hash the caller planned against, stages
//! the new contents in synced temp files beside their destinations, journals
//! the originals under `.lancet/undo/<id>/`, and only then renames over the
//! originals, rolling back from the journal if a rename fails midway.
//! [`Workspace::undo`] reverts the newest journal entry when nothing has
//! touched its files since.
//!
//! Owns: path confinement, staleness checks, atomic multi-file writes, file
//! modes and the undo journal. Does not own: what the new contents are (the
//! engine decides) or how a refusal is worded for a model (the feedback
//! module).
//!
//! Invariant: a commit that returns an error has left every file under the
//! root as it found it. The one exception is a rollback that itself fails; its
//! journal entry is then kept, because it holds the only copy of the originals.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Top-level directories edits may never touch. Compared without ASCII case,
/// because on macOS and Windows `.GIT/config` is `.git/config`.
const RESERVED: [&str; 2] = [".lancet", ".git"];
/// How many undo journal entries are kept.
const JOURNAL_KEEP: usize = 20;
/// Numbers temp files and journal ids, so two commits of one process never collide.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A root directory that every read and write is confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// A file as read: its bytes, their content hash, and its mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    /// The file's bytes, unchanged.
    pub bytes: Vec<u8>,
    /// [`content_hash`] of `bytes`.
    pub hash: u64,
    /// The unix permission bits (`None` on other platforms).
    pub mode: Option<u32>,
}

/// The content hash used for staleness checks: xxh3-64 of the bytes.
pub fn content_hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// One change of a commit. Paths are relative, as given to [`Workspace::resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// Create or overwrite `path` with `bytes`.
    Write {
        /// Where to write.
        path: String,
        /// The new content.
        bytes: Vec<u8>,
        /// Hash of the content the caller planned against; `None`: the file
        /// should not exist. Any difference on disk refuses the whole commit.
        expected_hash: Option<u64>,
        /// The file's mode afterwards; `None`: an existing file keeps its own,
        /// a new one gets the default.
        mode: Option<u32>,
    },
    /// Delete `path`, which must still hold the content hashed `expected_hash`.
    Delete {
        /// What to delete.
        path: String,
        /// Hash of the content the caller planned against.
        expected_hash: u64,
    },
}

/// What a successful commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitReceipt {
    /// The journal id; [`Workspace::undo`] reverts the newest one.
    pub id: String,
    /// The new content hash of every written path, in change order (deleted paths absent).
    pub hashes: Vec<(String, u64)>,
}

/// What a successful undo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoReceipt {
    /// The id of the commit that was reverted.
    pub id: String,
    /// Paths put back to their content before the commit (overwritten or deleted ones).
    pub restored: Vec<String>,
    /// Files the commit had created, now deleted.
    pub removed: Vec<String>,
}

/// Why a workspace operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The root directory does not exist.
    #[error("workspace root {} not found", path.display())]
    RootNotFound {
        /// The root as given.
        path: PathBuf,
    },
    /// The root exists but is not a directory.
    #[error("workspace root {} is not a directory", path.display())]
    RootNotDirectory {
        /// The root, canonicalised.
        path: PathBuf,
    },
    /// The path leaves the root, through `..` or a symlink.
    #[error("{path} is outside the workspace")]
    OutsideRoot {
        /// The path as written.
        path: String,
    },
    /// The path is absolute (`/x`, `\x`, `C:\x`).
    #[error("{path} is absolute")]
    Absolute {
        /// The path as written.
        path: String,
    },
    /// The path is empty, contains NUL, or names the root itself.
    #[error("{path:?} is not a file path")]
    InvalidPath {
        /// The path as written.
        path: String,
    },
    /// The path is inside `.lancet/` or `.git/`.
    #[error("{path} is in a reserved directory")]
    Reserved {
        /// The path as written.
        path: String,
    },
    /// The path names a directory, not a file.
    #[error("{path} is a directory")]
    IsDirectory {
        /// The path as written.
        path: String,
    },
    /// Two changes of one commit name the same file.
    #[error("{path} is changed twice in one commit")]
    DuplicatePath {
        /// The second change's path, as written.
        path: String,
    },
    /// The file on disk is not the one the change was planned against.
    #[error("{path} changed since the edit was planned")]
    Stale {
        /// The path as written.
        path: String,
    },
    /// A journal copy does not hold what was saved (the machine stopped
    /// before the journal reached the disk): undo refuses rather than restore it.
    #[error("the undo journal's copy of {path} is damaged")]
    JournalDamaged {
        /// The file whose copy is damaged.
        path: String,
    },
    /// The journal holds no commit.
    #[error("nothing to undo")]
    NothingToUndo,
    /// A file changed after the commit being undone.
    #[error("{path} changed since the commit being undone")]
    UndoConflict {
        /// The path as the commit recorded it.
        path: String,
    },
    /// Reading or writing the disk failed (an unreadable journal manifest included).
    #[error("i/o error at {}", path.display())]
    Io {
        /// The absolute path involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl WorkspaceError {
    /// True for [`WorkspaceError::Io`]: the disk, not the request, is at fault.
    pub fn is_io(&self) -> bool {
        matches!(self, Self::Io { .. })
    }
}

/// Maps an I/O error to [`WorkspaceError::Io`] at `path`.
fn io_at(path: &Path) -> impl FnOnce(io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One journal entry's record, stored as `manifest.json`.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    entries: Vec<Entry>,
    /// Directories the commit created, relative to the root, outermost first.
    created_dirs: Vec<String>,
}

/// One path of a journalled commit.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    path: String,
    existed: bool,
    /// Name of the saved original under `files/` (present exactly when `existed`).
    saved: Option<String>,
    mode: Option<u32>,
    /// Hash of the content the commit left; `None` when it deleted the file.
    after: Option<u64>,
    /// Hash of the saved original: undo checks the copy against it, so the
    /// journal need not be synced to disk (a copy a crash cut short is refused,
    /// never restored).
    #[serde(default)]
    before: Option<u64>,
}

/// A change resolved and checked against the disk, ready to stage.
struct Planned<'a> {
    rel: &'a str,
    abs: PathBuf,
    /// The new bytes; `None` for a delete.
    new: Option<&'a [u8]>,
    /// The mode the new file gets.
    mode: Option<u32>,
    before: Option<FileState>,
}

impl Workspace {
    /// Opens a root directory, canonicalised.
    pub fn open(root: &Path) -> Result<Workspace, WorkspaceError> {
        let canon = fs::canonicalize(root).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => WorkspaceError::RootNotFound { path: root.into() },
            _ => io_at(root)(source),
        })?;
        if !canon.is_dir() {
            return Err(WorkspaceError::RootNotDirectory { path: canon });
        }
        Ok(Workspace { root: canon })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Confines a relative path written by a model or a person to the root
    /// and returns the absolute path to use.
    ///
    /// Refuses absolute paths (`/x`, `\x`, `C:\x`), paths whose lexical
    /// normalisation leaves the root, empty paths, paths with NUL, paths whose
    /// existing part resolves (through symlinks) outside the root, and paths in
    /// `.lancet/` or `.git/`. `a/../b` is `b`. The existing part of the
    /// returned path is canonical, so a symlink inside the root is followed.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, WorkspaceError> {
        let path = || rel.to_owned();
        if rel.is_empty() || rel.contains('\0') {
            return Err(WorkspaceError::InvalidPath { path: path() });
        }
        // A drive prefix means nothing on unix, but a model that writes one
        // means an absolute path; refusing it everywhere keeps behaviour the same.
        let drive = matches!(rel.as_bytes(), [d, b':', ..] if d.is_ascii_alphabetic());
        if drive || rel.starts_with(['/', '\\']) || Path::new(rel).has_root() {
            return Err(WorkspaceError::Absolute { path: path() });
        }
        let mut norm = PathBuf::new();
        for component in Path::new(rel).components() {
            match component {
                Component::Normal(part) => norm.push(part),
                Component::CurDir => {}
                Component::ParentDir if norm.pop() => {}
                Component::ParentDir => return Err(WorkspaceError::OutsideRoot { path: path() }),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(WorkspaceError::Absolute { path: path() });
                }
            }
        }
        let abs = self.confine(rel, &self.root.join(&norm))?;
        let inside = abs.strip_prefix(&self.root).unwrap_or(&abs);
        match inside.components().next() {
            None => Err(WorkspaceError::InvalidPath { path: path() }),
            Some(Component::Normal(first))
                if RESERVED.iter().any(|r| first.eq_ignore_ascii_case(r)) =>
            {
                Err(WorkspaceError::Reserved { path: path() })
            }
            Some(_) => Ok(abs),
        }
    }

    /// Canonicalises the longest existing ancestor of `full` and refuses it
    /// when it lies outside the root; the missing rest is appended unchanged.
    fn confine(&self, rel: &str, full: &Path) -> Result<PathBuf, WorkspaceError> {
        let mut existing = full;
        loop {
            let err = match fs::canonicalize(existing) {
                Ok(canon) if canon.starts_with(&self.root) => {
                    return Ok(match full.strip_prefix(existing) {
                        Ok(rest) if !rest.as_os_str().is_empty() => canon.join(rest),
                        _ => canon,
                    });
                }
                Ok(_) => {
                    return Err(WorkspaceError::OutsideRoot {
                        path: rel.to_owned(),
                    });
                }
                Err(err) => err,
            };
            // A missing component, or a file where a directory should be: look
            // at the parent. The root itself must exist.
            let missing = matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            );
            match existing.parent() {
                Some(parent) if missing && existing != self.root => existing = parent,
                _ => return Err(io_at(existing)(err)),
            }
        }
    }

    /// Reads a file: `Ok(None)` when it does not exist.
    pub fn read(&self, rel: &str) -> Result<Option<FileState>, WorkspaceError> {
        read_abs(&self.resolve(rel)?, rel)
    }

    /// Writes every change or none.
    ///
    /// Every `expected_hash` is re-checked first ([`WorkspaceError::Stale`]);
    /// new contents are staged in synced temp files beside their destinations
    /// (existing files keep their mode); the originals are journalled for
    /// [`undo`](Self::undo); then the temps are renamed over the destinations
    /// and deletions performed. A failure at any step leaves the files as they
    /// were. An empty commit touches nothing, not even the journal.
    pub fn commit(&self, changes: &[Change]) -> Result<CommitReceipt, WorkspaceError> {
        let plan = self.plan(changes)?;
        let id = new_id();
        if !plan.is_empty() {
            self.apply(&plan, Some(&id))?;
            self.prune();
        }
        let hashes = plan
            .iter()
            .filter_map(|p| Some((p.rel.to_owned(), content_hash(p.new?))))
            .collect();
        Ok(CommitReceipt { id, hashes })
    }

    /// Resolves every change, refuses duplicates and checks staleness.
    fn plan<'a>(&self, changes: &'a [Change]) -> Result<Vec<Planned<'a>>, WorkspaceError> {
        let mut plan: Vec<Planned<'a>> = Vec::with_capacity(changes.len());
        for change in changes {
            let (rel, expected, new, mode) = match change {
                Change::Write {
                    path,
                    bytes,
                    expected_hash,
                    mode,
                } => (path, *expected_hash, Some(bytes.as_slice()), *mode),
                Change::Delete {
                    path,
                    expected_hash,
                } => (path, Some(*expected_hash), None, None),
            };
            let abs = self.resolve(rel)?;
            if plan.iter().any(|p| p.abs == abs) {
                return Err(WorkspaceError::DuplicatePath { path: rel.clone() });
            }
            let before = read_abs(&abs, rel)?;
            if before.as_ref().map(|b| b.hash) != expected {
                return Err(WorkspaceError::Stale { path: rel.clone() });
            }
            let mode = mode.or_else(|| before.as_ref().and_then(|b| b.mode));
            plan.push(Planned {
                rel,
                abs,
                new,
                mode,
                before,
            });
        }
        Ok(plan)
    }

    /// Stages every new content, journals the plan under `id` (when given),
    /// then renames and deletes; any failure puts everything back.
    fn apply(&self, plan: &[Planned<'_>], id: Option<&str>) -> Result<(), WorkspaceError> {
        let (mut temps, mut created) = (Vec::with_capacity(plan.len()), Vec::new());
        for p in plan {
            let staged = match p.new {
                None => Ok(None),
                Some(bytes) => self.make_parents(&p.abs, &mut created).and_then(|()| {
                    stage(&p.abs, bytes, p.mode)
                        .map(Some)
                        .map_err(io_at(&p.abs))
                }),
            };
            match staged {
                Ok(temp) => temps.push(temp),
                Err(err) => return Err(discard(&temps, &created, err)),
            }
        }
        let entry = match id.map(|id| self.journal(id, plan, &created)).transpose() {
            Ok(entry) => entry,
            Err(err) => return Err(discard(&temps, &created, err)),
        };
        for (i, (p, temp)) in plan.iter().zip(&temps).enumerate() {
            let done = fail_point(i).and_then(|()| match temp {
                Some(temp) => fs::rename(temp, &p.abs),
                None => fs::remove_file(&p.abs),
            });
            if let Err(source) = done {
                // A failed rollback keeps the entry: it holds the only copy of the originals.
                if let Some(entry) = entry.filter(|_| rollback(&plan[..i])) {
                    let _ = fs::remove_dir_all(entry);
                }
                return Err(discard(&temps[i..], &created, io_at(&p.abs)(source)));
            }
        }
        Ok(())
    }

    /// Creates the missing parents of `abs`, recording each one in `created`
    /// (outermost first) so a failure can remove them again.
    fn make_parents(&self, abs: &Path, created: &mut Vec<PathBuf>) -> Result<(), WorkspaceError> {
        let mut missing = Vec::new();
        let mut dir = abs.parent();
        while let Some(d) = dir.filter(|d| *d != self.root && fs::symlink_metadata(d).is_err()) {
            missing.push(d);
            dir = d.parent();
        }
        for d in missing.into_iter().rev() {
            fs::create_dir(d).map_err(io_at(d))?;
            created.push(d.to_path_buf());
        }
        Ok(())
    }

    /// The directory holding one subdirectory per journal entry.
    fn undo_dir(&self) -> PathBuf {
        self.root.join(".lancet").join("undo")
    }

    /// Saves the originals and the manifest of a commit; returns the entry's directory.
    fn journal(
        &self,
        id: &str,
        plan: &[Planned<'_>],
        created: &[PathBuf],
    ) -> Result<PathBuf, WorkspaceError> {
        let dir = self.undo_dir().join(id);
        let files = dir.join("files");
        fs::create_dir_all(&files).map_err(io_at(&files))?;
        // `*` in `.lancet/.gitignore` keeps the whole journal, itself included, out of git.
        let ignore = self.root.join(".lancet").join(".gitignore");
        let write = || -> Result<(), WorkspaceError> {
            if !ignore.exists() {
                fs::write(&ignore, "*\n").map_err(io_at(&ignore))?;
            }
            let mut entries = Vec::with_capacity(plan.len());
            for (n, p) in plan.iter().enumerate() {
                let copy = files.join(n.to_string());
                if let Some(before) = &p.before {
                    fs::write(&copy, &before.bytes).map_err(io_at(&copy))?;
                }
                entries.push(Entry {
                    path: p.rel.to_owned(),
                    existed: p.before.is_some(),
                    saved: p.before.as_ref().map(|_| n.to_string()),
                    mode: p.before.as_ref().and_then(|b| b.mode),
                    after: p.new.map(content_hash),
                    before: p.before.as_ref().map(|b| b.hash),
                });
            }
            // A directory whose name is not UTF-8 is left out; undo then leaves it behind, empty.
            let created_dirs = created
                .iter()
                .filter_map(|d| Some(d.strip_prefix(&self.root).ok()?.to_str()?.to_owned()))
                .collect();
            let manifest = dir.join("manifest.json");
            let json = serde_json::to_vec_pretty(&Manifest {
                entries,
                created_dirs,
            })
            .map_err(|err| io_at(&manifest)(err.into()))?;
            // Written aside and renamed, so an entry has a manifest only once it is complete.
            let temp = dir.join("manifest.json.tmp");
            fs::write(&temp, &json).map_err(io_at(&temp))?;
            fs::rename(&temp, &manifest).map_err(io_at(&manifest))
        };
        match write() {
            Ok(()) => Ok(dir),
            Err(err) => {
                let _ = fs::remove_dir_all(&dir);
                Err(err)
            }
        }
    }

    /// Journal entries, oldest first (ids sort by time).
    fn entries(&self) -> Result<Vec<(String, PathBuf)>, WorkspaceError> {
        let undo = self.undo_dir();
        let listing = match fs::read_dir(&undo) {
            Ok(listing) => listing,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(io_at(&undo)(source)),
        };
        let mut entries = Vec::new();
        for item in listing {
            let item = item.map_err(io_at(&undo))?;
            if item.file_type().is_ok_and(|t| t.is_dir())
                && let Some(name) = item.file_name().to_str()
            {
                entries.push((name.to_owned(), item.path()));
            }
        }
        entries.sort();
        Ok(entries)
    }

    /// Drops all but the newest [`JOURNAL_KEEP`] entries. Best effort: the
    /// commit has already happened, and an extra old entry harms nothing.
    fn prune(&self) {
        if let Ok(entries) = self.entries() {
            let excess = entries.len().saturating_sub(JOURNAL_KEEP);
            for (_, dir) in entries.iter().take(excess) {
                let _ = fs::remove_dir_all(dir);
            }
        }
    }

    /// Reverts the most recent commit recorded in the journal.
    ///
    /// Every file must still hold what the commit left (or still be absent if
    /// it deleted it), else [`WorkspaceError::UndoConflict`] and nothing
    /// changes. The undo is itself all or nothing, like a commit.
    pub fn undo(&self) -> Result<UndoReceipt, WorkspaceError> {
        // An entry without a manifest was cut short before its commit touched
        // any file (the manifest is renamed into place last), so it is skipped.
        let (id, dir) = self
            .entries()?
            .into_iter()
            .rev()
            .find(|(_, dir)| dir.join("manifest.json").is_file())
            .ok_or(WorkspaceError::NothingToUndo)?;
        let path = dir.join("manifest.json");
        let text = fs::read(&path).map_err(io_at(&path))?;
        let manifest: Manifest =
            serde_json::from_slice(&text).map_err(|err| io_at(&path)(err.into()))?;
        // The reverse of the commit, planned against what the commit left.
        let mut changes = Vec::with_capacity(manifest.entries.len());
        for e in manifest.entries {
            changes.push(match (e.saved, e.after) {
                (Some(saved), expected_hash) => {
                    let copy = dir.join("files").join(saved);
                    let bytes = fs::read(&copy).map_err(io_at(&copy))?;
                    if e.before.is_some_and(|h| h != content_hash(&bytes)) {
                        return Err(WorkspaceError::JournalDamaged { path: e.path });
                    }
                    Change::Write {
                        path: e.path,
                        bytes,
                        expected_hash,
                        mode: e.mode,
                    }
                }
                (None, Some(expected_hash)) => Change::Delete {
                    path: e.path,
                    expected_hash,
                },
                // Absent before and after: nothing to put back.
                (None, None) => continue,
            });
        }
        let mut plan = self.plan(&changes).map_err(|err| match err {
            WorkspaceError::Stale { path } | WorkspaceError::IsDirectory { path } => {
                WorkspaceError::UndoConflict { path }
            }
            err => err,
        })?;
        // Files that existed get their old mode back, not the one they have now.
        for (p, change) in plan.iter_mut().zip(&changes) {
            if let Change::Write { mode, .. } = change {
                p.mode = *mode;
            }
        }
        self.apply(&plan, None)?;
        // Going through `resolve` means a symlink planted since cannot redirect the removal.
        for d in manifest.created_dirs.iter().rev() {
            if let Ok(abs) = self.resolve(d) {
                let _ = fs::remove_dir(abs);
            }
        }
        fs::remove_dir_all(&dir).map_err(io_at(&dir))?;
        let (mut restored, mut removed) = (Vec::new(), Vec::new());
        for change in changes {
            match change {
                Change::Write { path, .. } => restored.push(path),
                Change::Delete { path, .. } => removed.push(path),
            }
        }
        Ok(UndoReceipt {
            id,
            restored,
            removed,
        })
    }
}

/// Reads the file at `abs`; `rel` names it in errors.
fn read_abs(abs: &Path, rel: &str) -> Result<Option<FileState>, WorkspaceError> {
    let meta = match fs::metadata(abs) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(io_at(abs)(source)),
    };
    if meta.is_dir() {
        return Err(WorkspaceError::IsDirectory {
            path: rel.to_owned(),
        });
    }
    let bytes = fs::read(abs).map_err(io_at(abs))?;
    Ok(Some(FileState {
        hash: content_hash(&bytes),
        mode: mode_of(&meta),
        bytes,
    }))
}

/// A sortable, unique journal id: milliseconds since the epoch, process id, counter.
fn new_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{millis:016}-{:010}-{n:020}", std::process::id())
}

/// Writes `bytes` to a new temp file beside `dest`, with `mode`, synced to
/// disk: renaming an unsynced file can leave an empty one after a crash.
fn stage(dest: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<PathBuf> {
    let (Some(dir), Some(name)) = (dest.parent(), dest.file_name()) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let temp = dir.join(format!(".{}.lancet-tmp-{pid}-{n}", name.to_string_lossy()));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| set_mode(&file, mode))
        .and_then(|()| file.sync_all());
    drop(file);
    written.map(|()| temp.clone()).inspect_err(|_| {
        let _ = fs::remove_file(&temp);
    })
}

/// Removes leftover temps, then the directories a failed step created
/// (innermost first), and hands back the error that caused it.
fn discard(temps: &[Option<PathBuf>], created: &[PathBuf], err: WorkspaceError) -> WorkspaceError {
    for temp in temps.iter().flatten() {
        let _ = fs::remove_file(temp);
    }
    for dir in created.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
    err
}

/// Puts back what the changes in `applied` did; true when all were put back.
fn rollback(applied: &[Planned<'_>]) -> bool {
    let mut all = true;
    for p in applied.iter().rev() {
        let undone = match &p.before {
            Some(before) => stage(&p.abs, &before.bytes, before.mode).and_then(|temp| {
                fs::rename(&temp, &p.abs).inspect_err(|_| {
                    let _ = fs::remove_file(&temp);
                })
            }),
            None => fs::remove_file(&p.abs),
        };
        all &= undone.is_ok();
    }
    all
}

#[cfg(test)]
thread_local! {
    /// Test hook: the index of the change whose rename or delete should fail.
    static FAIL_AT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Fails the rename or delete of change `_n` when a test asks for it, so the
/// rollback path, which real disks rarely take, is tested; a no-op otherwise.
fn fail_point(_n: usize) -> io::Result<()> {
    #[cfg(test)]
    if FAIL_AT.get() == Some(_n) {
        return Err(io::Error::other("injected failure"));
    }
    Ok(())
}

#[cfg(unix)]
fn mode_of(meta: &fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    Some(meta.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn mode_of(_meta: &fs::Metadata) -> Option<u32> {
    None
}

#[cfg(unix)]
fn set_mode(file: &File, mode: Option<u32>) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    mode.map_or(Ok(()), |mode| {
        file.set_permissions(fs::Permissions::from_mode(mode))
    })
}

/// Modes are unix bits; elsewhere the platform default applies.
#[cfg(not(unix))]
fn set_mode(_file: &File, _mode: Option<u32>) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use WorkspaceError as E;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        (dir, ws)
    }

    fn put(ws: &Workspace, rel: &str, bytes: &[u8]) -> u64 {
        let path = ws.root().join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
        content_hash(bytes)
    }

    fn write(path: &str, bytes: &[u8], expected_hash: Option<u64>) -> Change {
        let (path, bytes, mode) = (path.into(), bytes.into(), None);
        Change::Write {
            path,
            bytes,
            expected_hash,
            mode,
        }
    }

    fn delete(path: &str, expected_hash: u64) -> Change {
        let path = path.into();
        Change::Delete {
            path,
            expected_hash,
        }
    }

    fn on_disk(ws: &Workspace, rel: &str) -> Option<Vec<u8>> {
        fs::read(ws.root().join(rel)).ok()
    }

    /// Names in the root, sorted: shows stray temp files and directories.
    fn listing(ws: &Workspace) -> Vec<String> {
        let names = fs::read_dir(ws.root())
            .unwrap()
            .map(|e| e.unwrap().file_name());
        let mut names: Vec<_> = names.map(|n| n.into_string().unwrap()).collect();
        names.sort();
        names
    }

    fn journal_len(ws: &Workspace) -> usize {
        ws.entries().unwrap().len()
    }

    /// How `resolve` answered, as a short name for the case tables.
    fn verdict(ws: &Workspace, rel: &str) -> &'static str {
        match ws.resolve(rel) {
            Ok(_) => "ok",
            Err(E::OutsideRoot { .. }) => "outside",
            Err(E::Absolute { .. }) => "absolute",
            Err(E::InvalidPath { .. }) => "invalid",
            Err(E::Reserved { .. }) => "reserved",
            Err(_) => "other",
        }
    }

    #[test]
    fn confinement() {
        let (_dir, ws) = setup();
        let cases = [
            ("../x", "outside"),
            ("a/../../x", "outside"),
            ("/etc/passwd", "absolute"),
            ("C:\\x", "absolute"),
            ("\\x", "absolute"),
            (".lancet/x", "reserved"),
            ("a/../.git/config", "reserved"),
            ("", "invalid"),
            ("a\0b", "invalid"),
            ("a/..", "invalid"),
            ("a/../b", "ok"),
        ];
        for (rel, want) in cases {
            assert_eq!(verdict(&ws, rel), want, "{rel:?}");
        }
        assert_eq!(ws.resolve("a/../b").unwrap(), ws.root().join("b"));
        assert_eq!(ws.resolve("./x/y.rs").unwrap(), ws.root().join("x/y.rs"));
    }

    #[cfg(unix)]
    #[test]
    fn symlink_escape_is_refused() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), ws.root().join("link")).unwrap();
        fs::create_dir(ws.root().join(".git")).unwrap();
        symlink(ws.root().join(".git"), ws.root().join("g")).unwrap();
        symlink(ws.root().join("real"), ws.root().join("inner")).unwrap();
        let cases = [
            ("link", "outside"),
            ("link/x", "outside"),
            ("link/new/x", "outside"),
            ("g/config", "reserved"),
            ("inner/x", "ok"),
        ];
        for (rel, want) in cases {
            assert_eq!(verdict(&ws, rel), want, "{rel:?}");
        }
    }

    #[test]
    fn read_missing_and_directory() {
        let (_dir, ws) = setup();
        assert_eq!(ws.read("nope.txt").unwrap(), None);
        fs::create_dir(ws.root().join("d")).unwrap();
        assert!(matches!(ws.read("d"), Err(E::IsDirectory { .. })));
        let hash = put(&ws, "f", b"hi");
        assert_eq!(ws.read("f").unwrap().unwrap().hash, hash);
    }

    #[test]
    fn commit_writes_all_and_creates_nested() {
        let (_dir, ws) = setup();
        let (a, b) = (put(&ws, "a.txt", b"a\n"), put(&ws, "src/b.txt", b"b\n"));
        let receipt = ws
            .commit(&[
                write("a.txt", b"A\n", Some(a)),
                write("src/b.txt", b"B\n", Some(b)),
                write("new/deep/c.txt", b"C\n", None),
            ])
            .unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"A\n");
        assert_eq!(on_disk(&ws, "src/b.txt").unwrap(), b"B\n");
        assert_eq!(on_disk(&ws, "new/deep/c.txt").unwrap(), b"C\n");
        let c = ("new/deep/c.txt".to_owned(), content_hash(b"C\n"));
        assert_eq!(receipt.hashes[2], c);
        assert_eq!(on_disk(&ws, ".lancet/.gitignore").unwrap(), b"*\n");
        assert_eq!(listing(&ws), [".lancet", "a.txt", "new", "src"]);
    }

    #[test]
    fn stale_change_writes_nothing() {
        let (_dir, ws) = setup();
        let a = put(&ws, "a.txt", b"a\n");
        put(&ws, "b.txt", b"changed by someone\n");
        let err = ws
            .commit(&[
                write("a.txt", b"A\n", Some(a)),
                write("b.txt", b"B\n", Some(content_hash(b"b\n"))),
                write("new/c.txt", b"C\n", None),
            ])
            .unwrap_err();
        assert!(matches!(err, E::Stale { ref path } if path == "b.txt"));
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"a\n");
        assert_eq!(listing(&ws), ["a.txt", "b.txt"]);
        // Expecting absence where a file exists is stale too.
        let err = ws.commit(&[write("a.txt", b"x", None)]).unwrap_err();
        assert!(matches!(err, E::Stale { .. }));
        let twice = [
            write("a.txt", b"x", Some(a)),
            write("./a.txt", b"y", Some(a)),
        ];
        assert!(matches!(ws.commit(&twice), Err(E::DuplicatePath { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn modes_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, ws) = setup();
        let h = put(&ws, "run.sh", b"#!/bin/sh\n");
        fs::set_permissions(ws.root().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        let mut new = write("new.sh", b"x", None);
        if let Change::Write { mode, .. } = &mut new {
            *mode = Some(0o700);
        }
        let old = write("run.sh", b"#!/bin/sh\necho\n", Some(h));
        ws.commit(&[old, new]).unwrap();
        assert_eq!(ws.read("run.sh").unwrap().unwrap().mode, Some(0o755));
        assert_eq!(ws.read("new.sh").unwrap().unwrap().mode, Some(0o700));
        // An explicit mode changes an existing file's mode (a diff's `new mode`).
        let h = ws.read("run.sh").unwrap().unwrap().hash;
        let mut chmod = write("run.sh", b"#!/bin/sh\necho\n", Some(h));
        if let Change::Write { mode, .. } = &mut chmod {
            *mode = Some(0o644);
        }
        ws.commit(&[chmod]).unwrap();
        assert_eq!(ws.read("run.sh").unwrap().unwrap().mode, Some(0o644));
    }

    #[test]
    fn undo_restores_removes_and_recreates() {
        let (_dir, ws) = setup();
        let a = put(&ws, "a.txt", b"line\r\nno final newline");
        let gone = put(&ws, "gone.txt", b"keep me\n");
        let receipt = ws
            .commit(&[
                write("a.txt", b"new\n", Some(a)),
                write("made/here.txt", b"fresh\n", None),
                delete("gone.txt", gone),
            ])
            .unwrap();
        assert_eq!(on_disk(&ws, "gone.txt"), None);
        let undone = ws.undo().unwrap();
        assert_eq!(undone.id, receipt.id);
        assert_eq!(undone.restored, ["a.txt", "gone.txt"]);
        assert_eq!(undone.removed, ["made/here.txt"]);
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"line\r\nno final newline");
        assert_eq!(on_disk(&ws, "gone.txt").unwrap(), b"keep me\n");
        assert_eq!(listing(&ws), [".lancet", "a.txt", "gone.txt"]);
        assert!(matches!(ws.undo(), Err(E::NothingToUndo)));
    }

    #[test]
    fn undo_refuses_after_outside_change() {
        let (_dir, ws) = setup();
        let a = put(&ws, "a.txt", b"one\n");
        let changes = [
            write("a.txt", b"two\n", Some(a)),
            write("b.txt", b"b\n", None),
        ];
        ws.commit(&changes).unwrap();
        put(&ws, "a.txt", b"three\n");
        let err = ws.undo().unwrap_err();
        assert!(matches!(err, E::UndoConflict { ref path } if path == "a.txt"));
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"three\n");
        assert_eq!(on_disk(&ws, "b.txt").unwrap(), b"b\n");
        assert_eq!(journal_len(&ws), 1);
    }

    #[test]
    fn undo_refuses_a_damaged_journal_copy() {
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        ws.commit(&[write("a.txt", b"changed\n", Some(h))]).unwrap();
        // As if the machine stopped before the unsynced copy reached the disk.
        let entry = fs::read_dir(ws.root().join(".lancet/undo"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        fs::write(entry.join("files/0"), b"").unwrap();
        assert!(matches!(
            ws.undo(),
            Err(WorkspaceError::JournalDamaged { .. })
        ));
        assert_eq!(ws.read("a.txt").unwrap().unwrap().bytes, b"changed\n");
    }

    #[test]
    fn journal_keeps_twenty() {
        let (_dir, ws) = setup();
        let mut hash = None;
        for i in 0..25 {
            let bytes = format!("{i}\n").into_bytes();
            ws.commit(&[write("f.txt", &bytes, hash)]).unwrap();
            hash = Some(content_hash(&bytes));
        }
        assert_eq!(journal_len(&ws), JOURNAL_KEEP);
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "f.txt").unwrap(), b"23\n");
    }

    #[test]
    fn failed_rename_rolls_back() {
        let (_dir, ws) = setup();
        let (a, gone) = (put(&ws, "a.txt", b"a\n"), put(&ws, "gone.txt", b"g\n"));
        let changes = [
            write("a.txt", b"A\n", Some(a)),
            write("made/new.txt", b"N\n", None),
            delete("gone.txt", gone),
            write("b.txt", b"B\n", None),
        ];
        FAIL_AT.set(Some(3));
        let err = ws.commit(&changes).unwrap_err();
        FAIL_AT.set(None);
        assert!(err.is_io());
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"a\n");
        assert_eq!(on_disk(&ws, "gone.txt").unwrap(), b"g\n");
        assert_eq!(listing(&ws), [".lancet", "a.txt", "gone.txt"]);
        assert_eq!(journal_len(&ws), 0);
    }

    #[test]
    fn open_refuses_missing_and_files() {
        let (dir, ws) = setup();
        let missing = Workspace::open(&dir.path().join("missing"));
        assert!(matches!(missing, Err(E::RootNotFound { .. })));
        put(&ws, "file", b"");
        let file = Workspace::open(&ws.root().join("file"));
        assert!(matches!(file, Err(E::RootNotDirectory { .. })));
    }
}
