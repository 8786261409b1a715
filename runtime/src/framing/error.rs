//! What can go wrong while framing, with the byte offset and page it concerns.

/// Everything that can go wrong while framing.
///
/// Every variant names the byte offset it concerns (see [`Self::offset`]) so a
/// user can locate the problem in a file that is far too big to eyeball, and
/// every variant raised while building a page names that page as well.
/// The type is `Clone` so a failed [`super::Framer`] can keep returning its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    /// Something other than a valid assignment prefix precedes the `[`.
    #[error("invalid array prefix at byte {offset}: {reason}")]
    BadPrefix {
        /// Byte offset in the artifact.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },

    /// No `[` was found within the first 64 KiB (`MAX_PREFIX_BYTES`).
    #[error("no opening '[' within the first {limit} bytes (scanned up to byte {offset})")]
    PrefixTooLong {
        /// Byte offset in the artifact.
        offset: u64,
        /// The limit in bytes.
        limit: usize,
    },

    /// A `,` directly after the opening `[`.
    #[error("leading comma at byte {offset} (page {page}): expected a value or ']'")]
    LeadingComma {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
    },

    /// Two commas with only whitespace between them; `offset` is the second.
    #[error("double comma at byte {offset} (page {page}): expected a value")]
    DoubleComma {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
    },

    /// A comma followed (after whitespace) by the closing `]`; `offset` is the comma.
    #[error("trailing comma at byte {offset} (page {page}) before the closing ']'")]
    TrailingComma {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
    },

    /// A byte where a separator (`,` or `]`) was required, e.g. `[1 2]`.
    #[error("unexpected byte 0x{found:02x} at byte {offset} (page {page}): expected {expected}")]
    UnexpectedByte {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// The byte or bracket found.
        found: u8,
        /// What was expected there.
        expected: &'static str,
    },

    /// A closing bracket that does not match the innermost open one, or a `}`
    /// with nothing open. `offset` is the offending bracket.
    #[error(
        "mismatched bracket '{found}' at byte {offset} (page {page}) in record starting at byte {record}"
    )]
    MismatchedBracket {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// Byte offset of the record's first byte.
        record: u64,
        /// The byte or bracket found.
        found: char,
    },

    /// The input ended where more array syntax was required.
    #[error("input truncated at byte {offset} (page {page}): expected {expected}")]
    Truncated {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// What was expected there.
        expected: &'static str,
    },

    /// The input ended inside a record (open string or bracket).
    #[error(
        "unterminated record at byte {offset} (page {page}): input ended at byte {end} inside a string or bracket"
    )]
    UnterminatedRecord {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// Where the input ended.
        end: u64,
    },

    /// A record contains bytes that are not UTF-8; `at` is the first bad byte.
    #[error("invalid UTF-8 in record at byte {offset} (page {page}): first bad byte at {at}")]
    InvalidUtf8 {
        /// Byte offset of the record in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// Byte offset of the first invalid byte.
        at: u64,
    },

    /// A record is not valid JSON; `message` is serde_json's description with
    /// line/column relative to the record start.
    #[error("invalid JSON record at byte {offset} (page {page}): {message}")]
    InvalidJson {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// What the JSON parser said.
        message: String,
    },

    /// A single record exceeds what one page may hold.
    #[error(
        "record at byte {offset} (page {page}) is {len} bytes, larger than the page limit of {limit} bytes"
    )]
    RecordTooLarge {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
        /// The record's length in bytes.
        len: usize,
        /// The limit in bytes.
        limit: usize,
    },

    /// Non-whitespace after the closing `]`.
    #[error("trailing data at byte {offset} (page {page}) after the closing ']'")]
    TrailingGarbage {
        /// Byte offset in the artifact.
        offset: u64,
        /// Index of the page being framed.
        page: u32,
    },

    /// More pages than fit in a `u32` page index.
    #[error("too many pages: page index overflow at byte {offset}")]
    PageIndexOverflow {
        /// Byte offset in the artifact.
        offset: u64,
    },
}

impl FramingError {
    /// The byte offset this error concerns (for record-level errors, the
    /// record's first byte).
    pub fn offset(&self) -> u64 {
        match self {
            Self::BadPrefix { offset, .. }
            | Self::PrefixTooLong { offset, .. }
            | Self::LeadingComma { offset, .. }
            | Self::DoubleComma { offset, .. }
            | Self::TrailingComma { offset, .. }
            | Self::UnexpectedByte { offset, .. }
            | Self::MismatchedBracket { offset, .. }
            | Self::Truncated { offset, .. }
            | Self::UnterminatedRecord { offset, .. }
            | Self::InvalidUtf8 { offset, .. }
            | Self::InvalidJson { offset, .. }
            | Self::RecordTooLarge { offset, .. }
            | Self::TrailingGarbage { offset, .. }
            | Self::PageIndexOverflow { offset } => *offset,
        }
    }

    /// The page being framed when the error occurred, if any (prefix errors
    /// are raised by [`super::Framer::new`], before any page exists).
    pub fn page_index(&self) -> Option<u32> {
        match self {
            Self::BadPrefix { .. }
            | Self::PrefixTooLong { .. }
            | Self::PageIndexOverflow { .. } => None,
            Self::LeadingComma { page, .. }
            | Self::DoubleComma { page, .. }
            | Self::TrailingComma { page, .. }
            | Self::UnexpectedByte { page, .. }
            | Self::MismatchedBracket { page, .. }
            | Self::Truncated { page, .. }
            | Self::UnterminatedRecord { page, .. }
            | Self::InvalidUtf8 { page, .. }
            | Self::InvalidJson { page, .. }
            | Self::RecordTooLarge { page, .. }
            | Self::TrailingGarbage { page, .. } => Some(*page),
        }
    }
}
