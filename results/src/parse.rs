//! The one reader of result files: `compare`, `results import`, `show`,
//! `results compare`, the leaderboard and `merge` all parse with it, so a
//! file one of them refuses, every one refuses. It refuses a key given twice
//! in any object (serde would keep one of the two silently), a
//! `schema_version` newer than this build's, and anything that is not a
//! result; and it judges the result's validity from its data
//! ([`crate::validity::apply`]), never from a flag the file sets.

use crate::consistency::ConsistencyResult;
use crate::schema::{SuiteResult, SCHEMA_VERSION};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// Why a text is not a result this build reads. `origin` names the text
/// (a file's path, `run 12`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// Not JSON, or JSON that is not a result's shape.
    #[error("{origin}: line {line}, column {column}: not a tracemark result file: {reason}")]
    Syntax {
        origin: String,
        line: usize,
        column: usize,
        reason: String,
    },
    /// A key given twice in one object: which value the file meant cannot
    /// be known.
    #[error("{origin}: line {line}, column {column}: the key \"{key}\" is given twice in one object; a result file names each key once")]
    DuplicateKey {
        origin: String,
        key: String,
        line: usize,
        column: usize,
    },
    /// Written by a newer tracemark: its fields may mean what this build
    /// does not know.
    #[error("{origin}: schema version {found}, newer than this tracemark's {known}: read it with a newer tracemark")]
    FutureVersion {
        origin: String,
        found: u64,
        known: u32,
    },
    /// `schema_version` is there but not a whole number.
    #[error("{origin}: schema_version is not a whole number")]
    BadVersion { origin: String },
    /// JSON, but not an object.
    #[error("{origin}: not a tracemark result file: not a JSON object")]
    NotAnObject { origin: String },
    /// A consistency test where a replay or suite run was asked for.
    #[error("{origin}: a consistency test result; this takes replay and suite results")]
    Consistency { origin: String },
}

/// A result as parsed: a suite or replay run, or a consistency test.
#[derive(Debug, Clone)]
pub enum AnyResult {
    Suite(Box<SuiteResult>),
    Consistency(Box<ConsistencyResult>),
}

/// Parses a result file's text, either kind (a consistency test has
/// `rounds`); a suite or replay run comes back judged.
pub fn any(text: &str, origin: &str) -> Result<AnyResult, ParseError> {
    let value = checked_value(text, origin)?;
    if value.get("rounds").is_some() {
        typed::<ConsistencyResult>(text, origin).map(|r| AnyResult::Consistency(Box::new(r)))
    } else {
        let mut r = typed::<SuiteResult>(text, origin)?;
        crate::validity::apply(&mut r);
        Ok(AnyResult::Suite(Box::new(r)))
    }
}

/// Parses a replay or suite result, judged ([`any`], refusing a consistency
/// test).
pub fn suite(text: &str, origin: &str) -> Result<SuiteResult, ParseError> {
    match any(text, origin)? {
        AnyResult::Suite(r) => Ok(*r),
        AnyResult::Consistency(_) => Err(ParseError::Consistency {
            origin: origin.to_string(),
        }),
    }
}

/// The text as a JSON value after the checks every kind shares: no key twice,
/// an object, a schema version this build knows.
fn checked_value(text: &str, origin: &str) -> Result<serde_json::Value, ParseError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let dup = NoDuplicates.deserialize(&mut de).and_then(|()| de.end());
    if let Err(e) = dup {
        let reason = e.to_string();
        let position = format!(" at line {} column {}", e.line(), e.column());
        let reason = reason.strip_suffix(&position).unwrap_or(&reason);
        if let Some(key) = reason.strip_prefix(DUPLICATE_PREFIX) {
            return Err(ParseError::DuplicateKey {
                origin: origin.to_string(),
                key: key.to_string(),
                line: e.line(),
                column: e.column(),
            });
        }
        return Err(syntax(origin, &e));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| syntax(origin, &e))?;
    let Some(object) = value.as_object() else {
        return Err(ParseError::NotAnObject {
            origin: origin.to_string(),
        });
    };
    if let Some(v) = object.get("schema_version") {
        let found = v.as_u64().ok_or_else(|| ParseError::BadVersion {
            origin: origin.to_string(),
        })?;
        if found > u64::from(SCHEMA_VERSION) {
            return Err(ParseError::FutureVersion {
                origin: origin.to_string(),
                found,
                known: SCHEMA_VERSION,
            });
        }
    }
    Ok(value)
}

/// Deserialised from the text itself, so a shape error names its line.
fn typed<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, ParseError> {
    serde_json::from_str(text).map_err(|e| syntax(origin, &e))
}

fn syntax(origin: &str, e: &serde_json::Error) -> ParseError {
    let position = format!(" at line {} column {}", e.line(), e.column());
    let reason = e.to_string();
    ParseError::Syntax {
        origin: origin.to_string(),
        line: e.line(),
        column: e.column(),
        reason: reason
            .strip_suffix(&position)
            .unwrap_or(&reason)
            .to_string(),
    }
}

const DUPLICATE_PREFIX: &str = "duplicate key: ";

/// Walks any JSON value and fails on the first object that names a key
/// twice; holds only one object's keys per level of nesting.
struct NoDuplicates;

impl<'de> DeserializeSeed<'de> for NoDuplicates {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NoDuplicates {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoDuplicates)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("{DUPLICATE_PREFIX}{key}")));
            }
            map.next_value_seed(NoDuplicates)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth_with_its_place() {
        let e = checked_value("{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2}}", "f.json").unwrap_err();
        match e {
            ParseError::DuplicateKey { key, line, .. } => {
                assert_eq!(key, "x");
                assert_eq!(line, 2);
            }
            other => panic!("{other:?}"),
        }
        let e = checked_value("[{\"k\": 1}, {\"k\": 1, \"k\": 1}]", "f.json").unwrap_err();
        assert!(matches!(e, ParseError::DuplicateKey { .. }), "{e:?}");
        // The same key in two objects is not a duplicate.
        assert!(checked_value("{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}}", "f.json").is_ok());
    }

    #[test]
    fn a_newer_schema_version_is_refused_and_an_older_one_read() {
        let e = checked_value("{\"schema_version\": 99}", "f.json").unwrap_err();
        assert!(
            matches!(e, ParseError::FutureVersion { found: 99, .. }),
            "{e:?}"
        );
        assert!(e.to_string().contains("newer than this tracemark's"));
        assert!(checked_value("{\"schema_version\": 1}", "f.json").is_ok());
        assert!(matches!(
            checked_value("{\"schema_version\": \"3\"}", "f.json"),
            Err(ParseError::BadVersion { .. })
        ));
        assert!(matches!(
            checked_value("[1]", "f.json"),
            Err(ParseError::NotAnObject { .. })
        ));
    }
}
