//! The workspace: the only place lancet touches the disk.
//!
//! A [`Workspace`] is a canonical root directory, held open. Every path a
//! model or a person writes goes through [`Workspace::resolve`], which confines
//! it to the root: absolute paths, `..` escapes, symlink escapes, overlong
//! paths and the reserved `.lancet/` and `.git/` directories are refused
//! before a byte is read; lancet's own configuration (`.lancet.toml`) may be
//! read but never written. Files are then reached from the root's handle one
//! directory at a time without following symlinks ([`dirs`]), so a directory
//! swapped for a symlink cannot redirect a read or a write, and anything that
//! is not a regular file (a FIFO, a device, a socket) is refused before it is
//! opened; files over [`Workspace::max_file_bytes`] are refused too.
//!
//! [`Workspace::commit`] applies a set of [`Change`]s all or nothing, under
//! the root's [lock](WorkspaceLock): it re-checks every file against the hash
//! the caller planned against, refuses symlinks as targets and read-only files
//! (unless [`CommitOptions::force`]), stages the new contents in temp
//! files beside their destinations (owner, group and permission bits kept;
//! never setuid, setgid or sticky), journals the originals under
//! `.lancet/undo/<id>/` ([`journal`]), re-checks each file's identity (device,
//! inode, size, mtime, content) and each directory's path right before the
//! renames, and only then renames over the originals, rolling back if a
//! rename fails midway. [`Workspace::undo`] reverts the newest journal entry
//! when nothing has touched its files since.
//!
//! Owns: path confinement, file types and sizes, staleness and identity
//! checks, atomic multi-file writes, ownership and modes, the state directory,
//! the lock and the undo journal. Does not own: what the new contents are (the
//! engine decides) or how a refusal is worded (the feedback module).
//!
//! Invariant: a commit that returns an error has left every file under the
//! root as it found it. The one exception is a rollback that itself fails; its
//! journal entry is then kept, because it holds the only copy of the originals.

pub(crate) mod dirs;
mod journal;
mod lock;
mod state;

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use dirs::FileKind;
use dirs::{Dir, Meta};
pub use journal::JournalProblem;
pub use lock::WorkspaceLock;
pub use state::StateDir;

/// Top-level directories edits may never touch. Compared without ASCII case,
/// because on macOS and Windows `.GIT/config` is `.git/config`.
const RESERVED: [&str; 2] = [".lancet", ".git"];
/// lancet's project configuration: readable by edits' authors, never writable
/// by them (a model that could write it could grant itself permissions).
const CONFIG: &str = ".lancet.toml";
/// How many undo journal entries are kept.
const JOURNAL_KEEP: usize = 20;
/// The longest path (in bytes) lancet resolves; longer ones are refused
/// before any work (the system's own limit is 4096 on Linux).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest single path component (in bytes) lancet resolves.
const MAX_NAME_BYTES: usize = 255;
/// The default for [`Workspace::max_file_bytes`]: 64 MiB.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// The default for [`Workspace::lock_wait`].
const LOCK_WAIT: Duration = Duration::from_secs(10);
/// Numbers temp files and journal ids, so two commits of one process never collide.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A root directory that every read and write is confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// The root, held open: every file is reached from this handle.
    dir: Arc<Dir>,
    max_file_bytes: u64,
    lock_wait: Duration,
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

/// A path as messages show it: whole up to 256 characters, else its first
/// 200 and its length, so a hostile multi-megabyte path is never echoed back
/// whole. A clipped path is short enough never to be clipped again.
pub fn clip_path(path: &str) -> Cow<'_, str> {
    const SHOWN: usize = 200;
    const LONGEST: usize = 256;
    if path.char_indices().nth(LONGEST).is_none() {
        return Cow::Borrowed(path);
    }
    match path.char_indices().nth(SHOWN) {
        None => Cow::Borrowed(path),
        Some((cut, _)) => Cow::Owned(format!("{}… ({} bytes)", &path[..cut], path.len())),
    }
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
        /// The file's permission bits afterwards (masked to 0o777); `None`: an
        /// existing file keeps its own, a new one gets the default.
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

/// How a commit behaves. `Default` is the safe behaviour.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CommitOptions {
    /// Write (or delete) files that lack write permission for their owner
    /// (refused otherwise: someone marked them read-only on purpose).
    pub force: bool,
    /// Keep no undo journal entry for this commit: nothing is written under
    /// `.lancet/` (not even the directory), and [`Workspace::undo`] cannot
    /// revert it (it reverts the newest journalled commit instead). For
    /// scripted use that has its own history (CI, version control). Every
    /// other guarantee (all or nothing, staleness and identity checks,
    /// modes and owners) holds as without it.
    pub no_undo: bool,
    /// Flush each new file to disk (`fsync`) before it replaces the
    /// original. Off by default, as in git and GNU patch: it costs about a
    /// millisecond per file (a third of a typical `lancet apply`, measured
    /// with `benches/process_udiff.sh`), and without it every guarantee
    /// against a failing or killed process and against concurrent readers
    /// holds — a file is replaced by a rename, whole or not at all. What it
    /// adds is durability across a power loss or kernel crash in the seconds
    /// after the write, before the system writes the data back (ext4 and
    /// btrfs already flush a file replaced by a rename with the rename;
    /// other file systems may leave it empty).
    pub fsync: bool,
}

/// What a successful commit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitReceipt {
    /// The journal id; [`Workspace::undo`] reverts the newest one. (Under
    /// [`CommitOptions::no_undo`] no entry of that id exists.)
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

/// Why a workspace operation failed. Paths are as written (clipped when
/// hostile-long); `Display` is one short line, the words for people and
/// models are in [`feedback`](crate::feedback).
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
    #[error("{} is outside the workspace", clip_path(path))]
    OutsideRoot {
        /// The path as written.
        path: String,
    },
    /// The path is absolute (`/x`, `\x`, `C:\x`).
    #[error("{} is absolute", clip_path(path))]
    Absolute {
        /// The path as written.
        path: String,
    },
    /// The path is empty, contains NUL, or names the root itself.
    #[error("{:?} is not a file path", clip_path(path))]
    InvalidPath {
        /// The path as written.
        path: String,
    },
    /// The path is longer than [`MAX_PATH_BYTES`], or one of its names longer than 255 bytes.
    #[error("the path {} is too long", clip_path(path))]
    PathTooLong {
        /// The path as written, clipped (see [`clip_path`]).
        path: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// The path is inside `.lancet/` or `.git/`.
    #[error("{} is in a reserved directory", clip_path(path))]
    Reserved {
        /// The path as written.
        path: String,
    },
    /// The path is lancet's own configuration file, which edits may not write.
    #[error(
        "{} is lancet's configuration; edits may not change it",
        clip_path(path)
    )]
    ConfigFile {
        /// The path as written.
        path: String,
    },
    /// The path names a directory, not a file.
    #[error("{} is a directory", clip_path(path))]
    IsDirectory {
        /// The path as written.
        path: String,
    },
    /// The path names something that is not a regular file: a symlink (as a
    /// target of a write), a FIFO, a device, a socket.
    #[error("{} is {}", clip_path(path), found.describe())]
    NotRegular {
        /// The path as written.
        path: String,
        /// What is there.
        found: FileKind,
    },
    /// The file is larger than [`Workspace::max_file_bytes`].
    #[error(
        "{} is too large ({bytes} bytes; the limit is {limit})",
        clip_path(path)
    )]
    TooLarge {
        /// The path as written.
        path: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The file lacks write permission for its owner; refused unless forced.
    #[error("{} is read-only", clip_path(path))]
    ReadOnly {
        /// The path as written.
        path: String,
    },
    /// A file should be created under `parent`, which is not a directory.
    #[error(
        "{} cannot be created: {} is not a directory",
        clip_path(path),
        clip_path(parent)
    )]
    ParentNotDirectory {
        /// The path as written.
        path: String,
        /// The existing non-directory on the way, relative to the root.
        parent: String,
    },
    /// A directory on the way to the path was replaced (by a symlink, a file
    /// or another directory) while lancet was working.
    #[error(
        "a directory on the way to {} changed while it was being written",
        clip_path(path)
    )]
    PathChanged {
        /// The path as written.
        path: String,
    },
    /// Two changes of one commit name the same file.
    #[error("{} is changed twice in one commit", clip_path(path))]
    DuplicatePath {
        /// The second change's path, as written.
        path: String,
    },
    /// The file on disk is not the one the change was planned against.
    #[error("{} changed since the edit was planned", clip_path(path))]
    Stale {
        /// The path as written.
        path: String,
    },
    /// Something lancet keeps under `.lancet/` is not what lancet makes there
    /// (a symlink where a directory should be, …): refused, never followed.
    #[error("{path} is {}, not {}", found.describe(), expected.describe())]
    StateEntry {
        /// The place, relative to the root (`.lancet/undo`).
        path: String,
        /// What is there.
        found: FileKind,
        /// What lancet keeps there.
        expected: FileKind,
    },
    /// Another lancet held the root's lock for longer than the wait allows.
    #[error("another lancet is applying in this root (waited {:.1} s)", waited.as_secs_f64())]
    Busy {
        /// How long this one waited.
        waited: Duration,
    },
    /// A journal copy does not hold what was saved (the machine stopped
    /// before the journal reached the disk): undo refuses rather than restore it.
    #[error("the undo journal's copy of {} is damaged", clip_path(path))]
    JournalDamaged {
        /// The file whose copy is damaged.
        path: String,
    },
    /// A journal entry's manifest is not what lancet writes: undo refuses it.
    #[error("the undo journal entry {entry} is corrupt: {problem}")]
    JournalCorrupt {
        /// The entry's id (its directory under `.lancet/undo/`).
        entry: String,
        /// What is wrong.
        problem: JournalProblem,
    },
    /// The journal holds no commit.
    #[error("nothing to undo")]
    NothingToUndo,
    /// A file changed after the commit being undone.
    #[error("{} changed since the commit being undone", clip_path(path))]
    UndoConflict {
        /// The path as the commit recorded it.
        path: String,
    },
    /// Reading or writing the disk failed.
    #[error("i/o error at {}: {source}", path.display())]
    Io {
        /// The absolute path involved.
        path: PathBuf,
        /// The underlying error (its kind and the system's reason).
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

/// Where a write goes: the canonical directory (relative to the root) and the
/// name in it, which is not followed.
struct Target {
    dir_rel: PathBuf,
    name: OsString,
}

/// The file a change replaces, as read when the commit was planned.
struct Before {
    bytes: Vec<u8>,
    hash: u64,
    meta: Meta,
}

/// A change resolved and checked against the disk, ready to stage.
struct Planned<'a> {
    rel: &'a str,
    target: Target,
    /// The directory holding the file; `None` until staging makes it.
    dir: Option<Arc<Dir>>,
    /// The new bytes; `None` for a delete.
    new: Option<&'a [u8]>,
    /// [`content_hash`] of `new`, computed once for the journal and the receipt.
    new_hash: Option<u64>,
    /// The permission bits the new file gets.
    mode: Option<u32>,
    before: Option<Before>,
}

