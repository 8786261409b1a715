//! JSON read with every object's keys unique.
//!
//! serde_json keeps the last of duplicate keys while other readers keep the first, so a document
//! with duplicates can show one reader one value and another reader (or a digest) another: a
//! receipt one status to a person and another to its verifier, a request one id to the server
//! and another to the client. runx refuses such documents where it reads them.

use crate::quote::printable;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashSet;

/// Parses `bytes` as one JSON value, refusing an object that names a key twice (at any depth).
/// serde_json's recursion limit bounds the nesting.
pub fn parse_unique(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    check_unique(bytes)?;
    serde_json::from_slice(bytes)
}

/// Checks that `bytes` are one JSON value whose objects name every key once (at any depth),
/// without building it: what [`parse_unique`] refuses, this refuses with the same error. It
/// holds only the keys of the objects open at a point, borrowed from `bytes` where they have no
/// escapes, so a reader can check a document it keeps as text.
pub fn check_unique(bytes: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<Checked>(bytes).map(|_| ())
}

/// A JSON value that was checked and dropped.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked, D::Error> {
        d.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Checked, E> {
        if v.is_finite() {
            Ok(Checked)
        } else {
            Err(E::custom("a number that is not finite"))
        }
    }

    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            if keys.contains(&key) {
                return Err(de::Error::custom(format!(
                    "duplicate key `{}`",
                    printable(&key)
                )));
            }
            map.next_value::<Checked>()?;
            keys.insert(key);
        }
        Ok(Checked)
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_at_any_depth() {
        assert!(parse_unique(br#"{"a": 1, "b": {"c": [1, {"d": 2}]}}"#).is_ok());
        let e = parse_unique(br#"{"a": 1, "a": 2}"#).expect_err("duplicate");
        assert!(e.to_string().contains("duplicate key `a`"), "{e}");
        assert!(parse_unique(br#"[{"x": {"y": 1, "y": 1}}]"#).is_err());
        assert!(
            parse_unique(&[b'['; 10_000]).is_err(),
            "deep nesting is an error"
        );
        assert!(
            check_unique(br#"{"a\u0062": 1, "ab": 2}"#).is_err(),
            "an escaped twin"
        );
        assert!(check_unique(br#"{"a": {"a": 1}, "b": {"a": 1}}"#).is_ok());
        assert!(check_unique(b"[1] x").is_err(), "trailing text");
        assert!(check_unique(b"1e999").is_err(), "a number out of range");
    }
}
