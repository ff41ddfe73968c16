//! Benchmark tasks and where they come from: a directory of task
//! directories (DESIGN.md's layout), oh-my-pi's react-edit fixtures, and
//! EditEval's jsonl.
//!
//! A [`Task`] is data: an instruction, the `before/` files the model starts
//! from, and what decides a pass — the `after/` files (byte-identical) and/or
//! a [`Check`] run in the workspace afterwards. A task may also carry a
//! `solution` (a known good result) when its pass is decided by a check
//! alone: EditEval's reference output, which `sim:perfect` renders.
//!
//! Owns: reading and validating task sources (no task data is copied into
//! the project; sources are read where they are). Does not own: running a
//! task (the runner) or the words of an instruction (`words`).
//!
//! Invariant: every path in a task is relative, `/`-separated, and stays
//! inside the task's workspace (no `..`, no absolute path); a source that
//! breaks it is an error naming the task, never a skipped file.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use crate::agent::words;

/// Files of a workspace: relative `/`-separated path → bytes.
pub type Files = BTreeMap<String, Vec<u8>>;

/// Where tasks come from (`-t`): the part before the first `:` names the kind.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A directory of task directories (`task.toml`, `before/`, `after/`).
    Dir(PathBuf),
    /// oh-my-pi's react-edit fixtures (`input/`, `expected/`, `prompt.md`).
    ReactEdit(PathBuf),
    /// EditEval jsonl (`instruction`, `input`, `output`, `test`).
    EditEval(PathBuf),
    /// Mutations generated from a source tree (`mutate:DIR[:N]`; feature
    /// `syntax`).
    Mutate(PathBuf, Option<usize>),
}

impl Source {
    /// Reads `-t`'s value: `react-edit:DIR`, `editeval:FILE`, `mutate:DIR[:N]`,
    /// else a directory.
    pub fn parse(spec: &str) -> Source {
        if let Some(dir) = spec.strip_prefix("react-edit:") {
            return Source::ReactEdit(dir.into());
        }
        if let Some(file) = spec.strip_prefix("editeval:") {
            return Source::EditEval(file.into());
        }
        if let Some(rest) = spec.strip_prefix("mutate:") {
            return match rest.rsplit_once(':') {
                Some((dir, n)) if n.parse::<usize>().is_ok() => {
                    Source::Mutate(dir.into(), n.parse().ok())
                }
                _ => Source::Mutate(rest.into(), None),
            };
        }
        Source::Dir(spec.into())
    }

    /// The source's name in results (`results.jsonl`'s `source`).
    pub fn label(&self) -> String {
        match self {
            Source::Dir(p) => p.display().to_string(),
            Source::ReactEdit(_) => "react-edit".to_owned(),
            Source::EditEval(_) => "editeval".to_owned(),
            Source::Mutate(..) => "mutate".to_owned(),
        }
    }
}

/// What decides a pass besides (or instead of) the `after/` files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Check {
    /// A shell command run in the workspace (`sh -c`); exit 0 passes.
    Command(String),
    /// EditEval's test: `python3` runs the edited file with the test and its
    /// `check()` call (see [`EDITEVAL_HARNESS`]).
    Python {
        /// The file the test runs (in the workspace).
        file: String,
        /// The test code (defines `check()`).
        test: String,
        /// A program around the code with `{{Code}}` where it goes (may be empty).
        context: String,
    },
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// Unique within its source.
    pub id: String,
    /// The source's label ([`Source::label`]).
    pub source: String,
    /// What the model is told.
    pub instruction: String,
    /// The workspace the model starts from.
    pub before: Files,
    /// The expected workspace (pass = byte-identical files), if the task has one.
    pub after: Option<Files>,
    /// A known good result when `after` is absent (rendered by `sim:perfect`).
    pub solution: Option<Files>,
    /// Run after the edit; must pass too.
    pub check: Option<Check>,
    /// The files the task is about (informational).
    pub files: Vec<String>,
}

impl Task {
    /// The known good result: `after`, else `solution`.
    pub fn reference(&self) -> Option<&Files> {
        self.after.as_ref().or(self.solution.as_ref())
    }
}

/// A task a source holds but the benchmark does not run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The source's label.
    pub source: String,
    /// The task.
    pub id: String,
    /// Why (for a person).
    pub reason: String,
}

/// A source that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// What was read.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A file is not what its source promises.
    #[error("{}: {why}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, for a person.
        why: String,
    },
    /// A task names a path outside its workspace.
    #[error("{}: task {task}: the path {rel:?} leaves the workspace", path.display())]
    Escapes {
        /// The source.
        path: PathBuf,
        /// The task.
        task: String,
        /// The path as written.
        rel: String,
    },
    /// A kind of source that is not built yet.
    #[error("{kind}: not built yet")]
    NotBuilt {
        /// `mutate:`.
        kind: &'static str,
    },
    /// A kind of source this build leaves out.
    #[error("{kind} needs lancet built with the `{feature}` feature")]
    NeedsFeature {
        /// `mutate:`.
        kind: &'static str,
        /// The feature.
        feature: &'static str,
    },
    /// A tree that gives no generated tasks.
    #[cfg(feature = "syntax")]
    #[error(transparent)]
    Mutate(#[from] super::mutate::MutateError),
}

