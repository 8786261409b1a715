//! The worker's replies, read by the thread that waits for them.
//!
//! The caller polls the worker's stdout itself, under the call's deadline, instead of a reader
//! thread handing frames over a channel: a reply then wakes one thread, not two. On a 2-core
//! machine each wakeup costs tens of microseconds, which is a measurable share of a paged run
//! of small pages. The pipe is non-blocking, so a worker that writes half a frame and stops
//! cannot hold the caller past its deadline, and what a worker writes between calls stays in
//! the pipe (bounded by its capacity) until the next call reads it.

use crate::wire::frame::{FrameError, MAX_FRAME_BYTES};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::io::Read;
use std::os::fd::AsFd;
use std::process::ChildStdout;
use std::time::{Duration, Instant};

/// Bytes asked of the pipe per read when the frame's length is not known yet.
const READ_BYTES: usize = 64 * 1024;
/// At most this much is asked of the pipe per read (its capacity), so a large frame is zeroed
/// once as it arrives rather than once per read.
const MAX_READ_BYTES: usize = 1024 * 1024;

/// Why no reply came.
#[derive(Debug)]
pub(super) enum NoReply {
    /// The deadline passed first.
    TimedOut,
    /// The worker closed its stdout (it exited or was killed).
    Closed,
    /// The bytes were not a frame, or the pipe failed.
    Broken(FrameError),
}

/// Bytes of read buffer kept between frames; a larger buffer, grown for a large frame, is
/// given back once that frame has been taken.
const KEPT_BYTES: usize = 1024 * 1024;

/// The worker's stdout and the bytes read from it that do not yet make a whole frame.
pub(super) struct Replies {
    stdout: ChildStdout,
    /// Bytes read and not yet taken are `buf[..filled]`. The rest of `buf` is room for reads:
    /// it was zeroed once when the buffer grew, so reads do not zero memory again. Growing it
    /// for each read filled 64 KiB with zeros twice per reply, about 17 µs of each page's round
    /// trip in a profile of a paged run.
    buf: Vec<u8>,
    filled: usize,
}

impl Replies {
    /// Reads frames from `stdout`, which is made non-blocking.
    pub(super) fn new(stdout: ChildStdout) -> std::io::Result<Replies> {
        use nix::fcntl::{FcntlArg, OFlag, fcntl};
        let flags = fcntl(stdout.as_fd(), FcntlArg::F_GETFL)?;
        let flags = OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK;
        fcntl(stdout.as_fd(), FcntlArg::F_SETFL(flags))?;
        Ok(Replies {
            stdout,
            buf: Vec::new(),
            filled: 0,
        })
    }

