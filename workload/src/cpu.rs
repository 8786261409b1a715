//! CPU time of a process and its workers over a span of wall time, from `/proc`.
//!
//! Why a benchmark wants it: on a machine whose cores are all busy, a parallel run cannot go
//! faster than its CPU time spread evenly over the cores. A sequential paged run already uses
//! more than one core (the host frames and hashes pages while the worker computes; V8 compiles
//! on threads of its own), so the CPU a run uses tells how far a parallel run could ever get.
//!
//! What is counted: every thread of the process (`utime + stime` of `/proc/<pid>/stat`), its
//! children alive when the clock starts or stops (the same fields of theirs), and children
//! reaped in between (the growth of the process's `cutime + cstime`, which the kernel adds
//! when a child is waited for). A child that was already running at the start and is reaped
//! before the end is counted from the start only: what it used before is taken back out.
//! Times are in the kernel's clock ticks, so a reading is good to 10 ms per process.

use crate::procfs::children_of;
use std::collections::HashMap;
use std::time::Duration;

/// `USER_HZ`: the unit of the times in `/proc/<pid>/stat`. Linux fixes it at 100 on every
/// architecture it exports these files on, whatever the kernel's own tick rate.
const TICKS_PER_SECOND: u64 = 100;

/// The CPU times of one `/proc/<pid>/stat`, in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct StatTimes {
    /// `utime + stime`: the process's own threads.
    own: u64,
    /// `cutime + cstime`: children it has waited for.
    reaped_children: u64,
}

/// The CPU times in the text of a `/proc/<pid>/stat` file; `None` when it is not one.
///
/// The second field is the command name in parentheses, which may itself hold spaces and
/// parentheses, so the fields are counted from the last `)`.
fn stat_times(stat: &str) -> Option<StatTimes> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After the name: state (field 3) … utime (14), stime (15), cutime (16), cstime (17).
    let fields: Vec<&str> = rest.split_whitespace().take(15).collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<i64>().ok();
    let (utime, stime, cutime, cstime) = (field(14)?, field(15)?, field(16)?, field(17)?);
    let ticks = |a: i64, b: i64| u64::try_from(a.checked_add(b)?).ok();
    Some(StatTimes {
        own: ticks(utime, stime)?,
        reaped_children: ticks(cutime, cstime)?,
    })
}

/// The CPU time `pid`'s own threads have used so far (`utime + stime`), children not counted;
/// `None` where `/proc` cannot be read.
pub fn own_cpu(pid: u32) -> Option<Duration> {
    let ticks = read_times(pid)?.own;
    Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

fn read_times(pid: u32) -> Option<StatTimes> {
    stat_times(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A reading of a process tree at one instant.
#[derive(Clone, Debug, Default)]
struct Reading {
    process: StatTimes,
    /// Each live child's own ticks.
    children: HashMap<u32, u64>,
}

impl Reading {
    fn take(pid: u32) -> Option<Reading> {
        let process = read_times(pid)?;
        let children = children_of(pid)
            .into_iter()
            .filter_map(|c| Some((c, read_times(c)?.own)))
            .collect();
        Some(Reading { process, children })
    }
}

/// The CPU time `pid` and its workers use from [`CpuClock::start`] to [`CpuClock::stop`].
#[derive(Clone, Debug)]
pub struct CpuClock {
    pid: u32,
    start: Option<Reading>,
}

impl CpuClock {
    /// Starts counting for `pid` (usually this process).
    pub fn start(pid: u32) -> CpuClock {
        CpuClock {
            pid,
            start: Reading::take(pid),
        }
    }

    /// The CPU time used since the start; `None` where `/proc` cannot be read.
    pub fn stop(&self) -> Option<Duration> {
        let end = Reading::take(self.pid)?;
        let ticks = used_ticks(self.start.as_ref()?, &end);
        Some(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
    }
}

/// The ticks used between two readings of one process tree (see the module docs).
fn used_ticks(start: &Reading, end: &Reading) -> u64 {
    let own = end.process.own.saturating_sub(start.process.own);
    let reaped = end
        .process
        .reaped_children
        .saturating_sub(start.process.reaped_children);
    let live: u64 = end
        .children
        .iter()
        .map(|(pid, &t)| t.saturating_sub(start.children.get(pid).copied().unwrap_or(0)))
        .sum();
    // Children seen at the start and gone at the end were reaped with all their ticks; the
    // ones they had at the start were not used in between.
    let before: u64 = start
        .children
        .iter()
        .filter(|(pid, _)| !end.children.contains_key(pid))
        .map(|(_, &t)| t)
        .sum();
    (own + reaped + live).saturating_sub(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 300 0 0 0 \
                    120 30 7 5 20 0 3 0 100 1000 200";
        assert_eq!(
            stat_times(line),
            Some(StatTimes {
                own: 150,
                reaped_children: 12
            })
        );
        assert_eq!(stat_times("4242 (x) S 1 2"), None);
        assert_eq!(stat_times("no name here"), None);
        let negative = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 -5 1 0 0";
        assert_eq!(stat_times(negative), None);
    }

    #[test]
    fn reaped_workers_count_only_their_time_within_the_span() {
        let reading = |own, reaped, children: &[(u32, u64)]| Reading {
            process: StatTimes {
                own,
                reaped_children: reaped,
            },
            children: children.iter().copied().collect(),
        };
        // Worker 7 ran before (40 ticks) and was reaped with 100 in all; worker 8 started
        // and is still running with 30; worker 9 started and was reaped with 25.
        let start = reading(10, 0, &[(7, 40)]);
        let end = reading(15, 125, &[(8, 30)]);
        assert_eq!(used_ticks(&start, &end), 5 + (100 - 40) + 25 + 30);
        // Nothing happened: nothing used.
        assert_eq!(used_ticks(&start, &start), 0);
    }

    #[test]
    fn computing_here_and_in_a_reaped_child_moves_the_clock() {
        let clock = CpuClock::start(std::process::id());
        let began = std::time::Instant::now();
        let mut x = 0u64;
        let used = || clock.stop().expect("/proc is readable on Linux");
        while used() < Duration::from_millis(30) && began.elapsed() < Duration::from_secs(20) {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        }
        assert!(used() >= Duration::from_millis(30), "{:?}", used());
        // A child that computes and is waited for: its time arrives through `cutime`.
        let before = used();
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh runs");
        assert!(status.success());
        assert!(
            used() >= before + Duration::from_millis(20),
            "{before:?} -> {:?}",
            used()
        );
    }
}
