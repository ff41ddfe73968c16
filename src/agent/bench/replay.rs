//! Transcripts of benchmark jobs, and `replay:DIR`, the model that answers
//! from them.
//!
//! **Recording.** Every job's conversation is written as the agent's
//! session transcript (`session::Entry` lines: each message, each turn's
//! usage), preceded by one [`Head`] line naming the job, to
//! `<out>/transcripts/<job>.jsonl`. It is written to `<job>.jsonl.part`
//! while the job runs and renamed when it finishes, so like
//! `results.jsonl` only finished jobs have one (a rerun of an interrupted
//! job replaces what it left). `lancet run` writes the same entries to
//! `.lancet/sessions/`; only the bench's carry the head a replay needs.
//!
//! **Replaying.** `replay:DIR` (DIR a results directory, or its
//! `transcripts/`) indexes the heads; for a job of the same (task, source,
//! format, mode) it serves the recorded assistant messages — text and tool
//! calls — in order, with the recorded usage, through the same loopback
//! server as the simulated models, so the provider, loop, tools and engine
//! run again and the record comes out as recorded (pass, failure, tries,
//! tokens) while the engine behaves the same. Past the last recorded turn
//! the server answers 404 (not retried), so a replay that diverges ends as
//! a `provider` failure instead of looping. A job with no recording, or with
//! recordings of more than one model, is a `provider` failure saying so.
//! A recorded timeout is not reproduced (the replay answers at once).
//!
//! Owns: the transcript files' names and head, and reading them back. Does
//! not own: the entries (`session`) or serving turns (`sim`).
//!
//! Invariant: a transcript file is created fresh (never through an existing
//! file or link) with mode 0600, since it holds every file the job read.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sim::Turn;
use super::{Key, Mode};
use crate::agent::session::{Entry, Session};
use crate::agent::types::{Block, Role};
use crate::agent::words;

/// The first line of a job's transcript: which job it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// Always `bench_job` (a session reader skips the line).
    pub entry: String,
    /// The task.
    pub task: String,
    /// Its source.
    pub source: String,
    /// The model as named on the command line.
    pub model: String,
    /// The format.
    pub format: String,
    /// The mode.
    pub mode: Mode,
}

impl Head {
    /// The head of a job's transcript.
    pub fn of(key: &Key) -> Head {
        Head {
            entry: "bench_job".to_owned(),
            task: key.task.clone(),
            source: key.source.clone(),
            model: key.model.clone(),
            format: key.format.clone(),
            mode: key.mode,
        }
    }
}

/// A file name for a job: its key, made safe, and a hash of the whole key
/// (two keys that make the same safe text still differ).
pub fn file_name(key: &Key) -> String {
    let whole = format!(
        "{}\n{}\n{}\n{}\n{}",
        key.model,
        key.source,
        key.task,
        key.format,
        key.mode.name()
    );
    let safe: String = format!(
        "{}.{}.{}.{}.{}",
        key.model,
        key.source,
        key.task,
        key.format,
        key.mode.name()
    )
    .chars()
    .map(|c| {
        if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
            c
        } else {
            '_'
        }
    })
    .take(120)
    .collect();
    format!(
        "{safe}-{:016x}.jsonl",
        xxhash_rust::xxh3::xxh3_64(whole.as_bytes())
    )
}

/// A job's transcript being written; removed when dropped unfinished.
#[derive(Debug)]
pub struct Transcript {
    part: PathBuf,
    done: PathBuf,
    session: Option<Session>,
}

impl Transcript {
    /// Starts `dir/<job>.jsonl.part` (made fresh, mode 0600) with the head.
    ///
    /// # Errors
    ///
    /// The directory or the file cannot be made.
    pub fn start(dir: &Path, key: &Key) -> std::io::Result<Transcript> {
        std::fs::create_dir_all(dir)?;
        let name = file_name(key);
        let done = dir.join(&name);
        let part = dir.join(format!("{name}.part"));
        // What an interrupted run left (a file or a link) goes; the new
        // file is created fresh.
        match std::fs::remove_file(&part) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&part)?;
        let mut head = serde_json::to_string(&Head::of(key)).map_err(std::io::Error::other)?;
        head.push('\n');
        file.write_all(head.as_bytes())?;
        Ok(Transcript {
            session: Some(Session::from_file(part.clone(), file)),
            part,
            done,
        })
    }

    /// The session the loop records into.
    pub fn session(&mut self) -> Option<&mut Session> {
        self.session.as_mut()
    }

    /// The job finished: the transcript takes its final name.
    ///
    /// # Errors
    ///
    /// The rename failed.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.session = None;
        std::fs::rename(&self.part, &self.done)
    }
}

impl Drop for Transcript {
    fn drop(&mut self) {
        if self.session.is_some() {
            let _ = std::fs::remove_file(&self.part);
        }
    }
}

/// A job as a replay finds it: (task, source, format, mode), the model aside.
type JobId = (String, String, String, Mode);

/// The transcripts of a results directory, indexed by job.
#[derive(Debug, Clone)]
pub struct Recording {
    dir: PathBuf,
    /// By job: each recorded model and its file.
    jobs: HashMap<JobId, Vec<(String, PathBuf)>>,
}

