//! Canonical JSON and content digests.
//!
//! Receipts record input and output digests so that two runs over identical inputs and bytes can
//! be compared on any machine. That only works if the bytes being hashed do not depend on map
//! insertion order, number spelling or string escaping choices, so every JSON value is first
//! rendered in the RFC 8785 JSON Canonicalization Scheme (JCS): object keys sorted by UTF-16 code
//! units, numbers in the ECMAScript `Number.prototype.toString` form, minimal string escaping.
//!
//! Numbers are IEEE-754 doubles in JCS, exactly as in JavaScript: an integer beyond 2^53 is
//! rounded the way the worker would see it, so host and worker agree on the digest.

use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// Renders `v` as RFC 8785 canonical JSON bytes.
///
/// Delegates to `serde_jcs`, whose output was checked against the RFC's rules (UTF-16 key order,
/// `1e+21`, `-0` as `0`, `1.0` as `1`, control characters as `\u00XX`).
pub fn canonical_json(v: &Value) -> Vec<u8> {
    // `serde_jcs` fails only for values serde cannot represent in JSON (non-finite floats, non-string
    // map keys); a `serde_json::Value` never holds either. The fallback keeps this function total
    // instead of panicking on a path reachable from user input.
    serde_jcs::to_vec(v).unwrap_or_else(|_| v.to_string().into_bytes())
}

/// Digest of a JSON value's canonical form, as `"sha256:<lowercase hex>"`.
pub fn digest(v: &Value) -> String {
    sha256_hex(&canonical_json(v))
}

/// Digest of raw bytes, as `"sha256:<lowercase hex>"` — the same spelling used for artifact
/// `whole_digest` and `range_digest`, so every digest in a receipt reads alike.
pub fn sha256_hex(bytes: &[u8]) -> String {
    spell(&Sha256::digest(bytes))
}

/// A finished SHA-256 hash spelled `"sha256:<lowercase hex>"`, for hashes computed
/// incrementally (streams, artifacts).
pub fn spell(hash: &[u8]) -> String {
    format!("sha256:{}", hex::encode(hash))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        let v: Value = serde_json::from_str(text).expect("test JSON");
        String::from_utf8(canonical_json(&v)).expect("canonical JSON is UTF-8")
    }

    #[test]
    fn keys_sorted_recursively() {
        assert_eq!(
            canon(r#"{"z":{"y":[{"b":null,"a":true}]},"a":"x"}"#),
            r#"{"a":"x","z":{"y":[{"a":true,"b":null}]}}"#
        );
    }

    #[test]
    fn keys_sorted_by_utf16_code_units() {
        // U+1F600 is the surrogate pair D83D DE00, which sorts before U+FB33 in UTF-16 even though
        // its UTF-8 encoding sorts after.
        assert_eq!(
            canon(r#"{"\ufb33":1,"\ud83d\ude00":2,"\u20ac":3,"1":4,"a":5}"#),
            "{\"1\":4,\"a\":5,\"\u{20ac}\":3,\"\u{1f600}\":2,\"\u{fb33}\":1}"
        );
    }

    #[test]
    fn numbers_use_ecmascript_form() {
        assert_eq!(
            canon("[1.0, -0.0, 1e21, 1e-7, 0.1, 300.0, -5, 1e20, 0.000001]"),
            "[1,0,1e+21,1e-7,0.1,300,-5,100000000000000000000,0.000001]"
        );
    }

    #[test]
    fn strings_minimally_escaped() {
        assert_eq!(
            canon(r#""\u0001\u001f\"\\\/é\u2028\n""#),
            "\"\\u0001\\u001f\\\"\\\\/é\u{2028}\\n\""
        );
    }

    #[test]
    fn digest_stable_across_key_order() {
        let a: Value =
            serde_json::from_str(r#"{"a":1,"b":[1,2],"c":{"x":1,"y":2}}"#).expect("json");
        let b: Value =
            serde_json::from_str(r#"{"c":{"y":2,"x":1},"b":[1,2],"a":1.0}"#).expect("json");
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(
            digest(&a),
            digest(&json!({"a": 1, "b": [2, 1], "c": {"x": 1, "y": 2}}))
        );
    }

    #[test]
    fn sha256_spelling() {
        assert_eq!(
            sha256_hex(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            digest(&json!({})),
            sha256_hex(b"{}"),
            "digest hashes the canonical bytes"
        );
    }
}
