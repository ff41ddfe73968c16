//! Sessions: each run's transcript as JSON lines under the root's
//! `.lancet/sessions/`, and `--resume` reading the latest one back.
//!
//! A transcript is append-only: one [`Entry`] per line, written as soon as it
//! happens, so a run that is interrupted leaves everything up to that point.
//! Resuming replays the messages; a half-written last line is skipped.
//!
//! Transcripts hold every file read and every command output, so they are
//! written only through the workspace's state directory
//! ([`Workspace::state_dir`]): `.lancet/` and `.lancet/sessions/` must be
//! real directories inside the root (mode 0700; a symlink there is refused,
//! never followed) and each transcript is created exclusively, mode 0600.
//!
//! A sub-agent's conversation (the `task` tool) is a transcript of its own
//! beside its parent's, `<parent id>.<agent>.jsonl` ([`Session::child`]);
//! the parent's records an [`Entry::Task`] link to it. A child's name has a
//! dot in its stem, a parent's never does, so `--resume` never picks a
//! child, and replaying a parent skips the links.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::types::{Message, Usage};

/// The interactive session's words (they live with the agent's others).
pub use super::words::session as words;
use crate::workspace::{StateDir, Workspace, WorkspaceError};

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum Entry {
    /// The run began.
    Start {
        /// The model.
        model: String,
        /// The edit format's name.
        format: String,
        /// The task as given.
        task: String,
    },
    /// A message of the conversation.
    Message {
        /// The message.
        message: Message,
    },
    /// Tokens a model turn used.
    Usage {
        /// The counts.
        usage: Usage,
    },
    /// The conversation was compacted: everything before is replaced by
    /// `messages` (the task and the summary).
    Compacted {
        /// The summary the model wrote.
        summary: String,
        /// The conversation from here on (empty: the summary alone).
        #[serde(default)]
        messages: Vec<Message>,
    },
    /// A sub-agent ran (the `task` tool): where its transcript is and how
    /// it ended. Not part of the conversation (the call's result is).
    Task {
        /// Its id (`task-1`).
        agent: String,
        /// The call's description.
        description: String,
        /// Its transcript's file name, beside this one (none when it could
        /// not be written).
        transcript: Option<String>,
        /// How it ended (`answered`, `max_turns`, …, `provider_failed`).
        ending: String,
        /// Its model turns.
        turns: u32,
        /// Its tokens (already counted in the parent's).
        usage: Usage,
    },
}

/// An open transcript.
#[derive(Debug)]
pub struct Session {
    id: String,
    path: PathBuf,
    file: File,
    /// The directory it is in, when opened through the workspace (children
    /// are created there).
    dir: Option<StateDir>,
}

/// The root's `.lancet/sessions/`, made when missing, refused when it is not
/// a real directory inside the root.
fn dir(root: &Path) -> io::Result<StateDir> {
    let ws = Workspace::open(root).map_err(into_io)?;
    ws.state_dir("sessions").map_err(into_io)
}

/// A workspace refusal as an I/O error (its words kept as the message).
fn into_io(e: WorkspaceError) -> io::Error {
    match e {
        WorkspaceError::Io { source, .. } => source,
        other => io::Error::other(other),
    }
}

/// The messages of the transcript `name` in `dir`.
fn replay(dir: &StateDir, name: &str) -> io::Result<Vec<Message>> {
    let mut messages = Vec::new();
    for line in BufReader::new(dir.open_file(name).map_err(into_io)?).lines() {
        // A line cut short by an interrupted run is skipped, not fatal.
        match serde_json::from_str::<Entry>(&line?) {
            Ok(Entry::Message { message }) => messages.push(message),
            Ok(Entry::Compacted {
                summary,
                messages: restart,
            }) => {
                messages = if restart.is_empty() {
                    vec![Message::user(summary)]
                } else {
                    restart
                };
            }
            _ => {}
        }
    }
    // A run interrupted between a model's calls and their results leaves
    // calls nobody answered, which no provider accepts: they are dropped.
    if messages.last().is_some_and(|m| {
        m.blocks
            .iter()
            .any(|b| matches!(b, crate::agent::types::Block::ToolCall { .. }))
    }) {
        messages.pop();
    }
    Ok(messages)
}

