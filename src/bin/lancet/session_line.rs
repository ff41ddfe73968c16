//! The session's line editor (rustyline): history per project in the user's
//! data directory, multi-line input, Ctrl-R, and completion of slash
//! commands and of paths in the project.
//!
//! History lives in `$XDG_DATA_HOME/lancet/history/<hash>` (else
//! `~/.local/share/lancet/history/<hash>`), the hash of the project's
//! canonical root: never in the repository, whose files anyone could have
//! planted. The directory is made 0700 and the file 0600 (a prompt may hold
//! a secret).
//!
//! Path completion stays inside the root: a word with `..` or an absolute
//! path completes nothing, and a directory is only entered when it is a real
//! directory (a symlink is offered by name, never followed).
//!
//! Invariant: nothing here reads the repository's content; it lists names.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lancet::agent::session::words::SESSION_COMMANDS;
use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Context, Editor, Event, EventContext, EventHandler,
    KeyCode, KeyEvent, Modifiers, RepeatCount,
};

/// Completion, and nothing else of rustyline's helpers.
pub(crate) struct Helper {
    root: PathBuf,
}

impl Completer for Helper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &before[start..];
        if start == 0 && word.starts_with('/') {
            return Ok((0, commands(word)));
        }
        Ok((start, paths(&self.root, word)))
    }
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(&'s self, prompt: &'p str, _: bool) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for Helper {}

impl rustyline::Helper for Helper {}

/// The slash commands starting with `word`.
pub(crate) fn commands(word: &str) -> Vec<Pair> {
    SESSION_COMMANDS
        .iter()
        .map(|(name, _)| name.split(' ').next().unwrap_or(name))
        .filter(|name| name.starts_with(word))
        .map(|name| Pair {
            display: name.to_owned(),
            replacement: format!("{name} "),
        })
        .collect()
}

/// The names in the project that complete `word` (a path relative to the
/// root); directories get a `/`.
pub(crate) fn paths(root: &Path, word: &str) -> Vec<Pair> {
    let (dir, prefix) = match word.rfind('/') {
        Some(i) => (&word[..=i], &word[i + 1..]),
        None => ("", word),
    };
    let rel = Path::new(dir);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Vec::new();
    }
    // Every directory on the way must be a real one (no symlink out).
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => {}
            _ => return Vec::new(),
        }
    }
    let Ok(entries) = std::fs::read_dir(&at) else {
        return Vec::new();
    };
    let mut out: Vec<Pair> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (prefix.is_empty() && name.starts_with('.')) {
                return None;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let shown = if is_dir { format!("{name}/") } else { name };
            Some(Pair {
                display: shown.clone(),
                replacement: format!("{dir}{shown}"),
            })
        })
        .collect();
    out.sort_by(|a, b| a.display.cmp(&b.display));
    out.truncate(200);
    out
}

/// Ctrl-C: remembers whether the line was empty, then does what it does.
struct CtrlC(Arc<AtomicBool>);

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext<'_>) -> Option<Cmd> {
        self.0.store(ctx.line().is_empty(), Ordering::SeqCst);
        None
    }
}

/// The editor, with the session's keys and its project's history loaded.
pub(crate) struct Line {
    pub(crate) editor: Editor<Helper, rustyline::history::FileHistory>,
    pub(crate) history: Option<PathBuf>,
    /// Whether the last Ctrl-C came at an empty line.
    pub(crate) empty_ctrl_c: Arc<AtomicBool>,
}

impl Line {
    pub(crate) fn new(root: &Path) -> rustyline::Result<Line> {
        let config = Config::builder()
            .max_history_size(2000)?
            .history_ignore_dups(true)?
            .history_ignore_space(true)
            .auto_add_history(true)
            .build();
        let mut editor = Editor::with_config(config)?;
        editor.set_helper(Some(Helper {
            root: root.to_path_buf(),
        }));
        // Alt-Enter: a new line in the same message.
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        let empty_ctrl_c = Arc::new(AtomicBool::new(false));
        editor.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(CtrlC(empty_ctrl_c.clone()))),
        );
        let history = history_file(root);
        if let Some(h) = &history {
            let _ = editor.load_history(h);
        }
        Ok(Line {
            editor,
            history,
            empty_ctrl_c,
        })
    }

    /// Keeps the history (the file made private first).
    pub(crate) fn save(&mut self) {
        let Some(h) = &self.history else { return };
        if let Some(dir) = h.parent()
            && crate::trust::create_private_dir(dir).is_err()
        {
            return;
        }
        if std::fs::symlink_metadata(h).is_err() {
            let _ = crate::trust::write_private(h, b"");
        }
        let _ = self.editor.save_history(h);
    }
}

/// `<data dir>/lancet/history/<hash of the canonical root>`.
pub(crate) fn history_file(root: &Path) -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let data = absolute("XDG_DATA_HOME")
        .or_else(|| absolute("HOME").map(|h| h.join(".local").join("share")))?;
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let hash = crate::trust::digest(&canonical.to_string_lossy());
    Some(data.join("lancet").join("history").join(&hash[..32]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_complete_by_prefix() {
        let names: Vec<String> = commands("/c").into_iter().map(|p| p.display).collect();
        assert_eq!(names, ["/compact", "/cost", "/clear"]);
    }

    #[cfg(unix)]
    #[test]
    fn paths_stay_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "").unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside"), root.join("link")).unwrap();
        let shown = |w: &str| -> Vec<String> {
            paths(&root, w).into_iter().map(|p| p.replacement).collect()
        };
        assert_eq!(shown("sr"), ["src/"]);
        assert_eq!(shown("src/m"), ["src/main.rs"]);
        // The symlink is offered by name, never entered.
        assert_eq!(shown("li"), ["link"]);
        assert!(shown("link/").is_empty());
        assert!(shown("../").is_empty());
        assert!(shown("/etc/").is_empty());
    }

    #[test]
    fn history_is_outside_the_project() {
        let root = Path::new("/some/project");
        if let Some(h) = history_file(root) {
            assert!(!h.starts_with(root));
            assert!(h.to_string_lossy().contains("lancet/history/"));
        }
    }
}
