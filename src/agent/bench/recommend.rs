//! `--recommend`: writing the measured choice of format per model into a
//! models.toml, keeping the rest of the file — other entries, their keys
//! (prices), comments and layout — as it was.
//!
//! A model's entry is the one whose `pattern` is the model's name exactly
//! (case ignored, as lookups ignore it): its `format`, `mode` and `reason`
//! are replaced, nothing else. A model without one gets a new entry in
//! front of every other, since the first matching pattern wins and a
//! measurement of this model is more specific than any family glob. The
//! text is edited with `toml_edit` (a parse that keeps comments), and the
//! result must still be a table lancet reads ([`Models::parse`]).
//!
//! Owns: the edit of the text. Does not own: which file, or the reason's
//! words (the CLI, `words`), or the choice (`paired`).
//!
//! Invariant: the output differs from the input only in the named entries'
//! three keys and the entries added; it parses as a models table.

use toml_edit::{ArrayOfTables, DocumentMut, Item, Table, value};

use crate::agent::models::{Models, ModelsError};

/// One model's recommendation, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The model's name as `lancet run` looks it up (the pattern).
    pub pattern: String,
    /// The format's name.
    pub format: String,
    /// `tool` or `text`.
    pub mode: String,
    /// Why, with the figures and date.
    pub reason: String,
}

/// Why a models.toml could not be edited.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecommendError {
    /// The file is not TOML.
    #[error("not TOML: {0}")]
    Toml(#[from] toml_edit::TomlError),
    /// `model` is there but not an array of tables (`[[model]]`).
    #[error("`model` is not a list of [[model]] tables")]
    NotEntries,
    /// The edited table would not be read by lancet.
    #[error(transparent)]
    Models(#[from] ModelsError),
}

/// `text` with `entries` written in (see the module's documentation).
///
/// # Errors
///
/// The text is not TOML, its `model` is not `[[model]]` tables, or the
/// result is not a models table lancet reads.
pub fn write_entries(text: &str, entries: &[Entry]) -> Result<String, RecommendError> {
    let mut doc: DocumentMut = text.parse()?;
    // A file without tables keeps its comments after the last value: they
    // open the file, so they stay in front of the first entry.
    let mut trailing = None;
    if !doc.contains_key("model") {
        doc.insert("model", Item::ArrayOfTables(ArrayOfTables::new()));
        let t = doc.trailing().as_str().unwrap_or_default().to_owned();
        if !t.is_empty() {
            trailing = Some(format!("{t}\n"));
            doc.set_trailing("");
        }
    }
    let list = doc
        .get_mut("model")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or(RecommendError::NotEntries)?;
    let mut fresh = Vec::new();
    for e in entries {
        let existing = list.iter_mut().find(|t| {
            t.get("pattern")
                .and_then(Item::as_str)
                .is_some_and(|p| p.eq_ignore_ascii_case(&e.pattern))
        });
        match existing {
            Some(t) => {
                set(t, "format", &e.format);
                set(t, "mode", &e.mode);
                set(t, "reason", &e.reason);
            }
            None => {
                let mut t = Table::new();
                t.insert("pattern", value(e.pattern.as_str()));
                t.insert("format", value(e.format.as_str()));
                t.insert("mode", value(e.mode.as_str()));
                t.insert("reason", value(e.reason.as_str()));
                fresh.push(t);
            }
        }
    }
    if !fresh.is_empty() {
        let old: Vec<Table> = list.iter().cloned().collect();
        // The file's opening comment sits in front of its first entry: it
        // stays at the top, in front of the new first entry.
        let head = old
            .first()
            .and_then(|t| t.decor().prefix())
            .and_then(|p| p.as_str())
            .map(str::to_owned)
            .or(trailing);
        let position = old.first().and_then(Table::position);
        list.clear();
        for (i, mut t) in fresh.into_iter().enumerate() {
            let prefix = match (&head, i) {
                (Some(h), 0) => h.clone(),
                (None, 0) => String::new(),
                _ => "\n".to_owned(),
            };
            t.decor_mut().set_prefix(prefix);
            if let Some(p) = position {
                // Equal positions keep the list's order when written.
                t.set_position(p);
            }
            list.push(t);
        }
        for (i, mut t) in old.into_iter().enumerate() {
            if i == 0 {
                t.decor_mut().set_prefix("\n");
            }
            list.push(t);
        }
    }
    let out = doc.to_string();
    Models::parse(&out)?;
    Ok(out)
}

/// Sets `key` to a string, keeping the value's surrounding whitespace and
/// trailing comment.
fn set(t: &mut Table, key: &str, text: &str) {
    match t.get_mut(key).and_then(Item::as_value_mut) {
        Some(v) => {
            let decor = v.decor().clone();
            *v = text.into();
            *v.decor_mut() = decor;
        }
        None => {
            t.insert(key, value(text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# The table.\n# Second line.\n\n[[model]]\npattern = \"claude*\"\nformat = \"search-replace\"\nmode = \"tool\" # trained on it\nreason = \"old\"\nprice_in = 3.0\n\n# Local ones.\n[[model]]\npattern = \"*\"\nformat = \"whole\"\nmode = \"text\"\nreason = \"fallback\"\n";

    fn entry(pattern: &str, format: &str) -> Entry {
        Entry {
            pattern: pattern.into(),
            format: format.into(),
            mode: "tool".into(),
            reason: format!("measured {format}"),
        }
    }

    #[test]
    fn an_existing_entry_changes_three_keys_and_nothing_else() {
        let out = write_entries(FILE, &[entry("CLAUDE*", "hashline")]).unwrap();
        let want = FILE
            .replace("format = \"search-replace\"", "format = \"hashline\"")
            .replace("reason = \"old\"", "reason = \"measured hashline\"");
        assert_eq!(out, want);
    }

    #[test]
    fn a_new_model_goes_first_and_comments_stay() {
        let out = write_entries(FILE, &[entry("gpt-x", "udiff"), entry("gpt-y", "whole")]).unwrap();
        let want = format!(
            "# The table.\n# Second line.\n\n[[model]]\npattern = \"gpt-x\"\nformat = \"udiff\"\nmode = \"tool\"\nreason = \"measured udiff\"\n\n[[model]]\npattern = \"gpt-y\"\nformat = \"whole\"\nmode = \"tool\"\nreason = \"measured whole\"\n\n{}",
            &FILE["# The table.\n# Second line.\n\n".len()..]
        );
        assert_eq!(out, want);
        let m = Models::parse(&out).unwrap();
        assert_eq!(m.lookup("gpt-x").unwrap().format, "udiff");
        assert_eq!(m.lookup("claude-4").unwrap().price_in, Some(3.0));
    }

    #[test]
    fn an_empty_file_gets_entries() {
        let out = write_entries("# mine\n", &[entry("m", "hashline")]).unwrap();
        let m = Models::parse(&out).unwrap();
        assert_eq!(m.lookup("m").unwrap().format, "hashline");
        assert!(out.starts_with("# mine\n"), "{out}");
    }

    #[test]
    fn a_file_lancet_cannot_read_is_refused() {
        assert!(matches!(
            write_entries("model = 3\n", &[entry("m", "udiff")]),
            Err(RecommendError::NotEntries)
        ));
        assert!(matches!(
            write_entries("[[model\n", &[entry("m", "udiff")]),
            Err(RecommendError::Toml(_))
        ));
        assert!(matches!(
            write_entries("", &[entry("m", "no-such-format")]),
            Err(RecommendError::Models(_))
        ));
    }
}
