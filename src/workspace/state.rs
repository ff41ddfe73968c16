//! lancet's own state under a root: `.lancet/` and what lives in it (the undo
//! journal, session transcripts, the lock file, `.gitignore`).
//!
//! [`open`] is the one way in. It opens `.lancet/` and then each named
//! subdirectory from the root's handle, one name at a time without following
//! symlinks, creating what is missing with mode 0700; anything else found at
//! one of those names (a symlink, a file, a FIFO) is refused with
//! [`WorkspaceError::StateEntry`], which says what is there, instead of being
//! followed. Files are created through the handle of the directory that holds
//! them, exclusively and with mode 0600 ([`StateDir::create_file`]).
//!
//! Owns: the layout and permissions of the state directory. Does not own what
//! the files hold (the journal, the sessions).
//!
//! Invariant: every byte lancet writes under `.lancet/` goes into a real
//! directory inside the root, reached from the root's handle, and is readable
//! by its owner alone.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::dirs::{Dir, FileKind};
use super::{WorkspaceError, io_at};

/// The state directory's name under the root.
pub(crate) const STATE: &str = ".lancet";
/// Permissions of every directory lancet makes under `.lancet/`.
pub(crate) const DIR_MODE: u32 = 0o700;
/// Permissions of every file lancet writes under `.lancet/`.
pub(crate) const FILE_MODE: u32 = 0o600;

/// An open directory under `.lancet/` (or `.lancet/` itself).
#[derive(Debug)]
pub struct StateDir {
    dir: Dir,
    /// Relative to the root, for messages: `.lancet/sessions`.
    rel: String,
    /// Absolute, for messages.
    abs: PathBuf,
    /// How many subdirectories it held when opened, where its link count
    /// says (see [`StateDir::subdirs`]).
    subdirs: Option<u64>,
}

/// Opens `.lancet/` under `root` (whose absolute path is `root_path`), then
/// each of `subs` inside the previous one, making what is missing (0700) and
/// writing `.lancet/.gitignore`.
pub(crate) fn open_made(
    root: &Dir,
    root_path: &Path,
    subs: &[&str],
) -> Result<StateDir, WorkspaceError> {
    open(root, root_path, subs, true)?.ok_or_else(|| WorkspaceError::StateEntry {
        path: STATE.to_owned(),
        found: FileKind::Other,
        expected: FileKind::Directory,
    })
}

/// Like [`open_made`], but makes nothing: `Ok(None)` when a directory is missing.
pub(crate) fn open_existing(
    root: &Dir,
    root_path: &Path,
    subs: &[&str],
) -> Result<Option<StateDir>, WorkspaceError> {
    open(root, root_path, subs, false)
}

/// Opens `.lancet/` and `subs`; with `create`, makes what is missing and
/// writes `.lancet/.gitignore`; without, a missing one gives `Ok(None)`.
fn open(
    root: &Dir,
    root_path: &Path,
    subs: &[&str],
    create: bool,
) -> Result<Option<StateDir>, WorkspaceError> {
    let Some(state) = child(root, root_path, STATE, STATE, create)? else {
        return Ok(None);
    };
    if create {
        ignore_all(&state)?;
    }
    let mut at = state;
    for sub in subs {
        let rel = format!("{}/{sub}", at.rel);
        match child(&at.dir, root_path, sub, &rel, create)? {
            Some(next) => at = next,
            None => return Ok(None),
        }
    }
    Ok(Some(at))
}

/// Opens (or makes) the directory `name` in `parent`, refusing anything else there.
///
/// Opened at once with `O_NOFOLLOW | O_DIRECTORY`, which only a real
/// directory passes; only a failure is looked at (`fstatat`), to say what is
/// there or to make what is missing. An existing directory is then looked at
/// through its handle (`fstat`): its mode, and its link count.
fn child(
    parent: &Dir,
    root_path: &Path,
    name: &str,
    rel: &str,
    create: bool,
) -> Result<Option<StateDir>, WorkspaceError> {
    let abs = root_path.join(rel);
    let os = OsStr::new(name);
    let refuse = |found: FileKind| WorkspaceError::StateEntry {
        path: rel.to_owned(),
        found,
        expected: FileKind::Directory,
    };
    // What is at `name` when it cannot be opened as a directory.
    let found = || {
        parent
            .stat(os)
            .ok()
            .flatten()
            .map_or(FileKind::Other, |m| m.kind)
    };
    let (dir, made) = match parent.open_dir(os) {
        Ok(dir) => (dir, false),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !create {
                return Ok(None);
            }
            let made = match parent.make_dir(os, DIR_MODE) {
                Ok(()) => true,
                // Made meanwhile by another lancet: opened below like any other.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
                Err(e) => return Err(io_at(&abs)(e)),
            };
            match parent.open_dir(os) {
                Ok(dir) => (dir, made),
                // Swapped for something else between the two calls.
                Err(_) => return Err(refuse(found())),
            }
        }
        Err(e) => {
            return Err(match found() {
                // A real directory that cannot be opened (its permissions).
                FileKind::Directory => io_at(&abs)(e),
                kind => refuse(kind),
            });
        }
    };
    let subdirs = if made {
        Some(0)
    } else {
        let m = dir.meta().map_err(io_at(&abs))?;
        // Made by an older lancet with the default mode: tightened.
        if m.mode & 0o077 != 0 {
            let _ = dir.set_mode(DIR_MODE);
        }
        // Two links (its name and its own `.`) and one per subdirectory's
        // `..` on the file systems that count them (ext4, xfs, tmpfs);
        // btrfs says 1, and a count that says no subdirectory is not trusted
        // (a file system that always says 2).
        (m.nlink > 2).then(|| m.nlink - 2)
    };
    Ok(Some(StateDir {
        dir,
        rel: rel.to_owned(),
        abs,
        subdirs,
    }))
}

