//! The tail of an invoke frame: the input, and for a page its metadata and records, laid out
//! as the request declares (a page sent by descriptor is read from its file here).

use super::request::{Invoke, invalid};
use crate::engine::spans_of_ends;
use crate::wire::failure::Failure;
use crate::wire::message::{PageLayout, decode_ends};
use runx_rules::Limits;

/// The parts of an invoke tail: the input, and the page's metadata, the bytes holding its
/// records and each record's span in them.
pub(super) struct TailParts<'a> {
    pub(super) input: &'a [u8],
    pub(super) page: Option<(&'a [u8], &'a [u8])>,
    pub(super) spans: Vec<(u32, u32)>,
}

/// Where the bytes of a page sent by descriptor live during its call: a read-only map of the
/// page's range of the file, or, where the file cannot be mapped, a buffer it was read into
/// (kept from page to page).
#[derive(Default)]
pub(super) struct PageMemory {
    map: Option<memmap2::Mmap>,
    buf: Vec<u8>,
}

impl PageMemory {
    /// Unmaps the last page's range; called once its call has ended.
    pub(super) fn release(&mut self) {
        self.map = None;
    }
}

/// Splits `tail` by the layout the request declares (reading a page sent by descriptor from
/// `file` into `memory`); a tail or range that does not match it is an `invalid_request`.
pub(super) fn split_tail<'a>(
    request: &Invoke,
    tail: &'a [u8],
    file: Option<&std::fs::File>,
    memory: &'a mut PageMemory,
) -> Result<TailParts<'a>, Failure> {
    let bad_tail = || invalid("the invoke tail is shorter than its declared layout");
    let (input, rest) = tail
        .split_at_checked(request.input_len as usize)
        .ok_or_else(bad_tail)?;
    let Some(layout) = &request.page else {
        return Ok(TailParts {
            input,
            page: None,
            spans: Vec::new(),
        });
    };
    let (meta, rest) = rest
        .split_at_checked(layout.meta_len as usize)
        .ok_or_else(bad_tail)?;
    let (table, blob) = rest
        .split_at_checked(layout.table_len())
        .ok_or_else(bad_tail)?;
    let (blob, spans) = match (layout.range, file) {
        (None, _) => {
            if blob.len() != layout.blob_len as usize {
                return Err(bad_tail());
            }
            let ends = decode_ends(table, blob.len())
                .ok_or_else(|| invalid("the page's record offset table is malformed"))?;
            (blob, spans_of_ends(&ends))
        }
        (Some(range), Some(file)) => {
            if !blob.is_empty() {
                return Err(invalid(
                    "a page sent by descriptor carries bytes in its frame",
                ));
            }
            read_range(file, range, table, layout, &request.limits, memory)?
        }
        (Some(_), None) => return Err(invalid("a page's descriptor is missing")),
    };
    Ok(TailParts {
        input,
        page: Some((meta, blob)),
        spans,
    })
}

/// The bytes holding a page's records, and each record's span in them.
type PageBytes<'a> = (&'a [u8], Vec<(u32, u32)>);

/// Maps a page's byte range of `file` read-only (or reads it, where mapping fails); returns the
/// range's bytes and each record's span in them. Nothing is copied here: the engine reads each
/// record where it lies while making its string. Mapping instead of `pread` saved about 0.2 ms
/// of a 1 MiB page on this project's 2-core machine, a third of what a page cost outside
/// JavaScript.
fn read_range<'a>(
    file: &std::fs::File,
    range: crate::wire::message::ByteRange,
    table: &[u8],
    layout: &PageLayout,
    limits: &Limits,
    memory: &'a mut PageMemory,
) -> Result<PageBytes<'a>, Failure> {
    use std::os::unix::fs::FileExt;
    // Separators and whitespace sit between records, but never more than the records
    // themselves may weigh: a range beyond twice the input limit is not a page.
    let len = usize::try_from(range.len)
        .ok()
        .filter(|&len| len <= 2 * limits.input_bytes)
        .ok_or_else(|| invalid(format!("a page range of {} bytes is too long", range.len)))?;
    let spans = crate::wire::message::decode_spans(table, range.len, layout.blob_len as usize)
        .ok_or_else(|| invalid("the page's record span table is malformed"))?;
    let meta = crate::host::descriptor::fd_stat(std::os::fd::AsRawFd::as_raw_fd(file))
        .map_err(|e| invalid(format!("the page's descriptor cannot be read: {e}")))?;
    let end = range.offset.checked_add(range.len);
    let regular = meta.st_mode & libc::S_IFMT == libc::S_IFREG;
    let size = u64::try_from(meta.st_size).unwrap_or(0);
    if !regular || end.is_none_or(|end| end > size) {
        return Err(invalid(
            "the page's range does not lie inside a regular file",
        ));
    }
    memory.map = None;
    if len > 0
        && let Ok(map) = map_range(file, range.offset, len)
    {
        return Ok((&memory.map.insert(map)[..], spans));
    }
    if memory.buf.len() < len {
        memory.buf.resize(len, 0);
    }
    file.read_exact_at(&mut memory.buf[..len], range.offset)
        .map_err(|e| invalid(format!("the page's range cannot be read: {e}")))?;
    Ok((&memory.buf[..len], spans))
}

/// A read-only private map of `len` bytes of `file` from `offset` (any alignment).
#[allow(unsafe_code, reason = "maps a range of the host snapshot read-only")]
fn map_range(file: &std::fs::File, offset: u64, len: usize) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the file is the host's snapshot of the artifact, checked above to be a regular
    // file that holds the whole range, and handed over read-only. The host writes each byte
    // of it once, and sends only ranges it has written (its copy runs ahead of the pages it
    // frames); no one else can reach it (it has no name), so the mapped bytes do not change
    // while the map lives, which is what `Mmap`'s `&[u8]` requires. Were it cut
    // short anyway, reading past its new end would end this process with SIGBUS, which the
    // host reports as a lost worker; it would not read another process's memory.
    unsafe {
        memmap2::MmapOptions::new()
            .offset(offset)
            .len(len)
            .map(file)
    }
}
