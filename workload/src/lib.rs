//! The page-throughput workload of runx: a synthetic archive, the parse-and-aggregate module, a
//! skill package around it and one measured paged run, with the memory and statistics the
//! measurements report. `runx bench pages` and `cargo bench -p runx-benches` both run it, so
//! the command a user runs and the benchmark CI keeps measure the same thing.
//!
//! | module | what it holds |
//! |---|---|
//! | `pages` | the archive generator, the module, the package and one measured run ([`Bench`]) |
//! | `memory` | memory as the kernel accounts it, sampled while a run goes ([`Sampler`]) |
//! | `cpu` | the CPU time of a process and its workers over a run ([`CpuClock`]) |
//! | `procfs` | status fields and children of a process, from `/proc` |
//! | `stats` | percentiles and the growth exponent of a series |
//!
//! ```
//! use runx_workload::{AGGREGATE_MODULE, archive, growth_exponent};
//!
//! // A generated archive of about 64 KiB (whole records, so a little under): its bytes and
//! // how many records it holds.
//! let (bytes, records) = archive(64 * 1024);
//! assert!(bytes.len() > 60 * 1024 && bytes.len() <= 64 * 1024 && records > 0);
//! assert!(AGGREGATE_MODULE.contains("runx_page"));
//! // Time that doubles with size grows with exponent 1.
//! let fit = growth_exponent(&[(1.0, 2.0), (2.0, 4.0), (4.0, 8.0)]);
//! assert!(fit.is_some_and(|b| (b - 1.0).abs() < 1e-9));
//! ```
#![forbid(unsafe_code)]

mod cpu;
mod memory;
mod pages;
mod procfs;
mod stats;

pub use cpu::{CpuClock, own_cpu};
pub use memory::{
    Peaks, Resident, Sampler, new_file_writes, resident_of, resident_of_tree, system_shmem_kib,
};
pub use pages::{
    AGGREGATE_MODULE, ARCHIVE_PREFIX, ArchiveInfo, Bench, PAGE_SIZES, PagesRun, TimeSplit, archive,
    kept, map_fold_runner_name, runner_name, write_archive, write_package,
};
pub use procfs::{children_of, proc_status_kib, status_field_kib};
pub use stats::{Stats, growth_exponent, stats};
