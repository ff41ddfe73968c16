//! The search tools: `grep` (file contents by regular expression), `glob`
//! (paths by pattern) and `list` (one directory's entries).
//!
//! Every walk respects `.gitignore` (also outside a git repository), shows
//! hidden project files, leaves `.git/` and `.lancet/` out and follows no
//! symlink, so a search never leaves the root. Results are sorted and capped
//! ([`GREP_MAX`], [`GLOB_MAX`], [`LIST_MAX`]).
//!
//! Owns: walking and matching. Does not own: confinement of the starting
//! path (the [`Workspace`](crate::Workspace), through the parent module),
//! the permission checks, or any words.

use std::path::{Path, PathBuf};

use super::Tools;
use super::args::{GlobArgs, GrepArgs, ListArgs};
use super::files::cut_chars;
use super::open::{Opened, open_regular, read_capped};
use super::types::{GLOB_MAX, GREP_MAX, GREP_MAX_FILE, LIST_MAX, Skipped, Tool, ToolOutcome};
use crate::agent::words;

/// Longest line `grep` shows, in characters.
const GREP_LINE_CHARS: usize = 300;

impl Tools {
    pub(super) fn grep(&mut self, a: GrepArgs) -> ToolOutcome {
        let shown_path = a.path.clone().unwrap_or_else(|| ".".to_owned());
        if let Err(o) = self.gate(Tool::Grep, &shown_path, "") {
            return *o;
        }
        let re = match regex::RegexBuilder::new(&a.pattern)
            .case_insensitive(a.ignore_case.unwrap_or(false))
            .size_limit(10 << 20)
            .build()
        {
            Ok(re) => re,
            Err(e) => return ToolOutcome::error(words::bad_regex(&a.pattern, &e)),
        };
        let start = match self.dir(a.path.as_deref()) {
            Ok(p) => p,
            Err(e) => return ToolOutcome::error(words::path_error(&shown_path, &e)),
        };
        if !start.exists() {
            return ToolOutcome::error(words::not_found(&shown_path));
        }
        let filter = match a.glob.as_deref().map(PathFilter::new).transpose() {
            Ok(f) => f,
            Err(e) => {
                return ToolOutcome::error(words::bad_glob(a.glob.as_deref().unwrap_or(""), &e));
            }
        };
        let mut hits = Vec::new();
        let mut more = false;
        let mut hidden = 0;
        let mut skipped = Skipped::default();
        'files: for path in self.files_under(&start) {
            let rel = self.rel(&path);
            if filter.as_ref().is_some_and(|f| !f.matches(&rel)) {
                continue;
            }
            if self.permissions.hides(&rel) {
                hidden += 1;
                continue;
            }
            // Opened as the read tool opens: a FIFO swapped in after the walk
            // saw a file is refused, never waited on.
            let bytes = match open_regular(&self.ws, &rel) {
                Ok(Opened::File(_, size)) if size > GREP_MAX_FILE => {
                    skipped.large += 1;
                    continue;
                }
                Ok(Opened::File(file, size)) => match read_capped(file, size, GREP_MAX_FILE) {
                    Ok(Some(bytes)) => bytes,
                    Ok(None) => {
                        skipped.large += 1;
                        continue;
                    }
                    Err(_) => {
                        skipped.unreadable += 1;
                        continue;
                    }
                },
                // Gone since the walk: nothing to search.
                Ok(Opened::Missing | Opened::Directory) => continue,
                Ok(Opened::Special(_)) | Err(_) => {
                    skipped.unreadable += 1;
                    continue;
                }
            };
            if bytes[..bytes.len().min(8000)].contains(&0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (n, line) in text.split('\n').enumerate() {
                let line = line.strip_suffix('\r').unwrap_or(line);
                if re.is_match(line) {
                    if hits.len() == GREP_MAX {
                        more = true;
                        break 'files;
                    }
                    hits.push(format!(
                        "{rel}:{}: {}",
                        n + 1,
                        cut_chars(line, GREP_LINE_CHARS)
                    ));
                }
            }
        }
        let result = words::grep_result(&a.pattern, &hits, more, &skipped);
        ToolOutcome::ok(words::hidden_by_rule(result, hidden))
    }