    /// The next frame's payload, waiting for it until `deadline`.
    pub(super) fn next(&mut self, deadline: Instant) -> Result<Vec<u8>, NoReply> {
        loop {
            if let Some(frame) = self.take_frame()? {
                return Ok(frame);
            }
            match self.read_some() {
                Ok(0) => {
                    return Err(if self.filled == 0 {
                        NoReply::Closed
                    } else {
                        NoReply::Broken(FrameError::Truncated {
                            got: self.filled,
                            expected: self.wanted().unwrap_or(4),
                        })
                    });
                }
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(NoReply::Broken(e.into())),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NoReply::TimedOut);
            }
            // Rounded up to whole milliseconds, so the wait never ends just short of the
            // deadline and spins.
            let millis = left.as_nanos().div_ceil(1_000_000);
            let timeout = PollTimeout::try_from(Duration::from_millis(
                u64::try_from(millis).unwrap_or(u64::MAX),
            ))
            .unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(self.stdout.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(NoReply::Broken(std::io::Error::from(e).into())),
            }
        }
    }

    /// The length of the frame at the front, once its 4-byte prefix has arrived.
    fn wanted(&self) -> Option<usize> {
        let len: [u8; 4] = self.buf[..self.filled].get(..4)?.try_into().ok()?;
        Some(4 + u32::from_be_bytes(len) as usize)
    }

    /// Splits a whole frame off the front of the buffer, if one is there.
    fn take_frame(&mut self) -> Result<Option<Vec<u8>>, NoReply> {
        let Some(wanted) = self.wanted() else {
            return Ok(None);
        };
        if wanted - 4 > MAX_FRAME_BYTES {
            return Err(NoReply::Broken(FrameError::TooLarge(wanted - 4)));
        }
        if self.filled < wanted {
            return Ok(None);
        }
        let frame = self.buf[4..wanted].to_vec();
        self.buf.copy_within(wanted..self.filled, 0);
        self.filled -= wanted;
        if self.buf.len() > KEPT_BYTES && self.filled <= KEPT_BYTES {
            self.buf.truncate(KEPT_BYTES);
            self.buf.shrink_to_fit();
        }
        Ok(Some(frame))
    }

    /// One read of what the pipe holds, up to the rest of the frame at the front.
    fn read_some(&mut self) -> std::io::Result<usize> {
        let want = match self.wanted() {
            Some(wanted) if wanted - 4 <= MAX_FRAME_BYTES => wanted.saturating_sub(self.filled),
            _ => READ_BYTES,
        }
        .clamp(1, MAX_READ_BYTES);
        let end = self.filled + want;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        let got = self.stdout.read(&mut self.buf[self.filled..end])?;
        self.filled += got;
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};

    /// The replies of a shell script standing in for a worker.
    fn replies_of(script: &str) -> (Child, Replies) {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        (child, Replies::new(stdout).unwrap())
    }

    fn soon(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    #[test]
    fn frames_split_across_writes_or_sharing_one_arrive_whole_and_in_order() {
        let (mut child, mut r) = replies_of(
            r"printf '\000\000'; sleep 0.05; printf '\000\003ab'; sleep 0.05; printf 'c\000\000\000\001x\000\000\000\000'",
        );
        assert_eq!(r.next(soon(5000)).unwrap(), b"abc");
        assert_eq!(r.next(soon(5000)).unwrap(), b"x");
        assert_eq!(r.next(soon(5000)).unwrap(), b"");
        assert!(matches!(r.next(soon(5000)), Err(NoReply::Closed)));
        child.wait().unwrap();
    }

    #[test]
    fn half_a_frame_then_silence_times_out_at_the_deadline() {
        let (mut child, mut r) = replies_of(r"printf '\000\000\000\010half'; sleep 5");
        let started = Instant::now();
        assert!(matches!(r.next(soon(200)), Err(NoReply::TimedOut)));
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(200) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_frame_cut_short_by_exit_is_broken_and_a_huge_length_is_refused() {
        let (mut child, mut r) = replies_of(r"printf '\000\000\000\010half'");
        match r.next(soon(5000)) {
            Err(NoReply::Broken(FrameError::Truncated { got, expected })) => {
                assert_eq!((got, expected), (8, 12));
            }
            other => panic!("{other:?}"),
        }
        child.wait().unwrap();
        // 0x7f000000 bytes: far above the maximum, refused before any of it is awaited.
        let (mut child, mut r) = replies_of(r"printf '\177\000\000\000'; sleep 5");
        let started = Instant::now();
        assert!(matches!(
            r.next(soon(5000)),
            Err(NoReply::Broken(FrameError::TooLarge(_)))
        ));
        assert!(started.elapsed() < Duration::from_secs(2));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn a_large_frame_arrives_whole() {
        // 3 MiB of payload, more than the pipe holds at once.
        let (mut child, mut r) =
            replies_of(r"printf '\000\060\000\000'; head -c 3145728 /dev/zero | tr '\000' 'y'");
        let frame = r.next(soon(10_000)).unwrap();
        assert_eq!(frame.len(), 3 << 20);
        assert!(frame.iter().all(|&b| b == b'y'));
        // The buffer grown for it is given back once it has been taken.
        assert!(r.buf.len() <= KEPT_BYTES, "{}", r.buf.len());
        assert!(matches!(r.next(soon(5000)), Err(NoReply::Closed)));
        child.wait().unwrap();
    }
}
