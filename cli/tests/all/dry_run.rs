//! `runx skill DIR [RUNNER] --dry-run`: what a run would do, resolved; nothing started, no
//! receipt written, no environment value printed.

use super::*;
use crate::containment::{run_bounded, write_files};
use serde_json::json;
use std::time::Duration;

const SECRET: &str = "secret-value-123";

/// A cli-tool whose run leaves a marker in the workspace, so a dry run that spawned it would
/// show.
const MARK_PROFILE: &str = r#"skill: mark
version: "0.2.0"
runners:
  mark:
    default: true
    type: cli-tool
    command: ./bin/mark.sh
    args: ["{{name}}", "--region={{env.REGION}}"]
    timeout_seconds: 9
    environment: { optional: [REGION] }
    inputs:
      name: { type: string, required: true }
"#;
const MARK: &str = "#!/bin/sh\ntouch \"$RUNX_CWD/marker\"\necho '{\"marked\": true}'\n";

/// A workspace with the marker package in `pkg/` and an empty receipt directory `rcpt/`.
fn mark_workspace() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let ws = tempfile::tempdir().unwrap();
    write_files(
        ws.path(),
        &[("pkg/X.yaml", MARK_PROFILE), ("pkg/bin/mark.sh", MARK)],
    );
    let script = ws.path().join("pkg/bin/mark.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(ws.path().join("rcpt")).unwrap();
    ws
}

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// The error of a dry run is the run's, less `exit_code`: a refusal comes before any process,
/// so the run's is always null.
fn same_failure(planned: &Value, ran: &Value) {
    assert!(ran["exit_code"].is_null(), "{ran}");
    let mut ran = ran.clone();
    ran.as_object_mut().unwrap().remove("exit_code");
    assert_eq!(planned, &ran);
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_cli_tool_dry_run_shows_argv_and_cwd_and_starts_nothing() {
    let ws = mark_workspace();
    let args = [
        "skill",
        "pkg",
        "-i",
        "name=ada lovelace",
        "--receipt-dir",
        "rcpt",
        "--dry-run",
    ];
    let env = [("REGION", SECRET)];
    let out = run_in(ws.path(), &args, &env);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let pkg = ws.path().join("pkg").canonicalize().unwrap();
    let program = format!("{}/bin/mark.sh", pkg.display());
    assert!(
        stdout.contains(&format!(
            "argv:         {program} 'ada lovelace' '--region={{{{env.REGION}}}}'"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("argument 2 holds the value of REGION (not shown)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("cwd:          {}\n", pkg.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("staged files: inputs.json (23 bytes), input_NAME (12 bytes)"),
        "{stdout}"
    );
    assert!(stdout.contains("timeout:      9000 ms"), "{stdout}");
    let (v, code) = json_in(ws.path(), &args, &env);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "ready");
    assert_eq!(v["dry_run"], true);
    let p = &v["plan"]["process"];
    assert_eq!(
        p["argv"],
        json!([program, "ada lovelace", "--region={{env.REGION}}"])
    );
    assert_eq!(p["hidden"], json!([{"index": 2, "names": ["REGION"]}]));
    assert_eq!(p["cwd"], pkg.display().to_string());
    assert_eq!(v["plan"]["limits"]["wall_milliseconds"], 9000);
    // Nothing ran and nothing was written, twice over.
    assert!(!ws.path().join("marker").exists(), "the tool was spawned");
    assert_eq!(entries(&ws.path().join("rcpt")), 0, "a receipt was written");
    assert!(!ws.path().join(".runx").exists());
    // The same command without --dry-run does both: the test would see a spawn.
    let ran = run_in(ws.path(), &args[..args.len() - 1], &env);
    assert_eq!(ran.status.code(), Some(0), "{:?}", text(&ran));
    assert!(ws.path().join("marker").exists());
    assert_eq!(entries(&ws.path().join("rcpt")), 1);
}

#[test]
fn an_environment_value_is_never_printed_only_its_name() {
    let env = [("REGION", SECRET)];
    let runs: [&[&str]; 4] = [
        &["skill", "skill-fixtures/tool", "--dry-run"],
        &["skill", "skill-fixtures/tool", "--dry-run", "--json"],
        &[
            "skill",
            "skill-fixtures/hello",
            "-i",
            "name=Ada",
            "--dry-run",
        ],
        &[
            "skill",
            "skill-fixtures/hello",
            "-i",
            "name=Ada",
            "--dry-run",
            "--json",
        ],
    ];
    let ws = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), &ws.path().join("skill-fixtures"));
    for args in runs {
        let out = run_in(ws.path(), args, &env);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stdout}{stderr}");
        assert!(
            !stdout.contains(SECRET) && !stderr.contains(SECRET),
            "{args:?}: {stdout}"
        );
        assert!(stdout.contains("REGION"), "{args:?}: {stdout}");
    }
    // Where a template puts the value in an argument, the argument is shown without it.
    let ws = mark_workspace();
    for json in [false, true] {
        let mut args = vec!["skill", "pkg", "-i", "name=x", "--dry-run"];
        if json {
            args.push("--json");
        }
        let (stdout, _) = text(&run_in(ws.path(), &args, &env));
        assert!(!stdout.contains(SECRET), "{stdout}");
        assert!(stdout.contains("{{env.REGION}}"), "{stdout}");
    }
    assert!(!ws.path().join("marker").exists());
}

