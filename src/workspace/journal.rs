//! The undo journal: one entry per commit under `.lancet/undo/<id>/`, holding
//! `manifest.json` and the originals beside it, named `0`, `1`, … (one
//! directory an entry: a subdirectory cost every apply a `mkdir`, an open and
//! a close, and ext4 allocates a block for each new directory). Entries an
//! earlier lancet wrote keep their originals in a `files/` subdirectory;
//! undo reads them from there and removal deletes them there.
//!
//! An entry is written through the handle of `.lancet/undo` (see
//! [`state`](super::state)): its directory is made with mode 0700, the copies
//! and the manifest are created exclusively with mode 0600, and the manifest
//! is renamed into place last, so an entry has one only once it is complete.
//! An original with no other name is hard-linked rather than copied (the
//! commit renames over its name, so its inode lives on untouched), then,
//! once the renames have left the journal its only name, checked to be the
//! file that was read (else replaced by a copy) and made 0600.
//!
//! A manifest read back is data from a directory anyone with write access to
//! the project could have edited, so [`load`] validates it field by field
//! before anything acts on it: a saved copy is a plain name inside its
//! entry (digits, as lancet writes them, so never the manifest's name), every saved copy carries
//! the hash it must have, modes keep only the permission bits (0o777), paths
//! appear once. What is wrong is named in [`JournalProblem`].
//!
//! Once the journal holds its limit of entries (twenty), a commit recycles
//! the oldest rather than making a directory and pruning one
//! ([`claim_oldest`]): the oldest entry with a valid manifest that holds
//! nothing else than that manifest and the copies it names has its manifest
//! renamed to `manifest.json.tmp` (from then on it is an entry cut short,
//! which undo and pruning skip), is renamed to the new id (never over an
//! existing name), loses the copies its manifest named, and is written as a
//! new entry, its manifest written over the old one's inode and renamed
//! into place last. No directory is made or freed; on a file system that
//! discards freed blocks at once (ext4 `-o discard`), each freed one waits
//! for the device. Anything that keeps the oldest entry from being recycled
//! (a legacy `files/`, a stranger's file, a symlink, a file system without
//! `RENAME_NOREPLACE`) falls back to a new entry and [`prune`].
//!
//! Recycling, pruning and removal delete only what a valid manifest names,
//! through the entry's directory handle (`unlinkat`, never following a
//! symlink); anything else found in an entry is left where it is, and so is
//! the entry. Entries pruned past the limit (where recycling could not be
//! done, or an earlier lancet's) first wait in `.lancet/pruned/` (moved
//! there whole by a rename, which frees no disk blocks) and are deleted ten
//! at a time ([`prune`]), or all at once by a commit that recycled ([`drain`]).
//!
//! Owns: the entry layout, the manifest and its validation. Does not own what
//! a commit or an undo does with it (the workspace).
//!
//! Invariant: nothing outside an entry's own directory is ever read, written
//! or deleted on the word of a manifest.

use std::ffi::OsStr;
use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use super::dirs::{Dir, FileKind, Meta};
use super::state::{DIR_MODE, FILE_MODE, StateDir};
use super::{WorkspaceError, content_hash, io_at};

/// The manifest's file name in an entry.
const MANIFEST: &str = "manifest.json";
/// The manifest while it is being written.
const MANIFEST_TMP: &str = "manifest.json.tmp";
/// The directory of saved originals in an entry an earlier lancet wrote
/// (this one writes them into the entry itself).
const LEGACY_FILES: &str = "files";
/// A manifest larger than this is not one lancet wrote (it lists paths and hashes).
const MANIFEST_MAX: u64 = 16 << 20;
/// How many pruned entries wait in `.lancet/pruned/` before an apply deletes
/// them together (see [`prune`]).
pub(crate) const PRUNED_BATCH: usize = 10;

