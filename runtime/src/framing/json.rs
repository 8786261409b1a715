//! A strict JSON validator for one record (RFC 8259: the grammar `JSON.parse` and `serde_json`
//! accept), which builds no values.
//!
//! The framer asks it first where a record ends ([`value_end`]): for a valid record that is
//! the whole job, one pass, UTF-8 included (only a string can hold a byte above 0x7F, so the
//! check of each string's non-ASCII runs covers the record). Otherwise the framer's scanner
//! finds the end and bounds the nesting, and [`validate`] checks the bytes in between for the
//! error. It replaced a
//! `serde_json` pass (`IgnoredAny`); property tests keep it in agreement with `serde_json` and
//! the one pass in agreement with the scan.

/// Nesting depth at which the scanner rejects a record as invalid JSON.
/// Validation through `IgnoredAny` does not enforce serde_json's usual
/// recursion limit, so without this cap hostile input (hundreds of MiB of `[`)
/// would grow the bracket stack without bound; real records are never this
/// deep, and the sandbox's own parser would choke on them anyway.
pub(crate) const MAX_SCAN_DEPTH: usize = 1024;

/// Where and why a record is not JSON: a byte offset within the record and what was expected.
pub(super) type Invalid = (usize, &'static str);

/// Bytes that end the fast run through a string body: the quote, the backslash, the control
/// characters JSON forbids there, and every non-ASCII byte (its UTF-8 is checked apart).
const STRING_STOP: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    let mut i = 0x80;
    while i < 0x100 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// The open containers of the value being checked, one bit each (set: an object), so a
/// record's check starts from 128 zeroed bytes rather than a stack of [`MAX_SCAN_DEPTH`].
struct Nesting {
    bits: [u64; MAX_SCAN_DEPTH / 64],
    depth: usize,
}

impl Nesting {
    fn new() -> Nesting {
        Nesting {
            bits: [0; MAX_SCAN_DEPTH / 64],
            depth: 0,
        }
    }

    /// Opens a container (an object if `object`, else an array) whose first member starts at
    /// `at`.
    fn push(&mut self, object: bool, at: usize) -> Result<(), Invalid> {
        self.room(at)?;
        let (word, bit) = (self.depth / 64, self.depth % 64);
        if object {
            self.bits[word] |= 1 << bit;
        } else {
            self.bits[word] &= !(1 << bit);
        }
        self.depth += 1;
        Ok(())
    }

    /// Whether one more container may open at `at`. An empty one counts too, though it
    /// is never pushed, so the limit is the framer's scan's: one more level than
    /// [`MAX_SCAN_DEPTH`] is refused by both.
    fn room(&self, at: usize) -> Result<(), Invalid> {
        if self.depth >= MAX_SCAN_DEPTH {
            return Err((at, "nesting too deep"));
        }
        Ok(())
    }

    /// Whether the innermost open container is an object; `None` at depth 0.
    fn top_is_object(&self) -> Option<bool> {
        let top = self.depth.checked_sub(1)?;
        Some(self.bits[top / 64] & (1 << (top % 64)) != 0)
    }
}

/// Checks that `b` (valid UTF-8) is exactly one JSON value, with nothing but whitespace
/// around it.
pub(super) fn validate(b: &[u8]) -> Result<(), Invalid> {
    let end = value(b, ws(b, 0))?;
    let i = ws(b, end);
    if i == b.len() {
        Ok(())
    } else {
        Err((i, "trailing characters after the value"))
    }
}

/// The end of the JSON value starting at `start` in `src`, when that value is valid and the
/// byte after it, inside `src`, is whitespace, `,` or `]`: then it is the end the framer's
/// scan finds, and [`validate`] accepts the bytes in between. `None` otherwise, whatever the
/// reason (invalid, cut off by the end of `src`, or followed by something else), and the
/// framer takes its slower path, which tells those cases apart. One pass where the scan, the
/// check and a UTF-8 check were three: a value it accepts is valid UTF-8 too.
pub(super) fn value_end(src: &[u8], start: usize) -> Option<usize> {
    let end = value(src, start).ok()?;
    matches!(
        src.get(end),
        Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b']')
    )
    .then_some(end)
}

