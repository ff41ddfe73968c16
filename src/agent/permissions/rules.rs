//! Permission rules: `tool` or `tool(pattern)`, and how a subject matches.
//!
//! A rule is `tool` or `tool(pattern)` ([`Rule::parse`]): `bash(git push*)`,
//! `edit(src/**)`, `read(.env)`. Path patterns are globs over the path
//! relative to the root (`*` stops at `/`, `**` crosses it); command patterns
//! are globs over the command, where `*` matches anything. An `edit` rule also
//! covers `write`: both change files. A `read` rule covers every tool that
//! reads: `read`, `grep`, `glob` and `list`.
//!
//! An MCP tool's rule names the tool as the model sees it, `mcp__SERVER__TOOL`,
//! and its name may hold `*` (`mcp__github__*`: every tool of one server,
//! `mcp__*`: every MCP tool); it takes no pattern (an MCP call's arguments are
//! the server's business, not a path or a command).
//!
//! A path is matched as written (normalised: [`normalize_path`]) and as it
//! really resolves ([`real`]: symlinks followed, relative to the root), so a
//! symlink to `.env` is `.env` to `read(.env)`. Hard links and bind mounts
//! are beyond what a path can tell; the OS sandbox is what holds there.
//!
//! Owns: the syntax, its errors, matching one subject, and the two forms of
//! a path. Does not own: which subjects a call has or in what order the lists
//! are consulted (the parent module).

use std::fmt;
use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

/// Why a rule could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// Not `tool` or `tool(pattern)`.
    #[error("`{rule}` is not a rule: write `tool` or `tool(pattern)`")]
    Syntax {
        /// The rule as written.
        rule: String,
    },
    /// The pattern is not a valid glob.
    #[error("`{rule}`: bad pattern: {why}")]
    Pattern {
        /// The rule as written.
        rule: String,
        /// What the glob parser said.
        why: String,
    },
}

/// One permission rule: a tool, and optionally a pattern its subject must match.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    tool: String,
    pattern: Option<(String, GlobMatcher)>,
    /// An MCP rule whose name holds `*`: the glob over tool names.
    tools: Option<GlobMatcher>,
}

/// The prefix of every MCP tool's name.
pub(super) const MCP_PREFIX: &str = "mcp__";

impl Rule {
    /// Reads `tool` or `tool(pattern)`. Tool names are compared without
    /// case (`Bash(git push*)` is `bash(git push*)`); a trailing `:*` in a
    /// command pattern (Claude Code's prefix form, `npm run test:*`) means `*`.
    pub fn parse(text: &str) -> Result<Rule, RuleError> {
        let text = text.trim();
        let syntax = || RuleError::Syntax {
            rule: text.to_owned(),
        };
        let (tool, pattern) = match text.split_once('(') {
            None => (text, None),
            Some((tool, rest)) => {
                let inner = rest.strip_suffix(')').ok_or_else(syntax)?.trim();
                (tool.trim(), (!inner.is_empty()).then_some(inner))
            }
        };
        let tool = tool.to_ascii_lowercase();
        let mcp = tool.starts_with(MCP_PREFIX);
        let valid =
            |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || (mcp && c == '*');
        if tool.is_empty() || !tool.chars().all(valid) || (mcp && pattern.is_some()) {
            return Err(syntax());
        }
        let tools = if mcp && tool.contains('*') {
            let glob = GlobBuilder::new(&tool)
                .build()
                .map_err(|e| RuleError::Pattern {
                    rule: text.to_owned(),
                    why: e.kind().to_string(),
                })?;
            Some(glob.compile_matcher())
        } else {
            None
        };
        let pattern = match pattern {
            None | Some("*") | Some("**") => None,
            Some(p) => {
                let command = tool == "bash";
                let p = match p.strip_suffix(":*") {
                    Some(prefix) if command => format!("{prefix}*"),
                    _ if command => p.to_owned(),
                    _ => normalize_path(p),
                };
                let glob = GlobBuilder::new(&p)
                    // In a command `*` crosses `/` (`git push*` covers `git push origin a/b`).
                    .literal_separator(!command)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| RuleError::Pattern {
                        rule: text.to_owned(),
                        why: e.kind().to_string(),
                    })?;
                Some((p, glob.compile_matcher()))
            }
        };
        Ok(Rule {
            text: text.to_owned(),
            tool,
            pattern,
            tools,
        })
    }

    /// The tool it concerns (lower case).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// Its pattern, when it has one.
    pub fn pattern(&self) -> Option<&str> {
        self.pattern.as_ref().map(|(p, _)| p.as_str())
    }

    /// Whether it concerns `tool` (an `edit` rule covers `write` too; a
    /// `read` rule covers every tool that reads).
    pub(super) fn covers(&self, tool: &str) -> bool {
        self.tool == tool
            || self.tools.as_ref().is_some_and(|g| g.is_match(tool))
            || (self.tool == "edit" && tool == "write")
            || (self.tool == "read" && matches!(tool, "grep" | "glob" | "list"))
    }

    /// Whether `subject` (already normalised) matches its pattern.
    pub(super) fn matches(&self, subject: &str) -> bool {
        self.pattern
            .as_ref()
            .is_none_or(|(_, m)| m.is_match(subject))
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Rule, RuleError> {
        Rule::parse(s)
    }
}