/// What is wrong with a journal entry's manifest (or what it names).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalProblem {
    /// The manifest is not the JSON lancet writes.
    Syntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The manifest is larger than any lancet writes.
    TooLarge {
        /// Its size in bytes.
        bytes: u64,
    },
    /// A saved copy's name is not a plain name inside the entry.
    SavedName {
        /// The name as recorded.
        saved: String,
    },
    /// `existed` and `saved` disagree: a file that existed has no copy, or the reverse.
    SavedMissing {
        /// The file's path as recorded.
        path: String,
    },
    /// A saved copy has no hash to check it against.
    HashMissing {
        /// The file's path as recorded.
        path: String,
    },
    /// A path (or a saved copy) appears twice.
    Duplicate {
        /// The path or copy name.
        path: String,
    },
    /// Something in the entry is not a regular file or directory as lancet made it.
    NotRegular {
        /// Its name inside the entry (`manifest.json`, `0`; `files/0` in an
        /// entry an earlier lancet wrote).
        name: String,
        /// What it is.
        found: FileKind,
    },
    /// A saved copy named by the manifest is not in the entry.
    CopyMissing {
        /// The copy's name.
        saved: String,
    },
}

impl std::fmt::Display for JournalProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalProblem::Syntax { line, column } => {
                write!(f, "not valid JSON at line {line}, column {column}")
            }
            JournalProblem::TooLarge { bytes } => write!(f, "{bytes} bytes"),
            JournalProblem::SavedName { saved } => write!(f, "bad copy name {saved:?}"),
            JournalProblem::SavedMissing { path } => write!(f, "no copy for {path}"),
            JournalProblem::HashMissing { path } => write!(f, "no hash for {path}"),
            JournalProblem::Duplicate { path } => write!(f, "{path} twice"),
            JournalProblem::NotRegular { name, found } => {
                write!(f, "{name} is {}", found.describe())
            }
            JournalProblem::CopyMissing { saved } => write!(f, "copy {saved} missing"),
        }
    }
}

/// One journal entry's record, as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    entries: Vec<StoredEntry>,
    /// Directories the commit created, relative to the root, outermost first.
    created_dirs: Vec<String>,
}

/// One path of a journalled commit, as stored.
#[derive(Debug, Serialize, Deserialize)]
struct StoredEntry {
    path: String,
    existed: bool,
    /// Name of the saved original in the entry (present exactly when `existed`).
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

/// A validated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub(crate) entries: Vec<Entry>,
    /// Directories the commit created, relative to the root, outermost first.
    pub(crate) created_dirs: Vec<String>,
}

/// One path of a validated manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The path as the commit was given it (confined again before use).
    pub(crate) path: String,
    /// The saved original: its name in the entry and its hash.
    pub(crate) saved: Option<(String, u64)>,
    /// Permission bits the original had (masked to 0o777).
    pub(crate) mode: Option<u32>,
    /// Hash of the content the commit left; `None` when it deleted the file.
    pub(crate) after: Option<u64>,
}

/// What one path of a commit journals: where, the original (bytes, hash,
/// mode) when there was one, and the hash of what the commit leaves.
pub(crate) struct Record<'a> {
    pub(crate) path: &'a str,
    pub(crate) before: Option<(&'a [u8], u64, Option<u32>)>,
    pub(crate) after: Option<u64>,
    /// Where the original is (its directory, its name, what it was when
    /// read), so the journal can link it rather than copy it.
    pub(crate) source: Option<(&'a Dir, &'a OsStr, Meta)>,
}

/// What [`write`] saved in an entry: every saved copy, and those of them
/// that are hard links to the originals (to be checked and made private by
/// [`privatize`] once the commit has renamed the originals away).
#[derive(Debug, Default)]
pub(crate) struct Saved {
    pub(crate) copies: Vec<String>,
    pub(crate) linked: Vec<Linked>,
    /// The entry's directory, still open for [`privatize`] (`None` when
    /// nothing was linked).
    entry: Option<Dir>,
    /// Whether the entry is the journal's oldest, recycled (see
    /// [`claim_oldest`]): the journal holds no more entries than before.
    pub(crate) recycled: bool,
}

/// A saved copy that is a hard link to an original.
#[derive(Debug)]
pub(crate) struct Linked {
    /// Its name in the entry.
    name: String,
    /// The index of its [`Record`] (whose bytes [`privatize`] writes when
    /// the link turns out not to be the file that was read).
    record: usize,
    /// The original as it was read.
    read: Meta,
}