#[test]
fn a_paged_dry_run_shows_the_artifact_and_its_pages() {
    let (ws, _) = workspace_with("archive");
    let body = std::fs::read(ws.path().join("pkg/data/tweets.js")).unwrap();
    let args = [
        "skill",
        "pkg",
        "throw-on-page-3",
        "-i",
        "archive_file=pkg/data/tweets.js",
        "--dry-run",
    ];
    let (v, code) = json_in(ws.path(), &args, &[]);
    assert_eq!(code, 0, "{v}");
    let plan = &v["plan"];
    assert_eq!(plan["artifact"]["path"], "pkg/data/tweets.js");
    assert_eq!(plan["artifact"]["scope"], "workspace");
    assert_eq!(plan["artifact"]["bytes"], body.len());
    assert_eq!(plan["artifact"]["digest"], runx_receipts::sha256_hex(&body));
    let pages = &plan["pages"];
    assert_eq!(pages["page_bytes"], 1024);
    assert!(pages["stop"].is_null(), "{pages}");
    let list = pages["pages"].as_array().unwrap();
    assert!(list.len() > 3, "{pages}");
    assert_eq!(pages["count"], list.len());
    // The pages tile the file, in order, each within its budget.
    let mut at = 0;
    for (i, page) in list.iter().enumerate() {
        assert_eq!(
            (page["index"].as_u64(), page["offset"].as_u64()),
            (Some(i as u64), Some(at))
        );
        let next = page["next_offset"].as_u64().unwrap();
        assert!(page["records"].as_u64().unwrap() >= 1);
        at = next;
    }
    assert_eq!(at, body.len() as u64);
    assert_eq!(list.last().unwrap()["eof"], true);
    // The module sees neither path input: its input digest is of what is left.
    assert_eq!(plan["input_digest"], runx_receipts::digest(&json!({})));
    let out = run_in(ws.path(), &args, &[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains(&format!(
            "artifact:     pkg/data/tweets.js in the workspace {} ({} bytes, {})",
            ws.path().canonicalize().unwrap().display(),
            body.len(),
            runx_receipts::sha256_hex(&body)
        )),
        "{stdout}"
    );
    assert!(stdout.contains("  page 0: bytes 0.."), "{stdout}");
    assert!(!ws.path().join(".runx").exists(), "a receipt was written");
}

#[test]
fn a_javascript_dry_run_lists_the_module_closure_with_digests() {
    let (ws, pkg) = workspace_with("imports");
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "--dry-run"], &[]);
    assert_eq!(code, 0, "{v}");
    let module = &v["plan"]["module"];
    assert_eq!(module["entry"], "main.mjs");
    assert_eq!(module["export"], "summarize");
    let files: Vec<Value> = ["lib/label.js", "lib/math.mjs", "main.mjs"]
        .iter()
        .map(|path| {
            let bytes = std::fs::read(pkg.join(path)).unwrap();
            json!({"path": path, "bytes": bytes.len(), "digest": runx_receipts::sha256_hex(&bytes)})
        })
        .collect();
    assert_eq!(module["modules"], json!(files));
    // The digest a run's receipt records.
    let (ran, _) = json_in(ws.path(), &["skill", "pkg"], &[]);
    let receipt = receipt_of(&ran);
    let evidence = evidence(&receipt);
    assert!(module["bundle_digest"].is_string(), "{module}");
    assert_eq!(module["bundle_digest"], evidence["bundle_digest"]);
    assert_eq!(v["plan"]["input_digest"], evidence["input_digest"]);
    let (stdout, _) = text(&run_in(ws.path(), &["skill", "pkg", "--dry-run"], &[]));
    let main = std::fs::read(pkg.join("main.mjs")).unwrap();
    assert!(
        stdout.contains(&format!(
            "  main.mjs ({} bytes, {})",
            main.len(),
            runx_receipts::sha256_hex(&main)
        )),
        "{stdout}"
    );
}