impl Session {
    /// Starts a new transcript; its id sorts by time.
    pub fn create(root: &Path, now_millis: u128) -> io::Result<Session> {
        let dir = dir(root)?;
        let id = format!("{now_millis:016}-{:05}", std::process::id() % 100_000);
        let name = format!("{id}.jsonl");
        let file = dir.create_file(&name).map_err(into_io)?;
        let path = dir.path().join(name);
        Ok(Session {
            id,
            path,
            file,
            dir: Some(dir),
        })
    }

    /// Reopens the latest transcript of `root` for appending, with its messages
    /// (a compaction replaces what came before it with the task and its
    /// summary; tool calls an interrupted run never answered are dropped).
    pub fn resume_last(root: &Path) -> io::Result<Option<(Session, Vec<Message>)>> {
        let dir = dir(root)?;
        let mut names: Vec<String> = dir
            .files()
            .map_err(into_io)?
            .into_iter()
            // A sub-agent's transcript (a dot in its stem) is not a session.
            .filter(|n| {
                n.strip_suffix(".jsonl")
                    .is_some_and(|stem| !stem.contains('.'))
            })
            .collect();
        names.sort();
        let Some(name) = names.pop() else {
            return Ok(None);
        };
        let path = dir.path().join(&name);
        let messages = replay(&dir, &name)?;
        let id = name.trim_end_matches(".jsonl").to_owned();
        let file = dir.append_file(&name).map_err(into_io)?;
        Ok(Some((
            Session {
                id,
                path,
                file,
                dir: Some(dir),
            },
            messages,
        )))
    }

    /// The conversation this transcript holds now, as [`Session::resume_last`]
    /// reads it back (compactions applied, unanswered calls dropped): what a
    /// session continues from after a turn was cut short (Ctrl-C), whose
    /// messages up to the cut were each recorded as they happened.
    pub fn messages(&self, root: &Path) -> io::Result<Vec<Message>> {
        replay(&dir(root)?, &format!("{}.jsonl", self.id))
    }

    /// A transcript written to `file`, already open at `path` (the
    /// benchmark's, one per job under its results directory); its id is the
    /// file's name without `.jsonl`.
    pub fn from_file(path: PathBuf, file: File) -> Session {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = name
            .split_once(".jsonl")
            .map_or(name.as_str(), |(stem, _)| stem)
            .to_owned();
        Session {
            id,
            path,
            file,
            dir: None,
        }
    }

