//! The worker process's own confinement, set up before any module code runs.
//!
//! The host already starts a worker with an empty environment, in its own process group, in a
//! directory of its own. The worker then confines itself, in this order, so that each step can
//! still do what the next one forbids:
//!
//! 1. refuses to run with a non-empty environment, and pins `TZ=UTC0`;
//! 2. closes every descriptor but its stdin, stdout and stderr (the frame pipes and the crash
//!    log) and its descriptor channel (fd 3, when it is a socket: see [`crate::host::descriptor`]),
//!    whatever it inherited from whoever started `runx`;
//! 3. sets its rlimits: no core dumps, no file writes, few descriptors, the engine's memory cap;
//! 4. when started as root, drops to user and group 65534 (`nobody`/`nogroup` on most systems)
//!    with no supplementary groups;
//! 5. sets no-new-privileges, so no later `execve` could gain privileges (there is none: see 6);
//! 6. installs a seccomp filter ([`filter`]) that allows only the system calls the engine and
//!    the protocol need. Any other call kills the process (the host then reports
//!    `worker_crashed` naming SIGSYS); probes of the file system get `EACCES` instead, so that a
//!    library looking for a file it may do without (a time zone, `/proc/self/maps`) goes on.
//!
//! When the kernel cannot install the filter, the worker refuses to serve unless it was started
//! with `--allow-no-seccomp` (which `runx` passes when `RUNX_ALLOW_NO_SECCOMP=1` is set); it
//! then says so on stderr and serves without it.
//!
//! # Extending the filter
//!
//! A system call a new feature needs goes into [`ALLOWED`] (or [`ENGINE_ALLOWED`] when only one
//! engine makes it), with a comment naming what makes it; a call that may pass only with
//! certain arguments gets a rule in [`filter`], as `clone` (threads only) and `prctl` (naming a
//! thread) have. A descriptor the worker must keep goes into [`KEPT_DESCRIPTORS`]. Reading a
//! page from a descriptor received over the channel needs `recvmsg`, `fstat`, `mmap` (a
//! read-only map of the page's range) and `pread64` (where the file cannot be mapped), which
//! are listed for that reason. The pool-based conformance tests (`cargo test -p runx-worker`) and
//! `runx harness skill-fixtures` run real workers of each engine under the filter; `strace -f`
//! of a run shows the call a worker died on (its last line before `killed by SIGSYS`).

use crate::engine::MemoryCap;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Descriptors the worker keeps: stdin (frames from the host), stdout (frames to the host),
/// stderr (what the host shows when the worker dies) and, when it is a Unix socket, the
/// descriptor channel page files arrive on ([`crate::host::descriptor::WORKER_FD`]); anything else
/// at fd 3 is closed like every other inherited descriptor.
pub const KEPT_DESCRIPTORS: &[i32] = &[0, 1, 2, crate::host::descriptor::WORKER_FD];

/// Open files the worker may hold: stdio and a little slack for the runtime.
const MAX_OPEN_FILES: u64 = 16;

/// The user and group a worker started as root runs as. A fixed id, not a name lookup: the
/// lookup would read system files and could wait on a directory service before the worker is
/// ready.
const NOBODY: u32 = 65534;

/// The option that lets a worker serve where the kernel cannot install its seccomp filter.
pub const ALLOW_NO_SECCOMP: &str = "--allow-no-seccomp";

/// Why the worker would not start serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The environment was not empty, so the host did not isolate the worker.
    #[error(
        "refusing to run: the worker's environment must be empty (found {0}); it is started by the runx host, not by hand"
    )]
    Environment(String),
    /// An OS limit could not be set.
    #[error("cannot set resource limit {0}: {1}")]
    Rlimit(&'static str, nix::Error),
    /// Inherited descriptors could not be closed.
    #[error("cannot close inherited descriptors: {0}")]
    Descriptors(std::io::Error),
    /// The worker runs as root and could not become an unprivileged user.
    #[error("refusing to run as root: cannot drop to user and group {uid}: {source}")]
    Privileges {
        /// The user and group id aimed for.
        uid: u32,
        /// What refused.
        source: nix::Error,
    },
    /// no-new-privileges could not be set.
    #[error("cannot set no-new-privileges: {0}")]
    NoNewPrivs(nix::Error),
    /// The seccomp filter could not be built or installed.
    #[error(
        "cannot install the worker's seccomp filter ({0}); set RUNX_ALLOW_NO_SECCOMP=1 to run workers without it on this system"
    )]
    Seccomp(String),
}

