//! What keeps a cli-tool's descendants in the run's cgroup, even when runx runs as root.
//!
//! Joining the run's cgroup is not enough: a process may write its pid into any
//! `cgroup.procs` it can write to, and root can write to all of them. A cgroup namespace alone
//! does not stop that either: the kernel refuses moves outside a namespace's root only on
//! hierarchies mounted with `nsdelegate`, which is seldom the case. So the child, between fork
//! and exec, after joining the run's cgroup:
//!
//! 1. enters a cgroup namespace (the run's cgroup is its root) and a mount namespace whose
//!    mounts no longer propagate back to runx's;
//! 2. remounts every cgroup hierarchy read-only in that mount namespace, so no `cgroup.procs`
//!    can be written, whatever the process's privileges;
//! 3. drops `CAP_SYS_ADMIN` from its capability bounding set, so that neither the tool nor
//!    anything it starts (setuid programs included) can remount them writable, mount a
//!    hierarchy again or enter runx's mount namespace. A user namespace it might make gets the
//!    mounts locked read-only, and a hierarchy it mounts there shows only the run's cgroup.
//!
//! The price: a cli-tool started by runx as root runs without `CAP_SYS_ADMIN` and sees the
//! cgroup hierarchies read-only. Where runx lacks `CAP_SYS_ADMIN` it cannot do this, and uses
//! the subreaper instead (`descendants.rs`).

use std::ffi::CString;
use std::io;
use std::sync::OnceLock;

/// `CAP_SYS_ADMIN` (linux/capability.h).
const CAP_SYS_ADMIN: u64 = 21;

/// Whether this process holds `CAP_SYS_ADMIN` (in `CapEff` of `/proc/self/status`), read once:
/// every cli-tool run asks.
pub(super) fn has_sys_admin() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
                u64::from_str_radix(line.trim_start_matches("CapEff:").trim(), 16).ok()
            })
            .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
    })
}

/// The mount points of every cgroup hierarchy (`cgroup` and `cgroup2` in
/// `/proc/self/mountinfo`), read once, ready for the child to use without allocating.
pub(super) fn cgroup_mounts() -> &'static [CString] {
    static MOUNTS: OnceLock<Vec<CString>> = OnceLock::new();
    MOUNTS.get_or_init(|| {
        std::fs::read_to_string("/proc/self/mountinfo")
            .map(|info| mount_points(&info))
            .unwrap_or_default()
    })
}

/// The cgroup mount points listed in a `mountinfo` text.
fn mount_points(info: &str) -> Vec<CString> {
    info.lines()
        .filter_map(|line| {
            let (mount, rest) = line.split_once(" - ")?;
            let fstype = rest.split(' ').next()?;
            let point = mount.split(' ').nth(4)?;
            // `\040` and the like: a mount point with spaces is no cgroup hierarchy's.
            let wanted = matches!(fstype, "cgroup" | "cgroup2") && !point.contains('\\');
            wanted.then(|| CString::new(point).ok()).flatten()
        })
        .collect()
}

/// In the child between fork and exec: joins the cgroup through `procs` (its `cgroup.procs`,
/// open for writing), then confines the child as the module says.
///
/// # Safety
///
/// Call only in a forked child before exec: it changes this process's namespaces, mounts and
/// capabilities. It makes system calls only, and allocates nothing.
#[allow(unsafe_code, reason = "system calls between fork and exec")]
pub(super) unsafe fn join_and_confine(procs: i32, mounts: &[CString]) -> io::Result<()> {
    use nix::libc;
    let fail = || Err(io::Error::last_os_error());
    // SAFETY (each call below): plain system calls on a descriptor the parent keeps open and on
    // NUL-terminated strings that live as long as `mounts`; the pointers passed as null are
    // ones the calls accept as null.
    unsafe {
        if libc::write(procs, b"0".as_ptr().cast(), 1) != 1 {
            return fail();
        }
        if libc::unshare(libc::CLONE_NEWCGROUP | libc::CLONE_NEWNS) != 0 {
            return fail();
        }
        let root = c"/";
        let flags = libc::MS_REC | libc::MS_SLAVE;
        let none = std::ptr::null();
        if libc::mount(none, root.as_ptr(), none, flags, none.cast()) != 0 {
            return fail();
        }
        for point in mounts {
            let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY;
            if libc::mount(none, point.as_ptr(), none, flags, none.cast()) != 0 {
                return fail();
            }
        }
        if libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0 {
            return fail();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_mount_points_are_read_from_mountinfo() {
        let info = "\
30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:5 - cgroup2 cgroup2 rw
32 30 0:28 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:6 - cgroup cgroup rw,memory
33 25 0:29 / /mnt/with\\040space rw - cgroup2 cgroup2 rw
34 25 0:30 / /proc rw - proc proc rw
garbage line
";
        let points: Vec<String> = mount_points(info)
            .into_iter()
            .map(|p| p.into_string().unwrap())
            .collect();
        assert_eq!(points, ["/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory"]);
    }
}
