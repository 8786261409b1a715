//! Integers a JSON number carries exactly.
//!
//! JavaScript, and runx's canonical JSON (RFC 8785), read every number as an IEEE-754 double,
//! which holds every integer up to 2^53 − 1 exactly and no longer tells its neighbours apart
//! beyond: `9007199254740993` and `9007199254740992` are one double. A value like that would
//! reach a cli-tool exactly while the module, the digests and the receipt saw another one, and
//! two different inputs would have one digest. So runx follows I-JSON (RFC 7493): an integer
//! beyond ±(2^53 − 1) in an input, or in a cli-tool's output, is refused, with a message telling
//! to pass it as a string (ids of 64 bits, such as tweet ids, are strings in most APIs for this
//! reason). A javascript result is made of doubles, so its text names each exactly.

use serde_json::Value;

/// The largest integer every JSON reader carries exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The first integer in `value` beyond ±[`MAX_SAFE_INTEGER`], as a JSON pointer below `value`
/// and the integer's text. Numbers written with a fraction or an exponent are doubles already
/// and pass.
///
/// Every run's inputs pass through here, so the walk allocates nothing per element: it keeps
/// one iterator per open container (an explicit stack, as deep as the value may nest) and
/// writes the pointer only for the integer it reports.
pub fn unsafe_integer(value: &Value) -> Option<(String, String)> {
    let mut open: Vec<(Step<'_>, Children<'_>)> = Vec::new();
    let mut next = Some((Step::Root, value));
    loop {
        if let Some((step, v)) = next.take() {
            match v {
                Value::Number(n) if beyond(n) => {
                    let at = open
                        .iter()
                        .map(|(s, _)| s)
                        .chain([&step])
                        .map(Step::pointer);
                    return Some((at.collect(), n.to_string()));
                }
                Value::Array(items) => open.push((step, Children::Array(items.iter().enumerate()))),
                Value::Object(map) => open.push((step, Children::Object(map.iter()))),
                _ => {}
            }
        }
        let (_, children) = open.last_mut()?;
        next = match children {
            Children::Array(items) => items.next().map(|(i, v)| (Step::Index(i), v)),
            Children::Object(entries) => entries.next().map(|(k, v)| (Step::Key(k), v)),
        };
        if next.is_none() {
            open.pop();
        }
    }
}

/// The integer `value` no longer shows: an integer literal of `text` beyond 64 bits, which a
/// JSON reader without arbitrary precision reads as a double (`12345678901234567890123` and
/// `...124` are one double), with the pointer of the first double in `value` (what `text`
/// parsed to) equal to it. For a value in which [`unsafe_integer`] found none: the integers it
/// does show are its to report, with their place.
pub fn long_integer_in(text: &[u8], value: &Value) -> Option<(String, String)> {
    long_integer(text, |double| pointer_of_double(value, double))
}

/// [`long_integer_in`] for an object given as its map (the inputs of a request), without
/// building a value of it.
pub fn long_integer_in_map(
    text: &[u8],
    map: &serde_json::Map<String, Value>,
) -> Option<(String, String)> {
    long_integer(text, |double| {
        map.iter().find_map(|(key, value)| {
            pointer_of_double(value, double)
                .map(|rest| format!("{}{rest}", Step::Key(key).pointer()))
        })
    })
}

/// The first long integer literal of `text` and the place `locate` finds for its double.
fn long_integer(
    text: &[u8],
    locate: impl FnOnce(f64) -> Option<String>,
) -> Option<(String, String)> {
    let literal = long_integer_literal(text)?;
    let double: f64 = literal.parse().ok()?;
    Some((locate(double).unwrap_or_default(), literal))
}

/// The first integer literal of JSON `text` (no fraction, no exponent) with more than 16
/// digits, so beyond ±[`MAX_SAFE_INTEGER`] (16 digits). Looked for when [`unsafe_integer`]
/// found none in the parsed value, so such a literal is one the reader took as a double. Text inside
/// strings is skipped. One pass, no allocation but the literal returned.
fn long_integer_literal(text: &[u8]) -> Option<String> {
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < text.len()
                    && matches!(text[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let token = &text[start..i];
                let digits = token.iter().filter(|b| b.is_ascii_digit()).count();
                let integer = !token.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
                if integer && digits > 16 {
                    return Some(String::from_utf8_lossy(token).into_owned());
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The JSON pointer of the first double in `value` equal to `double`.
fn pointer_of_double(value: &Value, double: f64) -> Option<String> {
    match value {
        Value::Number(n) if n.is_f64() && n.as_f64() == Some(double) => Some(String::new()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            pointer_of_double(v, double).map(|rest| format!("{}{rest}", Step::Index(i).pointer()))
        }),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            pointer_of_double(v, double).map(|rest| format!("{}{rest}", Step::Key(k).pointer()))
        }),
        _ => None,
    }
}

/// Whether `n` is an integer beyond ±[`MAX_SAFE_INTEGER`].
fn beyond(n: &serde_json::Number) -> bool {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => u > MAX_SAFE_INTEGER,
        (None, Some(i)) => i.unsigned_abs() > MAX_SAFE_INTEGER,
        (None, None) => false,
    }
}