/// The tasks of one source (the first `limit`), and those skipped.
///
/// # Errors
///
/// [`TaskError`] when the source cannot be read or is malformed.
pub fn load(source: &Source, limit: Option<usize>) -> Result<(Vec<Task>, Vec<Skipped>), TaskError> {
    load_seeded(source, limit, 1)
}

/// [`load`], with the seed of generated tasks (`mutate:`).
///
/// # Errors
///
/// [`TaskError`] when the source cannot be read or is malformed, or is
/// `mutate:` in a build without the `syntax` feature.
pub fn load_seeded(
    source: &Source,
    limit: Option<usize>,
    seed: u64,
) -> Result<(Vec<Task>, Vec<Skipped>), TaskError> {
    let (mut tasks, skipped) = match source {
        Source::Dir(dir) => load_dir(dir, &source.label())?,
        Source::ReactEdit(dir) => (load_react_edit(dir)?, Vec::new()),
        Source::EditEval(file) => load_editeval(file)?,
        #[cfg(feature = "syntax")]
        Source::Mutate(dir, n) => (
            super::mutate::generate(dir, n.unwrap_or(super::mutate::DEFAULT_COUNT), seed)?.tasks,
            Vec::new(),
        ),
        #[cfg(not(feature = "syntax"))]
        Source::Mutate(..) => {
            let _ = seed;
            return Err(TaskError::NeedsFeature {
                kind: "mutate:",
                feature: "syntax",
            });
        }
    };
    if let Some(n) = limit {
        tasks.truncate(n);
    }
    Ok((tasks, skipped))
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TaskError + '_ {
    move |source| TaskError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Subdirectories of `dir`, sorted by name.
fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, TaskError> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        if entry.file_type().map_err(io(dir))?.is_dir() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Every regular file under `dir`, by relative path; symlinks and other
/// special files are refused (a task is plain files).
fn read_tree(dir: &Path) -> Result<Files, TaskError> {
    fn walk(root: &Path, dir: &Path, out: &mut Files) -> Result<(), TaskError> {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(io(dir))?
            .collect::<Result<_, _>>()
            .map_err(io(dir))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let kind = entry.file_type().map_err(io(&path))?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else if kind.is_file() {
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let bytes = std::fs::read(&path).map_err(io(&path))?;
                out.insert(rel, bytes);
            } else {
                return Err(TaskError::Malformed {
                    path,
                    why: "not a regular file or directory (tasks are plain files)".to_owned(),
                });
            }
        }
        Ok(())
    }
    let mut out = Files::new();
    walk(dir, dir, &mut out)?;
    Ok(out)
}

/// Whether a relative path stays inside its workspace.
pub(crate) fn confined(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

/// `task.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskToml {
    id: Option<String>,
    instruction: String,
    check: Option<String>,
    #[serde(default)]
    files: Vec<String>,
}