impl Workspace {
    /// Opens a root directory, canonicalised, and holds it open.
    pub fn open(root: &Path) -> Result<Workspace, WorkspaceError> {
        let canon = fs::canonicalize(root).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => WorkspaceError::RootNotFound { path: root.into() },
            _ => io_at(root)(source),
        })?;
        // Opened as a directory (`O_DIRECTORY`), which says whether it is
        // one: no separate look first.
        let dir = match Dir::open_path(&canon) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
                return Err(WorkspaceError::RootNotDirectory { path: canon });
            }
            Err(e) => return Err(io_at(&canon)(e)),
        };
        Ok(Workspace {
            root: canon,
            dir: Arc::new(dir),
            max_file_bytes: MAX_FILE_BYTES,
            lock_wait: LOCK_WAIT,
        })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The largest file lancet reads (default [`MAX_FILE_BYTES`]).
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// Sets [`max_file_bytes`](Self::max_file_bytes).
    pub fn with_max_file_bytes(mut self, limit: u64) -> Workspace {
        self.max_file_bytes = limit;
        self
    }

    /// How long [`lock`](Self::lock) waits for another lancet (default 10 s).
    pub fn lock_wait(&self) -> Duration {
        self.lock_wait
    }

    /// Sets [`lock_wait`](Self::lock_wait).
    pub fn with_lock_wait(mut self, wait: Duration) -> Workspace {
        self.lock_wait = wait;
        self
    }

    /// Opens (making it when missing, mode 0700) the state directory
    /// `.lancet/<sub>`, refusing a symlink or anything but a real directory
    /// at `.lancet` or `.lancet/<sub>` (see [`StateDir`]).
    pub fn state_dir(&self, sub: &str) -> Result<StateDir, WorkspaceError> {
        self.state(&[sub])
    }

    /// [`state_dir`](Self::state_dir) for a nested directory
    /// `.lancet/<subs[0]>/<subs[1]>/…`, each level checked and made the same way.
    pub fn state_dirs(&self, subs: &[&str]) -> Result<StateDir, WorkspaceError> {
        self.state(subs)
    }

    /// `.lancet/` and `subs` inside it, made when missing.
    fn state(&self, subs: &[&str]) -> Result<StateDir, WorkspaceError> {
        state::open_made(&self.dir, &self.root, subs)
    }

    /// Lexical checks and normalisation of a path as written: `a/../b` is `b`.
    fn normalize(&self, rel: &str) -> Result<PathBuf, WorkspaceError> {
        if rel.len() > MAX_PATH_BYTES || rel.split(['/', '\\']).any(|c| c.len() > MAX_NAME_BYTES) {
            return Err(WorkspaceError::PathTooLong {
                path: clip_path(rel).into_owned(),
                bytes: rel.len(),
            });
        }
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
        if norm.as_os_str().is_empty() {
            return Err(WorkspaceError::InvalidPath { path: path() });
        }
        Ok(norm)
    }

    /// Refuses a path (canonical, relative to the root) inside `.lancet/` or `.git/`.
    fn refuse_reserved(rel: &str, inside: &Path) -> Result<(), WorkspaceError> {
        match inside.components().next() {
            None => Err(WorkspaceError::InvalidPath {
                path: rel.to_owned(),
            }),
            Some(Component::Normal(first))
                if RESERVED.iter().any(|r| first.eq_ignore_ascii_case(r)) =>
            {
                Err(WorkspaceError::Reserved {
                    path: rel.to_owned(),
                })
            }
            Some(_) => Ok(()),
        }
    }

    /// Confines a relative path written by a model or a person to the root
    /// and returns the absolute path to use.
    ///
    /// Refuses absolute paths (`/x`, `\x`, `C:\x`), paths whose lexical
    /// normalisation leaves the root, empty paths, paths with NUL, paths
    /// longer than [`MAX_PATH_BYTES`], paths whose existing part resolves
    /// (through symlinks) outside the root, and paths in `.lancet/` or
    /// `.git/`. `a/../b` is `b`. The existing part of the returned path is
    /// canonical, so a symlink inside the root is followed.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, WorkspaceError> {
        let norm = self.normalize(rel)?;
        let abs = self.confine(rel, &self.root.join(&norm))?;
        let inside = abs.strip_prefix(&self.root).unwrap_or(&abs);
        Self::refuse_reserved(rel, inside)?;
        Ok(abs)
    }

    /// Where a write of `rel` goes: its directory canonical (symlinks inside
    /// the root followed), its own name not followed. Refuses what
    /// [`resolve`](Self::resolve) refuses, and lancet's configuration file.
    fn target(&self, rel: &str) -> Result<Target, WorkspaceError> {
        let norm = self.normalize(rel)?;
        let (Some(parent), Some(name)) = (norm.parent(), norm.file_name()) else {
            return Err(WorkspaceError::InvalidPath {
                path: rel.to_owned(),
            });
        };
        let dir_abs = if parent.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.confine(rel, &self.root.join(parent))?
        };
        let dir_rel = dir_abs
            .strip_prefix(&self.root)
            .map_err(|_| WorkspaceError::OutsideRoot {
                path: rel.to_owned(),
            })?
            .to_path_buf();
        let canon = dir_rel.join(name);
        Self::refuse_reserved(rel, &canon)?;
        if dir_rel.as_os_str().is_empty() && name.eq_ignore_ascii_case(CONFIG) {
            return Err(WorkspaceError::ConfigFile {
                path: rel.to_owned(),
            });
        }
        Ok(Target {
            dir_rel,
            name: name.to_owned(),
        })
    }

    /// Canonicalises the longest existing ancestor of `full` and refuses it
    /// when it lies outside the root; the missing rest is appended unchanged.
    fn confine(&self, rel: &str, full: &Path) -> Result<PathBuf, WorkspaceError> {
        if self.plain(full) {
            return Ok(full.to_path_buf());
        }
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

    /// Whether `full` (the root joined with a normalised relative path) is
    /// already what [`confine`](Self::confine) would make of it because no
    /// name on it below the root is a symlink: each prefix is looked at from
    /// the root's handle, its last name not followed, until one is missing or
    /// not a directory (what follows cannot exist). The common case costs one
    /// `fstatat` per name below the root rather than a `readlink` per name of
    /// the whole absolute path, over and over; a symlink (or any error) says
    /// false, and the caller canonicalises. What this finds is checked again
    /// by [`walk`](Self::walk), which opens each directory without following.
    ///
    /// Linux only: elsewhere canonicalising may also change a name's case
    /// (macOS's realpath gives each name as the disk spells it), which this
    /// look would not, so two spellings of one file would stop being one path.
    fn plain(&self, full: &Path) -> bool {
        if !cfg!(target_os = "linux") {
            return false;
        }
        let Ok(inside) = full.strip_prefix(&self.root) else {
            return false;
        };
        let mut prefix = PathBuf::new();
        for part in inside.components() {
            let Component::Normal(part) = part else {
                return false;
            };
            prefix.push(part);
            match self.dir.stat_beneath(&prefix) {
                Ok(Some(m)) if m.kind == FileKind::Directory => {}
                Ok(Some(m)) if m.kind == FileKind::Symlink => return false,
                Ok(_) => return true,
                Err(_) => return false,
            }
        }
        true
    }

    /// Opens the directory `dir_rel` (canonical, relative to the root) from
    /// the root's handle, one real directory at a time. Missing directories
    /// give `Ok(None)`, or are made when `made` is given (recorded there,
    /// outermost first). `rel` names the file in errors.
    ///
    /// Each name is opened at once with `O_NOFOLLOW | O_DIRECTORY`, which
    /// succeeds only on a real directory (a symlink fails with `ELOOP`,
    /// anything else with `ENOTDIR`, before any open of it); only a failure
    /// is looked at (`fstatat`) to say why. One system call per directory,
    /// not a look and an open; the root itself is the root's own handle,
    /// shared, not a duplicate.
    fn walk(
        &self,
        dir_rel: &Path,
        rel: &str,
        mut made: Option<&mut Vec<PathBuf>>,
    ) -> Result<Option<Arc<Dir>>, WorkspaceError> {
        let mut cur = Arc::clone(&self.dir);
        let mut sofar = PathBuf::new();
        for part in dir_rel.iter() {
            sofar.push(part);
            let abs = || self.root.join(&sofar);
            let opened = match cur.open_dir(part) {
                Ok(dir) => dir,
                Err(e) => {
                    match cur.stat(part).map_err(io_at(&abs()))? {
                        None => match made.as_deref_mut() {
                            None => return Ok(None),
                            Some(made) => match cur.make_dir(part, 0o777) {
                                Ok(()) => made.push(sofar.clone()),
                                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                                Err(e) => return Err(io_at(&abs())(e)),
                            },
                        },
                        // The path was canonical when it was resolved: a symlink on it now was put there since.
                        Some(m) if m.kind == FileKind::Symlink => {
                            return Err(WorkspaceError::PathChanged {
                                path: rel.to_owned(),
                            });
                        }
                        Some(m) if m.kind != FileKind::Directory => {
                            return Err(WorkspaceError::ParentNotDirectory {
                                path: rel.to_owned(),
                                parent: sofar.to_string_lossy().into_owned(),
                            });
                        }
                        // A directory after all (made meanwhile): opened below;
                        // if that fails too, the first error is the one to give.
                        Some(_) => {}
                    }
                    cur.open_dir(part).map_err(|again| {
                        match cur.stat(part) {
                            // ELOOP or ENOTDIR: replaced between the two calls.
                            Ok(Some(m)) if m.kind != FileKind::Directory => {
                                WorkspaceError::PathChanged {
                                    path: rel.to_owned(),
                                }
                            }
                            _ if again.kind() == e.kind() => io_at(&abs())(e),
                            _ => io_at(&abs())(again),
                        }
                    })?
                }
            };
            cur = Arc::new(opened);
        }
        Ok(Some(cur))
    }

    /// The metadata of the file `name` in `dir`: `None` when absent; refuses
    /// a directory, anything but a regular file, and files over the size limit.
    fn regular_meta(
        &self,
        dir: &Dir,
        name: &OsStr,
        rel: &str,
        abs: &Path,
    ) -> Result<Option<Meta>, WorkspaceError> {
        self.regular(dir.stat(name).map_err(io_at(abs))?, rel)
    }

    /// [`regular_meta`](Self::regular_meta) for what a look just `seen`.
    fn regular(&self, seen: Option<Meta>, rel: &str) -> Result<Option<Meta>, WorkspaceError> {
        let meta = match seen {
            None => return Ok(None),
            Some(m) if m.kind == FileKind::Directory => {
                return Err(WorkspaceError::IsDirectory {
                    path: rel.to_owned(),
                });
            }
            Some(m) if m.kind != FileKind::Regular => {
                return Err(WorkspaceError::NotRegular {
                    path: rel.to_owned(),
                    found: m.kind,
                });
            }
            Some(m) => m,
        };
        self.check_size(rel, meta.size)?;
        Ok(Some(meta))
    }

    /// Reads the file `name` in `dir`: `None` when absent; refuses a
    /// directory, anything but a regular file, and files over the size limit.
    fn read_in(
        &self,
        dir: &Dir,
        name: &OsStr,
        rel: &str,
        abs: &Path,
    ) -> Result<Option<Before>, WorkspaceError> {
        // Checked by name first, so a FIFO is never opened; then on the handle.
        if self.regular_meta(dir, name, rel, abs)?.is_none() {
            return Ok(None);
        }
        self.read_seen(dir, name, rel, abs).map(Some)
    }

    /// Reads the file `name` in `dir`, which a look has just seen to be a
    /// regular file within the size limit: checked again on the descriptor.
    fn read_seen(
        &self,
        dir: &Dir,
        name: &OsStr,
        rel: &str,
        abs: &Path,
    ) -> Result<Before, WorkspaceError> {
        let (mut file, meta) = dir.open_read_seen(name).map_err(io_at(abs))?;
        self.check_size(rel, meta.size)?;
        // Read into a buffer one byte larger than the file: one `read` fills
        // it and one more sees the end (std's `read_to_end` through `take`
        // knows no size and reads in a growing series, four calls for 40 KB).
        // Bounded even if the file grows while it is read.
        let limit = usize::try_from(self.max_file_bytes)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        let size = usize::try_from(meta.size).unwrap_or(usize::MAX);
        let mut bytes = vec![0u8; size.saturating_add(1).min(limit)];
        let mut len = 0;
        loop {
            if len == bytes.len() {
                if len >= limit {
                    break;
                }
                // Grown since the look: read on, still bounded.
                bytes.resize(len.saturating_mul(2).clamp(len + 1, limit), 0);
            }
            match file.read(&mut bytes[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_at(abs)(e)),
            }
        }
        bytes.truncate(len);
        self.check_size(rel, bytes.len() as u64)?;
        Ok(Before {
            hash: content_hash(&bytes),
            bytes,
            meta,
        })
    }

    /// The file `name` in `dir` as [`read_in`](Self::read_in) gives it, with
    /// `bytes` the caller already read (`hash`, what it planned against):
    /// only its metadata is looked at now (`meta`, what a look just saw and
    /// [`regular`](Self::regular) let through). A size that differs is stale
    /// at once; the same size is checked by content at the last look.
    fn stat_in(
        &self,
        meta: Meta,
        rel: &str,
        bytes: Vec<u8>,
        hash: u64,
    ) -> Result<Before, WorkspaceError> {
        if meta.size != bytes.len() as u64 {
            return Err(WorkspaceError::Stale {
                path: rel.to_owned(),
            });
        }
        Ok(Before { hash, bytes, meta })
    }

    /// [`hash_seen`](Self::hash_seen) after a look of its own (the tests' way in).
    #[cfg(test)]
    fn hash_in(&self, dir: &Dir, name: &OsStr, abs: &Path) -> Result<Option<u64>, WorkspaceError> {
        let seen = dir.stat(name).map_err(io_at(abs))?;
        self.hash_seen(dir, name, abs, seen)
    }

    /// The [`content_hash`] of the regular file `name` in `dir`, read through
    /// a small buffer (the last look before a commit needs the hash, not the
    /// bytes: no second copy of a large file is held); `None` when it is
    /// absent, not a regular file, or larger than the limit. `seen` is what
    /// the caller's look at `name` just saw: the file is not looked at by
    /// name once more before it is opened.
    fn hash_seen(
        &self,
        dir: &Dir,
        name: &OsStr,
        abs: &Path,
        seen: Option<Meta>,
    ) -> Result<Option<u64>, WorkspaceError> {
        match seen {
            Some(m) if m.kind == FileKind::Regular && m.size <= self.max_file_bytes => {}
            _ => return Ok(None),
        }
        let (file, _) = dir.open_read_seen(name).map_err(io_at(abs))?;
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        // Each page of a fresh buffer is a page fault: a small file is read
        // in a few 16 KiB reads (4 pages) rather than one into 64 KiB (16
        // pages); a large one in 64 KiB reads, where syscalls would count.
        let size = seen.map_or(0, |m| m.size);
        let mut buf = vec![0u8; if size <= 256 * 1024 { 16 } else { 64 } * 1024];
        let mut total = 0u64;
        // Bounded even if the file grows while it is read.
        let mut file = file.take(self.max_file_bytes + 1);
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io_at(abs)(e)),
            };
            total += n as u64;
            hasher.update(&buf[..n]);
        }
        Ok((total <= self.max_file_bytes).then(|| hasher.digest()))
    }

    fn check_size(&self, rel: &str, bytes: u64) -> Result<(), WorkspaceError> {
        if bytes > self.max_file_bytes {
            return Err(WorkspaceError::TooLarge {
                path: rel.to_owned(),
                bytes,
                limit: self.max_file_bytes,
            });
        }
        Ok(())
    }

    /// Reads a file: `Ok(None)` when it does not exist. A symlink inside the
    /// root is followed; a FIFO, a device or a socket is refused before it is
    /// opened, and so is a file over [`max_file_bytes`](Self::max_file_bytes).
    pub fn read(&self, rel: &str) -> Result<Option<FileState>, WorkspaceError> {
        let abs = self.resolve(rel)?;
        let inside = abs.strip_prefix(&self.root).unwrap_or(&abs);
        let (Some(parent), Some(name)) = (inside.parent(), inside.file_name()) else {
            return Err(WorkspaceError::InvalidPath {
                path: rel.to_owned(),
            });
        };
        let dir = match self.walk(parent, rel, None) {
            Ok(Some(dir)) => dir,
            // A missing directory, or a file where one should be: no such file.
            Ok(None) | Err(WorkspaceError::ParentNotDirectory { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(self.read_in(&dir, name, rel, &abs)?.map(|b| FileState {
            mode: mode_bits(&b.meta),
            hash: b.hash,
            bytes: b.bytes,
        }))
    }

    /// Opens a file for reading without reading it (the agent's read tool
    /// pages files too large to hold): `Ok(None)` when it does not exist,
    /// else the open file and its size. Reached like [`read`](Self::read):
    /// one real directory at a time from the root's handle, so a directory
    /// swapped for a symlink cannot lead the open outside the root; a
    /// directory, a FIFO, a device or a socket is refused before it is
    /// opened. No size limit: the caller reads what it can bound.
    pub fn open_file(&self, rel: &str) -> Result<Option<(fs::File, u64)>, WorkspaceError> {
        let abs = self.resolve(rel)?;
        let inside = abs.strip_prefix(&self.root).unwrap_or(&abs);
        let (Some(parent), Some(name)) = (inside.parent(), inside.file_name()) else {
            return Err(WorkspaceError::InvalidPath {
                path: rel.to_owned(),
            });
        };
        let dir = match self.walk(parent, rel, None) {
            Ok(Some(dir)) => dir,
            Ok(None) | Err(WorkspaceError::ParentNotDirectory { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        match dir.stat(name).map_err(io_at(&abs))? {
            None => Ok(None),
            Some(m) if m.kind == FileKind::Directory => Err(WorkspaceError::IsDirectory {
                path: rel.to_owned(),
            }),
            Some(m) if m.kind != FileKind::Regular => Err(WorkspaceError::NotRegular {
                path: rel.to_owned(),
                found: m.kind,
            }),
            Some(_) => {
                let (file, meta) = dir.open_read_seen(name).map_err(io_at(&abs))?;
                Ok(Some((file, meta.size)))
            }
        }
    }

    /// Whether `rel` may be written (created, replaced or deleted) at all:
    /// confined, not reserved, not lancet's configuration, not a symlink, a
    /// directory or a special file, and not under a file. Read-only files
    /// and staleness are the commit's to check.
    pub fn check_write(&self, rel: &str) -> Result<(), WorkspaceError> {
        let t = self.target(rel)?;
        let Some(dir) = self.walk(&t.dir_rel, rel, None)? else {
            return Ok(());
        };
        let abs = self.root.join(&t.dir_rel).join(&t.name);
        match dir.stat(&t.name).map_err(io_at(&abs))? {
            None => Ok(()),
            Some(m) if m.kind == FileKind::Regular => Ok(()),
            Some(m) if m.kind == FileKind::Directory => Err(WorkspaceError::IsDirectory {
                path: rel.to_owned(),
            }),
            Some(m) => Err(WorkspaceError::NotRegular {
                path: rel.to_owned(),
                found: m.kind,
            }),
        }
    }

    /// [`check_write`](Self::check_write) and [`read`](Self::read) in one,
    /// for a file about to be edited: refused as `check_write` refuses
    /// (before a byte is read), else read as `read` reads it. One walk to
    /// its directory and one look at its name, where the two calls took two
    /// walks and four looks; the same answers, the same errors first.
    pub fn read_for_write(&self, rel: &str) -> Result<Option<FileState>, WorkspaceError> {
        let t = self.target(rel)?;
        let Some(dir) = self.walk(&t.dir_rel, rel, None)? else {
            return Ok(None);
        };
        let abs = self.root.join(&t.dir_rel).join(&t.name);
        if self.regular_meta(&dir, &t.name, rel, &abs)?.is_none() {
            return Ok(None);
        }
        let b = self.read_seen(&dir, &t.name, rel, &abs)?;
        Ok(Some(FileState {
            mode: mode_bits(&b.meta),
            hash: b.hash,
            bytes: b.bytes,
        }))
    }

    /// Writes every change or none, under the root's lock (see
    /// [`commit_with`](Self::commit_with)); read-only files are refused.
    pub fn commit(&self, changes: &[Change]) -> Result<CommitReceipt, WorkspaceError> {
        self.commit_with(changes, &CommitOptions::default())
    }

    /// Writes every change or none.
    ///
    /// Takes the root's [lock](Self::lock) (an empty commit touches nothing,
    /// not even that). Every `expected_hash` is re-checked first
    /// ([`WorkspaceError::Stale`]); targets that are symlinks or special
    /// files, and read-only files unless `opts.force`, are refused; new
    /// contents are staged in synced temp files beside their destinations
    /// (existing files keep their owner, group and mode); the originals are
    /// journalled for [`undo`](Self::undo); every file and directory is
    /// checked once more to be the one planned against; then the temps are
    /// renamed over the destinations and deletions performed. A failure at
    /// any step leaves the files as they were.
    pub fn commit_with(
        &self,
        changes: &[Change],
        opts: &CommitOptions,
    ) -> Result<CommitReceipt, WorkspaceError> {
        if changes.is_empty() {
            return Ok(CommitReceipt {
                id: new_id(),
                hashes: Vec::new(),
            });
        }
        self.lock()?.commit(changes, opts)
    }

    /// [`commit_with`](Self::commit_with), the lock already held.
    fn commit_locked(
        &self,
        changes: &[Change],
        opts: &CommitOptions,
    ) -> Result<CommitReceipt, WorkspaceError> {
        self.commit_locked_read(changes, opts, Vec::new())
    }

    /// [`commit_locked`](Self::commit_locked) with the bytes the caller read
    /// of each change's file (see [`WorkspaceLock::commit_read`]).
    fn commit_locked_read(
        &self,
        changes: &[Change],
        opts: &CommitOptions,
        originals: Vec<Option<Vec<u8>>>,
    ) -> Result<CommitReceipt, WorkspaceError> {
        let mut plan = self.plan(changes, opts.force, originals)?;
        let id = new_id();
        if !plan.is_empty() {
            self.apply(
                &mut plan,
                (!opts.no_undo).then_some(id.as_str()),
                opts.fsync,
            )?;
        }
        let hashes = plan
            .iter()
            .filter_map(|p| Some((p.rel.to_owned(), p.new_hash?)))
            .collect();
        Ok(CommitReceipt { id, hashes })
    }

    /// Resolves every change, refuses duplicates and what may not be written,
    /// and checks staleness (of a file whose bytes the caller gives in
    /// `originals`, by its size here and its content at the last look).
    fn plan<'a>(
        &self,
        changes: &'a [Change],
        force: bool,
        mut originals: Vec<Option<Vec<u8>>>,
    ) -> Result<Vec<Planned<'a>>, WorkspaceError> {
        let mut plan: Vec<Planned<'a>> = Vec::with_capacity(changes.len());
        for (i, change) in changes.iter().enumerate() {
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
            let target = self.target(rel)?;
            let same = |p: &Planned<'_>| {
                p.target.dir_rel == target.dir_rel && p.target.name == target.name
            };
            if plan.iter().any(same) {
                return Err(WorkspaceError::DuplicatePath { path: rel.clone() });
            }
            let dir = self.walk(&target.dir_rel, rel, None)?;
            let abs = self.root.join(&target.dir_rel).join(&target.name);
            let before = match &dir {
                Some(d) => {
                    // One look decides: a symlink, a directory, a special
                    // file or one too large is refused; a regular file is
                    // then opened without being looked at by name again.
                    let seen = d.stat(&target.name).map_err(io_at(&abs))?;
                    if let Some(m) = seen
                        && m.kind == FileKind::Symlink
                    {
                        // Replacing a symlink would lose it (and undo could not bring it back).
                        return Err(WorkspaceError::NotRegular {
                            path: rel.clone(),
                            found: m.kind,
                        });
                    }
                    let known = originals
                        .get_mut(i)
                        .and_then(Option::take)
                        .map(|b| (content_hash(&b), b))
                        .filter(|(hash, _)| expected == Some(*hash));
                    match (self.regular(seen, rel)?, known) {
                        (None, _) => None,
                        (Some(meta), Some((hash, bytes))) => {
                            Some(self.stat_in(meta, rel, bytes, hash)?)
                        }
                        (Some(_), None) => Some(self.read_seen(d, &target.name, rel, &abs)?),
                    }
                }
                None => None,
            };
            if before.as_ref().map(|b| b.hash) != expected {
                return Err(WorkspaceError::Stale { path: rel.clone() });
            }
            if let Some(b) = &before
                && !force
                && cfg!(unix)
                && b.meta.mode & 0o200 == 0
            {
                return Err(WorkspaceError::ReadOnly { path: rel.clone() });
            }
            let mode = mode
                .or_else(|| before.as_ref().and_then(|b| mode_bits(&b.meta)))
                .map(|m| m & 0o777);
            plan.push(Planned {
                rel,
                target,
                dir,
                new,
                new_hash: new.map(content_hash),
                mode,
                before,
            });
        }
        Ok(plan)
    }

    /// Stages every new content, journals the plan under `id` (when given;
    /// the journal is pruned after a successful commit),
    /// re-checks every target, then renames and deletes; any failure puts
    /// everything back. `fsync`: see [`CommitOptions::fsync`].
    fn apply(
        &self,
        plan: &mut [Planned<'_>],
        id: Option<&str>,
        fsync: bool,
    ) -> Result<(), WorkspaceError> {
        let mut temps: Vec<Option<OsString>> = Vec::with_capacity(plan.len());
        let mut made: Vec<PathBuf> = Vec::new();
        for p in plan.iter_mut() {
            let Some(bytes) = p.new else {
                temps.push(None);
                continue;
            };
            let abs = self.root.join(&p.target.dir_rel).join(&p.target.name);
            let staged = (|| {
                if p.dir.is_none() {
                    p.dir = self.walk(&p.target.dir_rel, p.rel, Some(&mut made))?;
                }
                let dir = p.dir.as_ref().ok_or_else(|| WorkspaceError::PathChanged {
                    path: p.rel.to_owned(),
                })?;
                let owner = p.before.as_ref().map(|b| (b.meta.uid, b.meta.gid));
                stage(dir, bytes, p.mode, owner, fsync).map_err(io_at(&abs))
            })();
            match staged {
                Ok(temp) => temps.push(Some(temp)),
                Err(err) => return Err(self.discard(plan, &temps, &made, err)),
            }
        }
        hook("journal");
        let journalled = match id {
            None => None,
            Some(id) => match self.journal(id, plan, &made) {
                Ok(entry) => Some(entry),
                Err(err) => return Err(self.discard(plan, &temps, &made, err)),
            },
        };
        let drop_entry = |entry: Option<(StateDir, journal::Saved)>| {
            if let (Some((undo, saved)), Some(id)) = (entry, id) {
                journal::discard(&undo, id, &saved.copies);
            }
        };
        // The last look before anything is replaced: a file changed or a
        // directory swapped since the plan refuses the whole commit.
        hook("recheck");
        if let Err(err) = plan.iter().try_for_each(|p| self.recheck(p)) {
            drop_entry(journalled);
            return Err(self.discard(plan, &temps, &made, err));
        }
        hook("rename");
        for (i, (p, temp)) in plan.iter().zip(&temps).enumerate() {
            let abs = self.root.join(&p.target.dir_rel).join(&p.target.name);
            let done = fail_point(i).and_then(|()| match (&p.dir, temp) {
                (Some(dir), Some(temp)) => dir.rename(temp, dir, &p.target.name),
                (Some(dir), None) => dir.unlink(&p.target.name),
                (None, _) => Err(io::ErrorKind::NotFound.into()),
            });
            if let Err(source) = done {
                // A failed rollback keeps the entry: it holds the only copy of the originals.
                if rollback(&plan[..i], fsync) {
                    drop_entry(journalled);
                }
                return Err(self.discard(&plan[i..], &temps[i..], &made, io_at(&abs)(source)));
            }
        }
        // The renames have left the journal the only name of each linked
        // original: now it can be made private without touching a live file.
        // The journal's directory, still open, is pruned here rather than
        // opened again by the caller.
        if let (Some((undo, saved)), Some(id)) = (&journalled, id) {
            journal::privatize(saved, |i| {
                plan.get(i)
                    .and_then(|p| p.before.as_ref())
                    .map(|b| b.bytes.as_slice())
            });
            journal::prune(undo, JOURNAL_KEEP, id, saved.recycled, || {
                self.state(&["pruned"]).ok()
            });
            if saved.recycled {
                self.drain_pruned();
            }
        }
        Ok(())
    }

    /// Checks that `p`'s directory is still the one its path leads to and
    /// that its file is still the one planned against (device, inode, size,
    /// mtime and content), or still absent.
    fn recheck(&self, p: &Planned<'_>) -> Result<(), WorkspaceError> {
        let abs = self.root.join(&p.target.dir_rel).join(&p.target.name);
        let changed = || WorkspaceError::PathChanged {
            path: p.rel.to_owned(),
        };
        let Some(dir) = &p.dir else {
            // Only a delete of a file that was missing has no directory, and it
            // was refused as stale.
            return Err(changed());
        };
        // The path must still lead to the directory held: one look at it
        // from the root (its last name not followed) against the handle's
        // own identity. Whatever way the path leads there, the renames go
        // through the handle, which was reached one real directory at a
        // time; a directory moved away, or swapped for a symlink or another
        // directory, is a different inode here. A file in the root itself
        // is in the root's own handle: nothing to look at.
        if !p.target.dir_rel.as_os_str().is_empty() {
            let now = self
                .dir
                .stat_beneath(&p.target.dir_rel)
                .map_err(|_| changed())?
                .ok_or_else(changed)?;
            let held = dir.meta().map_err(io_at(&abs))?;
            if now.kind != FileKind::Directory || (now.dev, now.ino) != (held.dev, held.ino) {
                return Err(changed());
            }
        }
        let stale = || WorkspaceError::Stale {
            path: p.rel.to_owned(),
        };
        let now = dir.stat(&p.target.name).map_err(io_at(&abs))?;
        match (&p.before, now) {
            (None, None) => Ok(()),
            (Some(before), Some(m))
                if m.kind == FileKind::Regular && m.identity() == before.meta.identity() =>
            {
                // Same inode, size and mtime; the content decides (mtime ticks coarsely).
                match self.hash_seen(dir, &p.target.name, &abs, Some(m))? {
                    Some(now) if now == before.hash => Ok(()),
                    _ => Err(stale()),
                }
            }
            _ => Err(stale()),
        }
    }

    /// Removes leftover temps, then the directories a failed step made
    /// (innermost first), and hands back the error that caused it.
    fn discard(
        &self,
        plan: &[Planned<'_>],
        temps: &[Option<OsString>],
        made: &[PathBuf],
        err: WorkspaceError,
    ) -> WorkspaceError {
        for (p, temp) in plan.iter().zip(temps) {
            if let (Some(dir), Some(temp)) = (&p.dir, temp) {
                let _ = dir.unlink(temp);
            }
        }
        for d in made.iter().rev() {
            self.remove_empty_dir(d);
        }
        err
    }

    /// Removes the directory `rel` (relative to the root) if it is empty,
    /// reached through real directories only.
    fn remove_empty_dir(&self, rel: &Path) {
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            return;
        };
        if let Ok(Some(dir)) = self.walk(parent, "", None)
            && matches!(dir.stat(name), Ok(Some(m)) if m.kind == FileKind::Directory)
        {
            let _ = dir.remove_dir(name);
        }
    }

    /// After a commit that recycled its journal entry (and so pruned
    /// nothing): deletes the entries waiting in `.lancet/pruned/`, if it
    /// exists, then the directory once empty, so that later applies find
    /// nothing there (one failed `openat`).
    fn drain_pruned(&self) {
        let Ok(Some(aside)) = state::open_existing(&self.dir, &self.root, &["pruned"]) else {
            return;
        };
        journal::drain(&aside);
        drop(aside);
        if let Ok(Some(lancet)) = state::open_existing(&self.dir, &self.root, &[]) {
            // Only an empty directory goes (never a symlink: `ENOTDIR`).
            let _ = lancet.dir().remove_dir(OsStr::new("pruned"));
        }
    }

    /// Saves the originals and the manifest of a commit under `.lancet/undo/<id>/`.
    fn journal(
        &self,
        id: &str,
        plan: &[Planned<'_>],
        made: &[PathBuf],
    ) -> Result<(StateDir, journal::Saved), WorkspaceError> {
        let undo = self.state(&["undo"])?;
        let records: Vec<journal::Record<'_>> = plan
            .iter()
            .map(|p| journal::Record {
                path: p.rel,
                before: p
                    .before
                    .as_ref()
                    .map(|b| (b.bytes.as_slice(), b.hash, mode_bits(&b.meta))),
                after: p.new_hash,
                source: match (&p.dir, &p.before) {
                    (Some(dir), Some(b)) => Some((dir, p.target.name.as_os_str(), b.meta)),
                    _ => None,
                },
            })
            .collect();
        // A directory whose name is not UTF-8 is left out; undo then leaves it behind, empty.
        let created_dirs = made
            .iter()
            .filter_map(|d| Some(d.to_str()?.replace('\\', "/")))
            .collect();
        let keep = recycling().then_some(JOURNAL_KEEP);
        let saved = journal::write(&undo, id, &records, created_dirs, keep)?;
        Ok((undo, saved))
    }

    /// Reverts the most recent commit recorded in the journal, under the
    /// root's lock.
    ///
    /// Every file must still hold what the commit left (or still be absent if
    /// it deleted it), else [`WorkspaceError::UndoConflict`] and nothing
    /// changes. A manifest that is not what lancet writes is refused
    /// ([`WorkspaceError::JournalCorrupt`], saying what is wrong). The undo is
    /// itself all or nothing, like a commit.
    pub fn undo(&self) -> Result<UndoReceipt, WorkspaceError> {
        // Without a journal there is nothing to lock for.
        if state::open_existing(&self.dir, &self.root, &["undo"])?.is_none() {
            return Err(WorkspaceError::NothingToUndo);
        }
        self.lock()?.undo()
    }

    /// [`undo`](Self::undo), the lock already held.
    fn undo_locked(&self) -> Result<UndoReceipt, WorkspaceError> {
        let undo = state::open_existing(&self.dir, &self.root, &["undo"])?
            .ok_or(WorkspaceError::NothingToUndo)?;
        // An entry without a manifest was cut short before its commit touched
        // any file (the manifest is renamed into place last), so it is skipped.
        let mut newest = None;
        for id in journal::ids(&undo)?.into_iter().rev() {
            if let Some(manifest) = journal::load(&undo, &id)? {
                newest = Some((id, manifest));
                break;
            }
        }
        let (id, manifest) = newest.ok_or(WorkspaceError::NothingToUndo)?;
        // The reverse of the commit, planned against what the commit left.
        let mut changes = Vec::with_capacity(manifest.entries.len());
        for e in &manifest.entries {
            changes.push(match (&e.saved, e.after) {
                (Some((saved, hash)), expected_hash) => Change::Write {
                    path: e.path.clone(),
                    bytes: journal::copy(&undo, &id, saved, *hash, &e.path, self.max_file_bytes)?,
                    expected_hash,
                    mode: e.mode,
                },
                (None, Some(expected_hash)) => Change::Delete {
                    path: e.path.clone(),
                    expected_hash,
                },
                // Absent before and after: nothing to put back.
                (None, None) => continue,
            });
        }
        // The files are lancet's own writes being taken back: read-only ones too.
        let mut plan = self
            .plan(&changes, true, Vec::new())
            .map_err(|err| match err {
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
        // Synced whatever the commit did: the journal entry, the originals'
        // other copy, is pruned right after.
        self.apply(&mut plan, None, true)?;
        // Through `target` and real directories only: a symlink planted since
        // cannot redirect the removal, and only empty directories go.
        for d in manifest.created_dirs.iter().rev() {
            if let Ok(t) = self.target(d) {
                self.remove_empty_dir(&t.dir_rel.join(&t.name));
            }
        }
        journal::remove(&undo, &id, &manifest);
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

    /// Journal entry ids, oldest first (for tests).
    #[cfg(test)]
    fn entries(&self) -> Result<Vec<String>, WorkspaceError> {
        match state::open_existing(&self.dir, &self.root, &["undo"])? {
            Some(undo) => journal::ids(&undo),
            None => Ok(Vec::new()),
        }
    }
}

/// Opens a regular file by path (followed, as a person names it: `lancet
/// view`), refusing a FIFO, a device or a socket before reading a byte and a
/// file over `limit` bytes before reading it whole.
pub fn read_regular_file(path: &Path, limit: u64) -> Result<Vec<u8>, WorkspaceError> {
    let shown = path.to_string_lossy();
    let (file, meta) =
        dirs::open_regular(path).map_err(|e| match fs::metadata(path).map(|m| m.file_type()) {
            Ok(t) if !t.is_file() && !t.is_dir() => WorkspaceError::NotRegular {
                path: shown.clone().into_owned(),
                found: dirs::kind_of(&t),
            },
            Ok(t) if t.is_dir() => WorkspaceError::IsDirectory {
                path: shown.clone().into_owned(),
            },
            _ => io_at(path)(e),
        })?;
    let too_large = |bytes: u64| WorkspaceError::TooLarge {
        path: shown.clone().into_owned(),
        bytes,
        limit,
    };
    if meta.size > limit {
        return Err(too_large(meta.size));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_at(path))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A sortable, unique journal id: milliseconds since the epoch, process id, counter.
fn new_id() -> String {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{millis:016}-{:010}-{n:020}", std::process::id())
}

/// Writes `bytes` to a new temp file in `dir`, with the original's `owner`
/// (as far as this process may) and `mode`, synced to disk when `fsync`
/// (see [`CommitOptions::fsync`]). Returns its name.
fn stage(
    dir: &Dir,
    bytes: &[u8],
    mode: Option<u32>,
    owner: Option<(u32, u32)>,
    fsync: bool,
) -> io::Result<OsString> {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = OsString::from(format!(".lancet-tmp-{}-{n}", std::process::id()));
    // Private until its mode is set: the content may be a private file's.
    let initial = if mode.is_some() { 0o600 } else { 0o666 };
    let mut file = dir.create_new(&temp, initial)?;
    let written = file.write_all(bytes).and_then(|()| {
        if let Some((uid, gid)) = owner {
            // Before the mode: changing the owner clears setuid-like bits.
            dirs::keep_owner(&file, uid, gid);
        }
        if let Some(mode) = mode {
            dirs::set_mode(&file, mode & 0o777)?;
        }
        if fsync { file.sync_all() } else { Ok(()) }
    });
    drop(file);
    written.map(|()| temp.clone()).inspect_err(|_| {
        let _ = dir.unlink(&temp);
    })
}

/// Puts back what the changes in `applied` did; true when all were put back.
fn rollback(applied: &[Planned<'_>], fsync: bool) -> bool {
    let mut all = true;
    for p in applied.iter().rev() {
        let Some(dir) = &p.dir else {
            all = false;
            continue;
        };
        let undone = match &p.before {
            Some(before) => stage(
                dir,
                &before.bytes,
                mode_bits(&before.meta),
                Some((before.meta.uid, before.meta.gid)),
                fsync,
            )
            .and_then(|temp| {
                dir.rename(&temp, dir, &p.target.name).inspect_err(|_| {
                    let _ = dir.unlink(&temp);
                })
            }),
            None => dir.unlink(&p.target.name),
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

#[cfg(test)]
thread_local! {
    /// Test hook: journal as a lancet before recycling did (a new entry each
    /// commit, the oldest pruned), to fill a journal the way it left one.
    static NO_RECYCLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether a commit may recycle the journal's oldest entry (always, but in
/// a test that asks for the older way).
fn recycling() -> bool {
    #[cfg(test)]
    {
        !NO_RECYCLE.get()
    }
    #[cfg(not(test))]
    {
        true
    }
}

/// Where a test may act in the middle of a commit.
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    /// Recycling the oldest journal entry: its manifest renamed aside,
    /// the entry not yet renamed.
    Unmanifested,
    /// Recycling: the entry renamed to the new id, its old copies not yet deleted.
    Recycled,
    /// A journal entry's copies and manifest written, the manifest not yet
    /// renamed into place.
    Manifest,
    /// After staging, before journalling.
    Staged,
    /// After staging and journalling, before the last checks.
    BeforeRecheck,
    /// After the last checks, before the first rename.
    BeforeRename,
}

/// A test's action at a point of the commit.
#[cfg(test)]
type Hook = (Point, Box<dyn FnOnce()>);

#[cfg(test)]
thread_local! {
    /// Test hook: runs once when the commit reaches its point (a race, made
    /// to happen where real ones can).
    static HOOK: std::cell::Cell<Option<Hook>> = const { std::cell::Cell::new(None) };
}

/// Runs the test hook set for `_at`, if any; a no-op outside tests.
fn hook(_at: &'static str) {
    #[cfg(test)]
    {
        let at = match _at {
            "journal" => Point::Staged,
            "recheck" => Point::BeforeRecheck,
            "unmanifested" => Point::Unmanifested,
            "recycled" => Point::Recycled,
            "manifest" => Point::Manifest,
            _ => Point::BeforeRename,
        };
        match HOOK.take() {
            Some((p, f)) if p == at => f(),
            other => HOOK.set(other),
        }
    }
}

/// The permission bits a file has (`None` where there are none to keep).
fn mode_bits(meta: &Meta) -> Option<u32> {
    cfg!(unix).then_some(meta.mode)
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

    /// `resolve` answers what canonicalising gives whether or not a symlink
    /// is on the path: names without one are looked at from the root's
    /// handle (`plain`), a symlink inside the root still leads to its target,
    /// and a path through a file or a missing directory keeps its rest.
    #[cfg(unix)]
    #[test]
    fn resolve_matches_canonicalising() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        fs::create_dir_all(ws.root().join("real/deep")).unwrap();
        fs::write(ws.root().join("real/deep/f.rs"), b"x\n").unwrap();
        symlink(ws.root().join("real"), ws.root().join("inner")).unwrap();
        symlink("deep/f.rs", ws.root().join("real/alias.rs")).unwrap();
        let cases = [
            ("real/deep/f.rs", "real/deep/f.rs"),
            ("real/deep/new.rs", "real/deep/new.rs"),
            ("real/missing/dir/x.rs", "real/missing/dir/x.rs"),
            ("real/deep/f.rs/x", "real/deep/f.rs/x"),
            ("inner/deep/f.rs", "real/deep/f.rs"),
            ("inner/new/x.rs", "real/new/x.rs"),
            ("real/alias.rs", "real/deep/f.rs"),
        ];
        for (rel, want) in cases {
            assert_eq!(ws.resolve(rel).unwrap(), ws.root().join(want), "{rel:?}");
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

    /// A commit given the bytes its caller read does not read the file to
    /// plan, but its last look still does: a same-size change since the read
    /// refuses the commit and leaves no journal entry; given bytes that are
    /// not what the caller planned against are not used (the file is read);
    /// and undo puts the given bytes back.
    #[test]
    fn commit_read_still_refuses_a_file_changed_since_the_read() {
        let (_dir, ws) = setup();
        let old = put(&ws, "a.txt", b"one\n");
        fs::write(ws.root().join("a.txt"), b"two\n").unwrap();
        let change = [write("a.txt", b"ONE\n", Some(old))];
        let lock = ws.lock().unwrap();
        let err = lock
            .commit_read(
                &change,
                &CommitOptions::default(),
                vec![Some(b"one\n".to_vec())],
            )
            .unwrap_err();
        assert!(matches!(err, E::Stale { .. }), "{err:?}");
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"two\n");
        let entries = fs::read_dir(ws.root().join(".lancet/undo"))
            .map(|d| d.count())
            .unwrap_or(0);
        assert_eq!(entries, 0);
        // Bytes that do not hash to the expected content: read from disk instead.
        let now = content_hash(b"two\n");
        let change = [write("a.txt", b"THREE\n", Some(now))];
        lock.commit_read(
            &change,
            &CommitOptions::default(),
            vec![Some(b"zzz".to_vec())],
        )
        .unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"THREE\n");
        let change = [write("a.txt", b"FOUR\n", Some(content_hash(b"THREE\n")))];
        lock.commit_read(
            &change,
            &CommitOptions::default(),
            vec![Some(b"THREE\n".to_vec())],
        )
        .unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"FOUR\n");
        lock.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"THREE\n");
    }

    /// The last look's hash, read through a small buffer, is the content
    /// hash of the whole file, across the buffer's edges; a file over the
    /// limit has none.
    #[test]
    fn hash_in_is_the_content_hash() {
        let (_dir, ws) = setup();
        let dir = ws.walk(Path::new(""), "", None).unwrap().unwrap();
        for len in [0usize, 1, 65_535, 65_536, 65_537, 200_003] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let hash = put(&ws, "f", &bytes);
            let abs = ws.root().join("f");
            assert_eq!(
                ws.hash_in(&dir, OsStr::new("f"), &abs).unwrap(),
                Some(hash),
                "{len}"
            );
        }
        let small = Workspace::open(ws.root()).unwrap().with_max_file_bytes(100);
        let dir = small.walk(Path::new(""), "", None).unwrap().unwrap();
        let abs = ws.root().join("f");
        assert_eq!(small.hash_in(&dir, OsStr::new("f"), &abs).unwrap(), None);
        assert_eq!(ws.hash_in(&dir, OsStr::new("missing"), &abs).unwrap(), None);
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
        fs::write(entry.join("0"), b"").unwrap();
        assert!(matches!(
            ws.undo(),
            Err(WorkspaceError::JournalDamaged { .. })
        ));
        assert_eq!(ws.read("a.txt").unwrap().unwrap().bytes, b"changed\n");
    }

    /// The one journal entry's directory.
    fn only_entry(ws: &Workspace) -> PathBuf {
        let mut ids = fs::read_dir(ws.root().join(".lancet/undo")).unwrap();
        let entry = ids.next().unwrap().unwrap().path();
        assert!(ids.next().is_none());
        entry
    }

    /// An entry holds its manifest and its copies, no subdirectory (each
    /// directory made is a `mkdir`, an open and a close on every apply).
    #[test]
    fn an_entry_is_one_directory() {
        let (_dir, ws) = setup();
        let a = put(&ws, "a.txt", b"a\n");
        let b = put(&ws, "sub/b.txt", b"b\n");
        ws.commit(&[
            write("a.txt", b"A\n", Some(a)),
            write("sub/b.txt", b"B\n", Some(b)),
        ])
        .unwrap();
        let mut names: Vec<String> = fs::read_dir(only_entry(&ws))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["0", "1", "manifest.json"]);
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"a\n");
        assert_eq!(on_disk(&ws, "sub/b.txt").unwrap(), b"b\n");
    }

    /// An entry an earlier lancet wrote (copies in `files/`) is still undone,
    /// and removed whole once undone.
    #[test]
    fn undo_reads_an_entry_of_the_earlier_layout() {
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        ws.commit(&[write("a.txt", b"changed\n", Some(h))]).unwrap();
        let entry = only_entry(&ws);
        fs::create_dir(entry.join("files")).unwrap();
        fs::rename(entry.join("0"), entry.join("files/0")).unwrap();
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"original\n");
        assert!(!entry.exists());
        // Its damaged copy is refused as a copy of this layout would be.
        let h = content_hash(b"original\n");
        ws.commit(&[write("a.txt", b"again\n", Some(h))]).unwrap();
        let entry = only_entry(&ws);
        fs::create_dir(entry.join("files")).unwrap();
        fs::remove_file(entry.join("0")).unwrap();
        fs::write(entry.join("files/0"), b"").unwrap();
        assert!(matches!(
            ws.undo(),
            Err(WorkspaceError::JournalDamaged { .. })
        ));
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"again\n");
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

    /// Pruning counts only entries that have a manifest toward the twenty
    /// and deletes none that has no valid one: an entry a crash cut short
    /// (no manifest, newer than the rest) and an older foreign one (a
    /// manifest that is not JSON) are both still there after many commits.
    #[test]
    fn prune_counts_entries_with_a_manifest_and_keeps_foreign_ones() {
        let (_dir, ws) = setup();
        let mut hash = None;
        let mut commit = |i: usize| {
            let bytes = format!("{i}\n").into_bytes();
            ws.commit(&[write("f.txt", &bytes, hash)]).unwrap();
            hash = Some(content_hash(&bytes));
        };
        commit(0);
        let undo = ws.root().join(".lancet/undo");
        fs::create_dir(undo.join("0000000000000001-0000000001-00000000000000000000")).unwrap();
        let foreign = undo.join("0000000000000002-0000000001-00000000000000000000");
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("manifest.json"), b"not json").unwrap();
        let cut_short = undo.join("9999999999999999-0000000001-00000000000000000000");
        fs::create_dir(&cut_short).unwrap();
        for i in 1..30 {
            commit(i);
        }
        let ids = ws.entries().unwrap();
        assert!(ids.contains(&"0000000000000001-0000000001-00000000000000000000".to_owned()));
        assert!(foreign.join("manifest.json").exists());
        assert!(cut_short.exists());
        // The foreign entry is older than the twenty and counts for nothing.
        assert_eq!(ids.len(), JOURNAL_KEEP + 3);
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "f.txt").unwrap(), b"28\n");
    }

    /// Entries pruned past the twenty wait in `.lancet/pruned/` (moved,
    /// not deleted) until there are ten, then all ten are deleted together;
    /// undo still reaches the newest. (Pruning is what a commit falls back to
    /// when it cannot recycle the oldest entry: here it is made not to.)
    #[test]
    fn pruned_entries_wait_aside_then_go_together() {
        NO_RECYCLE.set(true);
        let _back = Restore(|| NO_RECYCLE.set(false));
        let (_dir, ws) = setup();
        let mut hash = None;
        let mut commit = |i: usize| {
            let bytes = format!("{i}\n").into_bytes();
            ws.commit(&[write("f.txt", &bytes, hash)]).unwrap();
            hash = Some(content_hash(&bytes));
        };
        let pruned = ws.root().join(".lancet/pruned");
        let waiting = || match fs::read_dir(&pruned) {
            Ok(names) => names.count(),
            Err(_) => 0,
        };
        for i in 0..JOURNAL_KEEP {
            commit(i);
        }
        assert_eq!(waiting(), 0);
        for i in 0..journal::PRUNED_BATCH - 1 {
            commit(JOURNAL_KEEP + i);
            assert_eq!(journal_len(&ws), JOURNAL_KEEP);
            assert_eq!(waiting(), i + 1);
        }
        commit(JOURNAL_KEEP + journal::PRUNED_BATCH - 1);
        assert_eq!(waiting(), 0);
        assert_eq!(journal_len(&ws), JOURNAL_KEEP);
        ws.undo().unwrap();
        let last = JOURNAL_KEEP + journal::PRUNED_BATCH - 2;
        assert_eq!(
            on_disk(&ws, "f.txt").unwrap(),
            format!("{last}\n").into_bytes()
        );
    }

    /// Runs its closure when dropped: a test's thread-local put back even
    /// when an assertion fails.
    struct Restore<F: FnMut()>(F);

    impl<F: FnMut()> Drop for Restore<F> {
        fn drop(&mut self) {
            (self.0)();
        }
    }

    /// Commits `f.txt` = `"{i}\n"` for each `i` in `range`, each over the last.
    fn commit_numbers(ws: &Workspace, range: std::ops::Range<usize>) {
        for i in range {
            let before = on_disk(ws, "f.txt").map(|b| content_hash(&b));
            let bytes = format!("{i}\n").into_bytes();
            ws.commit(&[write("f.txt", &bytes, before)]).unwrap();
        }
    }

    /// The journal's directory's inode (unix), to tell a recycled entry.
    #[cfg(unix)]
    fn inode(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(path).unwrap().ino()
    }

    /// With the journal at its twenty entries, a commit takes the oldest
    /// entry over (the same directory, renamed to the new id) instead of
    /// making one and pruning the oldest: still twenty, the oldest id gone,
    /// nothing moved to `.lancet/pruned/`, and the entry holds exactly the
    /// new manifest and copy.
    #[cfg(unix)]
    #[test]
    fn a_full_journal_recycles_its_oldest_entry() {
        let (_dir, ws) = setup();
        commit_numbers(&ws, 0..JOURNAL_KEEP);
        let undo = ws.root().join(".lancet/undo");
        let ids = ws.entries().unwrap();
        assert_eq!(ids.len(), JOURNAL_KEEP);
        let oldest_inode = inode(&undo.join(&ids[0]));
        commit_numbers(&ws, JOURNAL_KEEP..JOURNAL_KEEP + 1);
        let now = ws.entries().unwrap();
        assert_eq!(now.len(), JOURNAL_KEEP);
        assert!(!now.contains(&ids[0]));
        assert_eq!(now[..JOURNAL_KEEP - 1], ids[1..]);
        let newest = undo.join(&now[JOURNAL_KEEP - 1]);
        assert_eq!(inode(&newest), oldest_inode);
        assert!(!ws.root().join(".lancet/pruned").exists());
        let mut names: Vec<_> = fs::read_dir(&newest)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["0", "manifest.json"]);
        assert_eq!(
            fs::read(newest.join("0")).unwrap(),
            format!("{}\n", JOURNAL_KEEP - 1).into_bytes()
        );
        ws.undo().unwrap();
        assert_eq!(
            on_disk(&ws, "f.txt").unwrap(),
            format!("{}\n", JOURNAL_KEEP - 1).into_bytes()
        );
    }

    /// Twenty-five applies, then twenty undos: each puts back the one
    /// before it, in order, through recycled entries; then nothing is left.
    #[test]
    fn twenty_five_applies_then_twenty_undos() {
        let (_dir, ws) = setup();
        commit_numbers(&ws, 0..25);
        assert_eq!(journal_len(&ws), JOURNAL_KEEP);
        for k in 0..JOURNAL_KEEP {
            ws.undo().unwrap();
            assert_eq!(
                on_disk(&ws, "f.txt").unwrap(),
                format!("{}\n", 23 - k).into_bytes(),
                "undo {k}"
            );
        }
        assert!(matches!(ws.undo(), Err(E::NothingToUndo)));
        assert_eq!(on_disk(&ws, "f.txt").unwrap(), b"4\n");
    }

    /// An oldest entry whose manifest is not lancet's is neither recycled
    /// nor deleted: the next valid one is recycled and the foreign one keeps
    /// every file; one holding a file its manifest does not name is not
    /// recycled either (it is pruned as before, the foreign file kept).
    #[test]
    fn a_foreign_oldest_entry_is_not_recycled() {
        let (_dir, ws) = setup();
        let undo = ws.root().join(".lancet/undo");
        commit_numbers(&ws, 0..1);
        let foreign = undo.join("0000000000000001-0000000001-00000000000000000000");
        fs::create_dir(&foreign).unwrap();
        fs::write(foreign.join("manifest.json"), b"not json").unwrap();
        fs::write(foreign.join("0"), b"keep me").unwrap();
        commit_numbers(&ws, 1..JOURNAL_KEEP + 3);
        assert_eq!(
            fs::read(foreign.join("manifest.json")).unwrap(),
            b"not json"
        );
        assert_eq!(fs::read(foreign.join("0")).unwrap(), b"keep me");
        let ids = ws.entries().unwrap();
        assert_eq!(ids.len(), JOURNAL_KEEP + 1);
        assert_eq!(ids[0], "0000000000000001-0000000001-00000000000000000000");
        // A stranger's file in the oldest real entry: not recycled.
        let oldest = undo.join(&ids[1]);
        fs::write(oldest.join("notes"), b"mine").unwrap();
        commit_numbers(&ws, JOURNAL_KEEP + 3..JOURNAL_KEEP + 4);
        assert!(!oldest.exists());
        let aside = ws.root().join(".lancet/pruned").join(&ids[1]);
        assert_eq!(fs::read(aside.join("notes")).unwrap(), b"mine");
        assert_eq!(journal_len(&ws), JOURNAL_KEEP + 1);
        ws.undo().unwrap();
        assert_eq!(
            on_disk(&ws, "f.txt").unwrap(),
            format!("{}\n", JOURNAL_KEEP + 2).into_bytes()
        );
    }

    /// Symlinks in the journal are never followed by recycling: an entry
    /// name that is a symlink to a directory outside (holding a valid
    /// manifest and copy) is not an entry; an oldest entry whose copy is a
    /// symlink to a file outside is not recycled, and the file outside
    /// stays as it was.
    #[cfg(unix)]
    #[test]
    fn recycling_never_follows_a_symlink() {
        use std::os::unix::fs::symlink;
        let (dir, ws) = setup();
        let undo = ws.root().join(".lancet/undo");
        // So that the first entry has a copy too.
        put(&ws, "f.txt", b"start\n");
        commit_numbers(&ws, 0..JOURNAL_KEEP);
        let ids = ws.entries().unwrap();
        // A valid entry outside, linked in under the oldest id of all.
        let outside = dir.path().join("outside-entry");
        fs::create_dir(&outside).unwrap();
        for name in ["manifest.json", "0"] {
            fs::copy(undo.join(&ids[0]).join(name), outside.join(name)).unwrap();
        }
        let linked = "0000000000000001-0000000001-00000000000000000000";
        symlink(&outside, undo.join(linked)).unwrap();
        // The oldest real entry's copy: a symlink to a file outside.
        let victim = dir.path().join("victim.txt");
        fs::write(&victim, b"precious").unwrap();
        fs::remove_file(undo.join(&ids[0]).join("0")).unwrap();
        symlink(&victim, undo.join(&ids[0]).join("0")).unwrap();
        commit_numbers(&ws, JOURNAL_KEEP..JOURNAL_KEEP + 2);
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert!(outside.join("manifest.json").exists());
        assert!(outside.join("0").exists());
        assert!(
            fs::symlink_metadata(undo.join(linked))
                .unwrap()
                .is_symlink()
        );
        // The entry with the symlink was pruned the old way (moved whole),
        // the next one recycled.
        assert!(!undo.join(&ids[0]).exists());
        assert!(!undo.join(&ids[1]).exists());
        assert_eq!(journal_len(&ws), JOURNAL_KEEP);
        ws.undo().unwrap();
        assert_eq!(
            on_disk(&ws, "f.txt").unwrap(),
            format!("{}\n", JOURNAL_KEEP).into_bytes()
        );
    }

    /// A crash at any point of recycling (a panic in the hook stands for
    /// one: nothing after it runs) leaves the entry without a manifest,
    /// which undo skips: it undoes the commit before, whose entry is intact,
    /// and the crashed commit changed no file.
    #[test]
    fn a_crash_while_recycling_leaves_an_entry_undo_skips() {
        for point in [Point::Unmanifested, Point::Recycled, Point::Manifest] {
            let (_dir, ws) = setup();
            commit_numbers(&ws, 0..JOURNAL_KEEP);
            let before = ws.entries().unwrap();
            HOOK.set(Some((point, Box::new(|| panic!("crash")))));
            let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                commit_numbers(&ws, JOURNAL_KEEP..JOURNAL_KEEP + 1);
            }));
            HOOK.set(None);
            assert!(crashed.is_err(), "{point:?}");
            let expected = format!("{}\n", JOURNAL_KEEP - 1).into_bytes();
            assert_eq!(on_disk(&ws, "f.txt").unwrap(), expected, "{point:?}");
            // Still as many entries (one of them, the oldest taken, without a manifest).
            assert_eq!(ws.entries().unwrap().len(), before.len(), "{point:?}");
            ws.undo().unwrap();
            assert_eq!(
                on_disk(&ws, "f.txt").unwrap(),
                format!("{}\n", JOURNAL_KEEP - 2).into_bytes(),
                "{point:?}"
            );
            // Later commits go on, and undo reaches the newest.
            commit_numbers(&ws, 100..103);
            ws.undo().unwrap();
            assert_eq!(on_disk(&ws, "f.txt").unwrap(), b"101\n", "{point:?}");
        }
    }

    /// Entries an older lancet left waiting in `.lancet/pruned/` (fewer than
    /// the ten that would delete them) go with the first commit that
    /// recycles, and the directory with them; undo still reaches the newest.
    #[test]
    fn entries_left_aside_go_with_the_first_recycling_commit() {
        let (_dir, ws) = setup();
        NO_RECYCLE.set(true);
        let back = Restore(|| NO_RECYCLE.set(false));
        commit_numbers(&ws, 0..JOURNAL_KEEP + 4);
        drop(back);
        let pruned = ws.root().join(".lancet/pruned");
        assert_eq!(fs::read_dir(&pruned).unwrap().count(), 4);
        commit_numbers(&ws, JOURNAL_KEEP + 4..JOURNAL_KEEP + 5);
        assert!(!pruned.exists());
        assert_eq!(journal_len(&ws), JOURNAL_KEEP);
        commit_numbers(&ws, JOURNAL_KEEP + 5..JOURNAL_KEEP + 6);
        ws.undo().unwrap();
        assert_eq!(
            on_disk(&ws, "f.txt").unwrap(),
            format!("{}\n", JOURNAL_KEEP + 4).into_bytes()
        );
        // A stranger's file in `.lancet/pruned/` keeps the directory.
        fs::create_dir(&pruned).unwrap();
        fs::write(pruned.join("notes"), b"mine").unwrap();
        commit_numbers(&ws, JOURNAL_KEEP + 6..JOURNAL_KEEP + 7);
        assert_eq!(fs::read(pruned.join("notes")).unwrap(), b"mine");
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

    /// Security item 5: a file changed between the commit's own read and its
    /// renames (here, after staging and journalling) refuses the commit:
    /// nothing is written, nothing is journalled, the other writer's bytes stay.
    #[test]
    fn a_change_during_the_commit_is_refused() {
        let (_dir, ws) = setup();
        let (a, b) = (put(&ws, "a.txt", b"a\n"), put(&ws, "b.txt", b"b\n"));
        let root = ws.root().to_path_buf();
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || fs::write(root.join("b.txt"), b"B by someone else\n").unwrap()),
        )));
        let err = ws
            .commit(&[
                write("a.txt", b"A\n", Some(a)),
                write("b.txt", b"B\n", Some(b)),
            ])
            .unwrap_err();
        HOOK.set(None);
        assert!(
            matches!(err, E::Stale { ref path } if path == "b.txt"),
            "{err:?}"
        );
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"a\n");
        assert_eq!(on_disk(&ws, "b.txt").unwrap(), b"B by someone else\n");
        assert_eq!(journal_len(&ws), 0);
        assert_eq!(listing(&ws), [".lancet", "a.txt", "b.txt"]);
    }

    /// Security item 5: the same size and a restored mtime do not hide a
    /// change: the content is compared too.
    #[cfg(unix)]
    #[test]
    fn a_same_size_change_with_the_old_mtime_is_refused() {
        let (_dir, ws) = setup();
        let a = put(&ws, "a.txt", b"one\n");
        let path = ws.root().join("a.txt");
        let mtime = fs::metadata(&path).unwrap().modified().unwrap();
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || {
                fs::write(&path, b"two\n").unwrap();
                let f = fs::File::options().write(true).open(&path).unwrap();
                f.set_modified(mtime).unwrap();
            }),
        )));
        let err = ws.commit(&[write("a.txt", b"ONE\n", Some(a))]).unwrap_err();
        HOOK.set(None);
        assert!(matches!(err, E::Stale { .. }), "{err:?}");
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"two\n");
    }

    /// Security item 6: a directory swapped for a symlink after the commit
    /// resolved its paths (staging done, before the last checks) refuses the
    /// commit; nothing is written through the link.
    #[cfg(unix)]
    #[test]
    fn a_directory_swapped_for_a_symlink_mid_commit_is_refused() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("a.txt"), b"a\n").unwrap();
        let a = put(&ws, "sub/a.txt", b"a\n");
        let (root, out) = (ws.root().to_path_buf(), outside.path().to_path_buf());
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || {
                fs::rename(root.join("sub"), root.join("moved")).unwrap();
                symlink(&out, root.join("sub")).unwrap();
            }),
        )));
        let err = ws
            .commit(&[write("sub/a.txt", b"A\n", Some(a))])
            .unwrap_err();
        HOOK.set(None);
        assert!(matches!(err, E::PathChanged { .. }), "{err:?}");
        assert_eq!(fs::read(outside.path().join("a.txt")).unwrap(), b"a\n");
        assert_eq!(on_disk(&ws, "moved/a.txt").unwrap(), b"a\n");
        let names: Vec<_> = fs::read_dir(outside.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file left outside");
    }

    /// Security item 5: a file swapped for another with the same bytes
    /// (a new inode renamed over it) after the commit's read refuses the
    /// commit: the last look compares the inode as well as the content.
    /// Nothing is written, nothing is journalled.
    #[cfg(unix)]
    #[test]
    fn a_file_swapped_for_a_copy_mid_commit_is_refused() {
        let (_dir, ws) = setup();
        let a = put(&ws, "sub/a.txt", b"a\n");
        let root = ws.root().to_path_buf();
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || {
                fs::write(root.join("sub/copy"), b"a\n").unwrap();
                fs::rename(root.join("sub/copy"), root.join("sub/a.txt")).unwrap();
            }),
        )));
        let err = ws
            .commit(&[write("sub/a.txt", b"A\n", Some(a))])
            .unwrap_err();
        HOOK.set(None);
        assert!(matches!(err, E::Stale { .. }), "{err:?}");
        assert_eq!(on_disk(&ws, "sub/a.txt").unwrap(), b"a\n");
        assert_eq!(journal_len(&ws), 0);
        let names: Vec<_> = fs::read_dir(ws.root().join("sub")).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file left");
    }

    /// Security item 6: the last look follows the whole path of the
    /// directory: a directory above it moved away and replaced by a symlink
    /// to a look-alike tree outside (the same names down to the file)
    /// refuses the commit; nothing is written there or in the moved tree.
    #[cfg(unix)]
    #[test]
    fn a_directory_above_swapped_for_a_symlink_mid_commit_is_refused() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(outside.path().join("x/sub")).unwrap();
        fs::write(outside.path().join("x/sub/a.txt"), b"a\n").unwrap();
        let a = put(&ws, "x/sub/a.txt", b"a\n");
        let (root, out) = (ws.root().to_path_buf(), outside.path().to_path_buf());
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || {
                fs::rename(root.join("x"), root.join("moved")).unwrap();
                symlink(out.join("x"), root.join("x")).unwrap();
            }),
        )));
        let err = ws
            .commit(&[write("x/sub/a.txt", b"A\n", Some(a))])
            .unwrap_err();
        HOOK.set(None);
        assert!(matches!(err, E::PathChanged { .. }), "{err:?}");
        assert_eq!(
            fs::read(outside.path().join("x/sub/a.txt")).unwrap(),
            b"a\n"
        );
        assert_eq!(on_disk(&ws, "moved/sub/a.txt").unwrap(), b"a\n");
        let names: Vec<_> = fs::read_dir(outside.path().join("x/sub"))
            .unwrap()
            .collect();
        assert_eq!(names.len(), 1, "no temp file left outside");
        assert_eq!(journal_len(&ws), 0);
    }

    /// A walk opens each directory without following a symlink and says
    /// what stopped it: a symlinked component (even one leading inside the
    /// root) is a changed path, a file is a parent that is not a directory,
    /// a missing one is nothing (or made, when asked).
    #[cfg(unix)]
    #[test]
    fn walk_refuses_a_symlinked_directory_and_says_what_else_is_there() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        put(&ws, "real/f.txt", b"");
        put(&ws, "file", b"");
        symlink(outside.path(), ws.root().join("out")).unwrap();
        symlink(ws.root().join("real"), ws.root().join("inside")).unwrap();
        for dir in ["out", "inside"] {
            let walked = ws.walk(Path::new(dir), "p", None);
            assert!(
                matches!(walked, Err(E::PathChanged { .. })),
                "{dir}: {walked:?}"
            );
        }
        let walked = ws.walk(Path::new("file/deeper"), "p", None);
        assert!(
            matches!(walked, Err(E::ParentNotDirectory { ref parent, .. }) if parent == "file"),
            "{walked:?}"
        );
        assert!(
            ws.walk(Path::new("missing/deeper"), "p", None)
                .unwrap()
                .is_none()
        );
        let mut made = Vec::new();
        let dir = ws
            .walk(Path::new("new/deeper"), "p", Some(&mut made))
            .unwrap();
        assert!(dir.is_some());
        assert_eq!(made, [PathBuf::from("new"), PathBuf::from("new/deeper")]);
        assert!(ws.walk(Path::new("real"), "p", None).unwrap().is_some());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    /// `read_for_write` answers as `check_write` then `read` do: what may
    /// not be written is refused with the same error, before anything is
    /// read; a file is read whole (across the first read's size, when it
    /// grew) and bounded by the size limit.
    #[cfg(unix)]
    #[test]
    fn read_for_write_is_check_write_then_read() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        let bytes: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        put(&ws, "a/f.txt", &bytes);
        put(&ws, "file", b"x");
        fs::create_dir(ws.root().join("a/dir")).unwrap();
        symlink(ws.root().join("a/f.txt"), ws.root().join("a/link")).unwrap();
        for rel in [
            "a/f.txt",
            "a/new.txt",
            "a/dir",
            "a/link",
            "file/x",
            ".lancet.toml",
            ".git/x",
            "../x",
            "/abs",
            "missing/x",
        ] {
            let merged = ws.read_for_write(rel);
            let apart = ws.check_write(rel).and_then(|()| ws.read(rel));
            assert_eq!(format!("{merged:?}"), format!("{apart:?}"), "{rel}");
        }
        let state = ws.read_for_write("a/f.txt").unwrap().unwrap();
        assert_eq!(state.bytes, bytes);
        assert_eq!(state.hash, content_hash(&bytes));
        let small = Workspace::open(ws.root()).unwrap().with_max_file_bytes(100);
        assert!(matches!(
            small.read_for_write("a/f.txt"),
            Err(E::TooLarge { bytes: 70_000, .. })
        ));
    }

    /// Security item 6: even a swap after the last checks, right before the
    /// rename, cannot redirect the write: the rename goes through the handle
    /// of the directory that was checked, never through the new symlink.
    #[cfg(unix)]
    #[test]
    fn a_swap_after_the_checks_still_writes_inside() {
        use std::os::unix::fs::symlink;
        let (_dir, ws) = setup();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("a.txt"), b"a\n").unwrap();
        let a = put(&ws, "sub/a.txt", b"a\n");
        let (root, out) = (ws.root().to_path_buf(), outside.path().to_path_buf());
        HOOK.set(Some((
            Point::BeforeRename,
            Box::new(move || {
                fs::rename(root.join("sub"), root.join("moved")).unwrap();
                symlink(&out, root.join("sub")).unwrap();
            }),
        )));
        ws.commit(&[write("sub/a.txt", b"A\n", Some(a))]).unwrap();
        HOOK.set(None);
        assert_eq!(fs::read(outside.path().join("a.txt")).unwrap(), b"a\n");
        assert_eq!(on_disk(&ws, "moved/a.txt").unwrap(), b"A\n");
    }

    /// Security item 5: one lancet at a time: a second lock waits, bounded,
    /// then says another is applying; a commit under a held lock waits too.
    #[test]
    fn a_held_lock_makes_others_wait_then_refuse() {
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"a\n");
        let other = Workspace::open(ws.root())
            .unwrap()
            .with_lock_wait(Duration::from_millis(50));
        let held = ws.lock().unwrap();
        assert!(matches!(other.lock(), Err(E::Busy { .. })));
        let busy = other
            .commit(&[write("a.txt", b"A\n", Some(h))])
            .unwrap_err();
        assert!(matches!(busy, E::Busy { .. }), "{busy:?}");
        held.commit(
            &[write("a.txt", b"A\n", Some(h))],
            &CommitOptions::default(),
        )
        .unwrap();
        drop(held);
        assert!(other.lock().is_ok());
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"A\n");
    }

    /// The one journal entry's saved copy `n`.
    #[cfg(unix)]
    fn saved_copy(ws: &Workspace, n: usize) -> PathBuf {
        let entry = fs::read_dir(ws.root().join(".lancet/undo"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        entry.join(n.to_string())
    }

    #[cfg(unix)]
    #[test]
    fn journal_links_the_original_inode_and_makes_it_private() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        let path = ws.root().join("a.txt");
        fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let ino = fs::metadata(&path).unwrap().ino();
        ws.commit(&[write("a.txt", b"changed\n", Some(h))]).unwrap();
        let copy = fs::metadata(saved_copy(&ws, 0)).unwrap();
        // No bytes copied: the journal holds the very inode the commit replaced,
        // private now that the file's own name points at the new content.
        assert_eq!(copy.ino(), ino);
        assert_eq!(copy.nlink(), 1);
        assert_eq!(copy.mode() & 0o7777, 0o600);
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o644);
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"original\n");
        assert_eq!(fs::metadata(&path).unwrap().mode() & 0o7777, 0o644);
    }

    #[cfg(unix)]
    #[test]
    fn journal_copies_a_file_with_other_names() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        let path = ws.root().join("a.txt");
        fs::hard_link(&path, ws.root().join("other-name.txt")).unwrap();
        let ino = fs::metadata(&path).unwrap().ino();
        ws.commit(&[write("a.txt", b"changed\n", Some(h))]).unwrap();
        // A link would let a write through the other name change the journal's copy.
        let copy = fs::metadata(saved_copy(&ws, 0)).unwrap();
        assert_ne!(copy.ino(), ino);
        assert_eq!(copy.mode() & 0o7777, 0o600);
        fs::write(ws.root().join("other-name.txt"), b"edited elsewhere\n").unwrap();
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"original\n");
    }

    /// The journal links the name it was given, and a name swapped between
    /// the read and the link (then put back before the last look) links
    /// another file: the check after the renames finds it is not the file
    /// read and puts a private copy of the bytes read in its place, so undo
    /// restores the original.
    #[cfg(unix)]
    #[test]
    fn a_link_to_a_swapped_file_is_replaced_by_a_copy() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        let root = ws.root().to_path_buf();
        HOOK.set(Some((
            Point::Staged,
            Box::new(move || {
                fs::rename(root.join("a.txt"), root.join("kept.txt")).unwrap();
                fs::write(root.join("a.txt"), b"an impostor\n").unwrap();
                HOOK.set(Some((
                    Point::BeforeRecheck,
                    Box::new(move || {
                        fs::rename(root.join("kept.txt"), root.join("a.txt")).unwrap();
                    }),
                )));
            }),
        )));
        ws.commit(&[write("a.txt", b"changed\n", Some(h))]).unwrap();
        HOOK.set(None);
        let copy = fs::symlink_metadata(saved_copy(&ws, 0)).unwrap();
        assert!(copy.is_file());
        assert_eq!(copy.nlink(), 1);
        assert_eq!(copy.mode() & 0o7777, 0o600);
        assert_eq!(fs::read(saved_copy(&ws, 0)).unwrap(), b"original\n");
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"original\n");
    }

    /// An original given another name after the journal linked it (so a
    /// write through that name would change the journal's copy) is replaced
    /// in the journal by a private copy once the renames are done.
    #[cfg(unix)]
    #[test]
    fn a_linked_original_given_another_name_is_copied() {
        use std::os::unix::fs::MetadataExt;
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        let root = ws.root().to_path_buf();
        let ino = fs::metadata(root.join("a.txt")).unwrap().ino();
        let other = root.join("other.txt");
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || fs::hard_link(root.join("a.txt"), other).unwrap()),
        )));
        ws.commit(&[write("a.txt", b"changed\n", Some(h))]).unwrap();
        HOOK.set(None);
        let copy = fs::metadata(saved_copy(&ws, 0)).unwrap();
        assert_ne!(copy.ino(), ino);
        assert_eq!(copy.nlink(), 1);
        assert_eq!(copy.mode() & 0o7777, 0o600);
        fs::write(ws.root().join("other.txt"), b"edited elsewhere\n").unwrap();
        ws.undo().unwrap();
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"original\n");
    }

    #[test]
    fn a_stale_commit_leaves_no_linked_copy() {
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"original\n");
        let root = ws.root().to_path_buf();
        // Written in place after the journal linked it: the recheck refuses,
        // and the entry (with its link) goes.
        HOOK.set(Some((
            Point::BeforeRecheck,
            Box::new(move || {
                fs::OpenOptions::new()
                    .write(true)
                    .open(root.join("a.txt"))
                    .unwrap()
                    .write_all(b"ORIGINAL\n")
                    .unwrap();
            }),
        )));
        let err = ws
            .commit(&[write("a.txt", b"changed\n", Some(h))])
            .unwrap_err();
        assert!(matches!(err, E::Stale { .. }), "{err:?}");
        assert_eq!(journal_len(&ws), 0);
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"ORIGINAL\n");
    }

    #[test]
    fn no_undo_keeps_no_journal() {
        let (_dir, ws) = setup();
        let h = put(&ws, "a.txt", b"one\n");
        let opts = CommitOptions {
            no_undo: true,
            ..CommitOptions::default()
        };
        let receipt = ws
            .commit_with(&[write("a.txt", b"two\n", Some(h))], &opts)
            .unwrap();
        assert_eq!(
            receipt.hashes,
            [("a.txt".to_owned(), content_hash(b"two\n"))]
        );
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"two\n");
        // Not even the state directory is made.
        assert_eq!(listing(&ws), ["a.txt"]);
        assert!(matches!(ws.undo(), Err(E::NothingToUndo)));
        // A journalled commit before it is still the one undo reverts.
        let h2 = content_hash(b"two\n");
        ws.commit(&[write("a.txt", b"three\n", Some(h2))]).unwrap();
        ws.commit_with(
            &[write("a.txt", b"four\n", Some(content_hash(b"three\n")))],
            &opts,
        )
        .unwrap();
        assert!(matches!(ws.undo(), Err(E::UndoConflict { .. })));
        assert_eq!(on_disk(&ws, "a.txt").unwrap(), b"four\n");
    }
}
