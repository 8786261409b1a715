//! Map/fold against sequential, and against Node.js: the workload's aggregate as runx's
//! sequential runner (`page`) and its map/fold runner (`mapPage`, `foldPages` in N partitions)
//! for every engine, each with a module per page and with its module kept per partition
//! (`pages.module: partition`), beside Node.js running the same exports over the same pages in one
//! thread and on N `worker_threads`. Every variant runs once per round, the order turning
//! from round to round, so each ratio pairs runs made under the same load; every answer must
//! be the same bytes.

use crate::alone::framer_alone;
use crate::common::{ROUNDS, ms, num_ratio, page_label, split_line};
use crate::node::{NodeMode, node_run};
use runx_runtime::Runtime;
use runx_worker::WorkerCommand;
use runx_workload::Bench;
use std::path::Path;
use std::time::Duration;

/// The page size of the comparison.
pub const PAGE: usize = 1 << 20;

/// What runs in one variant.
#[derive(Clone, Copy)]
enum Runner<'a> {
    /// runx on `engine`: the sequential runner (pool of 1) or the map/fold runner (pool of N,
    /// N partitions), its module per page or kept per partition.
    Runx {
        rt: &'a Runtime,
        map_fold: bool,
        kept: bool,
        workers: usize,
    },
    Node(NodeMode),
}

/// One variant and its runs, one per round.
struct Variant<'a> {
    runner: Runner<'a>,
    label: String,
    times: Vec<Duration>,
    /// Node.js: starting the worker threads, per round (outside `times`).
    starts: Vec<Duration>,
    /// Where each round's time went, as one line.
    splits: Vec<String>,
    /// runx: the CPU time of runx and its workers, per round.
    cpus: Vec<Option<Duration>>,
}

/// One run's answer.
struct Outcome {
    took: Duration,
    start: Duration,
    pages: u64,
    split: String,
    /// runx: the CPU time of runx and its workers during the run.
    cpu: Option<Duration>,
    /// The output, keys sorted (serde_json's form; the Node.js script writes the same form).
    output: String,
}

impl Variant<'_> {
    fn run(&self, bench: &Bench, ws: &Path) -> Result<Outcome, String> {
        match self.runner {
            Runner::Runx {
                rt,
                map_fold,
                kept,
                workers,
            } => {
                let run = if map_fold {
                    bench.run_map_fold(rt, PAGE, workers, kept, None)
                } else {
                    bench.run_pages(rt, PAGE, kept, None)
                }
                .map_err(|e| format!("{}/{}: {}", e.kind, e.code, e.message))?;
                Ok(Outcome {
                    took: run.wall,
                    start: Duration::ZERO,
                    pages: u64::from(run.pages),
                    split: split_line(&run.split),
                    cpu: run.cpu,
                    output: serde_json::to_string(&run.output).map_err(|e| e.to_string())?,
                })
            }
            Runner::Node(mode) => {
                let run = node_run(ws, PAGE, mode)?;
                Ok(Outcome {
                    took: run.took,
                    start: run.start,
                    pages: run.pages,
                    split: run.split,
                    cpu: None,
                    output: run.output,
                })
            }
        }
    }

    /// The round of the median time.
    fn median_round(&self) -> usize {
        let mut rounds: Vec<usize> = (0..self.times.len()).collect();
        rounds.sort_by_key(|&r| self.times[r]);
        rounds.get(rounds.len() / 2).copied().unwrap_or_default()
    }

    /// The median time.
    fn median(&self) -> Duration {
        self.times
            .get(self.median_round())
            .copied()
            .unwrap_or_default()
    }
}

/// The figures of one archive size.
pub struct MapFoldRow {
    pub workers: usize,
    pub pages: u64,
    /// Per engine, in the order measured.
    pub engines: Vec<EngineRow>,
    pub node: Option<NodeRow>,
    /// The load average (1 minute) before and after the section.
    pub load: (f64, f64),
}

