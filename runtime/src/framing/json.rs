//! A strict JSON validator for one record (RFC 8259: the grammar `JSON.parse` and `serde_json`
//! accept), which builds no values.
//!
//! The scanner has already found the record's end and bounded its nesting; this checks the
//! bytes in between, once, while they are still in the cache. It replaces a `serde_json` pass
//! (`IgnoredAny`) that cost about as much as the scan itself; a property test keeps the two in
//! agreement on every input.

/// Nesting depth at which the scanner rejects a record as invalid JSON.
/// Validation through `IgnoredAny` does not enforce serde_json's usual
/// recursion limit, so without this cap hostile input (hundreds of MiB of `[`)
/// would grow the bracket stack without bound; real records are never this
/// deep, and the sandbox's own parser would choke on them anyway.
pub(crate) const MAX_SCAN_DEPTH: usize = 1024;

/// Where and why a record is not JSON: a byte offset within the record and what was expected.
pub(super) type Invalid = (usize, &'static str);

/// Bytes that end the fast run through a string body: the quote, the backslash, and the
/// control characters JSON forbids there.
const STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// What the validator expects next inside a container.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Array,
    Object,
}

/// Checks that `b` (valid UTF-8) is exactly one JSON value, with nothing but whitespace
/// around it.
pub(super) fn validate(b: &[u8]) -> Result<(), Invalid> {
    let mut stack = [Open::Array; MAX_SCAN_DEPTH + 1];
    let mut depth = 0usize;
    let mut i = ws(b, 0);
    loop {
        // A value starts at `i`.
        match b.get(i) {
            Some(b'{') => {
                i = ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    i += 1;
                } else {
                    push(&mut stack, &mut depth, Open::Object, i)?;
                    i = key(b, i)?;
                    continue;
                }
            }
            Some(b'[') => {
                i = ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    push(&mut stack, &mut depth, Open::Array, i)?;
                    continue;
                }
            }
            Some(b'"') => i = string(b, i)?,
            Some(b'-' | b'0'..=b'9') => i = number(b, i)?,
            Some(b't') => i = literal(b, i, b"true")?,
            Some(b'f') => i = literal(b, i, b"false")?,
            Some(b'n') => i = literal(b, i, b"null")?,
            Some(_) => return Err((i, "expected a value")),
            None => return Err((i, "expected a value, the record ended")),
        }
        // A value ended before `i`: close containers, or go on to the next member.
        loop {
            i = ws(b, i);
            if depth == 0 {
                return if i == b.len() {
                    Ok(())
                } else {
                    Err((i, "trailing characters after the value"))
                };
            }
            match (stack[depth - 1], b.get(i)) {
                (Open::Array, Some(b']')) | (Open::Object, Some(b'}')) => {
                    depth -= 1;
                    i += 1;
                }
                (Open::Array, Some(b',')) => {
                    i = ws(b, i + 1);
                    break;
                }
                (Open::Object, Some(b',')) => {
                    i = key(b, ws(b, i + 1))?;
                    break;
                }
                (Open::Array, _) => return Err((i, "expected `,` or `]` after an array element")),
                (Open::Object, _) => return Err((i, "expected `,` or `}` after an object member")),
            }
        }
    }
}

fn push(
    stack: &mut [Open; MAX_SCAN_DEPTH + 1],
    depth: &mut usize,
    open: Open,
    at: usize,
) -> Result<(), Invalid> {
    if *depth >= MAX_SCAN_DEPTH {
        return Err((at, "nesting too deep"));
    }
    stack[*depth] = open;
    *depth += 1;
    Ok(())
}

/// Index of the first non-whitespace byte at or after `i`.
#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// An object key and its colon at `i`; returns where the member's value starts.
fn key(b: &[u8], i: usize) -> Result<usize, Invalid> {
    if b.get(i) != Some(&b'"') {
        return Err((i, "expected a string key"));
    }
    let i = ws(b, string(b, i)?);
    if b.get(i) != Some(&b':') {
        return Err((i, "expected `:` after an object key"));
    }
    Ok(ws(b, i + 1))
}

/// A string starting with the quote at `i`; returns the index after its closing quote.
#[inline]
fn string(b: &[u8], mut i: usize) -> Result<usize, Invalid> {
    i += 1;
    loop {
        while let Some(&c) = b.get(i) {
            if STRING_STOP[c as usize] {
                break;
            }
            i += 1;
        }
        match b.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => i = escape(b, i)?,
            Some(_) => return Err((i, "control character in a string")),
            None => return Err((i, "the record ended inside a string")),
        }
    }
}

