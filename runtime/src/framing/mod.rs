//! Page framing for large JSON-array inputs.
//!
//! The paged runner memory-maps one (possibly very large) JSON array and hands
//! it to skills one page at a time. This module decides where pages start and
//! end. It does so with a single forward pass over the bytes:
//!
//! * an optional JavaScript assignment prefix (`window.YTD.tweets.part0 = [`,
//!   as found in Twitter/X archive exports) is accepted before the `[`;
//! * each top-level element ("record") is found and checked in one pass by a
//!   strict JSON validator that builds no values (`json`), then checked as
//!   UTF-8, so a page never hands a skill bytes that would fail to parse;
//! * a record that does not pass (invalid, or not followed by a separator) is
//!   located again by a small scanner that only understands strings and
//!   bracket nesting, and validated once it is known to belong to a page, so
//!   its error names the page and offset it always did;
//! * pages hold whole records only, and their byte ranges tile the file so the
//!   runner can report progress and resume by offset;
//! * how few pages a file can take is bounded from a count of its bytes (`fit`), so
//!   admission refuses a file that cannot fit in a run's pages before any is framed.
//!
//! No allocation happens per byte or per record except for the `Vec` of record
//! ranges in each [`Page`] and a reused bracket stack inside the [`Framer`].
#![forbid(unsafe_code)]

mod error;
mod fit;
mod json;
mod scan;

pub use error::FramingError;
pub(crate) use fit::{least_page_bytes, least_pages, most_significant_bytes, significant_bytes};

use json::MAX_SCAN_DEPTH;
pub use scan::MAX_PREFIX_BYTES;
use scan::{parse_head, skip_string, skip_ws, validate_record};
use std::ops::Range;

/// Size limits for a single page.
///
/// Two limits exist because they protect different resources: `page_bytes`
/// bounds how much of the mapped file a page spans (I/O and the slice handed to
/// the sandbox), while `payload_bytes` bounds the memory the sandbox spends on
/// materialised records, where `per_record_overhead` approximates the fixed
/// cost of each record object inside the JavaScript engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageBudget {
    /// Maximum span, in bytes, from the first byte of a page's first record to
    /// the last byte of its last record (separators between them included).
    pub page_bytes: usize,
    /// Maximum of `sum(record len) + per_record_overhead * record count`.
    pub payload_bytes: usize,
    /// Accounting cost charged for every record towards `payload_bytes`.
    pub per_record_overhead: usize,
}

impl PageBudget {
    /// The longest single record that can be placed in an otherwise empty
    /// page under this budget. Used for [`FramingError::RecordTooLarge`].
    pub fn max_record_len(&self) -> usize {
        self.page_bytes
            .min(self.payload_bytes.saturating_sub(self.per_record_overhead))
    }
}

/// One page of whole records.
///
/// `offset..next_offset` is the page's share of the file. Consecutive pages are
/// contiguous, the first starts at 0 and the last (`eof`) ends at the file
/// length, so offsets can be used directly for progress and resumption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Zero-based page number.
    pub index: u32,
    /// First byte of the file covered by this page.
    pub offset: u64,
    /// One past the last byte covered by this page; the next page's `offset`.
    pub next_offset: u64,
    /// True for the final page (the one that consumed the closing `]`).
    pub eof: bool,
    /// Absolute byte ranges of each record in the source, in file order.
    /// Each range has no surrounding whitespace or separators.
    pub records: Vec<Range<usize>>,
}

impl Page {
    /// Number of file bytes covered by this page (`next_offset - offset`).
    pub fn length(&self) -> u64 {
        self.next_offset - self.offset
    }

    /// Total length of the records on this page, excluding separators.
    pub fn record_bytes(&self) -> usize {
        self.records.iter().map(|r| r.len()).sum()
    }

    /// Number of records on this page.
    pub fn record_count(&self) -> usize {
        self.records.len()
    }
}