/// How strict the worker is where the platform falls short.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SandboxOptions {
    /// Serve without the seccomp filter when the kernel cannot install it.
    pub allow_no_seccomp: bool,
}

impl SandboxOptions {
    /// The options named in a worker's arguments.
    pub fn from_args(args: &[String]) -> SandboxOptions {
        SandboxOptions {
            allow_no_seccomp: args.iter().any(|a| a == ALLOW_NO_SECCOMP),
        }
    }
}

/// Confines the current process as described in the module documentation; `memory` is the
/// engine's own memory cap and `engine` its name (which selects its extra system calls). Must
/// run on the main thread before any other thread exists.
#[allow(
    unsafe_code,
    reason = "prctl, setrlimit and the seccomp filter confine the process"
)]
pub fn enter(memory: MemoryCap, engine: &str, options: SandboxOptions) -> Result<(), SandboxError> {
    if let Some((k, _)) = std::env::vars_os().next() {
        return Err(SandboxError::Environment(k.to_string_lossy().into_owned()));
    }
    // SAFETY: called first thing in the worker process, before any other thread exists, so no
    // other code can be reading the environment concurrently. `UTC0` is a complete POSIX zone
    // (no file needed): local-time Date methods read the same on every host.
    unsafe { std::env::set_var("TZ", "UTC0") };
    close_inherited()?;
    set_rlimits(memory)?;
    drop_root()?;
    nix::sys::prctl::set_no_new_privs().map_err(SandboxError::NoNewPrivs)?;
    let installed = filter(engine)
        .and_then(|filters| {
            filters
                .iter()
                .try_for_each(|f| seccompiler::apply_filter(f).map_err(|e| e.to_string()))
        })
        .map_err(SandboxError::Seccomp);
    match installed {
        Err(e) if options.allow_no_seccomp => {
            eprintln!(
                "runx worker: serving WITHOUT a system-call filter ({ALLOW_NO_SECCOMP}): {e}"
            );
            Ok(())
        }
        other => other,
    }
}

/// Closes every descriptor outside [`KEPT_DESCRIPTORS`].
#[allow(
    unsafe_code,
    reason = "closes every inherited descriptor but the channel"
)]
fn close_inherited() -> Result<(), SandboxError> {
    let channel = crate::host::descriptor::WORKER_FD;
    if !is_socket(channel) {
        // SAFETY: nothing in this process owns fd 3 yet (the channel is taken only after the
        // sandbox is entered); closing a descriptor that is not open fails with EBADF.
        unsafe { libc::close(channel) };
    }
    let first = KEPT_DESCRIPTORS.iter().max().map_or(0, |m| m + 1);
    // SAFETY: `close_range` only closes descriptors. Nothing in this process owns one above the
    // kept ones yet (the worker has opened nothing; std's handles are 0–2), so no Rust object
    // is left holding a closed descriptor.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() != Some(libc::ENOSYS) {
        return Err(SandboxError::Descriptors(err));
    }
    // Kernels before 5.9: close what /proc lists (the listing's own descriptor is closed
    // before the loop).
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(SandboxError::Descriptors)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| !KEPT_DESCRIPTORS.contains(fd))
        .collect();
    for fd in fds {
        // SAFETY: as above; a descriptor that is already gone gives EBADF, which is ignored.
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// Whether `fd` is an open Unix socket.
fn is_socket(fd: i32) -> bool {
    crate::host::descriptor::fd_stat(fd).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFSOCK)
}

fn set_rlimits(memory: MemoryCap) -> Result<(), SandboxError> {
    use nix::sys::resource::{Resource, setrlimit};
    let memory = match memory {
        MemoryCap::AddressSpace(bytes) => (Resource::RLIMIT_AS, bytes, "RLIMIT_AS"),
        MemoryCap::Data(bytes) => (Resource::RLIMIT_DATA, bytes, "RLIMIT_DATA"),
    };
    let limits = [
        (Resource::RLIMIT_CORE, 0, "RLIMIT_CORE"),
        (Resource::RLIMIT_FSIZE, 0, "RLIMIT_FSIZE"),
        (Resource::RLIMIT_NOFILE, MAX_OPEN_FILES, "RLIMIT_NOFILE"),
        memory,
    ];
    for (resource, value, name) in limits {
        setrlimit(resource, value, value).map_err(|e| SandboxError::Rlimit(name, e))?;
    }
    Ok(())
}

