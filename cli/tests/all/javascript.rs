//! `runx skill` with javascript runners.

use super::*;
use serde_json::json;
use std::io::Write;

#[test]
fn default_named_and_async_exports() {
    let (ws, _) = workspace_with("hello");
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "-i", "name=Ada"],
        &[("REGION", "eu")],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "sealed");
    assert_eq!(v["result"]["greeting"], "Hello, Ada.");
    assert_eq!(v["result"]["region"], "eu");
    assert_eq!(
        v["result"]["trace"],
        Value::Null,
        "absent optional env is omitted"
    );
    assert_eq!(v["outcome"], "completed");
    assert_eq!(v["error"], Value::Null);
    assert!(Path::new(v["receipt_path"].as_str().unwrap()).is_file());
    let (v, _) = json_in(ws.path(), &["skill", "pkg", "shout", "-i", "name=Ada"], &[]);
    assert_eq!(v["result"], json!({"greeting": "HELLO, ADA!"}));
}

/// The keys of a `--json` result, sorted.
fn keys(v: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

/// The keys of runx's `runx.skill_run.v1` envelope, less `error`, plus this runtime's
/// `console` and `stderr`.
const ENVELOPE_KEYS: [&str; 13] = [
    "closure",
    "console",
    "next",
    "outcome",
    "receipt_id",
    "receipt_path",
    "result",
    "run_id",
    "runner",
    "schema",
    "skill_name",
    "status",
    "stderr",
];

#[test]
fn json_output_has_exactly_the_documented_keys() {
    let (ws, _) = workspace_with("hello");
    // Success: no `error` key at all (not a null one).
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "shout", "-i", "name=x"], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(keys(&v), ENVELOPE_KEYS, "{v}");
    assert_eq!(v["schema"], "runx.skill_run.v1");
    assert_eq!(
        (&v["status"], &v["outcome"], &v["skill_name"], &v["runner"]),
        (
            &json!("sealed"),
            &json!("completed"),
            &json!("hello"),
            &json!("shout")
        )
    );
    assert_eq!(v["result"], json!({"greeting": "HELLO, X!"}));
    assert!(v["next"].is_null());
    assert_eq!(
        (&v["closure"]["disposition"], &v["closure"]["reason_code"]),
        (&json!("closed"), &json!("process_closed"))
    );
    let receipt_id = v["receipt_id"].as_str().unwrap();
    let hex = receipt_id.strip_prefix("sha256:").unwrap();
    assert_eq!(hex.len(), 64, "{receipt_id}");
    assert!(
        v["receipt_path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("sha256-{hex}.json")),
        "{v}"
    );
    assert_eq!(receipt_of(&v)["id"], receipt_id);
    // `run_<runner>_<16 hex>`: the same for the same package, runner and inputs.
    let run_id = v["run_id"].as_str().unwrap();
    let tail = run_id.strip_prefix("run_shout_").unwrap();
    assert!(
        tail.len() == 16 && tail.chars().all(|c| c.is_ascii_hexdigit()),
        "{run_id}"
    );
    let (again, _) = json_in(ws.path(), &["skill", "pkg", "shout", "-i", "name=x"], &[]);
    assert_eq!(again["run_id"], run_id);
    let (other, _) = json_in(ws.path(), &["skill", "pkg", "shout", "-i", "name=y"], &[]);
    assert_ne!(other["run_id"], run_id);

    // A failed run that wrote its receipt: the same keys and `error`; sealed, no result.
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "wrong-output"], &[]);
    assert_eq!(code, 1, "{v}");
    let mut with_error = ENVELOPE_KEYS.to_vec();
    with_error.push("error");
    with_error.sort_unstable();
    assert_eq!(keys(&v), with_error, "{v}");
    assert_eq!(
        (&v["status"], &v["outcome"], &v["result"]),
        (&json!("sealed"), &json!("failed"), &Value::Null),
        "{v}"
    );
    assert_eq!(keys(&v["error"]), ["code", "exit_code", "kind", "message"]);
    assert_eq!(v["error"]["kind"], "output_rejected");
    assert!(
        v["error"]["exit_code"].is_null(),
        "not a cli-tool exit: {v}"
    );
    assert_eq!(
        (&v["closure"]["disposition"], &v["closure"]["reason_code"]),
        (&json!("failed"), &json!("process_failed"))
    );
    assert!(v["receipt_id"].as_str().unwrap().starts_with("sha256:"));

    // Refused before any package was loaded: status, runner and error only.
    let (v, code) = json_in(ws.path(), &["skill", "nothere", "greet"], &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(keys(&v), ["error", "runner", "status"], "{v}");
    assert_eq!(
        (&v["status"], &v["runner"]),
        (&json!("failure"), &json!("greet"))
    );
    assert_eq!(keys(&v["error"]), ["code", "kind", "message"]);
    assert_eq!(v["error"]["code"], "not_a_package");
}

