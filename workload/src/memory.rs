//! Memory as the kernel accounts it, for a process and its workers, sampled while a run goes.
//!
//! Resident set size alone hides what a run really holds: pages of a memory file (`memfd`,
//! tmpfs) are shared memory that no reclaim can take back, and once unmapped they leave every
//! process's RSS while still occupying memory. So a sample reads, for the process and each of
//! its children (the workers), `RssAnon` (private memory), `RssFile` (mapped file pages, which
//! the kernel can evict) and `RssShmem` (mapped shared memory, which it cannot), plus the
//! system's `Shmem` from `/proc/meminfo`, whose growth during a run counts unmapped memory
//! files too.
//!
//! Non-evictable memory of a run = its processes' `RssAnon` + the larger of their `RssShmem`
//! and the growth of the system's `Shmem`. Resident memory = `RssAnon + RssFile + RssShmem`.

use crate::procfs::{children_of, status_field_kib};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// One sample of a process tree, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resident {
    /// Private memory (`RssAnon`).
    pub anon_kib: u64,
    /// Mapped file pages, evictable (`RssFile`).
    pub file_kib: u64,
    /// Mapped shared memory, not evictable (`RssShmem`).
    pub shmem_kib: u64,
}

impl Resident {
    /// Everything resident.
    pub fn total_kib(&self) -> u64 {
        self.anon_kib + self.file_kib + self.shmem_kib
    }

    fn add(&mut self, other: Resident) {
        self.anon_kib += other.anon_kib;
        self.file_kib += other.file_kib;
        self.shmem_kib += other.shmem_kib;
    }
}

/// Reads `/proc` files into one buffer kept from read to read. `read_to_string` into an empty
/// string reads a `/proc` file (whose size the kernel reports as 0) in growing probes of 32,
/// 32, 64, … bytes: nine system calls for a `status` file instead of two.
#[derive(Default)]
struct ProcText {
    buf: String,
}

/// Room for one `/proc/<pid>/status` or `/proc/meminfo` (about 1.5 KiB each).
const PROC_TEXT_BYTES: usize = 8 * 1024;

impl ProcText {
    /// The text of `path`; empty when it cannot be read (a process that is gone).
    fn read(&mut self, path: &str) -> &str {
        use std::io::Read;
        self.buf.clear();
        self.buf.reserve(PROC_TEXT_BYTES);
        let read = std::fs::File::open(path).and_then(|mut f| f.read_to_string(&mut self.buf));
        if read.is_err() {
            self.buf.clear();
        }
        &self.buf
    }

    /// The resident memory of `pid` (zero for a process that is gone), from one read of its
    /// `status`.
    fn resident_of(&mut self, pid: u32) -> Resident {
        let status = self.read(&format!("/proc/{pid}/status"));
        let field = |name| status_field_kib(status, name).unwrap_or(0);
        Resident {
            anon_kib: field("RssAnon"),
            file_kib: field("RssFile"),
            shmem_kib: field("RssShmem"),
        }
    }

    /// The resident memory of `pid` and of `children`, summed.
    fn resident_of_all(&mut self, pid: u32, children: &[u32]) -> Resident {
        let mut total = self.resident_of(pid);
        for &child in children {
            total.add(self.resident_of(child));
        }
        total
    }