/// An escape starting with the backslash at `i`; returns the index after it.
fn escape(b: &[u8], i: usize) -> Result<usize, Invalid> {
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            let hex = b.get(i + 2..i + 6).ok_or((i, "incomplete `\\u` escape"))?;
            if hex.iter().all(u8::is_ascii_hexdigit) {
                Ok(i + 6)
            } else {
                Err((i, "invalid `\\u` escape"))
            }
        }
        _ => Err((i, "invalid escape")),
    }
}

/// A number starting at `i`; returns the index after it.
fn number(b: &[u8], mut i: usize) -> Result<usize, Invalid> {
    let start = i;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i = digits(b, i + 1),
        _ => return Err((start, "invalid number")),
    }
    if b.get(i) == Some(&b'.') {
        let after = digits(b, i + 1);
        if after == i + 1 {
            return Err((start, "invalid number: no digit after the decimal point"));
        }
        i = after;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let after = digits(b, i);
        if after == i {
            return Err((start, "invalid number: no digit in the exponent"));
        }
        i = after;
    }
    Ok(i)
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while let Some(b'0'..=b'9') = b.get(i) {
        i += 1;
    }
    i
}

/// The literal `word` at `i`; returns the index after it.
fn literal(b: &[u8], i: usize, word: &'static [u8]) -> Result<usize, Invalid> {
    if b.get(i..i + word.len()) == Some(word) {
        Ok(i + word.len())
    } else {
        Err((i, "expected a value (`true`, `false` or `null`?)"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde_accepts(b: &[u8]) -> bool {
        serde_json::from_slice::<serde::de::IgnoredAny>(b).is_ok()
    }

    #[test]
    fn accepts_json_and_refuses_the_rest() {
        for ok in [
            "0",
            "-0",
            "1.5e-3",
            "-12E+4",
            "\"\"",
            "\"a\\u00e9\\n\\\"\"",
            "\"\\ud800\"",
            "[]",
            "{}",
            " [1, [2, {\"a\": [true, false, null]}], \"x\"] ",
            "{\"a\":{\"b\":{}}}",
        ] {
            assert_eq!(validate(ok.as_bytes()), Ok(()), "{ok}");
            assert!(serde_accepts(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "",
            " ",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "[,1]",
            "{,}",
            "{\"a\"}",
            "{\"a\":}",
            "{1:2}",
            "{\"a\":1,}",
            "\"\\q\"",
            "\"\\u12\"",
            "\"a",
            "[1 2]",
            "\"\u{1}\"",
            "{}x",
            "[1}",
            "{\"a\":1]",
            "1 2",
            "NaN",
            "'a'",
        ] {
            assert!(validate(bad.as_bytes()).is_err(), "{bad:?}");
            assert!(!serde_accepts(bad.as_bytes()), "{bad:?}");
        }
    }

    #[test]
    fn errors_point_at_the_problem() {
        assert_eq!(
            validate(b"{\"a\" 1}"),
            Err((5, "expected `:` after an object key"))
        );
        assert_eq!(validate(b"[1, x]").map_err(|e| e.0), Err(4));
    }

    /// JSON-ish text: valid documents with a byte changed, removed or added now and then.
    fn near_json() -> impl Strategy<Value = Vec<u8>> {
        let alphabet =
            prop::sample::select(b"{}[]\",:\\ -+.0123456789eEtrufalsn\\u00aAbB\t\n x\x01".to_vec());
        prop_oneof![
            prop::collection::vec(alphabet.clone(), 0..40),
            ("[a-z]{0,3}", any::<i32>(), any::<bool>()).prop_map(|(s, n, b)| {
                format!("{{\"{s}\": [{n}, {b}, null, \"{s}\\n\", {{}}, [1.5e3]]}}").into_bytes()
            }),
            (
                ("[a-z]{0,3}", any::<i64>()).prop_map(|(s, n)| format!("[\"{s}\", {n}]")),
                any::<usize>(),
                alphabet
            )
                .prop_map(|(text, at, byte)| {
                    let mut b = text.into_bytes();
                    let at = at % (b.len() + 1);
                    if at < b.len() && byte % 2 == 0 {
                        b[at] = byte;
                    } else {
                        b.insert(at, byte);
                    }
                    b
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
        ))]
        /// The validator accepts exactly what `serde_json` accepts.
        #[test]
        fn agrees_with_serde_json(bytes in near_json()) {
            if std::str::from_utf8(&bytes).is_ok() {
                prop_assert_eq!(validate(&bytes).is_ok(), serde_accepts(&bytes), "{:?}", String::from_utf8_lossy(&bytes));
            }
        }
    }
}