#[test]
fn json_output_carries_the_console_lines() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: talk\nrun: { type: javascript, module: m.mjs }\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("m.mjs"),
        "export default () => { console.log('one', 2); console.error('three'); return {}; };",
    )
    .unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "pkg"], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["console"]["lines"],
        json!([{"level": "log", "message": "one 2"}, {"level": "error", "message": "three"}])
    );
}

#[test]
fn relative_imports_across_three_modules() {
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            "imports",
            "--receipt-dir",
            &tempfile::tempdir().unwrap().path().display().to_string(),
        ],
        &[],
    );
    assert_eq!(code, 0);
    assert_eq!(
        v["result"],
        json!({"total": 6, "labels": ["#1/2", "#2/4", "#3/6"]})
    );
}

#[test]
fn environment_required_optional_and_missing() {
    let (ws, _) = workspace_with("hello");
    let (v, _) = json_in(
        ws.path(),
        &["skill", "pkg", "-i", "name=a"],
        &[("REGION", "us"), ("TRACE_LABEL", "t1"), ("UNDECLARED", "x")],
    );
    assert_eq!(v["result"]["trace"], "t1");
    let out = run_in(ws.path(), &["skill", "pkg", "-i", "name=a", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "environment");
    assert!(v["error"]["message"].as_str().unwrap().contains("REGION"));
    // No worker was started: the receipt has no bundle digest (nothing was even collected).
    let receipt = receipt_of(&v);
    assert_eq!(evidence(&receipt)["failure"]["kind"], "environment");
    assert_eq!(evidence(&receipt)["bundle_digest"], Value::Null);
}

#[test]
fn inputs_from_file_stdin_and_pairs() {
    let (ws, _) = workspace_with("hello");
    std::fs::write(ws.path().join("in.json"), r#"{"name": "File"}"#).unwrap();
    let (v, _) = json_in(
        ws.path(),
        &["skill", "pkg", "shout", "--inputs", "in.json"],
        &[],
    );
    assert_eq!(v["result"]["greeting"], "HELLO, FILE!");
    let mut child = runx()
        .current_dir(ws.path())
        .args(["skill", "pkg", "shout", "--inputs", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"name": "stdin"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["greeting"], "HELLO, STDIN!");
    let (v, _) = json_in(
        ws.path(),
        &[
            "skill",
            "pkg",
            "-i",
            "name=\"quoted\"",
            "-i",
            "excited=true",
        ],
        &[("REGION", "r")],
    );
    assert_eq!(v["result"]["greeting"], "Hello, quoted!");
}

#[test]
fn bad_inputs_are_usage_errors() {
    let (ws, _) = workspace_with("hello");
    std::fs::write(ws.path().join("bad.json"), "{not json").unwrap();
    std::fs::write(ws.path().join("list.json"), "[1, 2]").unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    for (args, needle) in [
        (
            vec!["skill", "pkg", "--inputs", "bad.json"],
            "not valid JSON",
        ),
        (vec!["skill", "pkg", "--inputs", "list.json"], "JSON object"),
        (
            vec!["skill", "pkg", "--inputs", outside.path().to_str().unwrap()],
            "outside the working directory",
        ),
        (
            vec!["skill", "pkg", "--inputs", "bad.json", "-i", "a=1"],
            "not both",
        ),
        (
            vec!["skill", "pkg", "-i", "excited=true"],
            "`name` is required",
        ),
        (vec!["skill", "pkg", "-i", "name=1"], "must be a string"),
        (vec!["skill", "pkg", "shout", "-i", "noequals"], "KEY=VALUE"),
        // Two ids one apart would have one digest, and the module would see another number
        // than a cli-tool: refused, whatever the input's declaration.
        (
            vec![
                "skill",
                "pkg",
                "-i",
                "name=Ada",
                "-i",
                "id=9007199254740993",
            ],
            "pass it as a string",
        ),
    ] {
        let out = run_in(ws.path(), &args, &[("REGION", "r")]);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn output_contract_names_the_key() {
    let (ws, _) = workspace_with("hello");
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "wrong-output"], &[]);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["kind"], "output_rejected");
    let (v, _) = json_in(
        ws.path(),
        &["skill", "pkg", "shout", "-i", "name=lower 1"],
        &[],
    );
    assert_eq!(v["error"]["code"], "schema", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("greeting"));
}

#[test]
fn unsupported_runner_type_is_named() {
    let (ws, _) = workspace_with("hello");
    let out = run_in(ws.path(), &["skill", "pkg", "graph"], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`graph`"));
}

#[test]
fn symlinked_and_outside_modules_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(ws.path().join("outside.mjs"), "export default () => ({});").unwrap();
    std::fs::write(pkg.join("real.mjs"), "export default () => ({});").unwrap();
    std::os::unix::fs::symlink(pkg.join("real.mjs"), pkg.join("link.mjs")).unwrap();
    std::fs::write(
        pkg.join("imp.mjs"),
        "import '../outside.mjs'; export default () => ({});",
    )
    .unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: s\nversion: '1'\nrunners:\n  link: {type: javascript, module: link.mjs}\n  imp: {type: javascript, module: imp.mjs}\n",
    )
    .unwrap();
    for (runner, needle) in [("link", "symlink"), ("imp", "../outside.mjs")] {
        let (v, code) = json_in(ws.path(), &["skill", "pkg", runner], &[]);
        assert_ne!(code, 0, "{runner}");
        // Sealed with the failure, never completed, no result.
        assert_eq!(v["outcome"], "failed", "{runner}: {v}");
        assert!(v["result"].is_null(), "{runner}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{runner}: {v}"
        );
    }
    // A module path that leaves the package is refused when the profile loads, by the same
    // rule the worker applies to imports.
    let up = ws.path().join("up");
    std::fs::create_dir_all(&up).unwrap();
    std::fs::write(
        up.join("X.yaml"),
        "skill: s\nrun: {type: javascript, module: ../outside.mjs}\n",
    )
    .unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "up"], &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["kind"], "profile", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("../outside.mjs") && message.contains("leaves the skill directory"),
        "{v}"
    );
}