/// One engine's figures (MB/s are medians; ratios are medians of ratios paired by round).
pub struct EngineRow {
    pub name: String,
    pub sequential: f64,
    pub map_fold: f64,
    /// Map/fold over sequential.
    pub speedup: f64,
    /// The most `speedup` could be with map/fold's CPU time spread over every core.
    pub bound: Option<f64>,
    /// Map/fold over Node.js's worker_threads.
    pub vs_node: Option<f64>,
    /// The same with the module kept per partition.
    pub kept: KeptRow,
}

/// One engine's figures with the module kept per partition.
pub struct KeptRow {
    pub sequential: f64,
    pub map_fold: f64,
    /// Kept map/fold over kept sequential.
    pub speedup: f64,
    /// Kept map/fold over map/fold with a module per page.
    pub over_per_page: f64,
    /// Kept map/fold over Node.js's worker_threads.
    pub vs_node: Option<f64>,
}

/// Node.js's figures, as [`EngineRow`]'s.
#[derive(Clone, Copy)]
pub struct NodeRow {
    /// One thread, the `page` export.
    pub page: f64,
    /// One thread, `mapPage` and `foldPages`.
    pub map_fold: f64,
    /// `mapPage` on worker threads, `foldPages` on the main thread.
    pub threads: f64,
    /// Worker threads over one thread with `page`.
    pub speedup: f64,
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> Option<(f64, f64, f64)> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

/// What [`compare`] needs: the workers, the engines, Node.js and where the archive is.
pub struct Setup<'a> {
    pub worker: &'a WorkerCommand,
    pub engines: &'a [&'static str],
    pub node: Option<&'a str>,
    pub bench: &'a Bench,
    /// Map workers (runx's pool, Node.js's worker threads).
    pub workers: usize,
    pub file_bytes: u64,
}