/// A path as rules see it: `/` separators, no `./`, `a/../b` as `b`.
pub(super) fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.trim().split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Where a path really leads: its longest existing part canonicalised (every
/// symlink and `..` resolved as the kernel does), the missing rest appended
/// and normalised. Never opens a file.
pub(super) fn real(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest: Vec<Component<'_>> = Vec::new();
    loop {
        if let Ok(canon) = std::fs::canonicalize(existing) {
            let mut out = canon;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other),
                }
            }
            return out;
        }
        let (Some(last), Some(parent)) = (existing.components().next_back(), existing.parent())
        else {
            return path.to_path_buf();
        };
        rest.push(last);
        existing = parent;
    }
}

/// `path`, really resolved, relative to `root` (canonical) as rules see it;
/// `None` when it leads outside.
pub(super) fn real_relative(root: &Path, path: &Path) -> Option<String> {
    let real = real(path);
    let inside = real.strip_prefix(root).ok()?;
    Some(normalize_path(&inside.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let r = Rule::parse("Bash(git push*)").unwrap();
        assert_eq!((r.tool(), r.pattern()), ("bash", Some("git push*")));
        assert_eq!(r.to_string(), "Bash(git push*)");
        assert_eq!(Rule::parse("edit").unwrap().pattern(), None);
        assert_eq!(Rule::parse("bash(*)").unwrap().pattern(), None);
        assert_eq!(
            Rule::parse("bash(npm run test:*)").unwrap().pattern(),
            Some("npm run test*")
        );
        assert_eq!(
            Rule::parse("edit(./src/**)").unwrap().pattern(),
            Some("src/**")
        );
        for bad in ["", "bash(", "(x)", "ba sh", "bash(x)y"] {
            assert!(
                matches!(Rule::parse(bad), Err(RuleError::Syntax { .. })),
                "{bad:?}"
            );
        }
        assert!(matches!(
            Rule::parse("edit(src/[)"),
            Err(RuleError::Pattern { .. })
        ));
    }

    #[test]
    fn real_paths_follow_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join(".env"), "k").unwrap();
        std::fs::create_dir(root.join("d")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(".env", root.join("link")).unwrap();
            std::os::unix::fs::symlink(&root, root.join("d/up")).unwrap();
            assert_eq!(real_relative(&root, &root.join("link")).unwrap(), ".env");
            assert_eq!(
                real_relative(&root, &root.join("d/up/.env")).unwrap(),
                ".env"
            );
            // `..` after a symlink is the kernel's: the parent of where the
            // link leads (here, outside the root), not `d`.
            assert_eq!(real_relative(&root, &root.join("d/up/../x")), None);
        }
        assert_eq!(real_relative(&root, &root.join("d/x/y")).unwrap(), "d/x/y");
        assert_eq!(real_relative(&root, &root.join("../outside")), None);
        let read = Rule::parse("read(.env)").unwrap();
        for tool in ["read", "grep", "glob", "list"] {
            assert!(read.covers(tool), "{tool}");
        }
        assert!(!read.covers("bash") && !read.covers("edit"));
    }
}
