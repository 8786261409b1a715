//! The descriptor channel between a host and its worker: a Unix socket pair whose worker end is
//! the worker's fd 3.
//!
//! For each page of a paged run the host sends, just before the call's `invoke` frame, one
//! message on this channel: the call id (8 bytes, little endian) carrying a read-only
//! descriptor of the artifact's snapshot (`SCM_RIGHTS`). The worker maps the page's byte range
//! read-only for the call (or reads it with `pread` where the file cannot be mapped) and closes
//! the descriptor, so page bytes never travel through the frame pipe and are never copied by
//! the host. Frames keep travelling on stdin/stdout; this channel carries
//! descriptors only.

use std::fs::File;
use std::io::{self, IoSlice, IoSliceMut, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

/// The worker's descriptor for its end of the channel.
pub const WORKER_FD: RawFd = 3;

/// Sends `file` for the call `call_id` (host side).
pub(crate) fn send(channel: &UnixStream, call_id: u64, file: &File) -> io::Result<()> {
    let fds = [file.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let tag = call_id.to_le_bytes();
    let iov = [IoSlice::new(&tag)];
    let sent = sendmsg::<()>(channel.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None)
        .map_err(io::Error::from)?;
    if sent != tag.len() {
        return Err(io::Error::other("the descriptor message was cut short"));
    }
    Ok(())
}

/// Receives the descriptor sent for `call_id` (worker side). Descriptors sent for earlier calls
/// that ended before they read theirs (a call answered `need_bundle`, say) are closed and
/// skipped; one for a later call is a protocol error.
pub fn receive(channel: &UnixStream, call_id: u64) -> Result<File, String> {
    loop {
        let (tag, fd) = receive_one(channel)?;
        match tag.cmp(&call_id) {
            std::cmp::Ordering::Less => drop(fd),
            std::cmp::Ordering::Equal => {
                return fd
                    .map(File::from)
                    .ok_or_else(|| format!("the descriptor message of call {call_id} held none"));
            }
            std::cmp::Ordering::Greater => {
                return Err(format!(
                    "a descriptor for call {tag} arrived while call {call_id} waited for its own"
                ));
            }
        }
    }
}

/// One message: its call id and the descriptor it carried, if any.
#[allow(unsafe_code, reason = "recvmsg with SCM_RIGHTS to take a descriptor")]
fn receive_one(channel: &UnixStream) -> Result<(u64, Option<OwnedFd>), String> {
    let mut tag = [0u8; 8];
    let mut space = nix::cmsg_space!([RawFd; 1]);
    let (read, fds) = {
        let mut iov = [IoSliceMut::new(&mut tag)];
        let msg = recvmsg::<()>(
            channel.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .map_err(|e| format!("cannot read the descriptor channel: {e}"))?;
        let mut fds = Vec::new();
        for cmsg in msg
            .cmsgs()
            .map_err(|e| format!("cannot read the descriptor channel: {e}"))?
        {
            if let ControlMessageOwned::ScmRights(received) = cmsg {
                fds.extend(received);
            }
        }
        (msg.bytes, fds)
    };
    // Every descriptor received is owned from here on, so none leaks whatever happens next.
    let mut owned: Vec<OwnedFd> = fds
        .into_iter()
        .map(|fd| {
            // SAFETY: the kernel just installed `fd` in this process for this message
            // (SCM_RIGHTS); nothing else in the process knows it, so it is owned here alone.
            unsafe { OwnedFd::from_raw_fd(fd) }
        })
        .collect();
    if read == 0 {
        return Err("the host closed the descriptor channel".to_string());
    }
    if read < tag.len() {
        // A stream socket may split the tag; the rest carries no descriptor.
        let mut reader: &UnixStream = channel;
        reader
            .read_exact(&mut tag[read..])
            .map_err(|e| format!("cannot read the descriptor channel: {e}"))?;
    }
    if owned.len() > 1 {
        return Err(format!(
            "a descriptor message carried {} descriptors; one was expected",
            owned.len()
        ));
    }
    Ok((u64::from_le_bytes(tag), owned.pop()))
}

/// The channel the host set up, when fd 3 is a Unix socket (worker side). A worker started by
/// hand, or by a host that predates the channel, has none.
#[allow(
    unsafe_code,
    reason = "adopts the inherited descriptor 3 once its type is checked"
)]
pub fn inherited() -> Option<UnixStream> {
    let st = fd_stat(WORKER_FD).ok()?;
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK {
        return None;
    }
    // SAFETY: fd 3 is open (fstat succeeded) and is a socket the host created for this process;
    // nothing else in the worker uses it, so ownership moves here.
    Some(unsafe { UnixStream::from_raw_fd(WORKER_FD) })
}

/// `fstat` of an open descriptor, made as the `fstat` system call itself. The C library's
/// `fstat` (and Rust's `File::metadata`) may use `newfstatat` or `statx`, which also look up
/// paths and which the worker's seccomp filter therefore answers with `EACCES`.
#[allow(unsafe_code, reason = "fstat fills a plain C struct")]
pub fn fd_stat(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: the zeroed `stat` is a valid value of a plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: the `fstat` system call writes only into `st`, a valid, writable `stat`; on a
    // descriptor that is not open it fails with EBADF and writes nothing.
    let rc = unsafe { libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn descriptors_arrive_for_their_call_and_stale_ones_are_skipped() {
        let (host, worker) = UnixStream::pair().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(b"hello")
            .unwrap();
        let old = File::open(&path).unwrap();
        let mine = File::open(&path).unwrap();
        send(&host, 4, &old).unwrap();
        send(&host, 5, &mine).unwrap();
        let got = receive(&worker, 5).unwrap();
        let mut text = String::new();
        (&got).read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello");
        send(&host, 9, &mine).unwrap();
        assert!(receive(&worker, 6).unwrap_err().contains("call 9"));
        drop(host);
        assert!(
            receive(&worker, 10)
                .unwrap_err()
                .contains("closed the descriptor channel")
        );
    }
}