    pub(super) fn glob(&mut self, a: GlobArgs) -> ToolOutcome {
        if let Err(o) = self.gate(Tool::Glob, &a.pattern, "") {
            return *o;
        }
        let base_arg = a.path.clone().unwrap_or_else(|| ".".to_owned());
        let base = match self.dir(a.path.as_deref()) {
            Ok(p) => p,
            Err(e) => return ToolOutcome::error(words::path_error(&base_arg, &e)),
        };
        if !base.is_dir() {
            return ToolOutcome::error(words::not_a_directory(&base_arg));
        }
        let filter = match PathFilter::new(&a.pattern) {
            Ok(f) => f,
            Err(e) => return ToolOutcome::error(words::bad_glob(&a.pattern, &e)),
        };
        let mut found: Vec<String> = self
            .files_under(&base)
            .into_iter()
            .filter(|p| {
                let under_base = p.strip_prefix(&base).unwrap_or(p);
                filter.matches(&under_base.to_string_lossy().replace('\\', "/"))
            })
            .map(|p| self.rel(&p))
            .collect();
        let before = found.len();
        found.retain(|p| !self.permissions.hides(p));
        let hidden = before - found.len();
        found.sort();
        let more = found.len() > GLOB_MAX;
        found.truncate(GLOB_MAX);
        let result = words::glob_result(&a.pattern, &found, more);
        ToolOutcome::ok(words::hidden_by_rule(result, hidden))
    }

    pub(super) fn list(&mut self, a: ListArgs) -> ToolOutcome {
        let shown = a.path.clone().unwrap_or_else(|| ".".to_owned());
        if let Err(o) = self.gate(Tool::List, &shown, "") {
            return *o;
        }
        let dir = match self.dir(a.path.as_deref()) {
            Ok(p) => p,
            Err(e) => return ToolOutcome::error(words::path_error(&shown, &e)),
        };
        if !dir.exists() {
            return ToolOutcome::error(words::not_found(&shown));
        }
        if !dir.is_dir() {
            return ToolOutcome::error(words::not_a_directory(&shown));
        }
        let mut hidden = 0;
        let mut entries: Vec<String> = walker(&dir)
            .max_depth(Some(1))
            .build()
            .flatten()
            .filter(|e| e.depth() == 1)
            .filter(|e| {
                let keep = !self.permissions.hides(&self.rel(e.path()));
                hidden += usize::from(!keep);
                keep
            })
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    format!("{name}/")
                } else {
                    name
                }
            })
            .collect();
        entries.sort();
        let more = entries.len() > LIST_MAX;
        entries.truncate(LIST_MAX);
        let result = words::list_result(&self.rel(&dir), &entries, more);
        ToolOutcome::ok(words::hidden_by_rule(result, hidden))
    }

    /// Every file under `start` (or `start` itself), .gitignore respected,
    /// `.git/` and `.lancet/` left out, symlinks not followed.
    fn files_under(&self, start: &Path) -> Vec<PathBuf> {
        walker(start)
            .build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(ignore::DirEntry::into_path)
            .collect()
    }
}

/// A directory walk as the search tools do it.
fn walker(start: &Path) -> ignore::WalkBuilder {
    let mut w = ignore::WalkBuilder::new(start);
    // Hidden files (`.github/`, `.env.example`) are project files too; a
    // project need not be a git repository for its .gitignore to count.
    w.hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| !matches!(e.file_name().to_str(), Some(".git" | ".lancet")));
    w
}

/// A glob over relative paths; one without `/` matches file names at any depth.
struct PathFilter {
    matcher: globset::GlobSet,
    name_only: bool,
}