/// How a value is reached from its container.
enum Step<'a> {
    Root,
    Index(usize),
    Key(&'a str),
}

impl Step<'_> {
    /// The step as a JSON pointer segment (RFC 6901: `~` and `/` escaped).
    fn pointer(&self) -> String {
        match self {
            Step::Root => String::new(),
            Step::Index(i) => format!("/{i}"),
            Step::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
        }
    }
}

/// The values of an open container not yet visited.
enum Children<'a> {
    Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
    Object(serde_json::map::Iter<'a>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a caller reports: the integers the value shows, else those only the text shows.
    fn in_text(text: &str) -> Option<(String, String)> {
        let value: Value = serde_json::from_str(text).expect("json");
        unsafe_integer(&value).or_else(|| long_integer_in(text.as_bytes(), &value))
    }

    #[test]
    fn integers_beyond_64_bits_are_found_in_the_text() {
        assert_eq!(
            in_text(r#"{"a": [1, {"b": 12345678901234567890123}]}"#),
            Some(("/a/1/b".into(), "12345678901234567890123".into()))
        );
        assert_eq!(
            in_text("-99999999999999999999"),
            Some((String::new(), "-99999999999999999999".into()))
        );
        // Below i64::MIN, read as a double.
        assert_eq!(
            in_text(r#"{"n": -9223372036854775809}"#),
            Some(("/n".into(), "-9223372036854775809".into()))
        );
        // In 64 bits: the value shows it, with its place.
        assert_eq!(
            in_text(r#"{"x": 9007199254740993}"#),
            Some(("/x".into(), "9007199254740993".into()))
        );
    }

    #[test]
    fn a_map_is_checked_like_its_object() {
        let text = r#"{"a": 1, "b": {"c": 123456789012345678901234}}"#;
        let Value::Object(map) = serde_json::from_str(text).expect("json") else {
            panic!("not an object")
        };
        assert_eq!(
            long_integer_in_map(text.as_bytes(), &map),
            Some(("/b/c".into(), "123456789012345678901234".into()))
        );
        assert_eq!(long_integer_in_map(br#"{"a": 1}"#, &map), None);
    }

    #[test]
    fn doubles_strings_and_safe_integers_pass_the_text_check() {
        for text in [
            r#"{"a": 1.2345678901234567890123e22, "b": 1e300, "c": 12345678901234567890.5}"#,
            r#"{"s": "12345678901234567890123", "t": "\"12345678901234567890123"}"#,
            r#"[9007199254740991, -9007199254740991, 0, -0, 1E300]"#,
        ] {
            assert_eq!(in_text(text), None, "{text}");
        }
    }

    #[test]
    fn integers_beyond_two_to_the_53_are_found_with_their_place() {
        let safe =
            json!({"n": 9007199254740991u64, "m": -9007199254740991i64, "f": 1e300, "x": 0.5});
        assert_eq!(unsafe_integer(&safe), None);
        let big: Value = serde_json::from_str(r#"{"a": [1, {"id": 9007199254740993}]}"#).unwrap();
        assert_eq!(
            unsafe_integer(&big),
            Some(("/a/1/id".to_string(), "9007199254740993".to_string()))
        );
        let negative: Value = serde_json::from_str(r#"[-9007199254740992]"#).unwrap();
        assert_eq!(
            unsafe_integer(&negative),
            Some(("/0".to_string(), "-9007199254740992".to_string()))
        );
        let key: Value = serde_json::from_str(r#"{"a/b~c": 18446744073709551615}"#).unwrap();
        assert_eq!(unsafe_integer(&key).unwrap().0, "/a~1b~0c");
        // The first in document order.
        let two: Value = serde_json::from_str(r#"[9007199254740993, 9007199254740994]"#).unwrap();
        assert_eq!(unsafe_integer(&two).unwrap().1, "9007199254740993");
    }

    #[test]
    fn deep_values_do_not_overflow_the_stack() {
        let mut v = json!(9007199254740993u64);
        for _ in 0..10_000 {
            v = Value::Array(vec![v]);
        }
        assert_eq!(unsafe_integer(&v).map(|(at, _)| at.len()), Some(20_000));
        // serde_json drops nested values recursively; leak this one instead of overflowing.
        std::mem::forget(v);
    }
}