/// Links the original `from` in `src` into `entry` as `to`, when that can
/// give the journal exactly the file that was read: a regular file with no
/// other name (so nothing else can write to it through one). Anything else
/// (a file system without hard links, a cross-device `.lancet/`,
/// `protected_hardlinks` refusing another user's file) leaves nothing and
/// says false: the caller copies instead.
///
/// Whether the link is the very file that was read (a name swapped since
/// would link another) is not looked at here: [`privatize`] opens every
/// linked copy after the renames anyway, and checks it there, where a
/// mismatch is replaced by a copy of the bytes read. Until then the commit
/// has not replaced anything, and a commit refused before its renames
/// discards the entry whole.
fn link_original(entry: &Dir, src: &Dir, from: &OsStr, read: &Meta, to: &OsStr) -> bool {
    read.nlink == 1 && entry.link_from(src, from, to).is_ok()
}

/// Makes the linked copies `saved.linked` private (mode 0600) once the
/// commit's renames have left the journal their only name, and checks that
/// each is the file that was read: the same device, inode, size and mtime,
/// and no other name (link count 1). One that is not (swapped between the
/// read and the link, given another name since) is replaced by a private
/// copy of the bytes that were read, `bytes(record)`. Best effort: undo
/// checks every copy against its recorded hash, so a copy left wrong is
/// refused there, never restored; and the entry's directories are 0700
/// already, so a copy that keeps the original's mode (another user's file,
/// which only its owner may chmod) is still out of everyone else's reach.
///
/// Through the handle [`write`] kept of the entry (not opened again by name).
pub(crate) fn privatize<'b>(saved: &Saved, bytes: impl Fn(usize) -> Option<&'b [u8]>) {
    let Some(entry) = &saved.entry else {
        return;
    };
    for l in &saved.linked {
        let name = OsStr::new(&l.name);
        // Opened without a look by name first: `write` made this name in
        // the entry (0700, lancet's own) and linked a regular file to it;
        // the descriptor's own `fstat` checks what it is.
        match entry.open_read_seen(name) {
            Ok((file, m)) if m.nlink == 1 && m.identity() == l.read.identity() => {
                if m.mode & 0o7777 != FILE_MODE {
                    let _ = super::dirs::set_mode(&file, FILE_MODE);
                }
            }
            _ => {
                if let Some(bytes) = bytes(l.record)
                    && matches!(entry.stat(name), Ok(Some(m)) if m.kind == FileKind::Regular)
                    && entry.unlink(name).is_ok()
                    && let Ok(mut f) = entry.create_new(name, FILE_MODE)
                {
                    let _ = f.write_all(bytes);
                }
            }
        }
    }
}

/// Whether `name` looks like an entry id lancet makes (digits and dashes).
fn is_id(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

/// Whether `name` is a copy name lancet makes (a decimal index).
fn is_copy_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 10 && name.bytes().all(|b| b.is_ascii_digit())
}

fn corrupt(id: &str, problem: JournalProblem) -> WorkspaceError {
    WorkspaceError::JournalCorrupt {
        entry: id.to_owned(),
        problem,
    }
}

