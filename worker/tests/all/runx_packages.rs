//! runx 0.8.2's own packages (`../shared/runx/runx-packages.tar.gz`: `skills/` and `examples/`)
//! under runx's own harness, once on runx's own worker (Boa) and once on this workspace's
//! `runx-js-worker`: every package that passes on runx's worker passes on this one, and every
//! step the two were asked to run with the same request got the same answer.
//!
//! Each worker is reached through a tap, a shell script runx starts in its place: it copies
//! what runx sends and what the worker answers into files and starts the worker with an empty
//! environment, as runx would. The frames are read back afterwards and matched by request.
//! Requests that carry something of their run (the harness's workspace path, a tool's
//! duration) differ between the two sweeps and are not compared.

use super::runx_js_worker::{WORKER, upstream, upstream_runx};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The least number of packages runx's own worker passes: 70 of 97 at runx's commit
/// `3c8315b9`; fewer means the sweep did not run as runx runs it.
const LEAST_PASSING: usize = 60;

/// The least number of distinct requests both workers answered: about 390.
const LEAST_COMPARED: usize = 300;

#[test]
fn runx_packages_pass_and_answer_alike_on_both_workers() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/runx");
    let tarball = shared.join("runx-packages.tar.gz");
    let (Some(runx), Some(boa), true) = (
        upstream_runx(),
        upstream("runx-js-worker"),
        tarball.is_file(),
    ) else {
        eprintln!(
            "runx 0.8.2, its worker or its packages are not on this machine (../shared/runx/): \
             runx_packages_pass_and_answer_alike_on_both_workers SKIPPED"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let packages = unpack(&tarball, dir.path());
    assert!(packages.len() > 90, "{} packages", packages.len());

    let workers = [("runx", boa), ("this", PathBuf::from(WORKER))];
    let sweeps: Vec<Sweep> = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .iter()
            .map(|(label, worker)| {
                let tap = tap(dir.path(), label, worker);
                let (runx, packages, home) = (&runx, &packages, dir.path().join(label));
                scope.spawn(move || sweep(runx, &tap, packages, &home))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (theirs, ours) = (&sweeps[0], &sweeps[1]);

    let passing = theirs.passed.len();
    assert!(
        passing >= LEAST_PASSING,
        "runx's own worker passed only {passing} packages: {:?}",
        theirs.failed
    );
    // A package lost is run once more, alone: a step's wall met while the whole test suite
    // shares the machine is not a difference between the workers.
    let lost: Vec<_> = theirs
        .passed
        .iter()
        .filter(|p| !ours.passed.contains(*p))
        .filter_map(|name| {
            let package = packages.iter().find(|p| p.ends_with(name))?;
            let again = sweep(
                &runx,
                &tap(dir.path(), "this", Path::new(WORKER)),
                std::slice::from_ref(package),
                &dir.path().join("this"),
            );
            again.failed.into_iter().next()
        })
        .collect();
    assert!(
        lost.is_empty(),
        "packages that pass on runx's own worker and fail on this one: {lost:#?}"
    );

    let (theirs, ours) = (
        exchanges(&dir.path().join("log-runx")),
        exchanges(&dir.path().join("log-this")),
    );
    let mut compared = 0;
    let mut differ = Vec::new();
    for (request, answer) in &theirs {
        let Some(other) = ours.get(request) else {
            continue;
        };
        if [answer, other]
            .iter()
            .any(|a| a["limit"] == "wall_milliseconds")
        {
            // A wall is a matter of time, not of content (the machine may be busy).
            continue;
        }
        compared += 1;
        if !same_answer(answer, other) {
            differ.push((request.chars().take(300).collect::<String>(), answer, other));
        }
    }
    assert!(
        compared >= LEAST_COMPARED,
        "only {compared} requests were sent to both workers"
    );
    assert!(
        differ.is_empty(),
        "{} of {compared} requests answered differently: {differ:#?}",
        differ.len()
    );
}

/// Unpacks runx's packages under `into` and copies its packet schemas into each package, as
/// runx's harness needs (its README); the package directories, sorted.
fn unpack(tarball: &Path, into: &Path) -> Vec<PathBuf> {
    let root = into.join("packages");
    std::fs::create_dir_all(&root).unwrap();
    let done = Command::new("tar")
        .args([
            "-xzf",
            tarball.to_str().unwrap(),
            "-C",
            root.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(done.success(), "cannot unpack {}", tarball.display());
    let mut packages = Vec::new();
    for group in ["skills", "examples"] {
        for entry in std::fs::read_dir(root.join(group)).unwrap() {
            let path = entry.unwrap().path();
            if path.join("X.yaml").is_file() {
                packages.push(path);
            }
        }
    }
    packages.sort();
    for package in &packages {
        if !package.join("packets").exists() {
            let done = Command::new("cp")
                .args(["-R"])
                .arg(root.join("dist/packets"))
                .arg(package.join("packets"))
                .status()
                .unwrap();
            assert!(done.success());
        }
    }
    packages
}

/// A script runx starts as its worker: it records both directions of the protocol under
/// `log-LABEL/` (one pair of files per worker process) and runs `worker` with an empty
/// environment.
fn tap(dir: &Path, label: &str, worker: &Path) -> PathBuf {
    let logs = dir.join(format!("log-{label}"));
    std::fs::create_dir_all(&logs).unwrap();
    let script = dir.join(format!("tap-{label}.sh"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\n/usr/bin/tee '{logs}/in.'$$ | /usr/bin/env -i '{worker}' | /usr/bin/tee '{logs}/out.'$$\n",
            logs = logs.display(),
            worker = worker.display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&script, perms).unwrap();
    script
}

/// What one worker's sweep gave: the packages that passed, and why the others failed.
struct Sweep {
    passed: Vec<String>,
    failed: BTreeMap<String, Value>,
}

/// `runx harness PACKAGE --json` over every package, with `worker` as runx's worker.
fn sweep(runx: &Path, worker: &Path, packages: &[PathBuf], home: &Path) -> Sweep {
    let mut sweep = Sweep {
        passed: Vec::new(),
        failed: BTreeMap::new(),
    };
    for package in packages {
        let name = package.file_name().unwrap().to_string_lossy().into_owned();
        let out = Command::new(runx)
            .current_dir(package)
            .args(["harness", ".", "--json"])
            .env("HOME", home)
            .env("RUNX_JS_WORKER_PATH", worker)
            .env_remove("RUNX_RECEIPT_DIR")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&out.stderr).into_owned()));
        if out.status.success() && report["status"] == "passed" {
            sweep.passed.push(name);
        } else {
            sweep.failed.insert(
                name,
                report.get("assertion_errors").cloned().unwrap_or(report),
            );
        }
    }
    sweep
}

/// Every `invoke` a tap saw and its answer, keyed by the request without its id (as sorted
/// JSON text), the answer without its id. An invoke with no answer (a worker runx ended) is
/// left out.
fn exchanges(logs: &Path) -> BTreeMap<String, Value> {
    let mut all = BTreeMap::new();
    for entry in std::fs::read_dir(logs).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("in.") else {
            continue;
        };
        let mut answers: BTreeMap<String, Value> = BTreeMap::new();
        for mut answer in frames(&logs.join(format!("out.{pid}"))) {
            if let Some(Value::String(id)) = answer
                .as_object_mut()
                .and_then(|a| a.remove("invocation_id"))
            {
                answers.insert(id, answer);
            }
        }
        for mut request in frames(&path) {
            if request["type"] != "invoke" {
                continue;
            }
            let Some(Value::String(id)) = request
                .as_object_mut()
                .and_then(|r| r.remove("invocation_id"))
            else {
                continue;
            };
            if let Some(answer) = answers.remove(&id) {
                // serde_json's maps are sorted: the text is one key per request.
                all.insert(request.to_string(), answer);
            }
        }
    }
    all
}

/// The frames of one direction: a u32 big-endian length, then JSON. A torn last frame (a worker
/// ended mid-write) ends the list.
fn frames(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).unwrap_or_default();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(head) = bytes.get(at..at + 4) {
        let len = u32::from_be_bytes(head.try_into().unwrap()) as usize;
        let Some(body) = bytes.get(at + 4..at + 4 + len) else {
            break;
        };
        out.push(serde_json::from_slice(body).unwrap());
        at += 4 + len;
    }
    out
}

/// The same answer: the same result, or a failure with the same code, limit and disposition.
/// Failure messages are each worker's own (runx's prefixes the step it was at and formats the
/// stack otherwise; see `docs/src/runx-on-this-engine.md`).
fn same_answer(theirs: &Value, ours: &Value) -> bool {
    if theirs["type"] == "failure" && ours["type"] == "failure" {
        let fields = ["code", "limit", "disposition", "protocol_version"];
        return fields.iter().all(|f| theirs.get(f) == ours.get(f));
    }
    same_value(theirs, ours)
}

/// The same JSON value, numbers compared by value: runx's worker writes a number Boa holds as
/// a double with a fraction (`30.0`) where this one writes `30`, and runx reads both as the
/// same number (its receipts' digests do not change).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}
