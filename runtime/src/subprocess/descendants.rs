//! Every descendant of a cli-tool process, whatever its session or process group.
//!
//! Killing the process group misses descendants that left it (`setsid`, a double fork). Each
//! run tracks its descendants in one of two ways, chosen when it starts:
//!
//! - **cgroup** (where runx may create one): a cgroup v2 of its own under runx's cgroup. The
//!   child joins it before it execs and is confined to it (`confine.rs`: the cgroup
//!   hierarchies read-only in a mount namespace of its own, `CAP_SYS_ADMIN` dropped), so
//!   everything it ever starts stays in it, whatever session or group it moves to, even as
//!   root. At the end `cgroup.kill` kills every member at once and the cgroup is removed.
//!   Needs cgroup v2 with `cgroup.kill` (Linux 5.14+), write access to runx's own cgroup, and
//!   `CAP_SYS_ADMIN` to confine the child (runx as root, in a container or not); without the
//!   confinement a descendant with write access to another cgroup could leave, so runx then
//!   uses the subreaper.
//! - **subreaper** (elsewhere, or with `RUNX_CGROUP=off`): runx marks itself a child subreaper,
//!   so descendants orphaned by their parents are re-parented to runx instead of init. While
//!   the process runs, the supervisor records every descendant it sees in `/proc`; at the end
//!   it kills the recorded ones still alive, everything below them, and the orphans re-parented
//!   to runx whose environment carries this run's staging path, and reaps them. A descendant
//!   that escapes between two looks *and* clears its environment is missed; the cgroup has no
//!   such gap.

use super::confine;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// Environment variable that turns the per-run cgroup off (`RUNX_CGROUP=off`).
pub const CGROUP_ENV: &str = "RUNX_CGROUP";

/// How long a sweep keeps killing before it gives up on descendants it cannot stop (a process
/// stuck in the kernel).
const SWEEP_DEADLINE: Duration = Duration::from_secs(2);
/// Least time between two looks at `/proc` while the process runs (subreaper mode).
const SCAN_INTERVAL: Duration = Duration::from_millis(20);

/// The descendants of one cli-tool process.
pub(super) struct Descendants {
    how: How,
}

enum How {
    Cgroup(RunCgroup),
    Reaper(Reaper),
}

impl Descendants {
    /// Tracking for one run: a cgroup where one can be made, else the subreaper. `marker` is the
    /// `NAME=value` environment entry only this run's processes carry.
    pub(super) fn new(marker: Option<Vec<u8>>) -> Descendants {
        let off = std::env::var(CGROUP_ENV).is_ok_and(|v| v == "off" || v == "0");
        match (!off).then(RunCgroup::create).flatten() {
            Some(cg) => Descendants {
                how: How::Cgroup(cg),
            },
            None => Descendants::reaper(marker),
        }
    }

    /// Subreaper tracking (also the fallback when joining a cgroup fails at spawn).
    pub(super) fn reaper(marker: Option<Vec<u8>>) -> Descendants {
        Descendants {
            how: How::Reaper(Reaper::new(marker)),
        }
    }

    /// Whether the run uses a cgroup.
    pub(super) fn uses_cgroup(&self) -> bool {
        matches!(self.how, How::Cgroup(_))
    }

