//! runx 0.8.2 itself on its own worker (Boa) and on this workspace's `runx-js-worker`: runx's
//! twitter `select` graph over one generated archive, run in turn on each worker, end to end
//! (`runx skill .../twitter select`), with the CPU of runx's own process apart from its
//! workers'. Both runs must select the same posts (`matched`, `scanned`, `plan_digest`).
//!
//! Needs runx 0.8.2, its worker and its packages (`../shared/runx/`, unpacked as its README
//! says into `target/upstream-runx/` and a temporary directory), and the release
//! `runx-js-worker` (`cargo build --release -p runx-worker --bin runx-js-worker`, with
//! `--features v8` for V8: the engine is the build's). The archive's size in MiB comes from
//! `RUNX_BENCH_TWITTER_MIB` (default 64).

use crate::common::{ms, target_bin};
use runx_workload::{CpuClock, own_cpu};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Rounds of the pair (each worker once per round, first in turn).
const ROUNDS: usize = 3;

/// Runs the comparison and prints it; a line saying why where it cannot run.
pub fn runx_on_this_worker(ws: &Path) {
    println!();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let shared = repo.join("../shared/runx");
    let ours = target_bin("runx-js-worker");
    let (Some(runx), Some(boa)) = (
        unpacked(&repo, &shared, "runx"),
        unpacked(&repo, &shared, "runx-js-worker"),
    ) else {
        println!(
            "runx on this worker: skipped, runx 0.8.2 is not in {}",
            shared.display()
        );
        return;
    };
    if !ours.is_file() {
        println!(
            "runx on this worker: skipped, no release runx-js-worker; build it: cargo build --release -p runx-worker --bin runx-js-worker [--features v8]"
        );
        return;
    }
    let dir = ws.join("upstream");
    let twitter = match prepare(&shared, &dir) {
        Ok(t) => t,
        Err(e) => {
            println!("runx on this worker: skipped, cannot prepare runx's packages: {e}");
            return;
        }
    };
    let mib: u64 = std::env::var("RUNX_BENCH_TWITTER_MIB")
        .ok()
        .and_then(|m| m.trim().parse().ok())
        .filter(|&m| m > 0)
        .unwrap_or(64);
    let records = match write_tweets(&dir.join("tweets.js"), mib << 20) {
        Ok(n) => n,
        Err(e) => {
            println!("runx on this worker: skipped, cannot write the archive: {e}");
            return;
        }
    };
    let engine = if cfg!(feature = "v8") {
        "V8"
    } else {
        "QuickJS"
    };
    println!(
        "runx on this worker: runx 0.8.2's twitter `select` graph (paged, 512 KiB pages) over a {mib} MiB tweets.js of {records} posts, every 100th a repost of @BetaList; `runx skill` end to end on runx's own worker (Boa) and on runx-js-worker ({engine}; the bench's feature, build the worker alike), {ROUNDS} rounds, each first in turn"
    );
    let workers = [("runx's worker (Boa)", boa), ("runx-js-worker", ours)];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        for k in 0..2 {
            let i = (k + round) % 2;
            match select(&runx, &workers[i].1, &twitter, &dir) {
                Ok(run) => runs[i].push(run),
                Err(e) => {
                    println!("runx on this worker: {} failed: {e}", workers[i].0);
                    return;
                }
            }
        }
    }
    let answers: Vec<&Value> = runs.iter().flatten().map(|r| &r.answer).collect();
    if answers.windows(2).any(|w| w[0] != w[1]) {
        println!("runx on this worker: the runs selected differently: {answers:?}");
        return;
    }
    println!("  selection of every run: {}", answers[0]);
    println!("  | worker | wall ms (median) | runx's own CPU ms | workers' CPU ms |");
    println!("  |---|---|---|---|");
    let mut medians = Vec::new();
    for (i, (label, _)) in workers.iter().enumerate() {
        let median = |f: &dyn Fn(&Run) -> f64| {
            let mut v: Vec<f64> = runs[i].iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let wall = median(&|r| ms(r.wall));
        medians.push(wall);
        println!(
            "  | {label} | {wall:.0} | {:.0} | {:.0} |",
            median(&|r| ms(r.runx_cpu)),
            median(&|r| ms(r.worker_cpu))
        );
    }
    println!(
        "  end to end, runx-js-worker is {:.2}x runx's own worker (goal: 3x on V8)",
        medians[0] / medians[1]
    );
}

/// One `runx skill` run: its wall, runx's own CPU, its workers' CPU and the selection.
struct Run {
    wall: Duration,
    runx_cpu: Duration,
    worker_cpu: Duration,
    answer: Value,
}

