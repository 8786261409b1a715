//! Length-prefixed frames: a 4-byte big-endian length, then that many bytes.
//!
//! A frame's payload is a JSON header (its own 4-byte big-endian length first) followed by a
//! binary tail: input and output JSON and page records travel as raw bytes, never re-escaped
//! inside JSON strings. Lengths above [`MAX_FRAME_BYTES`] are refused before anything is
//! allocated.

use std::io::{self, Read, Write};

/// The largest frame either side accepts: 16 MiB.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The declared length is above the maximum; nothing was allocated.
    #[error("frame of {0} bytes exceeds the {MAX_FRAME_BYTES}-byte maximum")]
    TooLarge(usize),
    /// The stream ended inside a frame.
    #[error("the stream ended inside a frame ({got} of {expected} bytes)")]
    Truncated {
        /// Bytes received.
        got: usize,
        /// Bytes the length prefix announced.
        expected: usize,
    },
    /// The payload is shorter than its own header length says.
    #[error("malformed frame payload: {0}")]
    Malformed(&'static str),
    /// The underlying pipe failed.
    #[error("frame I/O failed: {0}")]
    Io(#[from] io::Error),
}

/// Reads into `buf` until it is full or the stream ends, retrying interrupted reads: the bytes
/// read (fewer than `buf.len()` only at the end of the stream).
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads one frame. `Ok(None)` is a clean end of stream at a frame boundary.
pub fn read_frame(r: &mut impl Read) -> Result<Option<Vec<u8>>, FrameError> {
    let mut len = [0u8; 4];
    match read_full(r, &mut len)? {
        0 => return Ok(None),
        4 => {}
        got => return Err(FrameError::Truncated { got, expected: 4 }),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(len));
    }
    let mut buf = vec![0u8; len];
    let got = read_full(r, &mut buf)?;
    if got < len {
        return Err(FrameError::Truncated { got, expected: len });
    }
    Ok(Some(buf))
}

/// Writes one frame made of a header and tail parts, then flushes.
pub fn write_frame(
    w: &mut (impl Write + ?Sized),
    header: &[u8],
    tail: &[&[u8]],
) -> Result<(), FrameError> {
    let body = 4 + header.len() + tail.iter().map(|t| t.len()).sum::<usize>();
    if body > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge(body));
    }
    w.write_all(&(body as u32).to_be_bytes())?;
    w.write_all(&(header.len() as u32).to_be_bytes())?;
    w.write_all(header)?;
    for t in tail {
        w.write_all(t)?;
    }
    w.flush()?;
    Ok(())
}

/// Splits a payload into its JSON header and binary tail.
pub fn split_payload(payload: &[u8]) -> Result<(&[u8], &[u8]), FrameError> {
    let (len, rest) = payload
        .split_first_chunk::<4>()
        .ok_or(FrameError::Malformed("no header length"))?;
    let len = u32::from_be_bytes(*len) as usize;
    if len > rest.len() {
        return Err(FrameError::Malformed("header longer than the frame"));
    }
    Ok(rest.split_at(len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn oversize_length_is_refused_before_allocation() {
        let mut r: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1, 2, 3];
        assert!(matches!(read_frame(&mut r), Err(FrameError::TooLarge(_))));
    }

    #[test]
    fn truncated_frames_are_errors_and_clean_eof_is_not() {
        let mut r: &[u8] = &[0, 0, 0, 10, 1, 2];
        assert!(matches!(
            read_frame(&mut r),
            Err(FrameError::Truncated {
                got: 2,
                expected: 10
            })
        ));
        let mut r: &[u8] = &[0, 0];
        assert!(matches!(
            read_frame(&mut r),
            Err(FrameError::Truncated { .. })
        ));
        let mut r: &[u8] = &[];
        assert!(read_frame(&mut r).unwrap().is_none());
    }

    #[test]
    fn header_longer_than_frame_is_malformed() {
        assert!(split_payload(&[0, 0, 0, 9, b'{']).is_err());
        assert!(split_payload(&[0, 0]).is_err());
    }

    /// Cases per property: modest in CI; `PROPTEST_CASES` sets a long run's count.
    fn cases() -> u32 {
        std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(cases()))]

        #[test]
        fn frames_round_trip(header in proptest::collection::vec(any::<u8>(), 0..300),
                             tail in proptest::collection::vec(any::<u8>(), 0..3000)) {
            let mut buf = Vec::new();
            write_frame(&mut buf, &header, &[&tail]).unwrap();
            let mut r: &[u8] = &buf;
            let payload = read_frame(&mut r).unwrap().unwrap();
            let (h, t) = split_payload(&payload).unwrap();
            prop_assert_eq!(h, &header[..]);
            prop_assert_eq!(t, &tail[..]);
            prop_assert!(read_frame(&mut r).unwrap().is_none());
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut r: &[u8] = &bytes;
            while let Ok(Some(p)) = read_frame(&mut r) {
                let _ = split_payload(&p);
            }
        }

        /// A stream is split exactly at its declared lengths: frames come back whole and in
        /// order, a length past the maximum is refused before any allocation, and a stream cut
        /// short is an error, never a short frame.
        #[test]
        fn streams_split_at_declared_lengths(
            frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..6),
            cut in any::<prop::sample::Index>(),
            huge in (MAX_FRAME_BYTES as u32 + 1)..=u32::MAX,
        ) {
            let mut stream = Vec::new();
            for f in &frames {
                stream.extend_from_slice(&(f.len() as u32).to_be_bytes());
                stream.extend_from_slice(f);
            }
            let mut r: &[u8] = &stream;
            for f in &frames {
                prop_assert_eq!(read_frame(&mut r).unwrap(), Some(f.clone()));
            }
            prop_assert!(read_frame(&mut r).unwrap().is_none());
            if !stream.is_empty() {
                let at = cut.index(stream.len());
                let ends_on_boundary = {
                    let mut pos = 0;
                    let mut on = at == 0;
                    for f in &frames {
                        pos += 4 + f.len();
                        on |= pos == at;
                    }
                    on
                };
                let mut r: &[u8] = &stream[..at];
                let mut outcome = Ok(());
                loop {
                    match read_frame(&mut r) {
                        Ok(Some(_)) => {}
                        Ok(None) => break,
                        Err(e) => { outcome = Err(e); break; }
                    }
                }
                prop_assert_eq!(outcome.is_ok(), ends_on_boundary);
            }
            let mut r: &[u8] = &huge.to_be_bytes();
            prop_assert!(matches!(read_frame(&mut r), Err(FrameError::TooLarge(_))), "oversize length accepted");
        }
    }
}