#[test]
fn a_refused_dry_run_fails_as_the_run_does_without_a_receipt() {
    let ws = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), &ws.path().join("skill-fixtures"));
    let region = [("REGION", "eu")];
    /// The arguments after `skill`, the environment, the exit code.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], i32);
    let cases: [Case<'_>; 6] = [
        (&["skill-fixtures/hello"], &region, 64),
        (
            &[
                "skill-fixtures/hello",
                "-i",
                "name=Ada",
                "-i",
                "excited=maybe",
            ],
            &region,
            64,
        ),
        // `-i KEY` without a value: the flags after it (`--receipt-dir`, `--json`,
        // `--dry-run`) stay runx's flags, so this is a `bad_pair` refusal.
        (&["skill-fixtures/hello", "-i", "name"], &region, 64),
        (
            &["skill-fixtures/hello", "--inputs", "nothere.json"],
            &region,
            64,
        ),
        (&["skill-fixtures/hello", "-i", "name=Ada"], &[], 1),
        (&["skill-fixtures/hello", "greeet"], &region, 64),
    ];
    for (args, env, want) in cases {
        let rcpt = tempfile::tempdir().unwrap();
        let rcpt_dir = rcpt.path().to_str().unwrap();
        let mut all = vec!["skill"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--receipt-dir", rcpt_dir]);
        let (ran, ran_code) = json_in(ws.path(), &all, env);
        assert_eq!(
            entries(rcpt.path()),
            1,
            "{args:?}: the run leaves a receipt"
        );
        std::fs::remove_dir_all(rcpt.path()).unwrap();
        all.push("--dry-run");
        let (planned, code) = json_in(ws.path(), &all, env);
        assert_eq!((code, ran_code), (want, want), "{args:?}: {planned}");
        same_failure(&planned["error"], &ran["error"]);
        assert_eq!(planned["status"], "failure");
        // The run itself wrote its receipt: sealed, and not completed.
        assert_eq!(ran["status"], "sealed", "{args:?}: {ran}");
        assert_ne!(ran["outcome"], "completed", "{args:?}: {ran}");
        assert!(planned["plan"].is_null());
        assert!(!rcpt.path().exists(), "{args:?}: a dry run wrote a receipt");
        // In text, the run's failure, on stderr.
        let out = run_in(ws.path(), &all, env);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(want));
        assert!(stdout.is_empty(), "{stdout}");
        let message = ran["error"]["message"].as_str().unwrap();
        assert!(stderr.contains(message), "{stderr}");
        assert!(stderr.contains("no receipt was written"), "{stderr}");
    }
}

#[test]
fn hostile_values_and_special_artifacts() {
    let ws = mark_workspace();
    // An argument that would inject, were there a shell: one argument, shown quoted, not run;
    // control characters in it reach the terminal escaped.
    let hostile = "name=$(touch pwned); `touch pwned2` \u{1b}]0;owned\u{7}\nnext\u{9b}\u{7f}";
    let args = ["skill", "pkg", "-i", hostile, "--dry-run"];
    let (stdout, stderr) = text(&run_in(ws.path(), &args, &[]));
    assert!(
        stdout.contains(r"$'$(touch pwned); `touch pwned2` \x1b]0;owned\x07\nnext\x9b\x7f'"),
        "{stdout}{stderr}"
    );
    // Not in the argv, not in the inputs' JSON (which escapes only the C0 controls).
    assert!(
        !stdout.chars().any(|c| c.is_control() && c != '\n'),
        "{stdout:?}"
    );
    let (v, code) = json_in(ws.path(), &args, &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["plan"]["process"]["argv"][1], &hostile[5..]);
    assert_eq!(v["plan"]["process"]["argv"].as_array().unwrap().len(), 3);
    // A NUL byte would cut the argument: the run refuses it before spawn, and so does the plan.
    let nul = [
        "skill",
        "pkg",
        "--input-json",
        r#"name="x\u0000y""#,
        "--dry-run",
    ];
    let (v, code) = json_in(ws.path(), &nul, &[]);
    let (ran, ran_code) = json_in(ws.path(), &nul[..4], &[]);
    assert_eq!((code, ran_code), (64, 64), "{v}");
    assert_eq!(v["error"]["code"], "nul_byte");
    same_failure(&v["error"], &ran["error"]);
    for marker in ["pwned", "pwned2", "marker"] {
        assert!(!ws.path().join(marker).exists(), "{marker}");
    }
    // A symlink and a FIFO as the artifact: refused as a run refuses them, without blocking.
    let (ws, _) = workspace_with("archive");
    std::os::unix::fs::symlink("pkg/data/tweets.js", ws.path().join("link.js")).unwrap();
    nix::unistd::mkfifo(&ws.path().join("fifo.js"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    for (file, code) in [("link.js", "artifact_scope"), ("fifo.js", "artifact_type")] {
        let input = format!("archive_file={file}");
        let mut args = vec!["skill", "pkg", "-i", &input, "--json"];
        let (ran, _) =
            json_of(&run_bounded(ws.path(), &args, Stdio::null(), Duration::from_secs(20)).0);
        args.push("--dry-run");
        let (out, killed) = run_bounded(ws.path(), &args, Stdio::null(), Duration::from_secs(20));
        assert!(!killed, "{file}: the dry run blocked");
        let (v, exit) = json_of(&out);
        assert_eq!((v["error"]["code"].as_str(), exit), (Some(code), 1), "{v}");
        same_failure(&v["error"], &ran["error"]);
    }
}
