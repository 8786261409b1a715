//! `runx bench pages`: the page-throughput workload of `cargo bench -p runx-benches`, from the
//! installed binary.

use crate::progress;
use runx_profile::{ARTIFACT_BYTES, PAGE_BYTES};
use runx_runtime::Runtime;
use runx_workload::{Bench, PAGE_SIZES, PagesRun};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Measure runx on this machine.
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: BenchWhat,
}

#[derive(clap::Subcommand)]
enum BenchWhat {
    /// Page throughput: a generated archive of ~270-byte records through a module that parses
    /// every record, with the split of the wall time.
    Pages(PagesArgs),
}

#[derive(clap::Args)]
struct PagesArgs {
    /// Archive size(s), e.g. `256MiB`, `512KiB` or plain bytes; repeat or comma-separate
    /// (default 64MiB; at most 512MiB).
    #[arg(long, value_name = "SIZE", value_delimiter = ',', value_parser = parse_size)]
    size: Vec<u64>,
    /// Page size(s), e.g. `1MiB` (default 256KiB, 1MiB and 4MiB; at most 4MiB).
    #[arg(long, value_name = "SIZE", value_delimiter = ',', value_parser = parse_size)]
    page_bytes: Vec<u64>,
    /// Runs of each measurement; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw throughput (MB/s) against page size, one series per archive size, as SVG.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Also run the same aggregate as a map/fold runner (`pages.map`, `pages.fold`) in N
    /// partitions, after each sequential cell, and print its speedup over it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=16))]
    parallel: Option<u16>,
    /// How long the runners' module instance lives: `page` (a fresh one per page, the
    /// default) or `partition` (one per partition, `pages.module: partition`).
    #[arg(long, value_name = "LIFETIME", default_value = "page", value_parser = ["page", "partition"])]
    module: String,
}

/// Parses `256MiB`, `1MiB`, `512KiB`, `1GiB`, `4096B` or plain bytes (units are
/// case-insensitive and binary).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(format!(
            "`{text}` is not a size; write e.g. 256MiB, 512KiB or plain bytes"
        ));
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}`: the number is too large"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}`; use B, KiB, MiB or GiB"
            ));
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("`{text}`: the size is too large"))
}

/// `bytes` in the largest binary unit that divides it.
fn human(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}B")
}

/// One (archive size, page size) cell, over its runs.
struct Cell {
    size: u64,
    file_bytes: u64,
    records: u64,
    page_bytes: u64,
    /// The map/fold runner's partitions; `None` for the sequential runner.
    workers: Option<u16>,
    /// Sorted by wall; the median is in the middle.
    runs: Vec<PagesRun>,
    /// For a map/fold cell: the sequential cell's median wall over its own.
    speedup: Option<f64>,
    /// For a map/fold cell: the most `speedup` could be with the CPU time its median run
    /// used, spread evenly over the machine's cores.
    speedup_bound: Option<f64>,
}

impl Cell {
    fn median(&self) -> &PagesRun {
        &self.runs[self.runs.len() / 2]
    }
    fn mb_per_s(&self, r: &PagesRun) -> f64 {
        self.file_bytes as f64 / 1e6 / r.wall.as_secs_f64().max(1e-9)
    }
    fn to_json(&self) -> Value {
        let m = self.median();
        let s = &m.split;
        let secs = m.wall.as_secs_f64().max(1e-9);
        let parts = s.parts();
        let ms: serde_json::Map<String, Value> = parts
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let pct: serde_json::Map<String, Value> = parts
            .iter()
            .map(|(k, v)| (k.to_string(), json!(s.percent(*v))))
            .collect();
        json!({
            "size_bytes": self.size,
            "file_bytes": self.file_bytes,
            "records": self.records,
            "page_bytes": self.page_bytes,
            "runner": if self.workers.is_some() { "map_fold" } else { "sequential" },
            "workers": self.workers,
            "speedup": self.speedup,
            "speedup_bound": self.speedup_bound,
            "cpu_ms": m.cpu.map(|c| c.as_secs_f64() * 1000.0),
            "cpus_used": m.cpus_used(),
            "pages": m.pages,
            "wall_ms": m.wall.as_secs_f64() * 1000.0,
            "mb_per_s": self.mb_per_s(m),
            "records_per_s": self.records as f64 / secs,
            "output": m.output,
            "spread_mb_per_s": [
                self.mb_per_s(&self.runs[self.runs.len() - 1]),
                self.mb_per_s(&self.runs[0]),
            ],
            "timings_ms": ms,
            "receipt_wall_ms": s.wall_ms,
            "split_percent": pct,
            "memory_mib": {
                "non_evictable": m.memory.non_evictable_kib as f64 / 1024.0,
                "resident": m.memory.resident_kib as f64 / 1024.0,
                "shmem_growth": m.memory.shmem_growth_kib as f64 / 1024.0,
            },
        })
    }
}