fn load_dir(dir: &Path, label: &str) -> Result<(Vec<Task>, Vec<Skipped>), TaskError> {
    let mut tasks = Vec::new();
    for task_dir in subdirs(dir)? {
        let toml_path = task_dir.join("task.toml");
        let text = std::fs::read_to_string(&toml_path).map_err(io(&toml_path))?;
        let t: TaskToml = toml::from_str(&text).map_err(|e| TaskError::Malformed {
            path: toml_path.clone(),
            why: e.message().to_owned(),
        })?;
        let id = t.id.unwrap_or_else(|| {
            task_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        let before_dir = task_dir.join("before");
        let before = if before_dir.is_dir() {
            read_tree(&before_dir)?
        } else {
            Files::new()
        };
        let after_dir = task_dir.join("after");
        let after = after_dir
            .is_dir()
            .then(|| read_tree(&after_dir))
            .transpose()?;
        if after.is_none() && t.check.is_none() {
            return Err(TaskError::Malformed {
                path: task_dir,
                why: "a task needs after/ or a check (or both)".to_owned(),
            });
        }
        for rel in &t.files {
            if !confined(rel) {
                return Err(TaskError::Escapes {
                    path: toml_path,
                    task: id,
                    rel: rel.clone(),
                });
            }
        }
        tasks.push(Task {
            id,
            source: label.to_owned(),
            instruction: t.instruction,
            before,
            after,
            solution: None,
            check: t.check.map(Check::Command),
            files: t.files,
        });
    }
    Ok((tasks, Vec::new()))
}

/// react-edit: one directory per task, `input/` the mutated file(s),
/// `expected/` the original, `prompt.md` the instruction.
fn load_react_edit(dir: &Path) -> Result<Vec<Task>, TaskError> {
    let mut tasks = Vec::new();
    for task_dir in subdirs(dir)? {
        let id = task_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prompt = task_dir.join("prompt.md");
        let instruction = std::fs::read_to_string(&prompt).map_err(io(&prompt))?;
        let before = read_tree(&task_dir.join("input"))?;
        let after = read_tree(&task_dir.join("expected"))?;
        if before.is_empty() || after.is_empty() {
            return Err(TaskError::Malformed {
                path: task_dir,
                why: "input/ and expected/ must each hold the task's file".to_owned(),
            });
        }
        let files = after.keys().cloned().collect();
        tasks.push(Task {
            id,
            source: "react-edit".to_owned(),
            instruction,
            before,
            after: Some(after),
            solution: None,
            check: None,
            files,
        });
    }
    Ok(tasks)
}

/// One line of EditEval.
#[derive(Debug, Deserialize)]
struct EditEvalRow {
    task_id: String,
    instruction: String,
    #[serde(default)]
    context: String,
    input: String,
    output: String,
    test: String,
}

/// The file an EditEval task's code is in.
pub const EDITEVAL_FILE: &str = "code.py";

/// EditEval: the task's file is its `input`; its `output` is the reference
/// answer; pass is its test run under python3 against the edited file.
fn load_editeval(file: &Path) -> Result<(Vec<Task>, Vec<Skipped>), TaskError> {
    let text = std::fs::read_to_string(file).map_err(io(file))?;
    let mut tasks = Vec::new();
    let mut skipped = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: EditEvalRow = serde_json::from_str(line).map_err(|e| TaskError::Malformed {
            path: file.to_path_buf(),
            why: format!("line {}: {e}", n + 1),
        })?;
        // numpy is not part of a plain python3: these tasks cannot pass here.
        let needs_numpy = [&row.input, &row.output, &row.test]
            .iter()
            .any(|t| t.contains("import numpy") || t.contains("from numpy"));
        if needs_numpy {
            skipped.push(Skipped {
                source: "editeval".to_owned(),
                id: row.task_id,
                reason: words::bench_needs_numpy(),
            });
            continue;
        }
        let one = |text: &str| Files::from([(EDITEVAL_FILE.to_owned(), text.as_bytes().to_vec())]);
        tasks.push(Task {
            id: row.task_id,
            source: "editeval".to_owned(),
            instruction: words::bench_editeval_instruction(&row.instruction, EDITEVAL_FILE),
            before: one(&row.input),
            after: None,
            solution: Some(one(&row.output)),
            check: Some(Check::Python {
                file: EDITEVAL_FILE.to_owned(),
                test: row.test,
                context: row.context,
            }),
            files: vec![EDITEVAL_FILE.to_owned()],
        });
    }
    Ok((tasks, skipped))
}

/// The program that runs an EditEval test: the edited file (placed in the
/// task's `context` where `{{Code}}` stands, if it has one), `edited_code`
/// (the file's text, which some tests inspect) unless the context defines
/// it, the test, and `check()`. It reads the file named by its first
/// argument and `{"test", "context"}` as JSON on stdin.
pub const EDITEVAL_HARNESS: &str = r#"import json, sys
spec = json.load(sys.stdin)
with open(sys.argv[1], encoding="utf-8") as f:
    code = f.read()
ctx = spec["context"] or ""
program = ctx.replace("{{Code}}", code) if "{{Code}}" in ctx else code
if "edited_code" not in ctx:
    program += "\n\nedited_code = " + repr(code) + "\n"
program += "\n\n" + spec["test"] + "\n\ncheck()\n"
exec(compile(program, "edit_eval_task", "exec"), {"__name__": "__main__"})
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_by_prefix() {
        assert_eq!(
            Source::parse("react-edit:/x"),
            Source::ReactEdit("/x".into())
        );
        assert_eq!(
            Source::parse("editeval:f.jsonl"),
            Source::EditEval("f.jsonl".into())
        );
        assert_eq!(
            Source::parse("mutate:src:20"),
            Source::Mutate("src".into(), Some(20))
        );
        assert_eq!(
            Source::parse("mutate:src"),
            Source::Mutate("src".into(), None)
        );
        assert_eq!(Source::parse("tasks"), Source::Dir("tasks".into()));
    }

    /// Without the grammars there is nothing to mutate with: a clear error,
    /// not an empty task list.
    #[cfg(not(feature = "syntax"))]
    #[test]
    fn mutate_needs_the_syntax_feature() {
        let err = load(&Source::parse("mutate:src:3"), None).unwrap_err();
        assert!(matches!(
            err,
            TaskError::NeedsFeature {
                kind: "mutate:",
                feature: "syntax"
            }
        ));
        assert_eq!(
            err.to_string(),
            "mutate: needs lancet built with the `syntax` feature"
        );
    }

    #[test]
    fn confinement() {
        assert!(confined("a/b.rs"));
        assert!(!confined("../a"));
        assert!(!confined("/etc/passwd"));
        assert!(!confined("a/../../b"));
        assert!(!confined(""));
    }
}
