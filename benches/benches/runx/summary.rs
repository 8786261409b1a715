//! The markdown tables of the dated results pages, from what the sections measured.

use crate::common::{ms, num_ratio, page_label};
use crate::latency::Latency;
use crate::map_fold::{self, MapFoldRow};
use crate::memory::Memory;
use crate::throughput::SizeRow;
use runx_workload::PAGE_SIZES;

/// The markdown tables, the map/fold comparison's last.
pub fn summary(engines: &[&str], latencies: &[Latency], rows: &[SizeRow], node: Option<&str>) {
    println!("\nsummary (markdown, as in docs/src/results/)");
    let map_folds: Vec<(u64, &MapFoldRow)> = rows
        .iter()
        .filter_map(|r| r.map_fold.as_ref().map(|m| (r.size_mib, m)))
        .collect();
    if !latencies.is_empty() {
        println!();
        tables(engines, latencies, rows, node);
    }
    map_fold::summary(&map_folds, node);
}

/// The tables of page throughput, latency and memory.
// Long on purpose: one markdown table per question, in the order the results pages show them.
fn tables(engines: &[&str], latencies: &[Latency], rows: &[SizeRow], node: Option<&str>) {
    let mut head = String::from("| archive | page |");
    let mut rule = String::from("|---|---|");
    for e in engines {
        head.push_str(&format!(
            " {e} paged MB/s | {e} alone MB/s | {e} runx/alone (paired) | {e} outside JS (admission) | {e} worker/in-process JS | {e} runx/alone (composed) |"
        ));
        rule.push_str("---|---|---|---|---|---|");
    }
    head.push_str(&format!(" Node.js {} MB/s |", node.unwrap_or("(absent)")));
    rule.push_str("---|");
    let compare = engines.len() > 1;
    if compare {
        head.push_str(&format!(" {0}/Node.js | {0}/{1} |", engines[1], engines[0]));
        rule.push_str("---|---|");
    }
    println!("{head}\n{rule}");
    let num = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.1}"));
    for r in rows {
        for (i, page) in PAGE_SIZES.iter().enumerate() {
            let mut line = format!("| {} MiB | {} |", r.size_mib, page_label(*page));
            for c in &r.cells[i] {
                line.push_str(&format!(
                    " {:.1} ({:.0}% JS) | {} | {} | {:.1}% ({:.1}%) | {} | {} |",
                    c.paged,
                    c.javascript_percent,
                    num(c.alone),
                    num_ratio(c.paired),
                    c.outside_percent,
                    c.admission_percent,
                    num_ratio(c.parity),
                    num_ratio(c.parity.map(|p| c.javascript_percent / 100.0 / p)),
                ));
            }
            line.push_str(&format!(" {} |", num(r.node[i])));
            if compare {
                let (q, v) = (r.cells[i][0].paged, r.cells[i][1].paged);
                let vs_node = r.node[i].map(|n| v / n);
                line.push_str(&format!(" {} | {:.2} |", num_ratio(vs_node), v / q));
            }
            println!("{line}");
        }
    }
    println!();
    let mut head = String::from("| |");
    let mut rule = String::from("|---|");
    for e in engines {
        head.push_str(&format!(" {e} |"));
        rule.push_str("---|");
    }
    println!("{head}\n{rule}");
    let row = |label: &str, f: &dyn Fn(&Latency) -> String| {
        let cells: Vec<String> = latencies.iter().map(f).collect();
        println!("| {label} | {} |", cells.join(" | "));
    };
    row("warm call through the pool, p50 / p99 ms", &|l| {
        format!("{:.3} / {:.3}", ms(l.warm.p50), ms(l.warm.p99))
    });
    row("in-process fresh context, p50 ms", &|l| {
        format!("{:.3}", ms(l.fresh.p50))
    });
    row("cold worker: spawn to first answer, p50 ms", &|l| {
        format!("{:.1}", ms(l.first.p50))
    });
    row("cold `runx skill` of a trivial runner, p50 ms", &|l| {
        l.cold_runx
            .as_ref()
            .map_or("–".to_string(), |c| format!("{:.1}", ms(c.p50)))
    });
    if let Some(r) = rows.last() {
        let mem = |i: usize, f: &dyn Fn(&Memory) -> u64| -> String {
            r.memory
                .get(i)
                .copied()
                .flatten()
                .map_or("–".to_string(), |m| {
                    format!("{:.1}", f(&m) as f64 / 1024.0)
                })
        };
        let cells: Vec<String> = (0..engines.len())
            .map(|i| mem(i, &|m| m.peaks.non_evictable_kib))
            .collect();
        println!(
            "| peak non-evictable memory of `runx skill` and its worker, {} MiB archive at 1 MiB pages, MiB | {} |",
            r.size_mib,
            cells.join(" | ")
        );
        let cells: Vec<String> = (0..engines.len())
            .map(|i| mem(i, &|m| m.peaks.resident_kib))
            .collect();
        println!(
            "| peak resident memory, same run, MiB | {} |",
            cells.join(" | ")
        );
    }
}
