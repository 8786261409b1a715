//! End-to-end tests: the built `runx` binary against packages in `skill-fixtures/` and packages
//! generated at test time.

mod bench;
mod cli_tool;
mod compat;
mod containment;
mod docs;
mod dry_run;
mod harness;
mod javascript;
mod map_fold;
mod mcp;
mod mcp_compat;
mod messages;
mod pages;
mod partitions;
mod receipt_writes;
mod receipts;
mod runx_flags;
mod sandbox;
mod schema_bound;
mod serve;
mod supervision;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Names the engine every `runx` of these tests runs javascript on (`--engine`); unset, runx
/// picks its default (QuickJS). CI runs this whole suite a second time with
/// `RUNX_TEST_ENGINE=v8` against a runx built with V8.
pub const TEST_ENGINE_ENV: &str = "RUNX_TEST_ENGINE";

/// The engine the tests run on, when one is named.
pub fn test_engine() -> Option<String> {
    std::env::var(TEST_ENGINE_ENV)
        .ok()
        .filter(|e| !e.is_empty())
}

pub fn runx() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_runx"));
    c.env_remove("RUST_LOG");
    // Names the receipt folder when set: a test's receipts go where the test says.
    c.env_remove("RUNX_RECEIPT_DIR");
    if let Some(engine) = test_engine() {
        c.arg("--engine").arg(engine);
    }
    c
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("skill-fixtures")
        .canonicalize()
        .unwrap()
}

/// Runs `runx` in `cwd` with `args`, returning the output.
pub fn run_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = runx();
    c.current_dir(cwd).args(args).stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Runs with `--json` and parses the one object on stdout.
pub fn json_in(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (Value, i32) {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--json");
    json_of(&run_in(cwd, &all, env))
}

/// The one JSON object a `--json` run printed on stdout, and its exit code.
pub fn json_of(out: &std::process::Output) -> (Value, i32) {
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code().unwrap_or(-1))
}

/// The receipt file a run's result names (`receipt_path`), parsed.
pub fn receipt_of(v: &Value) -> Value {
    let path = v["receipt_path"]
        .as_str()
        .unwrap_or_else(|| panic!("the run names no receipt file: {v}"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// This runtime's evidence document inside a runx receipt (`metadata.evidence`): the skill,
/// runner, failure, digests, limits, process and console facts of the run.
pub fn evidence(receipt: &Value) -> &Value {
    &receipt["metadata"]["evidence"]
}

/// Direct children of `pid`: the benchmarks' lookup, which the memory sampler uses too.
pub use runx_workload::children_of;

/// The workers runx (`runx_pid`) has started, once it has one: looked for every `poll`, for
/// at most `within` (then the test fails).
pub fn workers_of(
    runx_pid: u32,
    within: std::time::Duration,
    poll: std::time::Duration,
) -> Vec<u32> {
    let started = std::time::Instant::now();
    loop {
        let workers = children_of(runx_pid);
        if !workers.is_empty() {
            return workers;
        }
        assert!(started.elapsed() < within, "no worker started");
        std::thread::sleep(poll);
    }
}

/// Sends runx (`child`) SIGINT, as Ctrl-C does, and waits for it: it must exit 130.
pub fn interrupt(child: std::process::Child) -> Output {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    out
}

/// A scratch workspace with a copy of one fixture package in `pkg/`.
pub fn workspace_with(package: &str) -> (tempfile::TempDir, PathBuf) {
    let ws = tempfile::tempdir().unwrap();
    let dest = ws.path().join("pkg");
    copy_dir(&fixtures().join(package), &dest);
    (ws, dest)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".runx" {
            continue;
        }
        let ty = entry.file_type().unwrap();
        if ty.is_dir() {
            copy_dir(&entry.path(), &to.join(&name));
        } else if ty.is_file() {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}