/// Runs the benchmark asked for on `engine` (the package it writes names none, so the
/// runtime's engine is the one measured).
pub fn run(rt: &Runtime, engine: &str, args: BenchArgs) -> ExitCode {
    match args.what {
        BenchWhat::Pages(a) => pages(rt, engine, a),
    }
}

fn pages(rt: &Runtime, engine: &str, args: PagesArgs) -> ExitCode {
    let (sizes, page_sizes) = match checked_sizes(&args) {
        Ok(x) => x,
        Err(message) => return crate::exit::usage(&message),
    };
    let cells = match measure(rt, engine, &args, &sizes, &page_sizes) {
        Ok(cells) => cells,
        Err(message) => {
            errln!("runx: {message}");
            return ExitCode::FAILURE;
        }
    };
    report(engine, &args, &cells)
}

/// The archive and page sizes asked for (or the defaults), each within its limit.
fn checked_sizes(args: &PagesArgs) -> Result<(Vec<u64>, Vec<u64>), String> {
    let sizes = if args.size.is_empty() {
        vec![64 << 20]
    } else {
        args.size.clone()
    };
    let page_sizes: Vec<u64> = if args.page_bytes.is_empty() {
        PAGE_SIZES.iter().map(|&p| p as u64).collect()
    } else {
        args.page_bytes.clone()
    };
    if let Some(&s) = sizes.iter().find(|&&s| s == 0 || s > ARTIFACT_BYTES.max) {
        return Err(format!(
            "--size {}: allowed 1 byte to 512MiB (the largest artifact admitted)",
            human(s)
        ));
    }
    if let Some(&p) = page_sizes
        .iter()
        .find(|&&p| !(PAGE_BYTES.min..=PAGE_BYTES.max).contains(&p))
    {
        return Err(format!("--page-bytes {}: allowed 1 byte to 4MiB", human(p)));
    }
    if let Some(plot) = &args.plot
        && plot.extension().and_then(|e| e.to_str()) != Some("svg")
    {
        return Err(format!(
            "--plot {}: the file must end in .svg",
            plot.display()
        ));
    }
    Ok((sizes, page_sizes))
}

