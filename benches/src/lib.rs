//! The page-throughput workload ([`workload`]), shared by `cargo bench -p runx-benches` and
//! `runx bench pages`, and the helpers of the benchmarks: statistics, the log-log fit and child
//! memory peaks.
#![forbid(unsafe_code)]

pub mod memory;
pub mod workload;

use std::time::Duration;

pub use workload::{AGGREGATE_MODULE, archive};

/// Median and spread of a sample.
pub struct Stats {
    /// 50th percentile.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Smallest.
    pub min: Duration,
    /// Largest.
    pub max: Duration,
}

/// Percentiles of `samples` (sorted in place; must not be empty).
pub fn stats(samples: &mut [Duration]) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Stats {
        p50: at(0.5),
        p99: at(0.99),
        min: samples[0],
        max: samples[samples.len() - 1],
    }
}

/// The growth exponent `b` of `y ≈ a·x^b`: the least-squares slope of `ln y` on `ln x`.
/// `None` with fewer than two distinct positive `x`, or any non-positive value.
pub fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 || points.iter().any(|&(x, y)| x <= 0.0 || y <= 0.0) {
        return None;
    }
    let logs: Vec<(f64, f64)> = points.iter().map(|&(x, y)| (x.ln(), y.ln())).collect();
    let n = logs.len() as f64;
    let mx = logs.iter().map(|p| p.0).sum::<f64>() / n;
    let my = logs.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = logs.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= f64::EPSILON {
        return None;
    }
    Some(sxy / sxx)
}

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
    fn fit_recovers_exponents() {
        let lin: Vec<(f64, f64)> = [8.0, 64.0, 256.0, 512.0]
            .iter()
            .map(|&x| (x, 3.0 * x))
            .collect();
        assert!((growth_exponent(&lin).unwrap() - 1.0).abs() < 1e-9);
        let quad: Vec<(f64, f64)> = [1.0, 2.0, 4.0].iter().map(|&x| (x, x * x)).collect();
        assert!((growth_exponent(&quad).unwrap() - 2.0).abs() < 1e-9);
        let flat = [(1.0, 5.0), (10.0, 5.0)];
        assert!(growth_exponent(&flat).unwrap().abs() < 1e-9);
        // Noise around x^1 still fits close to 1.
        let noisy = [(8.0, 8.4), (64.0, 61.0), (256.0, 262.0), (512.0, 500.0)];
        assert!((growth_exponent(&noisy).unwrap() - 1.0).abs() < 0.05);
    }

    #[test]
    fn fit_rejects_degenerate_input() {
        assert_eq!(growth_exponent(&[]), None);
        assert_eq!(growth_exponent(&[(1.0, 1.0)]), None);
        assert_eq!(growth_exponent(&[(2.0, 1.0), (2.0, 3.0)]), None);
        assert_eq!(growth_exponent(&[(0.0, 1.0), (2.0, 3.0)]), None);
        assert_eq!(growth_exponent(&[(1.0, -1.0), (2.0, 3.0)]), None);
    }

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
