//! The workspace lock: one lancet at a time plans and commits in a root.
//!
//! A [`WorkspaceLock`] holds an exclusive advisory lock (`flock`) on the root
//! directory itself, opened afresh from the root's handle. Two lancets
//! applying to one file would otherwise both read it, both plan against what
//! they read, and the second rename would silently drop the first one's edit.
//! Locks belong to an open file, so a second lock in the same process (another
//! thread, another [`Workspace`] on the same root) waits like another process.
//!
//! The lock is on the root rather than on a file under `.lancet/`: taking it
//! creates nothing (a dry run or a refused commit leaves the root as it was),
//! and there is no lock file a hostile repository could replace with a symlink
//! or a FIFO, or that lancet would ever have to delete while someone waits on it.
//!
//! Taking the lock waits, bounded by [`Workspace::lock_wait`]; then it fails
//! with [`WorkspaceError::Busy`]. The lock is released when the value is
//! dropped (or the process ends, whatever way it ends).
//!
//! Owns: taking, holding and releasing the lock. Does not own what is done
//! under it: [`WorkspaceLock::commit`] and [`WorkspaceLock::undo`] hand back
//! to the workspace.
//!
//! Invariant: a [`WorkspaceLock`] exists only while its lock is held (or on a
//! file system that has no advisory locks, where the identity checks before
//! every rename remain), and waiting for one never exceeds `lock_wait`.

use std::time::{Duration, Instant};

use super::dirs::Dir;
use super::{Change, CommitOptions, CommitReceipt, UndoReceipt, Workspace, WorkspaceError, io_at};

/// Proof that this process holds the root's lock (see the module docs).
#[derive(Debug)]
pub struct WorkspaceLock<'w> {
    ws: &'w Workspace,
    _held: Dir,
}

impl Workspace {
    /// Takes the root's lock, waiting up to [`lock_wait`](Self::lock_wait)
    /// for another lancet to finish.
    pub fn lock(&self) -> Result<WorkspaceLock<'_>, WorkspaceError> {
        let held = self.dir.reopen().map_err(io_at(&self.root))?;
        let start = Instant::now();
        let mut pause = Duration::from_millis(2);
        loop {
            if held.try_lock().map_err(io_at(&self.root))? {
                return Ok(WorkspaceLock {
                    ws: self,
                    _held: held,
                });
            }
            let waited = start.elapsed();
            if waited >= self.lock_wait {
                return Err(WorkspaceError::Busy { waited });
            }
            std::thread::sleep(pause.min(self.lock_wait - waited));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }
}

impl WorkspaceLock<'_> {
    /// The workspace this lock is held on.
    pub fn workspace(&self) -> &Workspace {
        self.ws
    }

    /// [`Workspace::commit_with`] under this lock.
    pub fn commit(
        &self,
        changes: &[Change],
        opts: &CommitOptions,
    ) -> Result<CommitReceipt, WorkspaceError> {
        self.ws.commit_locked(changes, opts)
    }

    /// [`commit`](Self::commit), given the bytes the caller read of each
    /// change's file (`originals[i]` for `changes[i]`; `None` where it has
    /// none): a file whose bytes are given, and hash to its
    /// `expected_hash`, is not read again while the commit is planned. The
    /// guarantees are [`commit`](Self::commit)'s: the last look before the
    /// renames hashes every file on disk and refuses the whole commit if any
    /// differs, and those bytes are what undo and a rollback put back.
    pub fn commit_read(
        &self,
        changes: &[Change],
        opts: &CommitOptions,
        originals: Vec<Option<Vec<u8>>>,
    ) -> Result<CommitReceipt, WorkspaceError> {
        self.ws.commit_locked_read(changes, opts, originals)
    }

    /// [`Workspace::undo`] under this lock.
    pub fn undo(&self) -> Result<UndoReceipt, WorkspaceError> {
        self.ws.undo_locked()
    }
}