/// Every (archive size, page size) cell, measured `args.runs` times; a table row is printed
/// as each cell finishes unless `--json`.
fn measure(
    rt: &Runtime,
    engine: &str,
    args: &PagesArgs,
    sizes: &[u64],
    page_sizes: &[u64],
) -> Result<Vec<Cell>, String> {
    let dir = tempfile::Builder::new()
        .prefix("runx-bench-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary directory: {e}"))?;
    let page_usizes: Vec<usize> = page_sizes.iter().map(|&p| p as usize).collect();
    let bench = Bench {
        workspace: dir.path().to_path_buf(),
        package: dir.path().join("pkg"),
        archive: "archive.js".to_string(),
    };
    let workers: Vec<usize> = args.parallel.map(usize::from).into_iter().collect();
    let kept = args.module == "partition";
    runx_workload::write_package(&bench.package, &page_usizes, &workers)
        .map_err(|e| format!("cannot write the bench package: {e}"))?;
    // The map/fold cells run on a pool of their own: a worker per partition and one for the
    // fold, all kept warm from run to run (a smaller pool starts the rest for every run); its
    // workers die with runx.
    let parallel = args.parallel.map(|n| {
        crate::launch::configured_runtime(Some(engine), crate::keys::Keys::default())
            .with_pool_size(usize::from(n) + 1)
    });
    let cores = cores();
    let mut cells = Vec::new();
    for &size in sizes {
        let info = std::fs::File::create(dir.path().join(&bench.archive))
            .and_then(|mut f| runx_workload::write_archive(&mut f, size))
            .map_err(|e| format!("cannot write the archive: {e}"))?;
        for &page_bytes in page_sizes {
            let mut pair = vec![(rt, None)];
            if let (Some(par), Some(n)) = (&parallel, args.parallel) {
                pair.push((par, Some(n)));
            }
            let mut sequential_wall = None;
            // Every run of the cell's runners must answer alike, or the ratio compares
            // different work.
            let mut answer: Option<Value> = None;
            for (rt, workers) in pair {
                let mut runs = Vec::new();
                for _ in 0..args.runs {
                    let run = run_once(rt, &bench, (size, page_bytes), workers, kept)?;
                    match &answer {
                        Some(first) if *first != run.output => {
                            return Err(format!(
                                "bench pages ({} archive, {} pages): the runs answered differently: {first} and {}",
                                human(size),
                                human(page_bytes),
                                run.output
                            ));
                        }
                        Some(_) => {}
                        None => answer = Some(run.output.clone()),
                    }
                    runs.push(run);
                }
                runs.sort_by_key(|r| r.wall);
                let median = &runs[runs.len() / 2];
                let wall = median.wall.as_secs_f64();
                let (speedup, speedup_bound) = match sequential_wall {
                    Some(seq) => (
                        Some(seq / wall.max(1e-9)),
                        // A run shorter than a clock tick shows no CPU time: no bound then.
                        median
                            .cpu
                            .filter(|cpu| !cpu.is_zero())
                            .map(|cpu| seq * cores as f64 / cpu.as_secs_f64()),
                    ),
                    None => {
                        sequential_wall = Some(wall);
                        (None, None)
                    }
                };
                let cell = Cell {
                    size,
                    file_bytes: info.bytes,
                    records: info.records,
                    page_bytes,
                    workers,
                    runs,
                    speedup,
                    speedup_bound,
                };
                if !args.json {
                    if cells.is_empty() {
                        print_header(engine, args.runs, &args.module);
                    }
                    print_row(&cell);
                }
                cells.push(cell);
            }
        }
    }
    Ok(cells)
}

/// One paged run, with a progress bar on a terminal.
fn run_once(
    rt: &Runtime,
    bench: &Bench,
    (size, page_bytes): (u64, u64),
    workers: Option<u16>,
    kept: bool,
) -> Result<PagesRun, String> {
    let bar = progress::sink();
    let sink = bar.as_ref().map(|(s, _)| s.clone());
    let result = match workers {
        Some(n) => bench.run_map_fold(rt, page_bytes as usize, usize::from(n), kept, sink),
        None => bench.run_pages(rt, page_bytes as usize, kept, sink),
    };
    if let Some((_, b)) = &bar {
        progress::finish(b);
    }
    result.map_err(|e| {
        format!(
            "bench pages ({} archive, {} pages) failed ({}/{}): {}",
            human(size),
            human(page_bytes),
            e.kind,
            e.code,
            e.message
        )
    })
}

