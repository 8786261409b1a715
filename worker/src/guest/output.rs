//! What every engine's successful call must still pass before the worker answers it as a
//! result.

use crate::wire::failure::{Failure, FailureCode};
use runx_rules::{Limit, Limits};

/// What every engine's successful call must still pass before it is a result: it came back
/// within its wall (a call that spent its time in native code the engine's interrupt never
/// reached returns late, and late is a wall failure, not a result), and its output is JSON the
/// host can read (the prelude refuses lone surrogates and deep nesting with a path; this is
/// the backstop for any route around it, e.g. a boxed string whose `toString` lies).
pub(super) fn accept(
    bytes: &[u8],
    limits: &Limits,
    elapsed: std::time::Duration,
) -> Result<(), Failure> {
    if elapsed > limits.wall() {
        return Err(Failure::exceeded(Limit::WallMilliseconds, limits));
    }
    if let Err(e) = serde_json::from_slice::<Readable>(bytes) {
        return Err(Failure::new(
            FailureCode::OutputRejected,
            format!("the export's return value cannot be encoded as JSON: {e}"),
        ));
    }
    Ok(())
}

/// Any JSON value whose every string and key decodes (so a lone surrogate escape is refused),
/// kept as nothing. `IgnoredAny` would skip strings without decoding them.
struct Readable;

impl<'de> serde::Deserialize<'de> for Readable {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Readable, D::Error> {
        d.deserialize_any(Readable)
    }
}

impl<'de> serde::de::Visitor<'de> for Readable {
    type Value = Readable;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_str<E>(self, _: &str) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_unit<E>(self) -> Result<Readable, E> {
        Ok(Readable)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Readable, A::Error> {
        while seq.next_element::<Readable>()?.is_some() {}
        Ok(Readable)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Readable, A::Error> {
        while map.next_entry::<Readable, Readable>()?.is_some() {}
        Ok(Readable)
    }
}