/// Incremental page framer over one JSON array.
///
/// The framer owns no copy of the input; it only keeps positions, so it is
/// cheap, `Send`, and can frame page N+1 on another thread while page N runs.
/// After an error the framer is fused: every further call returns that error.
///
/// It can also frame a file whose bytes arrive in order ([`Framer::from_prefix`],
/// [`Framer::next_page_from`]): given a prefix, it answers only what the rest of the file
/// cannot change.
#[derive(Debug, Clone)]
pub struct Framer<'a> {
    src: &'a [u8],
    /// Start of the next page's byte range (0 before the first page).
    offset: usize,
    /// Where scanning resumes: right after `[` while `at_first` is set,
    /// otherwise the first byte of the next record.
    cursor: usize,
    /// No element has been seen yet, so `]` (empty array) or a leading comma
    /// may come next.
    at_first: bool,
    /// End of the record at `cursor`, when it was already scanned but did not
    /// fit in the previous page, and whether it was also found valid. Avoids
    /// scanning the boundary record twice.
    pending_end: Option<(usize, bool)>,
    /// Number of pages returned so far (= index of the next page).
    pages: u64,
    /// The eof page has been returned.
    done: bool,
    /// The error that stopped framing, replayed on later calls.
    failed: Option<FramingError>,
    /// Reused stack of open brackets for the record scanner.
    stack: Vec<u8>,
}

/// What follows a record: another record, or the end of the array.
enum Next {
    /// Another record starts at this offset.
    Record(usize),
    /// The closing `]` is at this offset.
    Close(usize),
}

impl<'a> Framer<'a> {
    /// Parses the optional BOM, assignment prefix and opening `[`.
    ///
    /// Accepted heads (the `[` must start within the first 64 KiB, `MAX_PREFIX_BYTES`):
    /// `[`, whitespace then `[`, or `path.to.name <ws> = <ws> [` where each
    /// path segment is `[A-Za-z_$][A-Za-z0-9_$]*` and the path starts at
    /// offset 0 (after the BOM, if any).
    pub fn new(src: &'a [u8]) -> Result<Self, FramingError> {
        let (open_bracket, _prefix) = parse_head(src)?;
        Ok(Self {
            src,
            offset: 0,
            cursor: open_bracket + 1,
            at_first: true,
            pending_end: None,
            pages: 0,
            done: false,
            failed: None,
            stack: Vec::new(),
        })
    }

    /// A framer over `prefix`, the first bytes of a file (all of it when `whole`), or `None`
    /// when the head cannot be told from the prefix alone: more bytes are needed.
    pub fn from_prefix(prefix: &'a [u8], whole: bool) -> Option<Result<Self, FramingError>> {
        match Framer::new(prefix) {
            // The head is looked for in the first MAX_PREFIX_BYTES only: past them, an error
            // is the whole file's error (a binary file fails here, not after a full copy).
            Err(_) if !whole && prefix.len() <= MAX_PREFIX_BYTES => None,
            framed => Some(framed),
        }
    }

    /// Frames the next page from `prefix`, the first bytes of the same file as before and at
    /// least as many (all of it when `whole`). Returns `None`, leaving the framer as it was,
    /// when the answer could depend on bytes past the prefix: the caller extends the prefix
    /// and asks again.
    ///
    /// From a prefix only a page that is not the last is certain, and only when the scan of
    /// the record after it stopped at a separator inside the prefix. Everything else reads up
    /// to the end of the input (an error at the end, the closing `]` and whatever follows it,
    /// a record running to the end) and waits for the whole file. So the pages framed from
    /// growing prefixes are the pages framed from the whole file (a property test checks it).
    pub fn next_page_from(
        &mut self,
        prefix: &'a [u8],
        whole: bool,
        budget: &PageBudget,
    ) -> Option<Result<Option<Page>, FramingError>> {
        debug_assert!(prefix.len() >= self.src.len());
        if whole {
            self.src = prefix;
            return Some(self.next_page(budget));
        }
        let mut trial = self.clone();
        trial.src = prefix;
        let framed = trial.next_page(budget);
        let certain = matches!(&framed, Ok(Some(page)) if !page.eof)
            && trial.pending_end.is_some_and(|(end, _)| end < prefix.len());
        if !certain {
            return None;
        }
        *self = trial;
        Some(framed)
    }