// Long on purpose: a benchmark reads top to bottom in the order of the report it prints.
/// Runs the comparison over the archive in place; `None` when a run fails or the answers
/// differ (said on stdout).
pub fn compare(setup: &Setup<'_>) -> Option<MapFoldRow> {
    let n = setup.workers;
    let runtimes: Vec<(Runtime, Runtime)> = setup
        .engines
        .iter()
        .map(|e| {
            let rt = || Runtime::new(setup.worker.clone()).with_engine(e);
            // A worker per partition and one for the fold, kept warm from round to round.
            (rt().with_pool_size(1), rt().with_pool_size(n + 1))
        })
        .collect();
    let mut variants = Vec::new();
    for ((seq, par), engine) in runtimes.iter().zip(setup.engines) {
        for (rt, map_fold, kept) in [
            (seq, false, false),
            (par, true, false),
            (seq, false, true),
            (par, true, true),
        ] {
            let module = if kept {
                "module per partition"
            } else {
                "module per page"
            };
            let label = if map_fold {
                format!("runx {engine} map/fold, {n} partitions, {module}")
            } else {
                format!("runx {engine} sequential, {module}")
            };
            variants.push(Variant {
                runner: Runner::Runx {
                    rt,
                    map_fold,
                    kept,
                    workers: n,
                },
                label,
                times: Vec::new(),
                starts: Vec::new(),
                splits: Vec::new(),
                cpus: Vec::new(),
            });
        }
    }
    if let Some(version) = setup.node {
        for (mode, label) in [
            (
                NodeMode::Page,
                format!("Node.js {version} one thread, page"),
            ),
            (
                NodeMode::MapFold { workers: 0 },
                format!("Node.js {version} one thread, map/fold"),
            ),
            (
                NodeMode::MapFold { workers: n },
                format!("Node.js {version} worker_threads, map/fold, {n} workers"),
            ),
        ] {
            variants.push(Variant {
                runner: Runner::Node(mode),
                label,
                times: Vec::new(),
                starts: Vec::new(),
                splits: Vec::new(),
                cpus: Vec::new(),
            });
        }
    }
    let load_before = load_average();
    println!(
        "\n  map/fold against sequential and Node.js, {} pages, {n} workers, {ROUNDS} rounds (each variant once a round, the order turning); load average before: {}",
        page_label(PAGE),
        load_line(load_before)
    );
    let mut reference: Option<(String, u64, String)> = None;
    for round in 0..ROUNDS {
        for k in 0..variants.len() {
            let i = (k + round) % variants.len();
            let v = &variants[i];
            let out = match v.run(setup.bench, &setup.bench.workspace) {
                Ok(out) => out,
                Err(e) => {
                    println!("    {}: failed: {e}", v.label);
                    return None;
                }
            };
            match &reference {
                None => reference = Some((v.label.clone(), out.pages, out.output.clone())),
                Some((label, pages, output)) => {
                    if *output != out.output || *pages != out.pages {
                        println!(
                            "    ANSWERS DIFFER: {} gave {} pages and {}; {label} gave {pages} pages and {output}",
                            v.label, out.pages, out.output
                        );
                        return None;
                    }
                }
            }
            variants[i].times.push(out.took);
            variants[i].starts.push(out.start);
            variants[i].splits.push(out.split);
            variants[i].cpus.push(out.cpu);
        }
    }
    let load_after = load_average();
    let mb = setup.file_bytes as f64 / 1e6;
    for v in &variants {
        let mut t = v.times.clone();
        t.sort_unstable();
        let start = if matches!(v.runner, Runner::Node(NodeMode::MapFold { workers }) if workers > 0)
        {
            let mut s = v.starts.clone();
            s.sort_unstable();
            format!(
                "; starting the threads (outside the time): median {:.0} ms",
                ms(s[s.len() / 2])
            )
        } else {
            String::new()
        };
        println!(
            "    {:<52} median {:>6.1} MB/s (spread {:.1}–{:.1}){start}",
            v.label,
            mb / v.median().as_secs_f64(),
            mb / t[t.len() - 1].as_secs_f64(),
            mb / t[0].as_secs_f64(),
        );
        if let Some(split) = v.splits.get(v.median_round()) {
            let cpus = match v.cpus.get(v.median_round()).copied().flatten() {
                Some(cpu) => format!(
                    "; CPUs used {:.2}",
                    cpu.as_secs_f64() / v.median().as_secs_f64().max(1e-9)
                ),
                None => String::new(),
            };
            println!("      split of the median run: {split}{cpus}");
        }
    }
    framer_line(&setup.bench.workspace.join(&setup.bench.archive), mb);
    let (pages, output) = reference.map(|(_, p, o)| (p, o)).unwrap_or_default();
    println!("    every variant answered the same bytes in every round ({pages} pages): {output}");
    // a's throughput over b's, round by round (b's time over a's), and the median.
    let paired = |a: usize, b: usize| -> f64 {
        let mut r: Vec<f64> = variants[a]
            .times
            .iter()
            .zip(&variants[b].times)
            .map(|(ta, tb)| tb.as_secs_f64() / ta.as_secs_f64())
            .collect();
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    let rate = |i: usize| mb / variants[i].median().as_secs_f64();
    let node_base = setup.engines.len() * 4;
    let node_threads = setup.node.map(|_| node_base + 2);
    let mut engines = Vec::new();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // The most map/fold could gain over sequential in a round if its CPU time were spread
    // evenly over every core: the sequential run's wall over the map/fold run's CPU per core.
    let bound = |seq: usize, par: usize| -> Option<f64> {
        let mut b: Vec<f64> = variants[seq]
            .times
            .iter()
            .zip(&variants[par].cpus)
            .map(|(t, cpu)| {
                let cpu = cpu.filter(|c| !c.is_zero())?;
                Some(t.as_secs_f64() * cores / cpu.as_secs_f64())
            })
            .collect::<Option<_>>()?;
        b.sort_by(f64::total_cmp);
        b.get(b.len() / 2).copied()
    };
    for (e, name) in setup.engines.iter().enumerate() {
        let (seq, par, kept_seq, kept_par) = (4 * e, 4 * e + 1, 4 * e + 2, 4 * e + 3);
        let vs_node = node_threads.map(|t| paired(par, t));
        let kept = KeptRow {
            sequential: rate(kept_seq),
            map_fold: rate(kept_par),
            speedup: paired(kept_par, kept_seq),
            over_per_page: paired(kept_par, par),
            vs_node: node_threads.map(|t| paired(kept_par, t)),
        };
        println!(
            "    {name}, module kept per partition: map/fold / sequential {:.2}x; map/fold kept / per page {:.2}x, sequential kept / per page {:.2}x; map/fold / Node.js worker_threads {}x",
            kept.speedup,
            kept.over_per_page,
            paired(kept_seq, seq),
            num_ratio(kept.vs_node)
        );
        println!(
            "    {name}: map/fold / sequential {:.2}x (its CPU time spread over {cores} cores allows at most {}x); map/fold / Node.js worker_threads {}x (medians of ratios paired by round)",
            paired(par, seq),
            num_ratio(bound(seq, par)),
            num_ratio(vs_node)
        );
        engines.push(EngineRow {
            name: name.to_string(),
            sequential: rate(seq),
            map_fold: rate(par),
            speedup: paired(par, seq),
            bound: bound(seq, par),
            vs_node,
            kept,
        });
    }
    let node = node_threads.map(|t| {
        println!(
            "    Node.js: worker_threads / one thread (page) {:.2}x, one-thread map/fold / page {:.2}x",
            paired(t, node_base),
            paired(node_base + 1, node_base)
        );
        NodeRow {
            page: rate(node_base),
            map_fold: rate(node_base + 1),
            threads: rate(t),
            speedup: paired(t, node_base),
        }
    });
    println!("    load average after: {}", load_line(load_after));
    Some(MapFoldRow {
        workers: n,
        pages,
        engines,
        node,
        load: (
            load_before.map_or(f64::NAN, |l| l.0),
            load_after.map_or(f64::NAN, |l| l.0),
        ),
    })
}

/// How fast runx's framer and SHA-256 alone go over the archive: what bounds the one framing
/// thread that feeds every map worker.
fn framer_line(archive: &Path, mb: f64) {
    let measured = std::fs::read(archive)
        .map_err(|e| e.to_string())
        .and_then(|data| framer_alone(&data, PAGE));
    match measured {
        Ok((framing, hashing)) => println!(
            "    runx's framer alone in this process (scan and validate every record, no copy, no digest): {:.0} MB/s; SHA-256 alone: {:.0} MB/s",
            mb / framing.as_secs_f64(),
            mb / hashing.as_secs_f64()
        ),
        Err(e) => println!("    runx's framer alone: failed: {e}"),
    }
}

fn load_line(l: Option<(f64, f64, f64)>) -> String {
    l.map_or("unknown".to_string(), |(a, b, c)| {
        format!("{a:.2}, {b:.2}, {c:.2}")
    })
}

/// The markdown table of the map/fold comparisons, one row per archive size and engine.
pub fn summary(rows: &[(u64, &MapFoldRow)], node: Option<&str>) {
    if rows.is_empty() {
        return;
    }
    let node = node.unwrap_or("(absent)");
    println!(
        "\n| archive | pages | partitions | engine | sequential MB/s | map/fold MB/s | map/fold / sequential | at most, with its CPU time on every core | kept: sequential MB/s | kept: map/fold MB/s | kept: map/fold / sequential | kept map/fold / per-page map/fold | Node.js {node} one thread MB/s | Node.js map/fold one thread MB/s | Node.js worker_threads MB/s | Node.js worker_threads / one thread | runx map/fold / Node.js worker_threads | kept: runx map/fold / Node.js worker_threads | load average (1 min) before → after |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let num = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    for (size, r) in rows {
        for e in &r.engines {
            println!(
                "| {size} MiB | {} | {} | {} | {:.1} | {:.1} | {:.2}x | {}x | {:.1} | {:.1} | {:.2}x | {:.2}x | {} | {} | {} | {} | {} | {} | {:.2} → {:.2} |",
                r.pages,
                r.workers,
                e.name,
                e.sequential,
                e.map_fold,
                e.speedup,
                num_ratio(e.bound),
                e.kept.sequential,
                e.kept.map_fold,
                e.kept.speedup,
                e.kept.over_per_page,
                num(r.node.map(|n| n.page)),
                num(r.node.map(|n| n.map_fold)),
                num(r.node.map(|n| n.threads)),
                num_ratio(r.node.map(|n| n.speedup)),
                num_ratio(e.vs_node),
                num_ratio(e.kept.vs_node),
                r.load.0,
                r.load.1,
            );
        }
    }
}
