//! What the agents of one run share: the tools of the top-level agent and
//! of every sub-agent it starts (the `task` tool, [`crate::agent::task`])
//! hold one [`Shared`] — the task counter, the file locks of edits, and the
//! one prompter every question goes through.
//!
//! Owns: that shared state and its rules. Does not own: running a child
//! (the task module), the words (the agent's `words::task`), or the
//! permission decision itself.
//!
//! Invariants: two agents never hold the same file — the first to edit it
//! holds it until its tools are dropped ([`Claims`] releases on drop, so a
//! child stopped by Ctrl-C leaves no lock behind); questions are asked one
//! at a time (the prompter sits behind one mutex), and a child's question
//! names the child.

use std::collections::HashMap;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use crate::agent::permissions::{Answer, Prompter, Question};

/// Files being edited by a sub-agent, by absolute path: the agent holding each.
type Locks = Arc<Mutex<HashMap<PathBuf, String>>>;

/// The one prompter of a run, shared by its agents.
pub(super) type SharedPrompter = Arc<Mutex<Box<dyn Prompter>>>;

/// What every agent of a run shares; cloning shares it.
#[derive(Clone, Default)]
pub(super) struct Shared {
    /// Tasks started so far (the next child is `task-{n+1}`).
    tasks: Arc<AtomicU32>,
    /// The file locks.
    locks: Locks,
    /// The prompter, once a child has needed it shared.
    pub(super) prompter: Option<SharedPrompter>,
}

impl Shared {
    /// The next child's id: `task-1`, `task-2`, … (counted over the whole
    /// session, so ids never repeat in one transcript).
    pub(super) fn next_task(&self) -> String {
        let n = self.tasks.fetch_add(1, Ordering::Relaxed) + 1;
        format!("task-{n}")
    }

    /// The claims of the agent `holder` (`None`: the top-level agent, which
    /// never runs beside its children and claims nothing).
    pub(super) fn claims(&self, holder: Option<String>) -> Claims {
        Claims {
            locks: Arc::clone(&self.locks),
            holder,
        }
    }
}

/// One agent's hold on the files it edits.
pub(super) struct Claims {
    locks: Locks,
    holder: Option<String>,
}

impl Claims {
    /// Takes every path in `paths` for this agent, or — when another agent
    /// holds one — takes none and says which file and which agent.
    pub(super) fn claim(&self, paths: &[PathBuf]) -> Result<(), (PathBuf, String)> {
        let Some(me) = &self.holder else {
            return Ok(());
        };
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((path, other)) = paths
            .iter()
            .find_map(|p| locks.get(p).filter(|h| *h != me).map(|h| (p, h)))
        {
            return Err((path.clone(), other.clone()));
        }
        for p in paths {
            locks.insert(p.clone(), me.clone());
        }
        Ok(())
    }

    /// The agent holding `path`.
    #[cfg(test)]
    fn holder_of(&self, path: &Path) -> Option<String> {
        let locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.get(path).cloned()
    }
}

impl Drop for Claims {
    fn drop(&mut self) {
        let Some(me) = &self.holder else { return };
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.retain(|_, h| h != me);
    }
}

/// A prompter behind the run's shared one; a child's names the child in
/// every question it asks.
pub(super) struct Asker {
    pub(super) inner: SharedPrompter,
    /// The line that names the child (`None`: the top-level agent).
    pub(super) who: Option<String>,
}

impl Prompter for Asker {
    fn confirm(&mut self, q: &Question<'_>) -> Answer {
        let mut p = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        match &self.who {
            None => p.confirm(q),
            Some(who) => {
                let detail = format!("{who}\n{}", q.detail);
                p.confirm(&Question {
                    tool: q.tool,
                    subject: q.subject,
                    detail: &detail,
                })
            }
        }
    }

    fn reason(&mut self) -> Option<String> {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reason()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_held_by_one_agent_until_its_tools_go() {
        let shared = Shared::default();
        let a = shared.claims(Some("task-1".into()));
        let b = shared.claims(Some("task-2".into()));
        let top = shared.claims(None);
        let f = PathBuf::from("/r/a.txt");
        assert_eq!(a.claim(std::slice::from_ref(&f)), Ok(()));
        assert_eq!(a.claim(std::slice::from_ref(&f)), Ok(()));
        assert_eq!(
            b.claim(&[PathBuf::from("/r/b.txt"), f.clone()]),
            Err((f.clone(), "task-1".into()))
        );
        // Nothing of a refused claim is taken.
        assert_eq!(b.holder_of(Path::new("/r/b.txt")), None);
        assert_eq!(top.claim(std::slice::from_ref(&f)), Ok(()));
        drop(a);
        assert_eq!(b.claim(std::slice::from_ref(&f)), Ok(()));
        assert_eq!(shared.next_task(), "task-1");
        assert_eq!(shared.clone().next_task(), "task-2");
    }
}
