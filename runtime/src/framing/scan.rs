//! The byte scanner: where a record ends, whether it is valid, and the head of the file.

use std::ops::Range;

use super::error::FramingError;

/// The opening `[` (after an optional BOM and assignment prefix) must appear
/// within this many bytes of the start of the file. This bounds the work done
/// on inputs that are not JSON arrays at all (e.g. a 512 MiB binary file).
pub const MAX_PREFIX_BYTES: usize = 64 * 1024;

/// UTF-8 byte-order mark, tolerated at offset 0 because some exporters emit it.
pub(crate) const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Checks one record: UTF-8 first (cheap, and gives the exact bad byte), then
/// JSON syntax without building any values ([`super::json`]).
pub(super) fn validate_record(
    src: &[u8],
    start: usize,
    end: usize,
    page: u32,
) -> Result<(), FramingError> {
    let bytes = &src[start..end];
    if let Err(e) = std::str::from_utf8(bytes) {
        return Err(FramingError::InvalidUtf8 {
            offset: start as u64,
            page,
            at: (start + e.valid_up_to()) as u64,
        });
    }
    if let Err((at, why)) = super::json::validate(bytes) {
        return Err(FramingError::InvalidJson {
            offset: start as u64,
            page,
            message: format!("{why} at byte {}", start + at),
        });
    }
    Ok(())
}

/// Returns the index one past the closing quote of a string whose body starts
/// at `i`, or `None` if the input ends first. Backslash escapes skip the next
/// byte, so `\"` and `\\` are handled without a per-byte state machine.
#[inline]
pub(super) fn skip_string(src: &[u8], mut i: usize) -> Option<usize> {
    loop {
        let rest = src.get(i..)?;
        let hit = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[hit] == b'"' {
            return Some(i + hit + 1);
        }
        // Backslash: skip it and the escaped byte.
        i += hit + 2;
    }
}

/// JSON insignificant whitespace.
#[inline]
pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Index of the first non-whitespace byte at or after `i` (or `src.len()`).
#[inline]
pub(super) fn skip_ws(src: &[u8], mut i: usize) -> usize {
    while let Some(&b) = src.get(i) {
        if !is_ws(b) {
            break;
        }
        i += 1;
    }
    i
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Parses the head of the file up to and including `[`.
///
/// Returns the offset of `[` and the range of the assignment path, if any.
/// Only the first [`MAX_PREFIX_BYTES`] are examined.
pub(super) fn parse_head(src: &[u8]) -> Result<(usize, Option<Range<usize>>), FramingError> {
    let head = &src[..src.len().min(MAX_PREFIX_BYTES)];
    // Running off `head` is either "too long" or "input ended", depending on
    // whether the file continues past the limit.
    let ran_out = |i: usize| {
        if src.len() > head.len() {
            FramingError::PrefixTooLong {
                offset: i as u64,
                limit: MAX_PREFIX_BYTES,
            }
        } else {
            FramingError::BadPrefix {
                offset: i as u64,
                reason: "input ended before the opening '['",
            }
        }
    };
    let mut i = if head.starts_with(UTF8_BOM) {
        UTF8_BOM.len()
    } else {
        0
    };

    let mut prefix = None;
    let first = *head.get(i).ok_or_else(|| ran_out(i))?;
    if is_ident_start(first) {
        let path_start = i;
        loop {
            // `head[i]` is an identifier start here.
            i += 1;
            while head.get(i).is_some_and(|&b| is_ident_continue(b)) {
                i += 1;
            }
            if head.get(i) != Some(&b'.') {
                break;
            }
            i += 1;
            match head.get(i) {
                Some(&b) if is_ident_start(b) => {}
                Some(_) => {
                    return Err(FramingError::BadPrefix {
                        offset: i as u64,
                        reason: "expected an identifier after '.'",
                    });
                }
                None => return Err(ran_out(i)),
            }
        }
        prefix = Some(path_start..i);
        i = skip_ws(head, i);
        match head.get(i) {
            Some(b'=') => i += 1,
            Some(_) => {
                return Err(FramingError::BadPrefix {
                    offset: i as u64,
                    reason: "expected '=' after the assignment target",
                });
            }
            None => return Err(ran_out(i)),
        }
    }
    i = skip_ws(head, i);
    match head.get(i) {
        Some(b'[') => Ok((i, prefix)),
        Some(_) => Err(FramingError::BadPrefix {
            offset: i as u64,
            reason: if prefix.is_some() {
                "expected '[' after '='"
            } else {
                "expected '[' or an assignment prefix"
            },
        }),
        None => Err(ran_out(i)),
    }
}