/// Writes entry `id`: the originals (hard-linked where that keeps exactly
/// the file read, else copied), then the manifest, and says what it saved.
/// On failure nothing of the entry is left.
///
/// With `keep` (the journal's limit) and a journal that holds that many
/// entries with a manifest, the oldest is recycled for `id` rather than a
/// new directory made and the oldest pruned after the commit (see
/// [`claim_oldest`]); anything that keeps it from being recycled falls back
/// to a new entry, which [`prune`] then trims as before.
///
/// A link costs no bytes: the commit renames the new content over the
/// original's name, so the original inode lives on untouched in the journal.
/// Undo checks every copy against its recorded hash either way, so a linked
/// original someone wrote to through an open descriptor is refused, never
/// restored.
pub(crate) fn write(
    undo: &StateDir,
    id: &str,
    records: &[Record<'_>],
    created_dirs: Vec<String>,
    keep: Option<usize>,
) -> Result<Saved, WorkspaceError> {
    if let Some(keep) = keep
        && let Some(entry) = claim_oldest(undo, keep, id)
    {
        let mut written = Vec::new();
        let mut linked = Vec::new();
        match fill(
            undo,
            id,
            &entry,
            records,
            &created_dirs,
            true,
            &mut written,
            &mut linked,
        ) {
            Ok(()) => {
                return Ok(Saved {
                    copies: written,
                    entry: (!linked.is_empty()).then_some(entry),
                    linked,
                    recycled: true,
                });
            }
            // What this commit wrote there goes, and the entry with it when
            // nothing else is left; then a new entry is tried (which fails
            // if the old one could not go).
            Err(_) => {
                drop(entry);
                remove_names(undo.dir(), id, &written);
            }
        }
    }
    let entry_name = OsStr::new(id);
    undo.dir()
        .make_dir(entry_name, DIR_MODE)
        .map_err(io_at(&undo.path().join(id)))?;
    let mut written: Vec<String> = Vec::new();
    let mut linked: Vec<Linked> = Vec::new();
    let result = undo
        .dir()
        .open_dir(entry_name)
        .map_err(io_at(&undo.path().join(id)))
        .and_then(|entry| {
            fill(
                undo,
                id,
                &entry,
                records,
                &created_dirs,
                false,
                &mut written,
                &mut linked,
            )?;
            Ok(entry)
        });
    match result {
        Ok(entry) => Ok(Saved {
            copies: written,
            entry: (!linked.is_empty()).then_some(entry),
            linked,
            recycled: false,
        }),
        Err(e) => {
            remove_names(undo.dir(), id, &written);
            Err(e)
        }
    }
}

/// Writes the originals of `records` and the manifest into `entry` (entry
/// `id`, empty but for the `manifest.json.tmp` a recycled entry keeps when
/// `reused`), noting every copy made in `written` and every link in `linked`.
#[allow(clippy::too_many_arguments)]
fn fill(
    undo: &StateDir,
    id: &str,
    entry: &Dir,
    records: &[Record<'_>],
    created_dirs: &[String],
    reused: bool,
    written: &mut Vec<String>,
    linked: &mut Vec<Linked>,
) -> Result<(), WorkspaceError> {
    let at = |name: &str| undo.path().join(id).join(name);
    let mut stored = Vec::with_capacity(records.len());
    for (n, r) in records.iter().enumerate() {
        let name = n.to_string();
        if let Some((bytes, _, _)) = r.before {
            let to = OsStr::new(&name);
            let link = r
                .source
                .filter(|(src, from, read)| link_original(entry, src, from, read, to));
            if let Some((_, _, read)) = link {
                written.push(name.clone());
                linked.push(Linked {
                    name: name.clone(),
                    record: n,
                    read,
                });
            } else {
                let path = at(&name);
                let mut f = entry.create_new(to, FILE_MODE).map_err(io_at(&path))?;
                written.push(name.clone());
                f.write_all(bytes).map_err(io_at(&path))?;
            }
        }
        stored.push(StoredEntry {
            path: r.path.to_owned(),
            existed: r.before.is_some(),
            saved: r.before.map(|_| name),
            mode: r.before.and_then(|(_, _, m)| m.map(|m| m & 0o777)),
            after: r.after,
            before: r.before.map(|(_, h, _)| h),
        });
    }
    let json = serde_json::to_vec_pretty(&Stored {
        entries: stored,
        created_dirs: created_dirs.to_vec(),
    })
    .map_err(|e| io_at(&at(MANIFEST))(e.into()))?;
    // Written aside and renamed, so an entry has a manifest only once it is
    // complete. A recycled entry's old manifest, renamed aside already, is
    // written over in place (its inode and block kept: nothing freed, which
    // a file system that discards freed blocks waits for) when it is a
    // regular file with no other name; else it goes and a new one is made.
    let tmp = OsStr::new(MANIFEST_TMP);
    let reuse = if reused {
        match entry.open_write_existing(tmp) {
            Ok((f, m)) if m.nlink == 1 => {
                if m.mode & 0o7777 != FILE_MODE {
                    let _ = super::dirs::set_mode(&f, FILE_MODE);
                }
                Some(f)
            }
            _ => {
                if matches!(entry.stat(tmp), Ok(Some(m)) if m.kind == FileKind::Regular) {
                    let _ = entry.unlink(tmp);
                }
                None
            }
        }
    } else {
        None
    };
    let in_place = reuse.is_some();
    let mut f = match reuse {
        Some(f) => f,
        None => entry
            .create_new(tmp, FILE_MODE)
            .map_err(io_at(&at(MANIFEST_TMP)))?,
    };
    f.write_all(&json).map_err(io_at(&at(MANIFEST_TMP)))?;
    if in_place {
        f.set_len(json.len() as u64)
            .map_err(io_at(&at(MANIFEST_TMP)))?;
    }
    drop(f);
    super::hook("manifest");
    entry
        .rename(tmp, entry, OsStr::new(MANIFEST))
        .map_err(io_at(&at(MANIFEST)))?;
    Ok(())
}

/// Takes the journal's oldest entry over for the new entry `id`, when the
/// journal holds `keep` entries with a manifest (the `keep - 1` newest of
/// them stay): the oldest entry with a valid manifest, provided it holds
/// exactly that manifest and the copies it names, all regular files (an
/// entry an earlier lancet wrote, with its `files/`, or one holding anything
/// else, is left to [`prune`]). Its manifest is renamed to
/// `manifest.json.tmp` first, so from then on it is an entry cut short,
/// which undo and [`prune`] skip; the entry is then renamed to `id` (never
/// over anything there) and the copies its manifest named are deleted,
/// through its own handle, which is handed back for [`fill`].
///
/// `None` (nothing changed, or an entry left without a manifest) when the
/// journal is not full or the oldest entry cannot be taken over: the caller
/// makes a new entry. Cheap when it is not full and the journal's link
/// count says so (see [`StateDir::subdirs`]); otherwise one listing of the
/// journal, a look for the manifest of each of the `keep - 1` newest
/// entries (as [`prune`] makes), a read of the oldest's manifest and one
/// listing of that entry.
fn claim_oldest(undo: &StateDir, keep: usize, id: &str) -> Option<Dir> {
    let stays = keep.checked_sub(1)?;
    if undo.subdirs().is_some_and(|n| n < keep as u64) {
        return None;
    }
    let entries = ids(undo).ok()?;
    if entries.len() < keep {
        return None;
    }
    let mut split = entries.len();
    let mut kept = 0;
    while kept < stays {
        split = split.checked_sub(1)?;
        if has_manifest(undo, &entries[split]) {
            kept += 1;
        }
    }
    // The oldest entry with a valid manifest; older ones without are not
    // lancet's to take (as in `prune`).
    let (old, entry, manifest) = entries[..split].iter().find_map(|old| {
        let entry = undo.dir().open_dir(OsStr::new(old)).ok()?;
        let manifest = load_in(undo, old, &entry).ok()??;
        Some((old, entry, manifest))
    })?;
    let mut copies: Vec<&str> = manifest
        .entries
        .iter()
        .filter_map(|e| e.saved.as_ref().map(|(n, _)| n.as_str()))
        .collect();
    copies.sort_unstable();
    // Exactly the manifest and the copies it names, each a regular file.
    let listed = entry.kinds().ok()?;
    for (name, kind) in &listed {
        let ours = name
            .to_str()
            .is_some_and(|n| n == MANIFEST || copies.binary_search(&n).is_ok());
        let regular = match kind {
            Some(kind) => *kind == FileKind::Regular,
            None => matches!(entry.stat(name), Ok(Some(m)) if m.kind == FileKind::Regular),
        };
        if !ours || !regular {
            return None;
        }
    }
    // The name must still lead to the entry held (its identity), so that
    // the rename below moves the entry whose manifest was read.
    let held = entry.meta().ok()?;
    let same = |name: &str| {
        matches!(undo.dir().stat(OsStr::new(name)), Ok(Some(m))
            if m.kind == FileKind::Directory && (m.dev, m.ino) == (held.dev, held.ino))
    };
    if !same(old) {
        return None;
    }
    entry
        .rename_noreplace(OsStr::new(MANIFEST), &entry, OsStr::new(MANIFEST_TMP))
        .ok()?;
    super::hook("unmanifested");
    if undo
        .dir()
        .rename_noreplace(OsStr::new(old), undo.dir(), OsStr::new(id))
        .is_err()
    {
        // Left where it is without a manifest: an entry cut short.
        return None;
    }
    if !same(id) {
        // Swapped meanwhile: what was moved is put back, and the entry held
        // (wherever it is now) has no manifest any more.
        let _ = undo
            .dir()
            .rename_noreplace(OsStr::new(id), undo.dir(), OsStr::new(old));
        return None;
    }
    super::hook("recycled");
    for name in copies {
        let os = OsStr::new(name);
        if matches!(entry.stat(os), Ok(Some(m)) if m.kind == FileKind::Regular) {
            let _ = entry.unlink(os);
        }
    }
    Some(entry)
}

/// Removes entry `id` as [`write`] left it (copies `copies`): a commit that
/// failed after journalling has nothing to undo.
pub(crate) fn discard(undo: &StateDir, id: &str, copies: &[String]) {
    remove_names(undo.dir(), id, copies);
}

/// Removes entry `id`'s copies named in `copies` (and, in an entry an
/// earlier lancet wrote, its `files/`), its manifest (or the one being
/// written) and the entry itself, each only if it is what lancet made there
/// (a regular file, an empty directory). The manifest goes even when
/// something foreign keeps the entry: it is then no longer one lancet would
/// undo or prune.
fn remove_names(undo: &Dir, id: &str, copies: &[String]) {
    let Ok(entry) = undo.open_dir(OsStr::new(id)) else {
        return;
    };
    let unlink_copies = |dir: &Dir| {
        for name in copies {
            let os = OsStr::new(name);
            if matches!(dir.stat(os), Ok(Some(m)) if m.kind == FileKind::Regular) {
                let _ = dir.unlink(os);
            }
        }
    };
    unlink_copies(&entry);
    if let Ok(files) = entry.open_dir(OsStr::new(LEGACY_FILES)) {
        unlink_copies(&files);
        drop(files);
        let _ = entry.remove_dir(OsStr::new(LEGACY_FILES));
    }
    for name in [MANIFEST_TMP, MANIFEST] {
        let os = OsStr::new(name);
        if matches!(entry.stat(os), Ok(Some(m)) if m.kind == FileKind::Regular) {
            let _ = entry.unlink(os);
        }
    }
    drop(entry);
    let _ = undo.remove_dir(OsStr::new(id));
}

/// Removes entry `id`, which `manifest` (validated) describes: only what it names.
pub(crate) fn remove(undo: &StateDir, id: &str, manifest: &Manifest) {
    let copies: Vec<String> = manifest
        .entries
        .iter()
        .filter_map(|e| e.saved.as_ref().map(|(n, _)| n.clone()))
        .collect();
    remove_names(undo.dir(), id, &copies);
}

/// The entry ids under `.lancet/undo`, oldest first (ids sort by time): real
/// directories with an id-shaped name; anything else is not lancet's.
///
/// The listing's own kinds say which names are directories: no `fstatat`
/// per entry (one only where the file system does not say). Whatever is
/// done with an entry later opens it without following a symlink anyway.
pub(crate) fn ids(undo: &StateDir) -> Result<Vec<String>, WorkspaceError> {
    let listed = undo.dir().kinds().map_err(io_at(undo.path()))?;
    let mut out: Vec<String> = listed
        .into_iter()
        .filter_map(|(n, kind)| Some((n.into_string().ok()?, kind)))
        .filter(|(n, _)| is_id(n))
        .filter(|(n, kind)| match kind {
            Some(kind) => *kind == FileKind::Directory,
            None => {
                matches!(undo.dir().stat(OsStr::new(n)), Ok(Some(m)) if m.kind == FileKind::Directory)
            }
        })
        .map(|(n, _)| n)
        .collect();
    out.sort();
    Ok(out)
}

/// Reads and validates entry `id`'s manifest; `Ok(None)` when the entry has
/// none (a commit cut short before it touched any file).
pub(crate) fn load(undo: &StateDir, id: &str) -> Result<Option<Manifest>, WorkspaceError> {
    let entry = undo
        .dir()
        .open_dir(OsStr::new(id))
        .map_err(io_at(&undo.path().join(id)))?;
    load_in(undo, id, &entry)
}

/// [`load`] through the entry's handle `entry`, already open.
fn load_in(undo: &StateDir, id: &str, entry: &Dir) -> Result<Option<Manifest>, WorkspaceError> {
    let path = undo.path().join(id).join(MANIFEST);
    let name = OsStr::new(MANIFEST);
    let meta = match entry.stat(name).map_err(io_at(&path))? {
        None => return Ok(None),
        Some(m) if m.kind != FileKind::Regular => {
            return Err(corrupt(
                id,
                JournalProblem::NotRegular {
                    name: MANIFEST.to_owned(),
                    found: m.kind,
                },
            ));
        }
        Some(m) => m,
    };
    if meta.size > MANIFEST_MAX {
        return Err(corrupt(id, JournalProblem::TooLarge { bytes: meta.size }));
    }
    let (file, _) = entry.open_read(name).map_err(io_at(&path))?;
    // Sized from the stat: one read, not a doubling series of small ones.
    let mut text = Vec::with_capacity(usize::try_from(meta.size).unwrap_or(0) + 1);
    file.take(MANIFEST_MAX + 1)
        .read_to_end(&mut text)
        .map_err(io_at(&path))?;
    let stored: Stored = serde_json::from_slice(&text).map_err(|e| {
        corrupt(
            id,
            JournalProblem::Syntax {
                line: e.line(),
                column: e.column(),
            },
        )
    })?;
    validate(id, stored).map(Some)
}

/// Checks every field of a stored manifest.
fn validate(id: &str, stored: Stored) -> Result<Manifest, WorkspaceError> {
    let mut entries: Vec<Entry> = Vec::with_capacity(stored.entries.len());
    for e in stored.entries {
        let saved = match (e.existed, e.saved, e.before) {
            (false, None, _) => None,
            (true, Some(saved), _) if !is_copy_name(&saved) => {
                return Err(corrupt(id, JournalProblem::SavedName { saved }));
            }
            (true, Some(_), None) => {
                return Err(corrupt(id, JournalProblem::HashMissing { path: e.path }));
            }
            (true, Some(saved), Some(hash)) => Some((saved, hash)),
            (_, _, _) => {
                return Err(corrupt(id, JournalProblem::SavedMissing { path: e.path }));
            }
        };
        let twice = entries.iter().any(|x| {
            x.path == e.path
                || (x.saved.is_some()
                    && x.saved.as_ref().map(|s| &s.0) == saved.as_ref().map(|s| &s.0))
        });
        if twice {
            return Err(corrupt(id, JournalProblem::Duplicate { path: e.path }));
        }
        entries.push(Entry {
            path: e.path,
            saved,
            // Only permission bits are ever restored: never setuid, setgid or sticky.
            mode: e.mode.map(|m| m & 0o777),
            after: e.after,
        });
    }
    Ok(Manifest {
        entries,
        created_dirs: stored.created_dirs,
    })
}

/// Reads the saved copy `saved` of entry `id` (at most `limit` bytes) and
/// checks it against `hash`. `path` names the file in errors.
pub(crate) fn copy(
    undo: &StateDir,
    id: &str,
    saved: &str,
    hash: u64,
    path: &str,
    limit: u64,
) -> Result<Vec<u8>, WorkspaceError> {
    let mut abs = undo.path().join(id).join(saved);
    let entry = undo.dir().open_dir(OsStr::new(id)).map_err(io_at(&abs))?;
    // An entry an earlier lancet wrote keeps its copies in `files/`; one of
    // this layout has none (and a `files` that is not a directory is no one's).
    let legacy = OsStr::new(LEGACY_FILES);
    let (files, shown) = match entry.stat(legacy).map_err(io_at(&abs))? {
        Some(m) if m.kind == FileKind::Directory => {
            abs = undo.path().join(id).join(LEGACY_FILES).join(saved);
            let files = entry.open_dir(legacy).map_err(io_at(&abs))?;
            (files, format!("{LEGACY_FILES}/{saved}"))
        }
        _ => (entry, saved.to_owned()),
    };
    let name = OsStr::new(saved);
    match files.stat(name).map_err(io_at(&abs))? {
        None => {
            return Err(corrupt(
                id,
                JournalProblem::CopyMissing {
                    saved: saved.to_owned(),
                },
            ));
        }
        Some(m) if m.kind != FileKind::Regular => {
            return Err(corrupt(
                id,
                JournalProblem::NotRegular {
                    name: shown,
                    found: m.kind,
                },
            ));
        }
        Some(_) => {}
    }
    let (file, _) = files.open_read(name).map_err(io_at(&abs))?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_at(&abs))?;
    if content_hash(&bytes) != hash {
        return Err(WorkspaceError::JournalDamaged {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

/// Prunes the journal to the newest `keep` entries that carry a manifest:
/// each older entry whose manifest is valid (it names what is deleted) is
/// moved into `aside` (`.lancet/pruned/`, opened only when something is to
/// be moved), and once [`PRUNED_BATCH`] entries wait there they are deleted
/// together. `newest` is the entry the caller has just written: it has one;
/// `recycled`: it is the oldest entry taken over (see [`claim_oldest`]), so
/// the journal has no more entries than before. With the journal at its
/// limit, recycling leaves nothing to prune (the listing is skipped where
/// the link count says so); pruning is left for entries past the limit (an
/// earlier lancet's, those an entry that could not be recycled left).
///
/// Why aside: deleting an entry frees its blocks (its two directories, its
/// manifest, the original it saved), and a file system that discards freed
/// blocks at once (ext4 mounted `-o discard`, as on the machine these
/// figures come from) waits for the device on each: about a millisecond an entry,
/// paid by every apply once twenty entries exist. A rename frees nothing, so
/// nine applies in ten pay none of it; the tenth deletes ten entries.
///
/// Cheap on every apply otherwise: up to `keep` entries it costs nothing
/// where the journal directory's link count says how many subdirectories
/// it has (see [`StateDir::subdirs`]), else one listing of `.lancet/undo`
/// (no look inside any entry); past that, a look for each
/// newer entry's manifest (an open and an `fstatat`, not a read) and a read
/// of the manifests of the entries it moves, usually one. An entry counts
/// toward `keep` by having a manifest that is a regular file: validating
/// them all would make every apply past `keep` read `keep` manifests; one
/// that is not valid is refused when undo reaches it.
///
/// Best effort: the commit has already happened, and an extra old entry
/// harms nothing. Entries without a valid manifest are not lancet's to
/// delete (or to move); an entry that cannot be moved aside is deleted where
/// it is.
pub(crate) fn prune(
    undo: &StateDir,
    keep: usize,
    newest: &str,
    recycled: bool,
    aside: impl FnOnce() -> Option<StateDir>,
) {
    // `undo` was opened before `newest` was made in it: one more now, unless
    // it is a recycled entry. Up to `keep` subdirectories in all, no listing
    // could find an entry to prune.
    if undo
        .subdirs()
        .is_some_and(|n| n.saturating_add(u64::from(!recycled)) <= keep as u64)
    {
        return;
    }
    let Ok(entries) = ids(undo) else {
        return;
    };
    if entries.len() <= keep {
        return;
    }
    let mut kept = 0;
    let mut old = Vec::new();
    for id in entries.iter().rev() {
        if kept < keep {
            if id == newest || has_manifest(undo, id) {
                kept += 1;
            }
        } else {
            old.push(id);
        }
    }
    if old.is_empty() {
        return;
    }
    let aside = aside();
    for id in old {
        let Ok(Some(manifest)) = load(undo, id) else {
            continue;
        };
        let name = OsStr::new(id);
        // Never over something already there: a rename onto an empty
        // directory would replace it.
        let moved = aside.as_ref().is_some_and(|a| {
            matches!(a.dir().stat(name), Ok(None)) && undo.dir().rename(name, a.dir(), name).is_ok()
        });
        if !moved {
            remove(undo, id, &manifest);
        }
    }
    let Some(aside) = aside else {
        return;
    };
    let Ok(waiting) = ids(&aside) else {
        return;
    };
    if waiting.len() >= PRUNED_BATCH {
        for id in &waiting {
            if let Ok(Some(manifest)) = load(&aside, id) {
                remove(&aside, id, &manifest);
            }
        }
    }
}

/// Deletes every entry waiting in `aside` (`.lancet/pruned/`), whatever
/// their number: a commit that recycled its entry prunes nothing, so entries
/// an earlier lancet (or a commit that could not recycle) moved there would
/// otherwise wait for a batch that never fills. Only what their valid
/// manifests name, as [`prune`] deletes them.
pub(crate) fn drain(aside: &StateDir) {
    let Ok(waiting) = ids(aside) else {
        return;
    };
    for id in &waiting {
        if let Ok(Some(manifest)) = load(aside, id) {
            remove(aside, id, &manifest);
        }
    }
}

/// Whether entry `id` has a manifest that is a regular file (see [`prune`]):
/// one `fstatat` of `<id>/manifest.json` from the journal's handle, `id`
/// having just been listed as a real directory. Only counting rests on the
/// answer; whatever is moved or deleted is opened without following.
fn has_manifest(undo: &StateDir, id: &str) -> bool {
    let path = std::path::Path::new(id).join(MANIFEST);
    matches!(undo.dir().stat_beneath(&path), Ok(Some(m)) if m.kind == FileKind::Regular)
}
