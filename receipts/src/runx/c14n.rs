//! runx's canonical form of a receipt (`runx.receipt.c14n.v1`) and the three digests made from
//! it.
//!
//! The bytes are compact JSON with every object's keys in byte order (UTF-8), strings escaped as
//! serde_json escapes them and numbers as serde_json prints them. For the values a receipt's
//! body holds (ASCII keys, integers) this is RFC 8785; the two differ only in the order of keys
//! outside the Basic Multilingual Plane and in the spelling of some floats. The keys are sorted
//! here explicitly, so the bytes do not depend on how serde_json was built.
//!
//! - the **identity** (what the receipt `id` addresses): every top-level key but `id`,
//!   `signature`, `digest`, `metadata` and `lineage`;
//! - the **body** (what `digest` names and the signature covers): every top-level key but
//!   `signature`, `digest` and `metadata`;
//! - the **full** form: everything (what a harness fixture's `receipt_digest` names).

use crate::digest::sha256_hex;
use serde_json::{Map, Value};

/// The name of this canonical form, as a receipt's `canonicalization` carries it.
pub const CANONICALIZATION: &str = "runx.receipt.c14n.v1";

/// Top-level keys outside the body: the seal itself and the unsigned `metadata`.
const NOT_BODY: [&str; 3] = ["signature", "digest", "metadata"];
/// Further keys outside the identity: the id itself and the lineage, which may be completed
/// after a receipt is addressed.
const NOT_IDENTITY: [&str; 2] = ["id", "lineage"];

/// `v` in runx's canonical form.
pub fn canonical_bytes(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Object(map) => write_object(map, &[], out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, out);
            }
            out.push(b']');
        }
        scalar => {
            // A scalar always serializes; the fallback keeps this total.
            if serde_json::to_writer(&mut *out, scalar).is_err() {
                out.extend_from_slice(b"null");
            }
        }
    }
}

/// Writes `map`, leaving out the keys in `skip`.
fn write_object(map: &Map<String, Value>, skip: &[&str], out: &mut Vec<u8>) {
    let mut keys: Vec<&String> = map.keys().filter(|k| !skip.contains(&k.as_str())).collect();
    keys.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    out.push(b'{');
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(key, out);
        out.push(b':');
        write(&map[key], out);
    }
    out.push(b'}');
}

fn write_str(s: &str, out: &mut Vec<u8>) {
    if serde_json::to_writer(&mut *out, s).is_err() {
        out.extend_from_slice(b"\"\"");
    }
}

/// `sha256:` of `v`'s canonical bytes, its top-level `skip` keys left out.
fn digest_without(v: &Value, skip: &[&str]) -> Option<String> {
    let map = v.as_object()?;
    let mut out = Vec::new();
    write_object(map, skip, &mut out);
    Some(sha256_hex(&out))
}

/// `sha256:` of the canonical bytes of the object `map`, without making it a [`Value`] first
/// (a run's inputs may be megabytes).
pub fn c14n_object_digest(map: &Map<String, Value>) -> String {
    let mut out = Vec::new();
    write_object(map, &[], &mut out);
    sha256_hex(&out)
}

/// `sha256:` of `v`'s canonical bytes: how this runtime names a JSON value inside a receipt
/// (its evidence, its enforcement profile).
pub fn c14n_digest(v: &Value) -> String {
    sha256_hex(&canonical_bytes(v))
}

/// The content address of a receipt: `sha256:` of its identity's canonical bytes.
pub fn identity_digest(doc: &Value) -> Option<String> {
    let keys: Vec<&str> = NOT_BODY.iter().chain(&NOT_IDENTITY).copied().collect();
    digest_without(doc, &keys)
}

/// The digest of a receipt's body, which its `digest` records and its signature covers.
pub fn body_digest(doc: &Value) -> Option<String> {
    digest_without(doc, &NOT_BODY)
}

/// The digest of the whole receipt, seal included.
pub fn full_digest(doc: &Value) -> String {
    c14n_digest(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_in_byte_order_compact() {
        let v = json!({"b": [1, {"z": null, "a": "x\n"}], "a": true, "\u{e9}": 1, "Z": 2});
        assert_eq!(
            String::from_utf8(canonical_bytes(&v)).unwrap(),
            "{\"Z\":2,\"a\":true,\"b\":[1,{\"a\":\"x\\n\",\"z\":null}],\"\u{e9}\":1}"
        );
    }

    #[test]
    fn the_digests_leave_out_what_they_must() {
        let doc = json!({"id": "i", "digest": "d", "signature": {}, "metadata": {"m": 1},
            "lineage": {"children": []}, "seal": {"x": 1}});
        assert_eq!(
            body_digest(&doc).unwrap(),
            sha256_hex(br#"{"id":"i","lineage":{"children":[]},"seal":{"x":1}}"#)
        );
        assert_eq!(
            identity_digest(&doc).unwrap(),
            sha256_hex(br#"{"seal":{"x":1}}"#)
        );
        assert!(body_digest(&json!([1])).is_none());
    }
}