/// The plot and, with `--json`, the one JSON object.
fn report(engine: &str, args: &PagesArgs, cells: &[Cell]) -> ExitCode {
    let plot_error = args
        .plot
        .as_deref()
        .and_then(|p| plot(p, cells).err().map(|e| (p, e)));
    if let Some((p, e)) = &plot_error {
        errln!("runx: cannot draw {}: {e}", p.display());
    } else if let (Some(p), false) = (&args.plot, args.json) {
        outln!("plot: {}", p.display());
    }
    if args.json {
        let cpus = cores();
        outln!(
            "{}",
            json!({
                "schema": "runx.bench.pages.v1",
                "engine": engine,
                "module": args.module,
                "runs": args.runs,
                "cpus": cpus,
                "results": cells.iter().map(Cell::to_json).collect::<Vec<_>>(),
                "plot": args.plot.as_ref().filter(|_| plot_error.is_none()).map(|p| p.display().to_string()),
            })
        );
    }
    if plot_error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The CPUs this process may run on.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn print_header(engine: &str, runs: u32, module: &str) {
    outln!(
        "engine {engine}, module per {module}, median of {runs} run(s); CPUs: the CPU time of runx and its workers over the wall; time split in % of the paged wall (framing overlaps the calls); peak memory of runx and its worker in MiB: non-evictable (RssAnon + shared memory) / resident"
    );
    outln!(
        "{:>10} {:>8} {:>8} {:>6} {:>8} {:>11} {:>5} {:>10} {:>8} {:>10} {:>11} {:>7} {:>14}",
        "runner",
        "size",
        "page",
        "pages",
        "MB/s",
        "records/s",
        "CPUs",
        "admission",
        "framing",
        "transport",
        "javascript",
        "result",
        "memory"
    );
}

fn print_row(c: &Cell) {
    let m = c.median();
    let s = &m.split;
    let runner = match c.workers {
        Some(n) => format!("map/fold{n}"),
        None => "sequential".to_string(),
    };
    outln!(
        "{:>10} {:>8} {:>8} {:>6} {:>8.1} {:>11.0} {:>5} {:>9.1}% {:>7.1}% {:>9.1}% {:>10.1}% {:>6.1}% {:>6.1} / {:>5.1}",
        runner,
        human(c.size),
        human(c.page_bytes),
        m.pages,
        c.mb_per_s(m),
        c.records as f64 / m.wall.as_secs_f64().max(1e-9),
        m.cpus_used().map_or("-".to_string(), |u| format!("{u:.2}")),
        s.percent(s.admission_ms),
        s.percent(s.framing_ms),
        s.percent(s.transport_ms),
        s.percent(s.engine_ms),
        s.percent(s.result_ms),
        m.memory.non_evictable_kib as f64 / 1024.0,
        m.memory.resident_kib as f64 / 1024.0,
    );
    if let Some(speedup) = c.speedup {
        let bound = c.speedup_bound.map_or(String::new(), |b| {
            let cores = cores();
            format!(" (its CPU time spread over {cores} cores allows at most {b:.2}x)")
        });
        outln!("{:>10} map/fold / sequential: {speedup:.2}x{bound}", "");
    }
}

/// Draws MB/s against page size (log scale), one series per archive size.
fn plot(path: &Path, cells: &[Cell]) -> Result<(), String> {
    use plotters::prelude::*;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    // x is log2(page bytes), labelled with the size itself.
    let kib = |b: u64| (b.max(1) as f64).log2();
    let (mut x0, mut x1, mut y1) = (f64::MAX, 0.0f64, 0.0f64);
    for c in cells {
        x0 = x0.min(kib(c.page_bytes));
        x1 = x1.max(kib(c.page_bytes));
        y1 = y1.max(c.mb_per_s(c.median()));
    }
    if cells.is_empty() {
        (x0, x1, y1) = (10.0, 10.0, 1.0);
    }
    let (x0, x1) = (x0.floor() - 0.5, x1.ceil() + 0.5);
    let x_labels = (x1 - x0).ceil() as usize + 1;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("runx page throughput", ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0.0..(y1 * 1.15).max(1.0))
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("page size (log scale)")
        .y_desc("throughput (MB/s of source)")
        .x_labels(x_labels)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 && (0.0..63.0).contains(x) {
                human(1u64 << (x.round() as u32))
            } else {
                String::new()
            }
        })
        .draw()
        .map_err(|e| err(&e))?;
    let mut sizes: Vec<u64> = cells.iter().map(|c| c.size).collect();
    sizes.dedup();
    for (i, size) in sizes.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64)> = cells
            .iter()
            .filter(|c| c.size == *size && c.workers.is_none())
            .map(|c| (kib(c.page_bytes), c.mb_per_s(c.median())))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(format!("{} archive", human(*size)))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart
            .draw_series(PointSeries::of_element(
                points,
                4,
                color.filled(),
                &|c, s, st| Circle::new(c, s, st),
            ))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("4096B"), Ok(4096));
        assert_eq!(parse_size("64mib"), Ok(64 << 20));
        assert_eq!(parse_size(" 2 MiB "), Ok(2 << 20));
        assert_eq!(parse_size("8M"), Ok(8 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("1.5MiB").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("17179869184GiB").is_err());
    }

    #[test]
    fn sizes_print() {
        assert_eq!(human(64 << 20), "64MiB");
        assert_eq!(human(256 << 10), "256KiB");
        assert_eq!(human(1000), "1000B");
        assert_eq!(human(3 << 30), "3GiB");
    }
}
