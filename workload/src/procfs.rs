//! What `/proc` says of a process: its status fields and its children.

/// A `kB` field (`VmHWM`, `RssAnon`, …) of `/proc/<pid>/status`.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status_field_kib(&text, field)
}

/// A `kB` field of the text of a `/proc/<pid>/status` file.
pub fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Process ids whose parent is `pid`: from each of its threads' `children` file, which the
/// kernel keeps when built with `CONFIG_PROC_CHILDREN`, or else by scanning every process's
/// `stat` under `/proc`. The scan costs about a millisecond on a quiet machine, so a sampler
/// that ran it every few milliseconds would take a tenth of a core from the run it measures.
pub fn children_of(pid: u32) -> Vec<u32> {
    children_from_tasks(pid).unwrap_or_else(|| children_by_scan(pid))
}

/// Children listed in `/proc/<pid>/task/*/children`; `None` when the kernel has no such files.
fn children_from_tasks(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut children = Vec::new();
    let mut any = false;
    for task in tasks.flatten() {
        // A thread may end between the listing and the read; its children moved to another.
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        any = true;
        children.extend(
            text.split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok()),
        );
    }
    any.then_some(children)
}

/// Process ids whose parent is `pid`, by scanning `/proc`.
fn children_by_scan(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&child| {
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|s| {
                    // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
                    let rest = &s[s.rfind(')')? + 1..];
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_status() {
        let me = std::process::id();
        assert!(proc_status_kib(me, "VmHWM").unwrap() > 0);
        assert_eq!(proc_status_kib(me, "NoSuchField"), None);
    }

    #[test]
    fn children_are_found_from_any_thread_and_agree_with_the_scan() {
        // Spawned from a second thread: its children live in that thread's `children` file.
        let mut child = std::thread::spawn(|| {
            std::process::Command::new("sleep")
                .arg("5")
                .spawn()
                .unwrap()
        })
        .join()
        .unwrap();
        let me = std::process::id();
        let found = children_of(me);
        let scanned = children_by_scan(me);
        let tasks = children_from_tasks(me);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(scanned.contains(&child.id()), "{scanned:?}");
        // Where the kernel keeps `children` files, they list the child although the thread
        // that spawned it has ended.
        if let Some(tasks) = tasks {
            assert!(tasks.contains(&child.id()), "{tasks:?}");
        }
    }
}