    /// A new transcript for the sub-agent `agent` beside this one:
    /// `<id>.<agent>.jsonl` (`<id>.<agent>-2.jsonl`, … when a resumed
    /// session's earlier run used the name), created exclusively — through
    /// the workspace's state directory when this one was opened there.
    pub fn child(&self, agent: &str) -> io::Result<Session> {
        for k in 1..100 {
            let stem = if k == 1 {
                format!("{}.{agent}", self.id)
            } else {
                format!("{}.{agent}-{k}", self.id)
            };
            let name = format!("{stem}.jsonl");
            let made = match &self.dir {
                Some(dir) => dir.create_file(&name).map_err(into_io),
                None => {
                    let at = self.path.with_file_name(&name);
                    let mut options = File::options();
                    options.write(true).create_new(true);
                    #[cfg(unix)]
                    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                    options.open(at)
                }
            };
            match made {
                Ok(file) => {
                    return Ok(Session {
                        id: stem,
                        path: self.path.with_file_name(&name),
                        file,
                        dir: None,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::from(io::ErrorKind::AlreadyExists))
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Where the transcript is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one entry (one line, flushed).
    pub fn record(&mut self, entry: &Entry) -> io::Result<()> {
        let mut line = serde_json::to_string(entry).map_err(io::Error::other)?;
        line.push('\n');
        self.file.write_all(line.as_bytes())?;
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_and_resume() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(dir.path(), 1).unwrap();
        s.record(&Entry::Start {
            model: "m".into(),
            format: "search-replace".into(),
            task: "t".into(),
        })
        .unwrap();
        s.record(&Entry::Message {
            message: Message::user("hello"),
        })
        .unwrap();
        drop(s);
        let mut later = Session::create(dir.path(), 2).unwrap();
        later
            .record(&Entry::Message {
                message: Message::user("first"),
            })
            .unwrap();
        later
            .record(&Entry::Compacted {
                summary: "summary".into(),
                messages: vec![Message::user("task"), Message::user("summary")],
            })
            .unwrap();
        later
            .record(&Entry::Message {
                message: Message::user("after"),
            })
            .unwrap();
        // A line cut short.
        std::fs::OpenOptions::new()
            .append(true)
            .open(later.path())
            .unwrap()
            .write_all(b"{\"entry\":\"mess")
            .unwrap();
        let (resumed, messages) = Session::resume_last(dir.path()).unwrap().unwrap();
        assert_eq!(resumed.id(), later.id());
        let texts: Vec<String> = messages.iter().map(Message::text).collect();
        assert_eq!(texts, ["task", "summary", "after"]);
    }

    #[test]
    fn unanswered_calls_are_dropped_on_resume() {
        use crate::agent::types::{Block, Role};
        let dir = tempfile::tempdir().unwrap();
        let mut s = Session::create(dir.path(), 1).unwrap();
        s.record(&Entry::Message {
            message: Message::user("task"),
        })
        .unwrap();
        s.record(&Entry::Message {
            message: Message {
                role: Role::Assistant,
                blocks: vec![Block::ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                }],
            },
        })
        .unwrap();
        let (_, messages) = Session::resume_last(dir.path()).unwrap().unwrap();
        assert_eq!(messages, [Message::user("task")]);
        // The open transcript reads back the same (a session after Ctrl-C).
        assert_eq!(s.messages(dir.path()).unwrap(), [Message::user("task")]);
    }

    /// Issue 14: a child's transcript sits beside its parent's, the parent
    /// links it, and resuming reads the parent (never the child), the link
    /// skipped.
    #[test]
    fn a_child_transcript_is_linked_and_never_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let mut parent = Session::create(dir.path(), 7).unwrap();
        parent
            .record(&Entry::Message {
                message: Message::user("task"),
            })
            .unwrap();
        let mut child = parent.child("task-1").unwrap();
        assert_eq!(child.id(), format!("{}.task-1", parent.id()));
        assert_eq!(child.path().parent(), parent.path().parent());
        child
            .record(&Entry::Message {
                message: Message::user("find it"),
            })
            .unwrap();
        // The name is taken: the next child of that id gets another.
        let again = parent.child("task-1").unwrap();
        assert_eq!(again.id(), format!("{}.task-1-2", parent.id()));
        parent
            .record(&Entry::Task {
                agent: "task-1".into(),
                description: "find".into(),
                transcript: Some(format!("{}.jsonl", child.id())),
                ending: "answered".into(),
                turns: 1,
                usage: Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                },
            })
            .unwrap();
        let (resumed, messages) = Session::resume_last(dir.path()).unwrap().unwrap();
        assert_eq!(resumed.id(), parent.id());
        assert_eq!(messages, [Message::user("task")]);
        // A transcript opened from a file (the benchmark's) has children too.
        let path = dir.path().join("job.jsonl");
        let file = File::create(&path).unwrap();
        let job = Session::from_file(path, file);
        assert_eq!(job.child("task-1").unwrap().id(), "job.task-1");
    }
}
