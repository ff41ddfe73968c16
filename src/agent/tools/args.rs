//! The tools' arguments: the JSON object a model wrote, parsed leniently
//! into one struct per tool.
//!
//! Models write arguments in many near-miss ways; what is unambiguous is
//! accepted: the object encoded twice (as a JSON string), counts as strings
//! (`"10"`) or whole floats (`10.0`), flags as `"true"`, and the field
//! names other agents use (`file_path`, `cmd`, `regex`, `include`, …).
//! Anything else is refused with a reason the model reads.
//!
//! Owns: parsing and the argument structs. Does not own: what a tool does
//! with them, or the words (the agent's `words` module).

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use super::types::{Tool, ToolOutcome};
use crate::agent::words;

/// The arguments object of a call, from the JSON text the model wrote
/// (empty text is an empty object).
pub(super) fn parse(arguments: &str) -> Result<Value, String> {
    let t = arguments.trim();
    if t.is_empty() {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_str(t).map_err(|e| words::not_json(&e))?;
    // Some models send the arguments object encoded once more, as a JSON string.
    if let Value::String(s) = &v
        && let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(s)
    {
        return Ok(inner);
    }
    if v.is_object() {
        Ok(v)
    } else {
        Err(words::NOT_AN_OBJECT.to_owned())
    }
}

/// The arguments as `tool`'s struct; a mismatch is the outcome to return.
pub(super) fn typed<T: DeserializeOwned>(tool: Tool, args: Value) -> Result<T, Box<ToolOutcome>> {
    serde_json::from_value(args).map_err(|e| {
        Box::new(ToolOutcome::error(words::bad_arguments(
            tool,
            &e.to_string(),
        )))
    })
}

/// A whole number, also when a model writes it as a string (`"10"`).
fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let bad = || D::Error::custom(words::NOT_A_COUNT);
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0 && *f < 1e15)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(bad),
        Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| bad()),
        Some(_) => Err(bad()),
    }
}

fn count_usize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    count(d).map(|n| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
}

/// true or false, also as a string.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
        Some(_) => Err(D::Error::custom(words::NOT_A_FLAG)),
    }
}

/// `read`: a file, and the page to show.
#[derive(Deserialize)]
pub(super) struct ReadArgs {
    #[serde(alias = "file_path", alias = "filePath")]
    pub(super) path: String,
    #[serde(default, deserialize_with = "count_usize")]
    pub(super) offset: Option<usize>,
    #[serde(default, deserialize_with = "count_usize")]
    pub(super) limit: Option<usize>,
}

/// `write`: a new file and its content.
#[derive(Deserialize)]
pub(super) struct WriteArgs {
    #[serde(alias = "file_path", alias = "filePath")]
    pub(super) path: String,
    pub(super) content: String,
}

/// `bash`: a command line and its timeout.
#[derive(Deserialize)]
pub(super) struct BashArgs {
    #[serde(alias = "cmd")]
    pub(super) command: String,
    #[serde(default, alias = "timeout", deserialize_with = "count")]
    pub(super) timeout_secs: Option<u64>,
}

/// `grep`: a pattern, where to search, and how.
#[derive(Deserialize)]
pub(super) struct GrepArgs {
    #[serde(alias = "regex", alias = "query")]
    pub(super) pattern: String,
    #[serde(default)]
    pub(super) path: Option<String>,
    #[serde(default, alias = "include")]
    pub(super) glob: Option<String>,
    #[serde(default, deserialize_with = "flag")]
    pub(super) ignore_case: Option<bool>,
}

/// `glob`: a path pattern, and where it starts.
#[derive(Deserialize)]
pub(super) struct GlobArgs {
    pub(super) pattern: String,
    #[serde(default)]
    pub(super) path: Option<String>,
}

/// `list`: a directory.
#[derive(Deserialize)]
pub(super) struct ListArgs {
    #[serde(default)]
    pub(super) path: Option<String>,
}