    /// Makes the child join the run's cgroup before it execs.
    pub(super) fn prepare(&self, command: &mut Command) {
        if let How::Cgroup(cg) = &self.how {
            let fd = std::os::fd::AsRawFd::as_raw_fd(&cg.procs);
            let mounts = confine::cgroup_mounts();
            // SAFETY: runs in the child between fork and exec, where `join_and_confine` may
            // run: it makes system calls on a descriptor the parent keeps open until the spawn
            // returns and on strings made before the fork, and allocates nothing.
            #[allow(
                unsafe_code,
                reason = "pre_exec joins and confines the cgroup between fork and exec"
            )]
            unsafe {
                command.pre_exec(move || confine::join_and_confine(fd, mounts));
            }
        }
    }

    /// Records the process that was started.
    pub(super) fn started(&mut self, leader: Pid) {
        if let How::Reaper(r) = &mut self.how {
            r.leader = Some(leader.as_raw());
            r.observe(true);
        }
    }

    /// Looks for new descendants (subreaper mode; at most every [`SCAN_INTERVAL`]).
    pub(super) fn observe(&mut self) {
        if let How::Reaper(r) = &mut self.how {
            r.observe(false);
        }
    }

    /// Sends `signal` to every descendant known to be alive (the process group is signalled
    /// by the caller).
    pub(super) fn signal(&mut self, signal: Signal) {
        match &mut self.how {
            How::Cgroup(cg) => {
                for pid in cg.members() {
                    let _ = kill(pid, signal);
                }
            }
            How::Reaper(r) => {
                r.observe(true);
                for pid in r.alive() {
                    let _ = kill(Pid::from_raw(pid), signal);
                }
            }
        }
    }

    /// Kills every descendant and waits until none is left (bounded by [`SWEEP_DEADLINE`]).
    /// The leader itself is left for the caller to reap.
    pub(super) fn kill_all(&mut self) {
        match &mut self.how {
            How::Cgroup(cg) => cg.kill(),
            How::Reaper(r) => r.sweep(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// cgroup v2

/// A cgroup made for one run; removed when dropped.
struct RunCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, open for the child to join through.
    procs: fs::File,
}

/// Set after a cgroup could not be made, so later runs go straight to the subreaper.
static NO_CGROUP: AtomicBool = AtomicBool::new(false);

impl RunCgroup {
    fn create() -> Option<RunCgroup> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        if NO_CGROUP.load(Ordering::Relaxed) {
            return None;
        }
        if !confine::has_sys_admin() {
            NO_CGROUP.store(true, Ordering::Relaxed);
            tracing::debug!(
                "no cgroup for the run (no CAP_SYS_ADMIN for its cgroup namespace); using the subreaper"
            );
            return None;
        }
        let parent = own_cgroup()?;
        static SWEPT: OnceLock<()> = OnceLock::new();
        SWEPT.get_or_init(|| sweep_stale(&parent));
        let dir = parent.join(format!(
            "runx-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let give_up = |why: String| {
            tracing::debug!("no cgroup for the run ({why}); using the subreaper");
            NO_CGROUP.store(true, Ordering::Relaxed);
            None
        };
        if let Err(e) = fs::create_dir(&dir) {
            return give_up(format!("cannot create {}: {e}", dir.display()));
        }
        if !dir.join("cgroup.kill").exists() {
            let _ = fs::remove_dir(&dir);
            return give_up("the kernel has no cgroup.kill".to_string());
        }
        match fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(procs) => Some(RunCgroup { dir, procs }),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                give_up(format!("cannot open cgroup.procs: {e}"))
            }
        }
    }

    fn members(&self) -> Vec<Pid> {
        fs::read_to_string(self.dir.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .map(Pid::from_raw)
            .collect()
    }

    fn populated(&self) -> bool {
        fs::read_to_string(self.dir.join("cgroup.events"))
            .map(|e| e.lines().any(|l| l == "populated 1"))
            .unwrap_or(false)
    }

    /// `cgroup.kill`, then waits for the cgroup to empty.
    fn kill(&self) {
        if !self.populated() {
            return;
        }
        let written = fs::OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.kill"))
            .and_then(|mut f| f.write_all(b"1"));
        if let Err(e) = written {
            tracing::warn!("cannot kill cgroup {}: {e}", self.dir.display());
            for pid in self.members() {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
        let deadline = Instant::now() + SWEEP_DEADLINE;
        while self.populated() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.kill();
        // A cgroup can be removed once its last member has been fully released.
        for _ in 0..200 {
            match fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    tracing::warn!("cannot remove cgroup {}: {e}", self.dir.display());
                    return;
                }
            }
        }
        tracing::warn!("cgroup {} is still busy; left behind", self.dir.display());
    }
}

/// Removes the cgroups that runx processes which no longer exist left beside ours (a runx that
/// was SIGKILLed cannot remove its own), killing what is still in them: descendants that
/// escaped their run and outlived it.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("runx-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if owner == std::process::id() || Path::new(&format!("/proc/{owner}")).exists() {
            continue;
        }
        let stale = RunCgroup {
            dir: entry.path(),
            procs: match fs::File::open(entry.path().join("cgroup.procs")) {
                Ok(f) => f,
                Err(_) => continue,
            },
        };
        tracing::debug!(
            "removing the cgroup {} of a runx that is gone",
            stale.dir.display()
        );
        drop(stale);
    }
}

/// The directory of this process's own cgroup v2, where per-run cgroups are made.
fn own_cgroup() -> Option<PathBuf> {
    static OWN: OnceLock<Option<PathBuf>> = OnceLock::new();
    OWN.get_or_init(|| {
        let cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
        let path = cgroup.lines().find_map(|l| l.strip_prefix("0::"))?;
        let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
        cgroup2_dir(&mounts, path)
    })
    .clone()
}

