//! Peak memory of `runx skill` runs as children: one at a time, and several at once.

use runx_workload::{Peaks, Sampler, system_shmem_kib};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Peak memory of one `runx skill` run.
#[derive(Clone, Copy, Default)]
pub struct Memory {
    /// Peaks over `runx` and its worker (see `runx_workload`).
    pub peaks: Peaks,
}

/// Runs `runx --engine NAME skill` over the archive (1 MiB pages) as a child, sampling the
/// resident and non-evictable memory of it and its worker.
pub fn child_memory(runx: &Path, ws: &Path, name: &str) -> Result<Memory, String> {
    let runs = concurrent_runs(runx, ws, 1, name)?;
    Ok(Memory { peaks: runs })
}

/// Runs `n` `runx --engine NAME skill` over the same archive at once (1 MiB pages), sampling
/// the sum of their trees and the growth of the system's shared memory.
fn concurrent_runs(runx: &Path, ws: &Path, n: usize, name: &str) -> Result<Peaks, String> {
    let mut children = Vec::new();
    let mut samplers = Vec::new();
    let baseline = system_shmem_kib();
    for i in 0..n {
        let child = Command::new(runx)
            .args([
                "--engine",
                name,
                "skill",
                "pkg",
                &runx_workload::runner_name(1 << 20),
                "-i",
                "archive_file=archive.js",
                "--receipt-dir",
                &format!("mem-receipts-{i}"),
            ])
            .current_dir(ws)
            .env_remove("RUNX_WORKER")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        samplers.push(Sampler::start(child.id(), Duration::from_millis(10)));
        children.push(child);
    }
    let mut total = Peaks::default();
    let mut failure = None;
    for (i, (child, sampler)) in children.into_iter().zip(samplers).enumerate() {
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        let p = sampler.finish();
        // Trees run side by side: their peaks are summed (an upper bound of the joint peak).
        total.resident_kib += p.resident_kib;
        total.non_evictable_kib += p.non_evictable_kib;
        let _ = std::fs::remove_dir_all(ws.join(format!("mem-receipts-{i}")));
        if !out.status.success() {
            failure = Some(format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    total.shmem_growth_kib = system_shmem_kib().saturating_sub(baseline);
    match failure {
        Some(f) => Err(f),
        None => Ok(total),
    }
}

/// Memory of N concurrent paged runs (default engine) over one archive of M MiB:
/// `RUNX_BENCH_CONCURRENT=NxM` (default 4x64; the check is 8x400).
pub fn concurrency_memory(runx: &Path, ws: &Path) {
    let spec = std::env::var("RUNX_BENCH_CONCURRENT").unwrap_or_else(|_| "4x64".to_string());
    let parsed = spec
        .split_once('x')
        .and_then(|(n, m)| Some((n.parse::<usize>().ok()?, m.parse::<u64>().ok()?)));
    let Some((n, mib)) = parsed.filter(|&(n, m)| n > 0 && m > 0) else {
        println!("\nconcurrent memory: skipped, RUNX_BENCH_CONCURRENT is `{spec}`, not NxMIB");
        return;
    };
    let path = ws.join("archive.js");
    let written = std::fs::File::create(&path)
        .and_then(|mut f| runx_workload::write_archive(&mut f, mib << 20));
    if let Err(e) = written {
        println!("\nconcurrent memory: skipped, cannot write the archive: {e}");
        return;
    }
    match concurrent_runs(runx, ws, n, runx_worker::DEFAULT_ENGINE) {
        Ok(p) => println!(
            "\nconcurrent memory: {n} runs of `runx skill` over one {mib} MiB archive at once (1 MiB pages): non-evictable {:.1} MiB in all ({:.1} MiB per run), resident {:.1} MiB in all, system Shmem grew {:.1} MiB",
            p.non_evictable_kib as f64 / 1024.0,
            p.non_evictable_kib as f64 / 1024.0 / n as f64,
            p.resident_kib as f64 / 1024.0,
            p.shmem_growth_kib as f64 / 1024.0,
        ),
        Err(e) => println!("\nconcurrent memory: failed: {e}"),
    }
    let _ = std::fs::remove_file(&path);
}