impl PathFilter {
    fn new(pattern: &str) -> Result<PathFilter, globset::Error> {
        let pattern = pattern.trim();
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()?;
        // A set, not `compile_matcher`: a glob too large to compile (a
        // model's 1 MB pattern) is an error to report, not a panic.
        let matcher = globset::GlobSetBuilder::new().add(glob).build()?;
        Ok(PathFilter {
            matcher,
            name_only: !pattern.contains('/'),
        })
    }

    fn matches(&self, rel: &str) -> bool {
        let subject = if self.name_only {
            rel.rsplit('/').next().unwrap_or(rel)
        } else {
            rel
        };
        self.matcher.is_match(subject)
    }
}

#[cfg(test)]
mod tests {
    use crate::Format;
    use crate::agent::tools::tests::{call, put, setup};
    use serde_json::json;
    use std::fs;

    #[tokio::test]
    async fn grep_respects_gitignore() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, ".gitignore", "target/\n*.log\n");
        put(&dir, "src/a.rs", "fn needle() {}\nfn other() {}\n");
        put(&dir, "src/b.py", "needle = 1\n");
        put(&dir, "target/gen.rs", "fn needle() {}\n");
        put(&dir, "run.log", "needle\n");
        put(&dir, ".hidden/c.rs", "// needle\n");
        let o = call(&mut t, "grep", json!({"pattern": "needle"})).await;
        assert_eq!(
            o.content,
            ".hidden/c.rs:1: // needle\nsrc/a.rs:1: fn needle() {}\nsrc/b.py:1: needle = 1\n"
        );
        let o = call(
            &mut t,
            "grep",
            json!({"pattern": "NEEDLE", "glob": "*.rs", "ignore_case": true, "path": "src"}),
        )
        .await;
        assert_eq!(o.content, "src/a.rs:1: fn needle() {}\n");
        let o = call(&mut t, "grep", json!({"pattern": "fn ("})).await;
        assert!(o.is_error && o.content.contains("not a valid regular expression"));
        let o = call(&mut t, "grep", json!({"pattern": "absent"})).await;
        assert!(!o.is_error && o.content.starts_with("No matches"));
    }

    #[tokio::test]
    async fn glob_and_list() {
        let (dir, mut t) = setup(Format::SearchReplace);
        put(&dir, ".gitignore", "target/\n");
        put(&dir, "src/main.rs", "");
        put(&dir, "src/util/mod.rs", "");
        put(&dir, "README.md", "");
        put(&dir, "target/x.rs", "");
        fs::create_dir_all(dir.path().join(".git")).unwrap();
        put(&dir, ".git/HEAD.rs", "");
        let o = call(&mut t, "glob", json!({"pattern": "**/*.rs"})).await;
        assert_eq!(o.content, "src/main.rs\nsrc/util/mod.rs\n");
        let o = call(&mut t, "glob", json!({"pattern": "*.rs"})).await;
        assert_eq!(o.content, "src/main.rs\nsrc/util/mod.rs\n");
        let o = call(&mut t, "glob", json!({"pattern": "src/*.rs"})).await;
        assert_eq!(o.content, "src/main.rs\n");
        let o = call(
            &mut t,
            "glob",
            json!({"pattern": "*.rs", "path": "src/util"}),
        )
        .await;
        assert_eq!(o.content, "src/util/mod.rs\n");
        let o = call(&mut t, "glob", json!({"pattern": "*.zig"})).await;
        assert!(o.content.starts_with("No files match"));
        let o = call(&mut t, "list", json!({})).await;
        assert_eq!(o.content, ".gitignore\nREADME.md\nsrc/\n");
        let o = t.call("list", "").await;
        assert_eq!(o.content, ".gitignore\nREADME.md\nsrc/\n");
        let o = call(&mut t, "list", json!({"path": "src"})).await;
        assert_eq!(o.content, "main.rs\nutil/\n");
        let o = call(&mut t, "list", json!({"path": "README.md"})).await;
        assert!(o.is_error);
    }
}
