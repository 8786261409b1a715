//! Counting the values of a JSON text before it is parsed.
//!
//! A parsed JSON tree costs memory per value, not per byte: serde_json spends 32 bytes on
//! every [`Value`](serde_json::Value) and more on array and map growth, so two bytes of text
//! (`0,`) become 30 or more bytes of tree. A size bound alone therefore lets a document of
//! tiny values cost many times its size. Counting values is one pass over the bytes with no
//! allocation, so a reader can refuse a document over its value budget before building
//! anything.

/// The values `bytes` hold, counted as a parser would build them: the document itself, every
/// array element, every object key and every member's value. It is one more than the `,` and
/// `:` outside strings plus the arrays and objects that are not empty, so it is exact for valid
/// JSON and never less than what a parser builds before it finds an error. Counting stops once
/// the count passes `limit` (the result is then `limit + 1`): a caller asking "more than
/// `limit`?" need not read the rest.
pub fn count_values(bytes: &[u8], limit: u64) -> u64 {
    let mut count: u64 = 1;
    let mut in_string = false;
    let mut escaped = false;
    // After `[` or `{`: the container holds a first value unless `]` or `}` comes next.
    let mut opened = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        if opened && !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            opened = false;
            if b != b']' && b != b'}' {
                count += 1;
            }
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => opened = true,
            b',' | b':' => count += 1,
            _ => continue,
        }
        if count > limit {
            return limit.saturating_add(1);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// The values of a parsed document, keys included, the document itself too.
    fn parsed_values(v: &Value) -> u64 {
        1 + match v {
            Value::Array(a) => a.iter().map(parsed_values).sum(),
            Value::Object(o) => o.values().map(|v| 1 + parsed_values(v)).sum(),
            _ => 0,
        }
    }

    #[test]
    fn counts_values_and_keys_not_bytes() {
        let cases: [(&str, u64); 10] = [
            ("0", 1),
            ("[]", 1),
            ("[ ]", 1),
            ("{ }", 1),
            ("[0]", 2),
            ("[0,0,0]", 4),
            ("[[],[ ],{}]", 4),
            (r#"{"a":1,"b":[2,3]}"#, 7),
            (r#"["[,:{", "\"", "\\", ":"]"#, 5),
            (r#"{"k\"{":[ {"x" : "}"} ]}"#, 6),
        ];
        for (text, want) in cases {
            assert_eq!(count_values(text.as_bytes(), u64::MAX), want, "{text}");
            let v: Value = serde_json::from_str(text).expect("json");
            assert_eq!(parsed_values(&v), want, "{text}");
        }
    }

    #[test]
    fn counting_stops_past_the_limit() {
        let text = format!("[{}0]", "0,".repeat(1000));
        assert_eq!(count_values(text.as_bytes(), u64::MAX), 1002);
        assert_eq!(count_values(text.as_bytes(), 1002), 1002);
        assert_eq!(count_values(text.as_bytes(), 10), 11);
        assert_eq!(count_values(text.as_bytes(), u64::MAX - 1), 1002);
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[\\[\\]{},:\"\\\\a ]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map("[\\[{:,\"a]{0,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_count_is_what_a_parser_builds(v in any_json(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v)
            } else {
                serde_json::to_string(&v)
            }
            .expect("text");
            prop_assert_eq!(count_values(text.as_bytes(), u64::MAX), parsed_values(&v));
        }
    }
}