/// One JSON value starting at `i` (no whitespace before it); returns the index after it.
fn value(b: &[u8], mut i: usize) -> Result<usize, Invalid> {
    let mut open = Nesting::new();
    loop {
        // A value starts at `i`.
        match b.get(i) {
            Some(b'{') => {
                i = ws(b, i + 1);
                if b.get(i) == Some(&b'}') {
                    open.room(i)?;
                    i += 1;
                } else {
                    open.push(true, i)?;
                    i = key(b, i)?;
                    continue;
                }
            }
            Some(b'[') => {
                i = ws(b, i + 1);
                if b.get(i) == Some(&b']') {
                    open.room(i)?;
                    i += 1;
                } else {
                    open.push(false, i)?;
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
        // A value ended at `i`: close containers, or go on to the next member.
        loop {
            let Some(object) = open.top_is_object() else {
                return Ok(i);
            };
            i = ws(b, i);
            match (object, b.get(i)) {
                (false, Some(b']')) | (true, Some(b'}')) => {
                    open.depth -= 1;
                    i += 1;
                }
                (false, Some(b',')) => {
                    i = ws(b, i + 1);
                    break;
                }
                (true, Some(b',')) => {
                    i = key(b, ws(b, i + 1))?;
                    break;
                }
                (false, _) => return Err((i, "expected `,` or `]` after an array element")),
                (true, _) => return Err((i, "expected `,` or `}` after an object member")),
            }
        }
    }
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
        // Eight bytes at a time while none of them ends the run, then byte by byte.
        while let Some(word) = b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) {
            if stops_run(u64::from_le_bytes(word)) {
                break;
            }
            i += 8;
        }
        while let Some(&c) = b.get(i) {
            if STRING_STOP[c as usize] {
                break;
            }
            i += 1;
        }
        match b.get(i) {
            Some(b'"') => return Ok(i + 1),
            Some(b'\\') => i = escape(b, i)?,
            Some(0x80..) => i = non_ascii(b, i)?,
            Some(_) => return Err((i, "control character in a string")),
            None => return Err((i, "the record ended inside a string")),
        }
    }
}

/// Whether any byte of `word` is one of [`STRING_STOP`]: below 0x20, `"`, `\` or above 0x7F.
/// Exact as a yes or no, which is all the caller asks; it then finds the byte one at a time.
#[inline]
fn stops_run(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Some byte of `x` is below `n` (n <= 0x80) exactly when this is not zero: the lowest
    // such byte borrows into its high bit, which `!x` keeps, and bytes below it cannot borrow.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    (below(word, 0x20) | below(quote, 1) | below(backslash, 1) | (word & HIGH)) != 0
}

/// The run of non-ASCII bytes starting at `i` in a string; returns the index after it. Every
/// byte of a multi-byte UTF-8 sequence is above 0x7F, so the string is valid UTF-8 exactly when
/// each such run is, on its own.
fn non_ascii(b: &[u8], i: usize) -> Result<usize, Invalid> {
    let run = b.get(i..).unwrap_or_default();
    let len = run.iter().position(u8::is_ascii).unwrap_or(run.len());
    match std::str::from_utf8(&run[..len]) {
        Ok(_) => Ok(i + len),
        Err(e) => Err((i + e.valid_up_to(), "invalid UTF-8 in a string")),
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
            // Strings of any characters, non-ASCII among them.
            "\\PC{0,6}".prop_map(|s| format!("[\"{s}\", {{\"{s}\": \"é{s}☕\"}}]").into_bytes()),
        ]
    }

    /// The eight-byte test of a string run says yes exactly when some byte would stop the
    /// byte-by-byte one.
    #[test]
    fn stops_run_agrees_with_the_table() {
        let check = |word: [u8; 8]| {
            let by_byte = word.iter().any(|&b| STRING_STOP[b as usize]);
            assert_eq!(stops_run(u64::from_le_bytes(word)), by_byte, "{word:?}");
        };
        // Every byte value in every position, among bytes near the boundaries.
        for b in 0..=255u8 {
            for at in 0..8 {
                for fill in [
                    b'a',
                    0x1f,
                    0x20,
                    0x21,
                    b'"' + 1,
                    b'\\' + 1,
                    0x7f,
                    0x80,
                    0xff,
                ] {
                    let mut word = [fill; 8];
                    word[at] = b;
                    check(word);
                }
            }
        }
        let mut runner = proptest::test_runner::TestRunner::default();
        let words = proptest::array::uniform8(any::<u8>());
        let result = runner.run(&words, |word| {
            check(word);
            Ok(())
        });
        assert!(result.is_ok(), "{result:?}");
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