    /// Start of the next page's byte range.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Frames the next page under `budget`.
    ///
    /// Returns `Ok(None)` after the eof page has been returned. A page is
    /// never empty except for the single page of an empty array.
    pub fn next_page(&mut self, budget: &PageBudget) -> Result<Option<Page>, FramingError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.done {
            return Ok(None);
        }
        match self.frame(budget) {
            Ok(page) => Ok(Some(page)),
            Err(err) => {
                self.failed = Some(err.clone());
                Err(err)
            }
        }
    }

    fn frame(&mut self, budget: &PageBudget) -> Result<Page, FramingError> {
        let src = self.src;
        let page = u32::try_from(self.pages).map_err(|_| FramingError::PageIndexOverflow {
            offset: self.offset as u64,
        })?;
        let mut records: Vec<Range<usize>> = Vec::new();

        if self.at_first {
            let i = skip_ws(src, self.cursor);
            match src.get(i) {
                None => {
                    return Err(FramingError::Truncated {
                        offset: i as u64,
                        page,
                        expected: "a value or ']'",
                    });
                }
                Some(b']') => return self.finish_eof(page, i, records),
                Some(b',') => {
                    return Err(FramingError::LeadingComma {
                        offset: i as u64,
                        page,
                    });
                }
                Some(_) => {}
            }
            self.cursor = i;
            self.at_first = false;
        }

        let mut first_start = self.cursor;
        let mut payload: usize = 0;
        loop {
            let start = self.cursor;
            let (end, valid) = match self.pending_end.take() {
                Some(pending) => pending,
                None => self.find_record(start, page)?,
            };
            let len = end - start;

            let cost = payload
                .saturating_add(len)
                .saturating_add(budget.per_record_overhead);
            if records.is_empty() {
                first_start = start;
            }
            let fits = end - first_start <= budget.page_bytes && cost <= budget.payload_bytes;
            if !fits {
                if records.is_empty() {
                    return Err(FramingError::RecordTooLarge {
                        offset: start as u64,
                        page,
                        len,
                        limit: budget.max_record_len(),
                    });
                }
                // Page ends right before this record; remember the scan so
                // the next page does not repeat it.
                self.pending_end = Some((end, valid));
                return Ok(self.finish(page, start, false, records));
            }
            // Validate only once the record is known to belong to this page,
            // so validation errors name the page that would have held it.
            if !valid {
                validate_record(src, start, end, page)?;
            }
            records.push(start..end);
            payload = cost;

            // Look ahead for the separator so the page that holds the last
            // record is also the one that consumes `]` and becomes eof.
            match self.after_record(end, page)? {
                Next::Record(next) => self.cursor = next,
                Next::Close(close) => return self.finish_eof(page, close, records),
            }
        }
    }

    /// Reads the separator after a record that ends at `end`.
    fn after_record(&self, end: usize, page: u32) -> Result<Next, FramingError> {
        let src = self.src;
        let i = skip_ws(src, end);
        match src.get(i) {
            Some(b',') => {
                let j = skip_ws(src, i + 1);
                match src.get(j) {
                    None => Err(FramingError::Truncated {
                        offset: j as u64,
                        page,
                        expected: "a value",
                    }),
                    Some(b']') => Err(FramingError::TrailingComma {
                        offset: i as u64,
                        page,
                    }),
                    Some(b',') => Err(FramingError::DoubleComma {
                        offset: j as u64,
                        page,
                    }),
                    Some(_) => Ok(Next::Record(j)),
                }
            }
            Some(b']') => Ok(Next::Close(i)),
            Some(&found) => Err(FramingError::UnexpectedByte {
                offset: i as u64,
                page,
                found,
                expected: "',' or ']'",
            }),
            None => Err(FramingError::Truncated {
                offset: i as u64,
                page,
                expected: "',' or ']'",
            }),
        }
    }

    /// Ends a non-eof page whose range stops at `next_offset`.
    fn finish(
        &mut self,
        page: u32,
        next_offset: usize,
        eof: bool,
        records: Vec<Range<usize>>,
    ) -> Page {
        let out = Page {
            index: page,
            offset: self.offset as u64,
            next_offset: next_offset as u64,
            eof,
            records,
        };
        self.offset = next_offset;
        self.cursor = next_offset;
        self.pages += 1;
        out
    }

    /// Ends the eof page: `close` is the closing `]`; only whitespace may follow.
    fn finish_eof(
        &mut self,
        page: u32,
        close: usize,
        records: Vec<Range<usize>>,
    ) -> Result<Page, FramingError> {
        let rest = skip_ws(self.src, close + 1);
        if rest < self.src.len() {
            return Err(FramingError::TrailingGarbage {
                offset: rest as u64,
                page,
            });
        }
        self.done = true;
        Ok(self.finish(page, self.src.len(), true, records))
    }

    /// Finds the end (exclusive) of the record starting at `start`, and whether the
    /// record is already known to be valid.
    ///
    /// A valid record is found and checked, UTF-8 included, in one pass
    /// ([`json::value_end`]); anything else takes the scan below, and is validated once it is
    /// known to belong to a page ([`validate_record`]), so errors are the scan's and the
    /// validator's as ever. Both ways find the same end for a valid record.
    fn find_record(&mut self, start: usize, page: u32) -> Result<(usize, bool), FramingError> {
        if let Some(end) = json::value_end(self.src, start) {
            return Ok((end, true));
        }
        self.scan_record(start, page).map(|end| (end, false))
    }

    /// Finds the end (exclusive) of the record starting at `start`.
    ///
    /// Only strings and bracket nesting matter here: a record ends at the
    /// first `,`, `]` or whitespace outside any string at nesting depth 0.
    /// Everything else (numbers, literals, colons) is left for the JSON
    /// validator, which sees exactly the bytes found here.
    fn scan_record(&mut self, start: usize, page: u32) -> Result<usize, FramingError> {
        let src = self.src;
        let stack = &mut self.stack;
        stack.clear();
        let unterminated = || FramingError::UnterminatedRecord {
            offset: start as u64,
            page,
            end: src.len() as u64,
        };
        let mut i = start;
        while let Some(&b) = src.get(i) {
            match b {
                b'"' => {
                    i = skip_string(src, i + 1).ok_or_else(unterminated)?;
                    continue;
                }
                b'{' | b'[' => {
                    if stack.len() >= MAX_SCAN_DEPTH {
                        return Err(FramingError::InvalidJson {
                            offset: start as u64,
                            page,
                            message: format!(
                                "nesting deeper than {MAX_SCAN_DEPTH} levels at byte {i}"
                            ),
                        });
                    }
                    stack.push(b);
                }
                b'}' | b']' => {
                    let opener = if b == b'}' { b'{' } else { b'[' };
                    match stack.pop() {
                        Some(open) if open == opener => {}
                        // A `]` at depth 0 closes the array and ends the record.
                        None if b == b']' => return Ok(i),
                        _ => {
                            return Err(FramingError::MismatchedBracket {
                                offset: i as u64,
                                page,
                                record: start as u64,
                                found: char::from(b),
                            });
                        }
                    }
                }
                b',' | b' ' | b'\t' | b'\n' | b'\r' if stack.is_empty() => return Ok(i),
                _ => {}
            }
            i += 1;
        }
        if stack.is_empty() {
            Ok(i)
        } else {
            Err(unterminated())
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod prop_tests;