/// Writes `.lancet/.gitignore` (`*`: the whole state directory stays out of
/// git) unless a regular file is there; anything else there is refused.
fn ignore_all(state: &StateDir) -> Result<(), WorkspaceError> {
    let name = OsStr::new(".gitignore");
    let abs = state.abs.join(".gitignore");
    match state.dir.stat(name).map_err(io_at(&abs))? {
        Some(m) if m.kind == FileKind::Regular => Ok(()),
        Some(m) => Err(WorkspaceError::StateEntry {
            path: format!("{}/.gitignore", state.rel),
            found: m.kind,
            expected: FileKind::Regular,
        }),
        None => match state.dir.create_new(name, FILE_MODE) {
            Ok(mut f) => f.write_all(b"*\n").map_err(io_at(&abs)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(io_at(&abs)(e)),
        },
    }
}

impl StateDir {
    /// The handle.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// How many subdirectories this directory held when it was opened
    /// (made now: none), from its link count; `None` where that count does
    /// not say (btrfs, some network and FUSE file systems, a count that says
    /// none). An upper bound on what a listing would find then, never used
    /// to reach anything: only to skip a listing that could find nothing to do.
    pub(crate) fn subdirs(&self) -> Option<u64> {
        self.subdirs
    }

    /// The directory relative to the root (`.lancet/undo`).
    pub fn rel(&self) -> &str {
        &self.rel
    }

    /// The directory's absolute path (for messages; never used to reach it).
    pub fn path(&self) -> &Path {
        &self.abs
    }

    /// Creates the new file `name` here (mode 0600, never an existing file,
    /// never through a symlink), open for writing.
    pub fn create_file(&self, name: &str) -> Result<File, WorkspaceError> {
        self.check_name(name)?;
        self.dir
            .create_new(OsStr::new(name), FILE_MODE)
            .map_err(io_at(&self.abs.join(name)))
    }

    /// Opens the existing regular file `name` here for appending.
    pub fn append_file(&self, name: &str) -> Result<File, WorkspaceError> {
        self.check_name(name)?;
        self.dir
            .open_append(OsStr::new(name), FILE_MODE, false)
            .map_err(io_at(&self.abs.join(name)))
    }

    /// Opens the regular file `name` here for reading (a symlink, a FIFO or a
    /// device is refused before it is opened).
    pub fn open_file(&self, name: &str) -> Result<File, WorkspaceError> {
        self.check_name(name)?;
        let os = OsStr::new(name);
        let abs = self.abs.join(name);
        if let Some(m) = self.dir.stat(os).map_err(io_at(&abs))?
            && m.kind != FileKind::Regular
        {
            return Err(WorkspaceError::StateEntry {
                path: format!("{}/{name}", self.rel),
                found: m.kind,
                expected: FileKind::Regular,
            });
        }
        self.dir.open_read(os).map(|(f, _)| f).map_err(io_at(&abs))
    }

    /// The names of the regular files here (symlinks and the rest left out).
    pub fn files(&self) -> Result<Vec<String>, WorkspaceError> {
        let names = self.dir.names().map_err(io_at(&self.abs))?;
        let mut out = Vec::new();
        for name in names {
            let Some(s) = name.to_str() else { continue };
            if matches!(self.dir.stat(&name), Ok(Some(m)) if m.kind == FileKind::Regular) {
                out.push(s.to_owned());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Names are single components: no separators, not `.` or `..`.
    fn check_name(&self, name: &str) -> Result<(), WorkspaceError> {
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
            return Err(WorkspaceError::InvalidPath {
                path: format!("{}/{name}", self.rel),
            });
        }
        Ok(())
    }
}
