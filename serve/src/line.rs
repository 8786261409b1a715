//! Requests arrive one per line: a reader that never holds more than the request limit of one
//! line, however long the line is.

use std::io::{self, BufRead};

/// What the next line of input was.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line (without its `\n` or `\r\n`) of at most the limit, now in the buffer.
    Text,
    /// A line of this many bytes, more than the limit; it was read and dropped.
    TooLong(u64),
    /// The input ended.
    End,
}

/// Reads the next line into `buf` (cleared first), keeping at most `max` bytes of it. A last
/// line without a newline still counts as a line.
pub fn read_line(input: &mut impl BufRead, max: usize, buf: &mut Vec<u8>) -> io::Result<Line> {
    buf.clear();
    let mut seen: u64 = 0;
    let mut any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if !any {
                return Ok(Line::End);
            }
            break;
        }
        any = true;
        let (part, newline) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        seen += part.len() as u64;
        if seen <= max as u64 {
            buf.extend_from_slice(part);
        } else {
            // Past the limit the line is only counted, never kept.
            buf.clear();
        }
        let used = part.len() + usize::from(newline);
        input.consume(used);
        if newline {
            break;
        }
    }
    if seen > max as u64 {
        return Ok(Line::TooLong(seen));
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Line::Text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Read;

    /// A reader that hands out at most `step` bytes at a time, like a pipe.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn all_lines(data: &[u8], step: usize, max: usize) -> Vec<Result<Vec<u8>, u64>> {
        let mut r = io::BufReader::with_capacity(7, Trickle { data, step });
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut r, max, &mut buf).expect("read") {
                Line::Text => out.push(Ok(buf.clone())),
                Line::TooLong(n) => out.push(Err(n)),
                Line::End => return out,
            }
        }
    }

    #[test]
    fn lines_crlf_last_line_and_oversize() {
        let got = all_lines(b"ab\r\n\nxyz-too-long\nlast", 3, 4);
        assert_eq!(
            got,
            vec![
                Ok(b"ab".to_vec()),
                Ok(vec![]),
                Err(12),
                Ok(b"last".to_vec())
            ]
        );
        assert!(all_lines(b"", 1, 4).is_empty());
    }

    proptest! {
        #[test]
        fn any_chunking_splits_like_split_on_newline(
            lines in proptest::collection::vec(proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n' && *b != b'\r'), 0..40), 0..12),
            step in 1usize..17,
            max in 0usize..30,
        ) {
            let mut data = Vec::new();
            for l in &lines {
                data.extend_from_slice(l);
                data.push(b'\n');
            }
            let want: Vec<Result<Vec<u8>, u64>> = lines
                .iter()
                .map(|l| if l.len() > max { Err(l.len() as u64) } else { Ok(l.clone()) })
                .collect();
            prop_assert_eq!(all_lines(&data, step, max), want);
        }
    }
}