#[test]
fn output_digest_is_deterministic() {
    let (ws, _) = workspace_with("hello");
    let digest = |ws: &Path| {
        let (v, _) = json_in(ws, &["skill", "pkg", "shout", "-i", "name=same"], &[]);
        let r = receipt_of(&v);
        assert_eq!(r["schema"], "runx.receipt.v1");
        let e = evidence(&r);
        assert_eq!(e["schema"], "runx-rs.run_evidence.v1");
        assert_eq!(e["status"], "sealed");
        (e["input_digest"].clone(), e["output_digest"].clone())
    };
    let a = digest(ws.path());
    let b = digest(ws.path());
    assert_eq!(a, b);
    assert!(a.1.as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn hostile_modules_fail_typed() {
    let (ws, _) = workspace_with("hostile");
    for (runner, kind, code) in [
        ("spin", "resource_limit", "wall_milliseconds"),
        ("heap", "resource_limit", "heap_bytes"),
        ("recurse", "resource_limit", "stack_bytes"),
        ("random", "execution_failed", "execution_failed"),
        ("escape", "module_rejected", "specifier"),
        ("dynamic", "module_rejected", "module_rejected"),
        ("never", "execution_failed", "execution_failed"),
        ("giant", "resource_limit", "output_bytes"),
    ] {
        let (v, exit) = json_in(ws.path(), &["skill", "pkg", runner], &[]);
        assert_eq!(exit, 1, "{runner}: {v}");
        assert_eq!(v["error"]["kind"], kind, "{runner}: {v}");
        assert_eq!(v["error"]["code"], code, "{runner}: {v}");
    }
    let (v, _) = json_in(ws.path(), &["skill", "pkg"], &[]);
    assert_eq!(v["result"], json!({"visible": [], "now": 0}));
}

/// A module that throws the engines' words for a limit fails as itself, in the run and in its
/// receipt: a receipt never says `heap_bytes` for a value the module threw.
#[test]
fn a_thrown_value_is_never_recorded_as_a_limit() {
    let (ws, _) = workspace_with("hostile");
    for (runner, message) in [
        ("forged", "Error: out of memory"),
        ("null", "the module threw null"),
    ] {
        let (v, exit) = json_in(ws.path(), &["skill", "pkg", runner], &[]);
        assert_eq!(exit, 1, "{runner}: {v}");
        assert_eq!(v["error"]["kind"], "execution_failed", "{runner}: {v}");
        assert_eq!(v["error"]["code"], "execution_failed", "{runner}: {v}");
        let said = v["error"]["message"].as_str().unwrap_or_default();
        assert!(said.starts_with(message), "{runner}: {v}");
        let receipt = receipt_of(&v);
        let failure = &evidence(&receipt)["failure"];
        assert_eq!(failure["kind"], "execution_failed", "{runner}: {failure}");
        assert_eq!(failure["code"], "execution_failed", "{runner}: {failure}");
    }
}

#[test]
fn ctrl_c_kills_the_workers() {
    let (ws, _) = workspace_with("hostile");
    let child = runx()
        .current_dir(ws.path())
        .args(["skill", "pkg", "spin", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the worker to appear as a child of runx.
    let workers = workers_of(
        child.id(),
        std::time::Duration::from_secs(2),
        std::time::Duration::from_millis(20),
    );
    let out = interrupt(child);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "interrupted");
    // The receipt closes the run as killed.
    assert_eq!(
        (&v["status"], &v["outcome"]),
        (&json!("sealed"), &json!("failed"))
    );
    let receipt = receipt_of(&v);
    assert_eq!(
        (
            &receipt["seal"]["disposition"],
            &receipt["seal"]["reason_code"]
        ),
        (&json!("killed"), &json!("process_killed"))
    );
    let e = evidence(&receipt);
    assert_eq!(
        (&e["state"], &e["disposition"], &e["reason_code"]),
        (&json!("sealed"), &json!("killed"), &json!("process_killed"))
    );
    for pid in workers {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "worker {pid} left behind"
        );
    }
}

/// With `--engine`, the worker starts ahead while the profile is read; Ctrl-C while it is still
/// starting kills it too, and runx reaps it before it exits.
#[test]
fn ctrl_c_while_the_worker_starts_ahead_leaves_none() {
    let engine = test_engine().unwrap_or_else(|| "quickjs".to_string());
    for _ in 0..5 {
        let (ws, _) = workspace_with("hostile");
        let child = Command::new(env!("CARGO_BIN_EXE_runx"))
            .current_dir(ws.path())
            .env_remove("RUST_LOG")
            .args(["--engine", &engine, "skill", "pkg", "spin", "--json"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Looked for without a pause, to interrupt it while it is still starting.
        let workers = workers_of(
            child.id(),
            std::time::Duration::from_secs(5),
            std::time::Duration::ZERO,
        );
        interrupt(child);
        for pid in workers {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "worker {pid} left behind"
            );
        }
    }
}

#[test]
fn inspect_describes_runners_and_limits() {
    let out = run_in(&fixtures(), &["skill", "inspect", "hello", "--json"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let greet = v["runners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "greet")
        .unwrap();
    assert_eq!(greet["default"], true);
    assert_eq!(greet["environment"]["required"], json!(["REGION"]));
    assert_eq!(greet["limits"]["wall_milliseconds"], 2000);
    assert_eq!(greet["limits"]["heap_bytes"], 64 * 1024 * 1024);
}

/// `runx` without the suite's `--engine`, for tests that pick the engine themselves.
fn runx_choosing_engine(cwd: &Path, args: &[&str]) -> (Value, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_runx"))
        .env_remove("RUST_LOG")
        .current_dir(cwd)
        .args(args)
        .arg("--json")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    json_of(&out)
}

/// A package whose runner prefers `engine` and reports which engine ran it (a V8 stack starts
/// with the error's name and message, a QuickJS stack lists frames only).
fn engine_package(ws: &Path, engine: &str) {
    let pkg = ws.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("main.mjs"),
        "export default () => ({ v8: String(new Error('probe').stack).startsWith('Error: probe') });",
    )
    .unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        format!(
            "skill: engines\nversion: '1'\nrunners:\n  main:\n    type: javascript\n    module: main.mjs\n    engine: {engine}\n    outputs: {{ v8: boolean }}\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_profile_prefers_an_engine_and_the_caller_overrides_it() {
    let ws = tempfile::tempdir().unwrap();
    engine_package(ws.path(), "v8");
    let (inspect, code) = runx_choosing_engine(ws.path(), &["skill", "inspect", "pkg"]);
    assert_eq!(code, 0, "{inspect}");
    let engine = &inspect["runners"][0]["engine"];
    assert_eq!(engine["declared"], "v8", "{inspect}");
    assert_eq!(engine["default"], "quickjs", "{inspect}");
    let has_v8 = engine["built"].as_array().unwrap().contains(&json!("v8"));

    let (v, code) = runx_choosing_engine(ws.path(), &["skill", "pkg"]);
    if has_v8 {
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["result"], json!({"v8": true}), "the profile's engine ran");
    } else {
        // A runx without V8 refuses the runner with a typed error that says what to do.
        assert_eq!(code, 64, "{v}");
        assert_eq!(v["error"]["kind"], "profile", "{v}");
        assert_eq!(v["error"]["code"], "engine_unavailable", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("v8") && message.contains("--features v8"),
            "{message}"
        );
        assert!(message.contains("--engine"), "{message}");
    }
    // The caller's `--engine` wins over the profile, on any build.
    let (v, code) = runx_choosing_engine(ws.path(), &["--engine", "quickjs", "skill", "pkg"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"], json!({"v8": false}));

    engine_package(ws.path(), "quickjs");
    let (v, code) = runx_choosing_engine(ws.path(), &["skill", "pkg"]);
    assert_eq!((code, &v["result"]), (0, &json!({"v8": false})), "{v}");
    if has_v8 {
        let (v, code) = runx_choosing_engine(ws.path(), &["--engine", "v8", "skill", "pkg"]);
        assert_eq!((code, &v["result"]), (0, &json!({"v8": true})), "{v}");
    }
}

#[test]
fn an_engine_runx_does_not_know_is_an_invalid_profile() {
    let ws = tempfile::tempdir().unwrap();
    engine_package(ws.path(), "spidermonkey");
    let (v, code) = runx_choosing_engine(ws.path(), &["skill", "pkg"]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "invalid_profile", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("engine")
            && message.contains("spidermonkey")
            && message.contains("quickjs, v8"),
        "{message}"
    );
    let pkg = ws.path().join("pkg");
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: engines\nversion: '1'\nrunners:\n  main:\n    type: cli-tool\n    command: echo\n    engine: v8\n",
    )
    .unwrap();
    let (v, code) = runx_choosing_engine(ws.path(), &["skill", "pkg"]);
    assert_eq!(code, 64, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`engine` applies only to javascript runners"),
        "{message}"
    );
}

/// `--json` promises one JSON object on stdout: a command line refused before any command reads
/// it (an unknown flag, a flag without its value, a missing argument) gives runx's failure
/// object with the kind `usage`, and exit 64 (issue 43, "tried as a user would").
#[test]
fn a_refused_command_line_with_json_prints_one_json_object() {
    for args in [
        &["skill", "hello", "--json", "--no-such-flag"][..],
        &["skill", "--json"][..],
        &["history", "-j", "--nope"][..],
        &["skill", "inspect", "--json"][..],
    ] {
        let out = run_in(&fixtures(), args, &[]);
        assert_eq!(out.status.code(), Some(64), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let v: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{args:?}: stdout is not one JSON object ({e}): {text:?}"));
        assert_eq!(v["status"], "failure", "{args:?}: {v}");
        assert_eq!(v["error"]["kind"], "usage", "{args:?}: {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            !message.is_empty() && !message.contains('\n'),
            "{args:?}: {v}"
        );
    }
    // Help is not a refusal: it prints as it did.
    let out = run_in(&fixtures(), &["skill", "--help", "--json"], &[]);
    assert_eq!(out.status.code(), Some(0));
}