    /// The system's shared memory (`Shmem` of `/proc/meminfo`), in KiB.
    fn system_shmem_kib(&mut self) -> u64 {
        self.read("/proc/meminfo")
            .lines()
            .find_map(|l| l.strip_prefix("Shmem:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }
}

/// The resident memory of `pid` (zero for a process that is gone), from one read of its
/// `status`.
pub fn resident_of(pid: u32) -> Resident {
    ProcText::default().resident_of(pid)
}

/// The resident memory of `pid` and its children, summed.
pub fn resident_of_tree(pid: u32) -> Resident {
    ProcText::default().resident_of_all(pid, &children_of(pid))
}

/// The system's shared memory (`Shmem` of `/proc/meminfo`), in KiB.
pub fn system_shmem_kib() -> u64 {
    ProcText::default().system_shmem_kib()
}

/// Peaks of a sampled run, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Peaks {
    /// Peak of the memory no reclaim can take back (see the module docs).
    pub non_evictable_kib: u64,
    /// Peak of everything resident in the run's processes.
    pub resident_kib: u64,
    /// Peak growth of the system's shared memory.
    pub shmem_growth_kib: u64,
}

/// Samples between two lookups of the process's children: workers start with a run and live
/// through it, and looking them up is the dearest part of a sample.
const SAMPLES_PER_CHILD_LOOKUP: u32 = 10;

/// Samples the process tree of `pid` until [`Sampler::finish`]. A sample costs well under a
/// tenth of a millisecond, so sampling every 10 ms takes under 1% of a core from the run.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Peaks>,
}

impl Sampler {
    /// Starts sampling `pid` and its children every `every`.
    pub fn start(pid: u32, every: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let baseline = system_shmem_kib();
        let thread = std::thread::spawn(move || {
            let mut peaks = Peaks::default();
            let mut children = Vec::new();
            let mut text = ProcText::default();
            for sample in 0u32.. {
                if sample % SAMPLES_PER_CHILD_LOOKUP == 0 {
                    children = children_of(pid);
                }
                let r = text.resident_of_all(pid, &children);
                let growth = text.system_shmem_kib().saturating_sub(baseline);
                peaks.shmem_growth_kib = peaks.shmem_growth_kib.max(growth);
                peaks.non_evictable_kib = peaks
                    .non_evictable_kib
                    .max(r.anon_kib + r.shmem_kib.max(growth));
                peaks.resident_kib = peaks.resident_kib.max(r.total_kib());
                if flag.load(Ordering::Relaxed) {
                    break;
                }
                std::thread::sleep(every);
            }
            peaks
        });
        Sampler { stop, thread }
    }

    /// Stops sampling; the peaks seen.
    pub fn finish(self) -> Peaks {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// The time to write a new file of `bytes` in 1 MiB chunks into `dir` (unlinked at once, so
/// it never reaches the disk), first after `idle` without work, then again at once: what the
/// copy into a paged run's snapshot pays for the page cache it fills, in the two states this
/// machine's memory can be in.
///
/// On a virtual machine that reports free memory to its host (virtio-balloon free page
/// reporting), free blocks that stay unused for a few seconds are handed back, and the host
/// has to provide them again when they are next used. On this project's machine kind a new
/// file written after an idle spell costs 10–15 times one written right after another was
/// freed (anonymous huge pages show the same gap). Elsewhere the two times are alike.
pub fn new_file_writes(
    dir: &std::path::Path,
    bytes: usize,
    idle: Duration,
) -> std::io::Result<(Duration, Duration)> {
    let chunk = vec![0x5au8; 1 << 20];
    let write_once = || -> std::io::Result<Duration> {
        use std::io::Write;
        let path = dir.join(format!("new-file-write-{}", std::process::id()));
        let started = std::time::Instant::now();
        let mut file = std::fs::File::create(&path)?;
        std::fs::remove_file(&path)?;
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            file.write_all(&chunk[..n])?;
            left -= n;
        }
        Ok(started.elapsed())
    };
    std::thread::sleep(idle);
    let after_idle = write_once()?;
    let at_once = write_once()?;
    Ok((after_idle, at_once))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_sees_this_process() {
        let s = Sampler::start(std::process::id(), Duration::from_millis(1));
        let held = vec![1u8; 8 << 20];
        std::thread::sleep(Duration::from_millis(20));
        let peaks = s.finish();
        assert!(held.iter().all(|&b| b == 1));
        assert!(peaks.resident_kib >= 8 * 1024, "{peaks:?}");
        assert!(peaks.non_evictable_kib >= 8 * 1024, "{peaks:?}");
    }

    #[test]
    fn one_buffer_reads_file_after_file_and_a_missing_one_reads_empty() {
        let mut text = ProcText::default();
        let me = std::process::id();
        assert!(text.resident_of(me).anon_kib > 0);
        // A process id above the kernel's maximum is never in use.
        assert_eq!(text.read("/proc/4294967295/status"), "");
        assert_eq!(text.resident_of(u32::MAX), Resident::default());
        assert!(text.read("/proc/meminfo").contains("Shmem:"));
        // The status read after the longer meminfo holds only the status.
        let status = text.read(&format!("/proc/{me}/status")).to_string();
        assert!(status.starts_with("Name:") && !status.contains("MemTotal"));
        assert!(text.buf.capacity() >= PROC_TEXT_BYTES);
    }

    #[test]
    fn new_file_writes_leave_nothing_behind() {
        let dir = std::env::temp_dir().join(format!("runx-bench-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (idle, at_once) = new_file_writes(&dir, (3 << 20) + 5, Duration::ZERO).unwrap();
        assert!(idle > Duration::ZERO && at_once > Duration::ZERO);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
