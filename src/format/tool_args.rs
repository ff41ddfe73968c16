//! Tool-call arguments as a model sent them: the pieces every format's
//! `#[derive(Deserialize)]` argument struct is made of.
//!
//! A model's arguments are often a little wrong: a number where a string
//! belongs, `null`, an array where an object belongs. A `serde` error would
//! name whichever field came first in the JSON, and only in its message text,
//! which lancet never reads. So each field is an [`Arg`], which deserialises
//! whatever was sent (given, of the wrong type, or missing), and each format
//! then checks its fields in its own order and names the first at fault as
//! data ([`ParseError::BadArguments`]). Synonyms a model writes (`path`,
//! `file_path`, `filePath`) are fields of their own, and the first one given
//! wins ([`Arg::or`]); a `serde` alias would refuse an object that has two.
//!
//! Owns: reading arguments into typed fields. Does not own: what a format
//! makes of them (its module), or the words for a bad argument (feedback).

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde_json::Value;

use crate::report::ParseError;

/// One argument: given (and of the right type: `null` is right when `T` is an
/// `Option`), given with the wrong type, or missing.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) enum Arg<T> {
    /// Not in the arguments.
    #[default]
    Missing,
    /// In the arguments, and of the right type.
    Given(T),
    /// In the arguments, of another type.
    Wrong,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Arg<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(T::deserialize(v).map_or(Arg::Wrong, Arg::Given))
    }
}

impl<T> Arg<T> {
    /// This argument if it is in the arguments (even of the wrong type), else `other`.
    pub(crate) fn or(self, other: Arg<T>) -> Arg<T> {
        match self {
            Arg::Missing => other,
            given => given,
        }
    }

    /// Whether it is in the arguments (of any type).
    pub(crate) fn is_given(&self) -> bool {
        !matches!(self, Arg::Missing)
    }

    /// The value, which must be given and of the right type.
    pub(crate) fn required(self, field: &str, expected: &'static str) -> Result<T, ParseError> {
        match self {
            Arg::Given(v) => Ok(v),
            Arg::Missing | Arg::Wrong => Err(bad(field, expected)),
        }
    }

    /// The value when given; `None` when missing; an error when of the wrong type.
    pub(crate) fn optional(
        self,
        field: &str,
        expected: &'static str,
    ) -> Result<Option<T>, ParseError> {
        match self {
            Arg::Given(v) => Ok(Some(v)),
            Arg::Missing => Ok(None),
            Arg::Wrong => Err(bad(field, expected)),
        }
    }

    /// The value when given and of the right type.
    pub(crate) fn given(&self) -> Option<&T> {
        match self {
            Arg::Given(v) => Some(v),
            Arg::Missing | Arg::Wrong => None,
        }
    }
}

/// A JSON object read as `T`. Anything else is refused: a derived struct would
/// also read an array, field by field in order, which no model means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fields<T>(pub(crate) T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Fields<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if !v.is_object() {
            return Err(D::Error::custom("not an object"));
        }
        T::deserialize(v).map(Fields).map_err(D::Error::custom)
    }
}

/// `args` read as `T` when it is a JSON object.
pub(crate) fn fields<T: DeserializeOwned>(args: &Value) -> Option<T> {
    if !args.is_object() {
        return None;
    }
    T::deserialize(args).ok()
}

/// The error for argument `field`, which should have been `expected`.
pub(crate) fn bad(field: &str, expected: &'static str) -> ParseError {
    ParseError::BadArguments {
        field: field.to_owned(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(default)]
    struct Probe {
        text: Arg<String>,
        flag: Arg<Option<bool>>,
        items: Arg<Vec<Arg<Fields<Probe>>>>,
    }

    #[test]
    fn arguments_are_given_wrong_or_missing() {
        let p: Probe =
            fields(&json!({"text": 3, "flag": null, "items": [{"text": "x"}, [1], "s"]})).unwrap();
        assert_eq!(p.text, Arg::Wrong);
        assert_eq!(p.flag, Arg::Given(None));
        let Arg::Given(items) = p.items else { panic!() };
        assert_eq!(
            items[0].given().map(|f| f.0.text.clone()),
            Some(Arg::Given("x".into()))
        );
        assert_eq!(items[1], Arg::Wrong);
        assert_eq!(items[2], Arg::Wrong);
        assert!(fields::<Probe>(&json!(["a"])).is_none());
        assert_eq!(
            fields::<Probe>(&json!({})).map(|p| p.text),
            Some(Arg::Missing)
        );
    }
}