/// When running as root (real or effective), becomes [`NOBODY`] with no supplementary groups,
/// and checks that root cannot be regained.
fn drop_root() -> Result<(), SandboxError> {
    use nix::unistd::{Gid, Uid, getegid, geteuid, getuid, setgroups, setresgid, setresuid};
    if !getuid().is_root() && !geteuid().is_root() {
        return Ok(());
    }
    let (uid, gid) = (Uid::from_raw(NOBODY), Gid::from_raw(NOBODY));
    let failed = |source| SandboxError::Privileges {
        uid: uid.as_raw(),
        source,
    };
    setgroups(&[]).map_err(failed)?;
    setresgid(gid, gid, gid).map_err(failed)?;
    setresuid(uid, uid, uid).map_err(failed)?;
    if setresuid(Uid::from_raw(0), Uid::from_raw(0), Uid::from_raw(0)).is_ok()
        || getegid().as_raw() == 0
    {
        return Err(failed(nix::Error::EPERM));
    }
    Ok(())
}

/// System calls every worker makes once it serves, whatever its engine. Each is allowed with
/// any arguments unless [`filter`] gives it a rule.
pub const ALLOWED: &[(&str, i64)] = &[
    // Frames on stdin/stdout, crash notes on stderr, closing a descriptor it received.
    ("read", libc::SYS_read),
    ("write", libc::SYS_write),
    ("readv", libc::SYS_readv),
    ("writev", libc::SYS_writev),
    ("close", libc::SYS_close),
    ("fstat", libc::SYS_fstat),
    // A page's file received on the descriptor channel, and its records read at an offset.
    ("recvmsg", libc::SYS_recvmsg),
    ("pread64", libc::SYS_pread64),
    // The thread that ends the worker the moment its pipe to the host breaks.
    #[cfg(target_arch = "x86_64")]
    ("poll", libc::SYS_poll),
    ("ppoll", libc::SYS_ppoll),
    // Memory: the allocator, engine heaps, thread stacks.
    ("brk", libc::SYS_brk),
    ("mmap", libc::SYS_mmap),
    ("munmap", libc::SYS_munmap),
    ("mremap", libc::SYS_mremap),
    ("mprotect", libc::SYS_mprotect),
    ("madvise", libc::SYS_madvise),
    // Threads: the engine thread and its synchronisation (`clone` has a rule: threads only).
    ("clone", libc::SYS_clone),
    ("futex", libc::SYS_futex),
    ("set_robust_list", libc::SYS_set_robust_list),
    ("rseq", libc::SYS_rseq),
    ("sched_yield", libc::SYS_sched_yield),
    ("sched_getaffinity", libc::SYS_sched_getaffinity),
    ("gettid", libc::SYS_gettid),
    ("getpid", libc::SYS_getpid),
    // Naming a thread or an anonymous mapping (`prctl` has a rule: PR_SET_NAME and PR_SET_VMA
    // only).
    ("prctl", libc::SYS_prctl),
    // Signals: the runtime's handlers and stack-overflow guard, and abort().
    ("rt_sigaction", libc::SYS_rt_sigaction),
    ("rt_sigprocmask", libc::SYS_rt_sigprocmask),
    ("rt_sigreturn", libc::SYS_rt_sigreturn),
    ("sigaltstack", libc::SYS_sigaltstack),
    ("tgkill", libc::SYS_tgkill),
    // Time for the wall (the real clock never reaches a module) and waiting.
    ("clock_gettime", libc::SYS_clock_gettime),
    ("clock_getres", libc::SYS_clock_getres),
    ("gettimeofday", libc::SYS_gettimeofday),
    ("nanosleep", libc::SYS_nanosleep),
    ("clock_nanosleep", libc::SYS_clock_nanosleep),
    // Hash-map keys of the Rust runtime.
    ("getrandom", libc::SYS_getrandom),
    ("exit", libc::SYS_exit),
    ("exit_group", libc::SYS_exit_group),
];