/// `target/upstream-runx/NAME`, unpacked from `../shared/runx/NAME.gz` when missing.
fn unpacked(repo: &Path, shared: &Path, name: &str) -> Option<PathBuf> {
    let bin = repo.join("target/upstream-runx").join(name);
    if bin.is_file() {
        return Some(bin);
    }
    let gz = shared.join(format!("{name}.gz"));
    std::fs::create_dir_all(bin.parent()?).ok()?;
    let partial = bin.with_extension(format!("bench{}", std::process::id()));
    let ok = Command::new("sh")
        .arg("-c")
        .arg("gunzip -c \"$1\" > \"$2\" && chmod +x \"$2\"")
        .args(["sh", gz.to_str()?, partial.to_str()?])
        .status()
        .ok()?
        .success();
    (ok && std::fs::rename(&partial, &bin).is_ok()).then_some(bin)
}

/// Unpacks runx's packages under `dir` with their packet schemas copied in (runx's README);
/// the twitter package's path.
fn prepare(shared: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let tarball = shared.join("runx-packages.tar.gz");
    let ok = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(dir)
        .status()?
        .success();
    let twitter = dir.join("skills/twitter");
    if !ok || !twitter.join("X.yaml").is_file() {
        return Err(std::io::Error::other(format!(
            "cannot unpack {}",
            tarball.display()
        )));
    }
    std::fs::write(
        dir.join("inputs.json"),
        r#"{"objective":"Delete all reposts of the BetaList account.","principal":"account:@bench","target":"posts","archive_file":"tweets.js","archive_base":"workspace","predicate":{"is_retweet":true,"rt_of":"BetaList"},"max_acts":5000}"#,
    )?;
    Ok(twitter)
}

/// An X `tweets.js` export of about `bytes` bytes in runx's fixture shape (one record per
/// line); every 100th post a repost of @BetaList. The number of posts.
fn write_tweets(path: &Path, bytes: u64) -> std::io::Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let prefix = "window.YTD.tweets.part0 = [\n";
    out.write_all(prefix.as_bytes())?;
    let mut written = prefix.len() as u64;
    let mut n = 0u64;
    while written < bytes {
        n += 1;
        let text = if n.is_multiple_of(100) {
            format!("RT @BetaList: launch number {n} https://t.co/x{n}")
        } else {
            format!("a note about things, number {n}, with some more words to pad it out")
        };
        let line = format!(
            "{}  {{\"tweet\": {{\"id_str\": \"{}\", \"full_text\": \"{text}\", \"created_at\": \"Mon Apr 03 14:00:00 +0000 2017\", \"favorite_count\": \"{}\", \"retweet_count\": \"{}\", \"entities\": {{\"urls\": []}}}}}}",
            if n == 1 { "" } else { ",\n" },
            1_000_000_000_000 + n,
            n % 50,
            n % 7
        );
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
    }
    out.write_all(b"\n]\n")?;
    out.flush()?;
    Ok(n)
}

/// `runx skill TWITTER select --inputs inputs.json --json` in `dir` with `worker` as runx's
/// worker, timed; runx's own CPU is read from its `/proc` entry until it exits.
fn select(runx: &Path, worker: &Path, twitter: &Path, dir: &Path) -> Result<Run, String> {
    let _ = std::fs::remove_dir_all(dir.join(".runx"));
    let clock = CpuClock::start(std::process::id());
    let started = Instant::now();
    let mut child = Command::new(runx)
        .current_dir(dir)
        .arg("skill")
        .arg(twitter)
        .args(["select", "--inputs", "inputs.json", "--json"])
        .env("HOME", dir.join("home"))
        .env("RUNX_JS_WORKER_PATH", worker)
        .env_remove("RUNX_RECEIPT_DIR")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id();
    let mut runx_cpu = Duration::ZERO;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut text).map(|_| text)
    });
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if let Some(used) = own_cpu(pid) {
            runx_cpu = used;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let wall = started.elapsed();
    let total = clock.stop().unwrap_or_default();
    let text = reader
        .join()
        .map_err(|_| "the reader panicked".to_string())?
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&text)));
    }
    let envelope: Value = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
    let path = envelope["result"]["artifact_ref"]["path"]
        .as_str()
        .ok_or_else(|| format!("no result artifact in {envelope}"))?;
    let result: Value = serde_json::from_slice(&std::fs::read(path).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let data = &result["twitter_selection"]["data"];
    let answer = serde_json::json!({
        "matched": data["matched"],
        "scanned": data["scanned"],
        "plan_digest": data["plan_digest"],
    });
    Ok(Run {
        wall,
        runx_cpu,
        worker_cpu: total.saturating_sub(runx_cpu),
        answer,
    })
}