impl Recording {
    /// Indexes `dir/transcripts/` (or `dir` itself when it has no
    /// `transcripts/`), reading each file's head only.
    ///
    /// # Errors
    ///
    /// The directory cannot be read.
    pub fn open(dir: &Path) -> std::io::Result<Recording> {
        let inner = dir.join("transcripts");
        let root = if inner.is_dir() {
            inner
        } else {
            dir.to_path_buf()
        };
        let mut jobs: HashMap<_, Vec<_>> = HashMap::new();
        let mut names: Vec<PathBuf> = std::fs::read_dir(&root)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        names.sort();
        for path in names {
            let Ok(file) = std::fs::File::open(&path) else {
                continue;
            };
            let mut first = String::new();
            if BufReader::new(file).read_line(&mut first).is_err() {
                continue;
            }
            let Ok(head) = serde_json::from_str::<Head>(&first) else {
                continue;
            };
            if head.entry != "bench_job" {
                continue;
            }
            jobs.entry((head.task, head.source, head.format, head.mode))
                .or_default()
                .push((head.model, path));
        }
        Ok(Recording {
            dir: dir.to_path_buf(),
            jobs,
        })
    }

    /// How many jobs it has transcripts for.
    pub fn len(&self) -> usize {
        self.jobs.values().map(Vec::len).sum()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// The recorded assistant turns for a job, in order, or why there are
    /// none (for the record's detail).
    ///
    /// # Errors
    ///
    /// No transcript for the job, transcripts of several models, or one
    /// that cannot be read.
    pub fn turns(&self, key: &Key) -> Result<Vec<Turn>, String> {
        let id = (
            key.task.clone(),
            key.source.clone(),
            key.format.clone(),
            key.mode,
        );
        let found = self.jobs.get(&id).map_or(&[][..], Vec::as_slice);
        let path = match found {
            [] => return Err(words::bench_replay_missing(&self.dir, key)),
            [(_, path)] => path,
            many => {
                let models: Vec<&str> = many.iter().map(|(m, _)| m.as_str()).collect();
                return Err(words::bench_replay_several(&self.dir, key, &models));
            }
        };
        let file =
            std::fs::File::open(path).map_err(|e| words::bench_replay_unreadable(path, &e))?;
        let mut turns = Vec::new();
        for line in BufReader::new(file).lines() {
            let line = line.map_err(|e| words::bench_replay_unreadable(path, &e))?;
            match serde_json::from_str::<Entry>(&line) {
                Ok(Entry::Message { message }) if message.role == Role::Assistant => {
                    let calls = message
                        .blocks
                        .iter()
                        .filter_map(|b| match b {
                            Block::ToolCall {
                                id,
                                name,
                                arguments,
                            } => Some((id.clone(), name.clone(), arguments.clone())),
                            _ => None,
                        })
                        .collect();
                    turns.push(Turn::Recorded {
                        text: message.text(),
                        calls,
                        usage: crate::agent::types::Usage::default(),
                    });
                }
                Ok(Entry::Usage { usage }) => {
                    if let Some(Turn::Recorded { usage: u, .. }) = turns.last_mut() {
                        *u = usage;
                    }
                }
                _ => {}
            }
        }
        Ok(turns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(task: &str) -> Key {
        Key {
            task: task.to_owned(),
            source: "react-edit".to_owned(),
            model: "sim:typo-in-quote".to_owned(),
            format: "udiff".to_owned(),
            mode: Mode::Tool,
        }
    }

    #[test]
    fn file_names_are_safe_and_distinct() {
        let a = file_name(&key("a/b"));
        let b = file_name(&key("a_b"));
        assert_ne!(a, b);
        assert!(!a.contains('/') && !a.contains(':'), "{a}");
        assert!(a.ends_with(".jsonl"));
    }

    /// A link planted where a transcript is about to be written is removed,
    /// never written through (transcripts hold every file a job read).
    #[cfg(unix)]
    #[test]
    fn a_planted_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        let part = dir.path().join(format!("{}.part", file_name(&key("t1"))));
        std::os::unix::fs::symlink(&target, &part).unwrap();
        let t = Transcript::start(dir.path(), &key("t1")).unwrap();
        t.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        let done = dir.path().join(file_name(&key("t1")));
        let meta = std::fs::symlink_metadata(&done).unwrap();
        assert!(meta.is_file());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn an_unfinished_transcript_is_removed_and_a_finished_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let t = Transcript::start(dir.path(), &key("t1")).unwrap();
        drop(t);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut t = Transcript::start(dir.path(), &key("t1")).unwrap();
        t.session()
            .unwrap()
            .record(&Entry::Usage {
                usage: crate::agent::types::Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                },
            })
            .unwrap();
        t.finish().unwrap();
        let rec = Recording::open(dir.path()).unwrap();
        assert_eq!(rec.len(), 1);
        assert_eq!(rec.turns(&key("t1")).unwrap(), Vec::<Turn>::new());
        assert!(rec.turns(&key("t2")).is_err());
    }
}