/// Where the cgroup `path` (as `/proc/self/cgroup` names it) lies, given `/proc/self/mountinfo`.
fn cgroup2_dir(mountinfo: &str, path: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (fields, fs) = line.split_once(" - ")?;
        if fs.split(' ').next() != Some("cgroup2") {
            return None;
        }
        let fields: Vec<&str> = fields.split(' ').collect();
        let (root, mount) = (*fields.get(3)?, unescape(fields.get(4)?));
        let rel = if root == "/" {
            path
        } else {
            path.strip_prefix(root)?
        };
        Some(Path::new(&mount).join(rel.trim_start_matches('/')))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        if bytes[i] == b'\\'
            && let Some(d) = octal
        {
            out.push(
                d.iter()
                    .fold(0u8, |v, b| v.wrapping_mul(8).wrapping_add(b - b'0')),
            );
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------------------------
// subreaper

/// What `/proc/PID/stat` says of a process.
#[derive(Clone, Copy)]
struct Stat {
    ppid: i32,
    start: u64,
    zombie: bool,
}

struct Reaper {
    /// `NAME=value` that only this run's processes carry in their environment.
    marker: Option<Vec<u8>>,
    leader: Option<i32>,
    /// Every descendant seen, with its start time (a pid reused later is another process).
    seen: HashMap<i32, u64>,
    last_scan: Option<Instant>,
}

impl Reaper {
    fn new(marker: Option<Vec<u8>>) -> Reaper {
        static SUBREAPER: OnceLock<()> = OnceLock::new();
        SUBREAPER.get_or_init(|| {
            if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
                tracing::warn!("cannot become a child subreaper ({e}); orphans go to init");
            }
        });
        Reaper {
            marker,
            leader: None,
            seen: HashMap::new(),
            last_scan: None,
        }
    }

    /// Records the descendants of the leader and of every process already seen, and the
    /// orphans re-parented to runx that carry the marker.
    fn observe(&mut self, now: bool) {
        if !now && self.last_scan.is_some_and(|t| t.elapsed() < SCAN_INTERVAL) {
            return;
        }
        self.last_scan = Some(Instant::now());
        let table = proc_table();
        let me = std::process::id() as i32;
        let mut roots: Vec<i32> = self
            .seen
            .iter()
            .filter(|(pid, start)| table.get(pid).is_some_and(|s| s.start == **start))
            .map(|(pid, _)| *pid)
            .collect();
        roots.extend(self.leader);
        for (&pid, stat) in &table {
            if stat.ppid == me
                && Some(pid) != self.leader
                && !self.seen.contains_key(&pid)
                && self.carries_marker(pid)
            {
                roots.push(pid);
                self.seen.insert(pid, stat.start);
            }
        }
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for (&pid, stat) in &table {
            children.entry(stat.ppid).or_default().push(pid);
        }
        let mut queue = roots;
        let mut visited = HashSet::new();
        while let Some(pid) = queue.pop() {
            if !visited.insert(pid) {
                continue;
            }
            for &child in children.get(&pid).map_or(&[][..], Vec::as_slice) {
                if let Some(stat) = table.get(&child) {
                    self.seen.entry(child).or_insert(stat.start);
                    queue.push(child);
                }
            }
        }
    }

    fn carries_marker(&self, pid: i32) -> bool {
        let Some(marker) = &self.marker else {
            return false;
        };
        fs::read(format!("/proc/{pid}/environ"))
            .map(|env| {
                env.split(|&b| b == 0)
                    .any(|entry| entry == marker.as_slice())
            })
            .unwrap_or(false)
    }

    /// Seen descendants that still exist (zombies included), the leader left out.
    fn alive(&self) -> Vec<i32> {
        self.seen
            .iter()
            .filter(|(pid, start)| {
                Some(**pid) != self.leader && stat_of(**pid).is_some_and(|s| s.start == **start)
            })
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// Kills every seen descendant until none is left, reaping those re-parented to runx.
    fn sweep(&mut self) {
        let deadline = Instant::now() + SWEEP_DEADLINE;
        let me = std::process::id() as i32;
        loop {
            self.observe(true);
            let mut left = false;
            for pid in self.alive() {
                let Some(stat) = stat_of(pid) else { continue };
                if !stat.zombie {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                    left = true;
                }
                if stat.ppid == me {
                    match waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)) {
                        Ok(nix::sys::wait::WaitStatus::StillAlive) => left = true,
                        Ok(_) | Err(Errno::ECHILD) => {
                            self.seen.remove(&pid);
                        }
                        Err(_) => left = true,
                    }
                } else if stat.zombie {
                    // Someone else's child: its parent (a seen descendant) is being killed, after
                    // which it is re-parented here and reaped on a later round.
                    left = true;
                }
            }
            if !left || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Every process in `/proc`, by pid.
fn proc_table() -> HashMap<i32, Stat> {
    let mut table = HashMap::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return table;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if let Some(stat) = stat_of(pid) {
            table.insert(pid, stat);
        }
    }
    table
}

/// Parent, start time and state of `pid`, from `/proc/PID/stat`.
fn stat_of(pid: i32) -> Option<Stat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself hold spaces and parentheses.
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(Stat {
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_of_a_path() {
        let mountinfo = "24 1 0:22 / /sys/fs/cgroup/unified rw,relatime shared:6 - cgroup2 cgroup2 rw\n\
                         25 1 0:23 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(
            cgroup2_dir(mountinfo, "/user.slice/x.scope"),
            Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice/x.scope"))
        );
        let nested = "30 1 0:22 /outer /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_dir(nested, "/outer/inner"),
            Some(PathBuf::from("/sys/fs/cgroup/inner"))
        );
        assert_eq!(
            cgroup2_dir("25 1 0:23 / /x rw - cgroup cgroup rw\n", "/"),
            None
        );
        assert_eq!(unescape("/a\\040b"), "/a b");
    }

    #[test]
    fn reads_proc_stat_with_odd_names() {
        let me = stat_of(std::process::id() as i32).expect("own stat");
        assert_eq!(me.ppid, nix::unistd::getppid().as_raw());
        assert!(!me.zombie);
    }
}
