//! Receipts under a hostile disk, the rule for when one is written, and a closed stdout
//! (signing is in `receipts`).

use super::containment::{make_executable, write_files};
use super::*;
use std::os::unix::process::CommandExt;

fn hello(ws: &Path) {
    write_files(
        ws,
        &[
            (
                "pkg/X.yaml",
                "skill: hello\nrun: { type: javascript, module: m.mjs }\n",
            ),
            ("pkg/m.mjs", "export default () => ({ greeting: 'hi' });"),
        ],
    );
}

fn json_of(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().unwrap().is_dir() {
                out.extend(files_under(&e.path()));
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Issue 13, item 7: a receipt directory that cannot be created leaves the run unsealed
/// (`receipt` failure, exit 1), with its output still in the `--json` object.
#[test]
fn an_unwritable_receipt_directory_unseals_the_run() {
    let ws = tempfile::tempdir().unwrap();
    hello(ws.path());
    std::fs::write(ws.path().join("file"), "x").unwrap();
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "--receipt-dir", "file/receipts"],
        &[],
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["status"], "failure", "{v}");
    assert_eq!(v["error"]["kind"], "receipt", "{v}");
    assert_eq!(v["error"]["code"], "receipt_write", "{v}");
    // No receipt: the one failure that keeps its result, and names no receipt.
    assert_eq!(v["outcome"], "failed", "{v}");
    assert_eq!(v["result"]["greeting"], "hi", "{v}");
    assert!(v["receipt_path"].is_null(), "{v}");
    assert!(v["receipt_id"].is_null(), "{v}");
    assert!(v["closure"].is_null(), "{v}");
}

/// Issue 13, item 7: a disk that fills while the receipt is written leaves no partial receipt
/// (and no temporary file) behind, and the run is not sealed. The full disk is a file-size
/// limit on runx (`RLIMIT_FSIZE`, with SIGXFSZ ignored so the write fails with EFBIG).
#[test]
fn a_full_disk_leaves_no_torn_receipt() {
    let ws = tempfile::tempdir().unwrap();
    hello(ws.path());
    let mut c = runx();
    c.current_dir(ws.path())
        .args(["skill", "pkg", "--json"])
        .stdin(Stdio::null());
    // SAFETY: setrlimit and signal are async-signal-safe system calls.
    unsafe {
        c.pre_exec(|| {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_FSIZE, 64, 64)?;
            nix::libc::signal(nix::libc::SIGXFSZ, nix::libc::SIG_IGN);
            Ok(())
        });
    }
    let out = c.output().unwrap();
    let v = json_of(&out);
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert_eq!(v["error"]["kind"], "receipt", "{v}");
    assert_eq!(
        (&v["status"], &v["outcome"]),
        (&"failure".into(), &"failed".into()),
        "{v}"
    );
    assert_eq!(v["result"]["greeting"], "hi", "{v}");
    assert!(
        v["receipt_path"].is_null() && v["receipt_id"].is_null(),
        "{v}"
    );
    let left = files_under(&ws.path().join(".runx"));
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue 13, item 10: one rule for receipts: a run whose package loads leaves one naming the
/// skill, whatever fails after (an unreadable inputs file too); a package that cannot be
/// loaded leaves none.
#[test]
fn every_run_of_a_known_package_leaves_a_named_receipt() {
    let ws = tempfile::tempdir().unwrap();
    hello(ws.path());
    write_files(ws.path(), &[("bad/X.yaml", "skill: [unclosed\n")]);
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "--inputs", "missing.json"],
        &[],
    );
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "inputs_file", "{v}");
    assert_eq!(v["skill_name"], "hello", "{v}");
    assert_eq!(
        (&v["status"], &v["outcome"]),
        (&"sealed".into(), &"blocked".into()),
        "{v}"
    );
    let receipt = receipt_of(&v);
    assert_eq!(receipt["id"], v["receipt_id"]);
    assert_eq!(receipt["subject"]["ref"]["label"], "hello");
    assert_eq!(evidence(&receipt)["skill"], "hello");
    assert_eq!(evidence(&receipt)["failure"]["code"], "inputs_file");
    let (v, _) = json_in(
        ws.path(),
        &["skill", "pkg", "-i", "a=1", "--inputs", "x.json"],
        &[],
    );
    assert_eq!(v["error"]["code"], "mixed_inputs", "{v}");
    assert!(v["receipt_path"].is_string(), "{v}");
    let before = files_under(&ws.path().join(".runx")).len();
    let (v, code) = json_in(ws.path(), &["skill", "bad"], &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "invalid_profile", "{v}");
    assert!(v["receipt_path"].is_null(), "{v}");
    assert_eq!(v["status"], "failure", "{v}");
    assert_eq!(files_under(&ws.path().join(".runx")).len(), before);
}

/// Issue 13, item 10: a receipt's `process.cwd` is normalised.
#[test]
fn receipt_cwd_is_normalised() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("target")).unwrap();
    write_files(
        ws.path(),
        &[
            (
                "pkg/X.yaml",
                "skill: cwd\nrun: { type: cli-tool, command: ./pwd.sh, cwd: ../target }\n",
            ),
            ("pkg/pwd.sh", "#!/bin/sh\npwd\n"),
        ],
    );
    make_executable(&ws.path().join("pkg/pwd.sh"));
    let (v, code) = json_in(ws.path(), &["skill", "pkg"], &[]);
    assert_eq!(code, 0, "{v}");
    let receipt = receipt_of(&v);
    let cwd = evidence(&receipt)["process"]["cwd"].as_str().unwrap();
    assert!(!cwd.contains(".."), "{cwd}");
    assert_eq!(
        Path::new(cwd),
        ws.path().join("target").canonicalize().unwrap()
    );
}

/// A closed stdout ends runx quietly with exit code 141, never a panic.
#[test]
fn a_closed_stdout_ends_runx_quietly() {
    let ws = tempfile::tempdir().unwrap();
    hello(ws.path());
    for args in [
        vec!["skill", "inspect", "pkg"],
        vec!["skill", "pkg", "--json"],
        vec!["skill", "pkg"],
    ] {
        let (read, write) = nix::unistd::pipe().unwrap();
        drop(read);
        let out = runx()
            .current_dir(ws.path())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(write))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(141), "{args:?}: {stderr}");
    }
}
