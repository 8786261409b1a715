//! `runx bench pages`.

use super::*;

#[test]
fn bench_pages_prints_one_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let (v, code) = json_in(
        dir.path(),
        &["bench", "pages", "--size", "1MiB", "--page-bytes", "256KiB"],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["schema"], "runx.bench.pages.v1");
    assert_eq!(v["runs"], 3);
    assert_eq!(v["plot"], Value::Null);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    let r = &results[0];
    assert_eq!(r["size_bytes"], 1 << 20);
    assert_eq!(r["page_bytes"], 256 << 10);
    let file_bytes = r["file_bytes"].as_u64().unwrap();
    assert!(file_bytes <= 1 << 20 && file_bytes > 1_000_000, "{r}");
    let records = r["records"].as_u64().unwrap();
    assert!((3000..6000).contains(&records), "{r}");
    assert!(r["pages"].as_u64().unwrap() >= 4, "{r}");
    assert!(r["mb_per_s"].as_f64().unwrap() > 0.0);
    assert!(r["records_per_s"].as_f64().unwrap() > 0.0);
    for part in ["admission", "framing", "transport", "javascript", "result"] {
        assert!(
            r["timings_ms"][part].as_f64().unwrap() >= 0.0,
            "{part}: {r}"
        );
        assert!(
            r["split_percent"][part].as_f64().unwrap() >= 0.0,
            "{part}: {r}"
        );
    }
    assert!(r["split_percent"]["javascript"].as_f64().unwrap() > 0.0);
    // The archive lived in a temporary directory, never the working directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bench_pages_plots_svg() {
    let dir = tempfile::tempdir().unwrap();
    let (v, code) = json_in(
        dir.path(),
        &[
            "bench",
            "pages",
            "--size",
            "256KiB,512KiB",
            "--page-bytes",
            "64KiB,256KiB",
            "--runs",
            "1",
            "--plot",
            "pages.svg",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["results"].as_array().unwrap().len(), 4);
    assert_eq!(v["plot"], "pages.svg");
    let svg = std::fs::read_to_string(dir.path().join("pages.svg")).unwrap();
    assert!(
        svg.trim_start().starts_with("<svg"),
        "{}",
        &svg[..svg.len().min(200)]
    );
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("256KiB archive") && svg.contains("512KiB archive"));
}

#[test]
fn bench_pages_rejects_bad_sizes() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["bench", "pages", "--size", "12 parsecs"][..],
        &["bench", "pages", "--size", "1GiB"],
        &["bench", "pages", "--page-bytes", "8MiB"],
        &["bench", "pages", "--plot", "x.png"],
    ] {
        let out = run_in(dir.path(), args, &[]);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn bench_pages_parallel_runs_the_map_fold_runner_beside_the_sequential_one() {
    let dir = tempfile::tempdir().unwrap();
    let (v, code) = json_in(
        dir.path(),
        &[
            "bench",
            "pages",
            "--size",
            "1MiB",
            "--page-bytes",
            "256KiB",
            "--runs",
            "1",
            "--parallel",
            "2",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{v}");
    let (seq, par) = (&results[0], &results[1]);
    assert_eq!(
        (&seq["runner"], &par["runner"]),
        (&Value::from("sequential"), &Value::from("map_fold"))
    );
    assert_eq!(par["workers"], 2);
    assert_eq!(par["pages"], seq["pages"]);
    // Both runners give the same answer, on the engine the suite runs on.
    assert_eq!(par["output"], seq["output"]);
    assert_eq!(seq["output"]["records"], seq["records"], "{seq}");
    let engine = test_engine().unwrap_or_else(|| "quickjs".to_string());
    assert_eq!(v["engine"], Value::from(engine));
    assert!(par["speedup"].as_f64().unwrap() > 0.0, "{par}");
    assert_eq!(seq["speedup"], Value::Null);
    // The CPU time of runx and its workers, and the CPUs it kept busy over the wall. Runs
    // this short may take less than the clock's 10 ms tick, so only the arithmetic is sure.
    for r in [seq, par] {
        let cpu = r["cpu_ms"].as_f64().unwrap();
        let wall = r["wall_ms"].as_f64().unwrap();
        let used = r["cpus_used"].as_f64().unwrap();
        assert!(cpu >= 0.0 && (used - cpu / wall).abs() < 1e-6, "{r}");
    }
    assert_eq!(seq["speedup_bound"], Value::Null);
    let bound = &par["speedup_bound"];
    let cores = v["cpus"].as_f64().unwrap();
    assert!(
        bound.is_null()
            || (bound.as_f64().unwrap()
                - seq["wall_ms"].as_f64().unwrap() * cores / par["cpu_ms"].as_f64().unwrap())
            .abs()
                < 1e-6,
        "{par}"
    );
}