/// System calls only some engines make, by engine name.
pub const ENGINE_ALLOWED: &[(&str, &[(&str, i64)])] = &[(
    "v8",
    &[
        // `fatal::answer` duplicating stdout before V8 ends the process.
        ("fcntl", libc::SYS_fcntl),
        // V8's platform: CPU and memory facts, thread scheduling, memory protection keys (where
        // the CPU has them; elsewhere `pkey_alloc` fails and V8 goes on without).
        ("uname", libc::SYS_uname),
        ("sysinfo", libc::SYS_sysinfo),
        ("getrusage", libc::SYS_getrusage),
        ("sched_getparam", libc::SYS_sched_getparam),
        ("sched_getscheduler", libc::SYS_sched_getscheduler),
        ("pkey_alloc", libc::SYS_pkey_alloc),
        ("pkey_free", libc::SYS_pkey_free),
        ("pkey_mprotect", libc::SYS_pkey_mprotect),
    ],
)];

/// System calls that look for files: they fail with `EACCES` instead of killing the worker,
/// because libraries probe for files they can do without.
pub const PROBES: &[(&str, i64)] = &[
    #[cfg(target_arch = "x86_64")]
    ("open", libc::SYS_open),
    ("openat", libc::SYS_openat),
    #[cfg(target_arch = "x86_64")]
    ("stat", libc::SYS_stat),
    #[cfg(target_arch = "x86_64")]
    ("lstat", libc::SYS_lstat),
    ("newfstatat", libc::SYS_newfstatat),
    ("statx", libc::SYS_statx),
    #[cfg(target_arch = "x86_64")]
    ("access", libc::SYS_access),
    ("faccessat", libc::SYS_faccessat),
    #[cfg(target_arch = "x86_64")]
    ("readlink", libc::SYS_readlink),
    ("readlinkat", libc::SYS_readlinkat),
];

/// The filters for `engine`, in the order they are installed. The kernel runs every installed
/// filter and takes the strictest answer: the first answers `clone3` (whose flags a filter
/// cannot read) with `ENOSYS`, so that the C library falls back to `clone`, whose flags the
/// last filter checks; the second turns [`PROBES`] into `EACCES`; the last allows [`ALLOWED`],
/// the engine's calls and [`PROBES`] and kills on anything else. It comes last because
/// installing a filter takes a `prctl` call the last filter no longer allows.
pub fn filter(engine: &str) -> Result<Vec<BpfProgram>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let err = |e: seccompiler::BackendError| e.to_string();
    let extra = ENGINE_ALLOWED
        .iter()
        .filter(|(name, _)| *name == engine)
        .flat_map(|(_, calls)| calls.iter());
    let mut allow: BTreeMap<i64, Vec<SeccompRule>> = ALLOWED
        .iter()
        .chain(extra)
        .chain(PROBES)
        .map(|(_, nr)| (*nr, Vec::new()))
        .collect();
    allow.insert(libc::SYS_clone3, Vec::new());
    // `clone` only for threads: a flags argument without CLONE_THREAD would be a new process.
    let thread = libc::CLONE_THREAD as u64;
    let threads = arg_rule(
        0,
        SeccompCmpArgLen::Qword,
        SeccompCmpOp::MaskedEq(thread),
        thread,
    )?;
    allow.insert(libc::SYS_clone, vec![threads]);
    // `prctl` only to name a thread or a mapping (V8 names its reservations).
    let prctl = |option: i32| arg_rule(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, option as u64);
    allow.insert(
        libc::SYS_prctl,
        vec![prctl(libc::PR_SET_NAME)?, prctl(libc::PR_SET_VMA)?],
    );
    // `tgkill` only towards this process (abort() signals itself).
    let pid = u64::from(std::process::id());
    let itself = arg_rule(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, pid)?;
    allow.insert(libc::SYS_tgkill, vec![itself]);
    // `fcntl(fd, F_GETFD)` for every engine (V8 may call `fcntl` freely): a debug build of the
    // Rust standard library checks that a descriptor is open before it closes it, this way.
    // It reads one flag of one of this process's own descriptors, in either profile.
    let get_fd = libc::F_GETFD as u64;
    let read_flag = arg_rule(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, get_fd)?;
    allow
        .entry(libc::SYS_fcntl)
        .or_insert_with(|| vec![read_flag]);
    let allowed = SeccompFilter::new(
        allow,
        SeccompAction::KillProcess,
        SeccompAction::Allow,
        arch,
    )
    .map_err(err)?;
    let refused: BTreeMap<i64, Vec<SeccompRule>> =
        PROBES.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    let refused = SeccompFilter::new(
        refused,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(err)?;
    [clone3, refused, allowed]
        .into_iter()
        .map(|f| BpfProgram::try_from(f).map_err(|e| e.to_string()))
        .collect()
}

