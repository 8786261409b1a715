//! Child processes tied to this process: workers and cli-tool processes are started here.
//!
//! A child started by [`spawn`]
//!
//! - dies with this process: it gets `SIGKILL` as its parent-death signal
//!   (`PR_SET_PDEATHSIG`), and checks right after setting it that its parent is still this
//!   process, so a parent that died in between is noticed too;
//! - inherits no descriptor but stdin, stdout and stderr (and, for a worker, its descriptor
//!   channel as fd 3): every other descriptor is marked close-on-exec before the program
//!   starts, whoever opened it (this process, a library, or the program that started runx and
//!   left one open).
//!
//! The kernel sends the parent-death signal when the *thread* that forked the child ends, not
//! the process. Children are therefore forked by one thread that lives as long as the process,
//! so a worker started from a short-lived caller thread is not killed when that thread returns.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

/// A spawn handed to the forking thread, and where its result goes.
type Job = (Command, mpsc::SyncSender<io::Result<Child>>);

/// Starts `command` as a child tied to this process (see the module docs). Set-up the caller
/// added with `pre_exec` runs too.
pub fn spawn_child(command: Command) -> io::Result<Child> {
    spawn_inner(command, None)
}

/// Like [`spawn`], and the descriptor `channel` becomes the child's fd 3 (the one descriptor
/// above stderr it keeps): a worker's descriptor channel ([`crate::host::descriptor`]).
pub fn spawn_with_channel(command: Command, channel: RawFd) -> io::Result<Child> {
    spawn_inner(command, Some(channel))
}

fn spawn_inner(mut command: Command, channel: Option<RawFd>) -> io::Result<Child> {
    let parent = nix::unistd::getpid();
    let fd_limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .map_or(1024, |(soft, _)| soft.min(65_536) as i32);
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes only `prctl`, `getppid`, `close_range`,
    // `fcntl` and `dup2` system calls, and allocates nothing.
    #[allow(unsafe_code, reason = "pre_exec runs between fork and exec")]
    unsafe {
        command.pre_exec(move || {
            tie(parent, fd_limit)?;
            match channel {
                Some(fd) => keep_as_fd3(fd),
                None => Ok(()),
            }
        });
    }
    match forker() {
        Some(jobs) => {
            let (reply, result) = mpsc::sync_channel(1);
            let sent = jobs
                .lock()
                .map_err(|_| io::Error::other("the forking thread is gone"))?
                .send((command, reply));
            match sent {
                Ok(()) => result
                    .recv()
                    .unwrap_or_else(|_| Err(io::Error::other("the forking thread is gone"))),
                Err(mpsc::SendError((mut command, _))) => command.spawn(),
            }
        }
        None => command.spawn(),
    }
}

/// The thread that forks every child, started on first use; `None` when no thread can be
/// started (children are then forked by the caller).
fn forker() -> Option<&'static Mutex<mpsc::Sender<Job>>> {
    static FORKER: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    FORKER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("runx-forker".to_string())
                .spawn(move || {
                    for (mut command, reply) in queue {
                        let _ = reply.send(command.spawn());
                    }
                })
                .ok()
                .map(|_| Mutex::new(jobs))
        })
        .as_ref()
}

/// In the child, after every descriptor above stderr was marked close-on-exec: `fd` becomes
/// fd 3, which the program keeps.
#[allow(
    unsafe_code,
    reason = "dup2 and fcntl on descriptors between fork and exec"
)]
fn keep_as_fd3(fd: RawFd) -> io::Result<()> {
    const TARGET: RawFd = crate::host::descriptor::WORKER_FD;
    // SAFETY: `dup2` and `fcntl` take descriptor numbers only; async-signal-safe.
    unsafe {
        if fd == TARGET {
            // `dup2` onto itself keeps close-on-exec; clear it instead.
            if nix::libc::fcntl(TARGET, nix::libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
        } else if nix::libc::dup2(fd, TARGET) == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In the child: the parent-death signal, the race check, and close-on-exec for every
/// descriptor above stderr.
fn tie(parent: nix::unistd::Pid, fd_limit: i32) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    if nix::unistd::getppid() != parent {
        // The parent died before the signal was armed: do not run orphaned.
        return Err(io::Error::from_raw_os_error(nix::libc::ESRCH));
    }
    close_on_exec_above_stderr(fd_limit);
    Ok(())
}

/// Marks every descriptor from 3 up close-on-exec: one `close_range` call where the kernel has
/// it (Linux 5.11+), else one `fcntl` per possible descriptor below the open-file limit.
/// Marking instead of closing keeps the descriptors the standard library itself still needs
/// between fork and exec (its exec-error pipe is already close-on-exec).
fn close_on_exec_above_stderr(fd_limit: i32) {
    const CLOSE_RANGE_CLOEXEC: nix::libc::c_uint = 1 << 2;
    // SAFETY: close_range only changes descriptor flags of this (child) process; no memory
    // is passed.
    #[allow(unsafe_code, reason = "close_range is a raw system call")]
    let done = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_close_range,
            3 as nix::libc::c_uint,
            nix::libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    } == 0;
    if done {
        return;
    }
    for fd in 3..fd_limit {
        // SAFETY: F_GETFD/F_SETFD on a number that may or may not be an open descriptor; a
        // closed one fails with EBADF and nothing else happens.
        #[allow(unsafe_code, reason = "fcntl on descriptors between fork and exec")]
        unsafe {
            let flags = nix::libc::fcntl(fd, nix::libc::F_GETFD);
            if flags >= 0 {
                nix::libc::fcntl(fd, nix::libc::F_SETFD, flags | nix::libc::FD_CLOEXEC);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::process::Stdio;

    #[test]
    fn children_inherit_only_stdio() {
        // A descriptor without close-on-exec, as a careless caller would leave one.
        let file = tempfile::tempfile().unwrap();
        let fd = nix::unistd::dup(&file).unwrap();
        let raw = fd.as_raw_fd();
        let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_eq!(flags & nix::libc::FD_CLOEXEC, 0);
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(format!(
                "[ -e /proc/$$/fd/{raw} ] && echo leaked; echo done"
            ))
            .stdout(Stdio::piped());
        let out = spawn_child(c).unwrap().wait_with_output().unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "done\n",
            "fd {raw} leaked"
        );
        drop(fd);
    }

    #[test]
    fn children_forked_from_a_short_lived_thread_survive_it() {
        let child = std::thread::spawn(|| {
            let mut c = Command::new("/bin/sleep");
            c.arg("5");
            spawn_child(c).unwrap()
        })
        .join()
        .unwrap();
        // The thread that asked is gone; the child must still run.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut child = child;
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child died with its caller thread"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
}
