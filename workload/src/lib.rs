//! The page-throughput workload of runx: a synthetic archive, the parse-and-aggregate module, a
//! skill package around it and one measured paged run, with the memory and statistics the
//! measurements report. `runx bench pages` and `cargo bench -p runx-benches` both run it, so
//! the command a user runs and the benchmark CI keeps measure the same thing.
//!
//! | module | what it holds |
//! |---|---|
//! | `pages` | the archive generator, the module, the package and one measured run ([`Bench`]) |
//! | `memory` | memory as the kernel accounts it, sampled while a run goes ([`Sampler`]) |
//! | `procfs` | status fields and children of a process, from `/proc` |
//! | `stats` | percentiles and the growth exponent of a series |
#![forbid(unsafe_code)]

mod memory;
mod pages;
mod procfs;
mod stats;

pub use memory::{
    Peaks, Resident, Sampler, new_file_writes, resident_of, resident_of_tree, system_shmem_kib,
};
pub use pages::{
    AGGREGATE_MODULE, ARCHIVE_PREFIX, ArchiveInfo, Bench, PAGE_SIZES, PagesRun, TimeSplit, archive,
    runner_name, write_archive, write_package,
};
pub use procfs::{children_of, proc_status_kib, status_field_kib};
pub use stats::{Stats, growth_exponent, stats};