/// A rule that matches when argument `arg` compares to `value` by `op`.
fn arg_rule(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompRule, String> {
    SeccompCondition::new(arg, len, op, value)
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a forked child: the filter installs, a file probe gets `EACCES`, and a call outside
    /// the list (a socket) kills the process with SIGSYS.
    #[test]
    #[allow(
        unsafe_code,
        reason = "the test forks a child to see the filter refuse a call"
    )]
    fn the_filter_refuses_what_it_does_not_list() {
        use nix::sys::signal::Signal;
        use nix::sys::wait::{WaitStatus, waitpid};
        let filters = filter("quickjs").expect("the filter builds");
        // SAFETY: the child only makes raw system calls (prctl, seccomp, open, socket, _exit)
        // and touches no lock or allocator state another thread might hold.
        match unsafe { nix::unistd::fork() }.expect("fork") {
            nix::unistd::ForkResult::Child => unsafe {
                for f in &filters {
                    if seccompiler::apply_filter(f).is_err() {
                        libc::_exit(10);
                    }
                }
                let fd = libc::open(c"/etc/hostname".as_ptr(), libc::O_RDONLY);
                if fd != -1 || *libc::__errno_location() != libc::EACCES {
                    libc::_exit(11);
                }
                libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
                libc::_exit(12);
            },
            nix::unistd::ForkResult::Parent { child } => {
                let status = waitpid(child, None).expect("wait");
                assert_eq!(
                    status,
                    WaitStatus::Signaled(child, Signal::SIGSYS, false),
                    "exit 10: not installed, 11: open was not EACCES, 12: socket was allowed"
                );
            }
        }
    }

    #[test]
    #[allow(
        unsafe_code,
        reason = "the test forks a child to see the filter answer fcntl"
    )]
    fn fcntl_may_read_a_descriptor_flag_and_nothing_else() {
        use nix::sys::signal::Signal;
        use nix::sys::wait::{WaitStatus, waitpid};
        use std::io::Read;
        use std::os::fd::AsRawFd;
        let filters = filter("quickjs").expect("the filter builds");
        // The child says on this pipe that it survived F_GETFD: a kill there would look like
        // the kill at F_SETFL otherwise.
        let (read_end, write_end) = nix::unistd::pipe().expect("pipe");
        // SAFETY: the child only makes raw system calls (prctl, seccomp, fcntl, write, _exit)
        // and touches no lock or allocator state another thread might hold.
        match unsafe { nix::unistd::fork() }.expect("fork") {
            nix::unistd::ForkResult::Child => unsafe {
                for f in &filters {
                    if seccompiler::apply_filter(f).is_err() {
                        libc::_exit(10);
                    }
                }
                // What a debug build's standard library asks before it closes a descriptor.
                if libc::fcntl(1, libc::F_GETFD) == -1 {
                    libc::_exit(11);
                }
                libc::write(write_end.as_raw_fd(), b"1".as_ptr().cast(), 1);
                libc::fcntl(1, libc::F_SETFL, 0);
                libc::_exit(12);
            },
            nix::unistd::ForkResult::Parent { child } => {
                drop(write_end);
                let status = waitpid(child, None).expect("wait");
                let mut said = String::new();
                std::fs::File::from(read_end)
                    .read_to_string(&mut said)
                    .expect("read");
                assert_eq!(said, "1", "the child did not survive F_GETFD ({status:?})");
                assert_eq!(
                    status,
                    WaitStatus::Signaled(child, Signal::SIGSYS, false),
                    "exit 10: not installed, 11: F_GETFD failed, 12: F_SETFL was allowed"
                );
            }
        }
    }

    #[test]
    fn the_option_is_read_from_the_arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!SandboxOptions::from_args(&args(&["--engine", "v8"])).allow_no_seccomp);
        assert!(SandboxOptions::from_args(&args(&[ALLOW_NO_SECCOMP])).allow_no_seccomp);
    }
}
