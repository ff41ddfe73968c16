//! Which edit format a model gets: `edit-formats/models.toml`, compiled in,
//! behind a user's own table in the same shape when the CLI finds one
//! ([`Models::before`]; `lancet bench --recommend` writes it).
//!
//! The first entry whose pattern matches the model name decides the format,
//! the mode (tool call or text) and the prices used for the cost line. Each
//! entry carries the reason for its choice; the file is the place to change
//! them, with the result that justifies the change.

use serde::Deserialize;

use crate::format::Format;

/// How the model sends edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EditMode {
    /// Through the edit tool, whose arguments are the format's tool-call form.
    Tool,
    /// In its reply text, applied by lancet.
    Text,
}

/// One entry of `models.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelEntry {
    /// A glob over model names (`*` matches any run of characters, case ignored).
    pub pattern: String,
    /// The format's command-line name.
    pub format: String,
    /// Tool or text mode.
    pub mode: EditMode,
    /// Why this choice (the result it rests on).
    pub reason: String,
    /// US dollars per million input tokens.
    #[serde(default)]
    pub price_in: Option<f64>,
    /// US dollars per million output tokens.
    #[serde(default)]
    pub price_out: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct ModelsFile {
    model: Vec<ModelEntry>,
}

/// The compiled-in table.
const MODELS_TOML: &str = include_str!("../../edit-formats/models.toml");

/// Why a models table could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelsError {
    /// Not valid TOML of the expected shape.
    #[error("models table is malformed: {0}")]
    Malformed(String),
    /// An entry names a format lancet does not have.
    #[error("unknown format {format:?} for pattern {pattern:?}")]
    UnknownFormat {
        /// The entry's pattern.
        pattern: String,
        /// The format it names.
        format: String,
    },
}

/// The table of model entries, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Models {
    entries: Vec<ModelEntry>,
}

impl Models {
    /// The table shipped with lancet.
    pub fn builtin() -> Result<Models, ModelsError> {
        Models::parse(MODELS_TOML)
    }

    /// Parses a table (a user's own, in the same shape).
    pub fn parse(text: &str) -> Result<Models, ModelsError> {
        let file: ModelsFile =
            toml::from_str(text).map_err(|e| ModelsError::Malformed(e.to_string()))?;
        for e in &file.model {
            if Format::from_name(&e.format).is_none() {
                return Err(ModelsError::UnknownFormat {
                    pattern: e.pattern.clone(),
                    format: e.format.clone(),
                });
            }
        }
        Ok(Models {
            entries: file.model,
        })
    }

    /// `self`'s entries, then `fallback`'s: a user's table in front of the
    /// built-in one.
    pub fn before(mut self, fallback: Models) -> Models {
        self.entries.extend(fallback.entries);
        self
    }

    /// The entry for `model` (the first whose pattern matches).
    pub fn lookup(&self, model: &str) -> Option<&ModelEntry> {
        self.entries
            .iter()
            .find(|e| glob_match(&e.pattern.to_lowercase(), &model.to_lowercase()))
    }
}

impl ModelEntry {
    /// The entry's format.
    pub fn format(&self) -> Format {
        Format::from_name(&self.format).unwrap_or(Format::SearchReplace)
    }

    /// The cost of `usage`, when the entry has prices.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        let (i, o) = (self.price_in?, self.price_out?);
        Some((input_tokens as f64 * i + output_tokens as f64 * o) / 1_000_000.0)
    }
}

/// `*` matches any run of characters; everything else literally.
fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first)
        || !text[first.len()..].ends_with(last)
        || text.len() < first.len() + last.len()
    {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_every_entry_has_a_reason() {
        let m = Models::builtin().unwrap();
        assert!(m.entries.iter().all(|e| e.reason.len() > 20));
        assert_eq!(m.entries.last().map(|e| e.pattern.as_str()), Some("*"));
    }

    #[test]
    fn lookup_by_pattern() {
        let m = Models::builtin().unwrap();
        assert_eq!(
            m.lookup("grok-code-fast-1").unwrap().format(),
            Format::Hashline
        );
        assert_eq!(
            m.lookup("Qwen2.5-Coder-32B-Instruct").unwrap().mode,
            EditMode::Text
        );
        assert_eq!(
            m.lookup("claude-sonnet-4-5").unwrap().format(),
            Format::SearchReplace
        );
        assert_eq!(m.lookup("some-local-model").unwrap().pattern, "*");
    }

    #[test]
    fn globs() {
        assert!(glob_match("gemini-3*flash*", "gemini-3-flash-preview"));
        assert!(!glob_match("gemini-3*flash*", "gemini-3-pro"));
        assert!(glob_match("*codex*", "gpt-5.2-codex"));
        assert!(glob_match("a*a", "aa"));
        assert!(!glob_match("ab*ba", "aba"));
    }
}
