//! How few pages a file can be framed into, known from a count of its bytes: what lets
//! admission refuse a file that cannot fit in a run's pages before any page is framed.
//!
//! The bound counts only the bytes that are not JSON whitespace (the framer's whitespace:
//! space, tab, LF, CR), the *significant* bytes. The file size alone bounds nothing: a
//! valid array can hold any amount of whitespace between its records, which no page spans
//! (`[1,` then 100 MiB of spaces then `2]` is two pages at any `page_bytes`). Every
//! significant byte of a file the framer accepts is one of:
//!
//! - the head, up to and including the opening `[` (BOM, assignment prefix): at most
//!   [`MAX_PREFIX_BYTES`] bytes, since the `[` must lie within them;
//! - a byte of a page's span, from its first record's first byte to its last record's last
//!   byte (records and the commas between them): at most `page_bytes` per page, since the
//!   framer ends a page before a record that would take its span past `page_bytes`, and
//!   fails a record longer than that on its own;
//! - the one comma between two pages (outside both spans), or the closing `]`: one per page.
//!
//! So a file with `S` significant bytes framed into `n` pages has
//! `S <= MAX_PREFIX_BYTES + n * (page_bytes + 1)`, and `n` is at least
//! `ceil((S - MAX_PREFIX_BYTES) / (page_bytes + 1))`, whatever its records, its whitespace and
//! the page's payload budget (which can only end a page sooner). A file the framer refuses
//! fails its run anyway.

use super::scan::{MAX_PREFIX_BYTES, is_ws};

/// The bytes of `bytes` that are not JSON whitespace.
pub(crate) fn significant_bytes(bytes: &[u8]) -> u64 {
    // A branch-free count; it keeps well ahead of the SHA-256 beside it in admission (the
    // `admission_rate` measurement of `artifact/tests.rs` gives both).
    bytes.iter().filter(|&&b| !is_ws(b)).count() as u64
}

/// The fewest pages of `page_bytes` a file with `significant` significant bytes can be framed
/// into (the module's documentation says why).
pub(crate) fn least_pages(significant: u64, page_bytes: usize) -> u64 {
    least_pages_after(significant, MAX_PREFIX_BYTES as u64, page_bytes)
}

/// The same, for a file whose head holds at most `head` significant bytes.
pub(super) fn least_pages_after(significant: u64, head: u64, page_bytes: usize) -> u64 {
    significant
        .saturating_sub(head)
        .div_ceil(per_page(page_bytes))
}

/// The most significant bytes a file can have before the bound rules out `pages` pages of
/// `page_bytes`: a file with more needs more pages ([`least_pages`]), and a file no larger
/// than this needs no count at all.
pub(crate) fn most_significant_bytes(pages: u64, page_bytes: usize) -> u64 {
    (MAX_PREFIX_BYTES as u64).saturating_add(pages.saturating_mul(per_page(page_bytes)))
}

/// The smallest `page_bytes` at which a file with `significant` significant bytes passes the
/// bound for `pages` pages: what a person must declare at least (the file may need more).
pub(crate) fn least_page_bytes(significant: u64, pages: u64) -> u64 {
    significant
        .saturating_sub(MAX_PREFIX_BYTES as u64)
        .div_ceil(pages.max(1))
        .saturating_sub(1)
        .max(1)
}

/// The significant bytes one page accounts for: its span and the separator after it.
fn per_page(page_bytes: usize) -> u64 {
    u64::try_from(page_bytes)
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::super::tests::budget;
    use super::super::{Framer, PageBudget};
    use super::*;

    fn pages(src: &[u8], budget: &PageBudget) -> u64 {
        let mut framer = Framer::new(src).expect("head");
        let mut n = 0;
        while framer.next_page(budget).expect("frames").is_some() {
            n += 1;
        }
        n
    }

    /// One-byte records, one a page at `page_bytes` 1: the bound is exact once the head is
    /// known, and the head's allowance never makes it exceed the real count.
    #[test]
    fn the_bound_is_exact_for_full_pages() {
        for n in [1usize, 2, 7, 40_000] {
            let src = format!("[{}]", vec!["1"; n].join(","));
            let significant = significant_bytes(src.as_bytes());
            assert_eq!(significant, 2 * n as u64 + 1);
            assert_eq!(pages(src.as_bytes(), &budget(1)), n as u64);
            assert_eq!(least_pages_after(significant, 1, 1), n as u64);
            assert!(least_pages(significant, 1) <= n as u64);
        }
        // 40,000 pages, of which the head's allowance of 64 KiB excuses 32,768 (it counts the
        // `[` too): ceil((80,001 - 65,536) / 2).
        assert_eq!(least_pages(80_001, 1), 7233);
    }

    /// Whitespace counts for nothing: a huge array of two records is two pages, and its bound
    /// says so.
    #[test]
    fn whitespace_is_never_counted() {
        let src = format!("window.x = [1,{}2]\n", " \t\r\n".repeat(100_000));
        let significant = significant_bytes(src.as_bytes());
        assert_eq!(significant, "window.x=[1,2]".len() as u64);
        assert_eq!(pages(src.as_bytes(), &budget(1)), 2);
        assert_eq!(least_pages(significant, 1), 0);
    }

    /// The threshold and the bound agree: more significant bytes than the threshold is
    /// exactly a bound above the page count.
    #[test]
    fn the_threshold_is_where_the_bound_passes_the_page_count() {
        for page_bytes in [1usize, 2, 1000, 1024, 4 << 20] {
            for pages in [1u64, 4096] {
                let most = most_significant_bytes(pages, page_bytes);
                assert_eq!(least_pages(most, page_bytes), pages);
                assert_eq!(least_pages(most + 1, page_bytes), pages + 1);
            }
        }
        assert_eq!(most_significant_bytes(4096, 1024), 65_536 + 4096 * 1025);
    }

    /// The page size suggested passes the bound, and one byte less does not.
    #[test]
    fn the_least_page_bytes_passes_the_bound() {
        for significant in [most_significant_bytes(4096, 1) + 1, 1 << 26, 512 << 20] {
            let p = least_page_bytes(significant, 4096);
            assert!(
                least_pages(significant, p as usize) <= 4096,
                "{significant}"
            );
            assert!(
                least_pages(significant, p as usize - 1) > 4096,
                "{significant}"
            );
        }
    }
}
