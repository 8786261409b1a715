//! Draining a child's output streams: a bounded prefix kept, the whole stream counted and
//! hashed.

use std::io::{self, Read};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;

use sha2::{Digest, Sha256};

use super::error::SubprocessError;

/// One captured output stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capture {
    /// Retained prefix: at most `capture_limit` bytes, shortened so that it does
    /// not end inside a UTF-8 character the limit cut through.
    pub kept: Vec<u8>,
    /// Every byte the stream produced.
    pub total_bytes: u64,
    /// `"sha256:<hex>"` of the whole stream (not only the kept prefix).
    pub sha256: String,
    /// `kept` is not the whole stream. Also set, together with `total_bytes`
    /// and `sha256` covering only what was read, in the rare case where a
    /// process that left the group kept the pipe open past the drain deadline.
    pub truncated: bool,
}

/// What a reader thread has seen of one stream.
pub(super) struct StreamState {
    /// Retained bytes: up to the limit plus up to 3 bytes of look-ahead used to
    /// decide whether the limit cuts through a UTF-8 character.
    kept: Vec<u8>,
    total: u64,
    hasher: Sha256,
    done: bool,
}

fn lock(state: &Mutex<StreamState>) -> std::sync::MutexGuard<'_, StreamState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts a thread that reads `pipe` to its end; `done` is told when it gets there.
pub(super) fn start_drain<R: Read + Send + 'static>(
    pipe: Option<R>,
    limit: usize,
    name: &'static str,
    done: &mpsc::Sender<()>,
) -> Result<Arc<Mutex<StreamState>>, SubprocessError> {
    let state = Arc::new(Mutex::new(StreamState {
        kept: Vec::new(),
        total: 0,
        hasher: Sha256::new(),
        done: pipe.is_none(),
    }));
    let Some(mut pipe) = pipe else {
        let _ = done.send(());
        return Ok(state);
    };
    let keep_up_to = limit.saturating_add(3);
    let thread_state = Arc::clone(&state);
    let done = done.clone();
    thread::Builder::new()
        .name(format!("runx-{name}"))
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let chunk = &buf[..n];
                        let mut s = lock(&thread_state);
                        s.hasher.update(chunk);
                        s.total += n as u64;
                        let room = keep_up_to.saturating_sub(s.kept.len());
                        if room > 0 {
                            let take = room.min(n);
                            s.kept.extend_from_slice(&chunk[..take]);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        tracing::warn!(stream = name, error = %e, "reading subprocess output failed");
                        break;
                    }
                }
            }
            lock(&thread_state).done = true;
            let _ = done.send(());
        })
        .map_err(|e| SubprocessError::io(format!("cannot start the {name} reader thread"), e))?;
    Ok(state)
}

/// What was captured of a stream, cut at `limit` on a UTF-8 boundary.
pub(super) fn finish_capture(state: &Mutex<StreamState>, limit: usize) -> Capture {
    let s = lock(state);
    let cut = utf8_safe_cut(&s.kept, limit);
    let kept = s.kept[..cut].to_vec();
    let digest = s.hasher.clone().finalize();
    Capture {
        truncated: !s.done || s.total > kept.len() as u64,
        total_bytes: s.total,
        sha256: runx_receipts::spell(&digest),
        kept,
    }
}

/// Length of the prefix of `buf` to retain under `limit`.
///
/// `buf` may extend past `limit` (look-ahead). When the byte at `limit` is the
/// continuation of a well-formed multi-byte UTF-8 character that starts before
/// `limit`, the cut moves back to the start of that character; otherwise (short
/// input, cut on a boundary, or bytes that are not UTF-8 there) it is `limit`.
pub(super) fn utf8_safe_cut(buf: &[u8], limit: usize) -> usize {
    if buf.len() <= limit {
        return buf.len();
    }
    if !is_continuation(buf[limit]) {
        return limit;
    }
    // A character is at most 4 bytes: its lead byte is within 3 bytes before `limit`.
    let lowest = limit.saturating_sub(3);
    let mut i = limit;
    while i > lowest {
        i -= 1;
        let b = buf[i];
        if is_continuation(b) {
            continue;
        }
        let width = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return limit,
        };
        let end = i + width;
        if end > limit && end <= buf.len() && std::str::from_utf8(&buf[i..end]).is_ok() {
            return i;
        }
        return limit;
    }
    limit
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}
