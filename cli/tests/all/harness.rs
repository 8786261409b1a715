//! `runx harness`: exit codes, the summary line CI parses, the JSON report, environment isolation.

use super::*;

const MODULE: &str = r#"
export function echo(inputs, { environment }) {
  return { items: inputs.items ?? [], leaky: environment.LEAKY ?? null };
}
"#;

/// A package `name` under `root` with runner `echo` (optional env `LEAKY`) and `extra` appended
/// to its X.yaml; `files` are written inside the package.
fn package(root: &Path, name: &str, extra: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("X.yaml"),
        format!(
            "skill: {name}\nrun:\n  type: javascript\n  module: m.mjs\n  export: echo\n  environment: {{ optional: [LEAKY] }}\n  inputs: {{ items: array }}\n{extra}"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("m.mjs"), MODULE).unwrap();
    for (p, text) in files {
        let dest = dir.join(p);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, text).unwrap();
    }
    dir
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn last_line(o: &Output) -> String {
    stdout(o).lines().last().unwrap_or_default().to_string()
}

#[test]
fn skill_fixtures_pass() {
    let root = fixtures();
    // The receipts go to a scratch directory, not into the source tree.
    let receipts = tempfile::tempdir().unwrap();
    let out = run_in(
        &root,
        &[
            "harness",
            ".",
            "--receipt-dir",
            receipts.path().to_str().unwrap(),
        ],
        &[("REGION", "leak"), ("TRACE_LABEL", "leak")],
    );
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = last_line(&out);
    let (passed, rest) = summary.split_once(" passed, ").unwrap();
    assert!(passed.parse::<u32>().unwrap() > 10, "{summary}");
    // The corpus holds cases of kinds this runtime does not run: they are listed as skipped.
    let (failed, skipped) = rest.split_once(", ").unwrap();
    assert_eq!(failed, "0 failed");
    assert!(skipped.contains(" skipped ("), "{summary}");
    for case in [
        "hello/missing-region",
        "hostile/spin-hits-wall",
        "hostile/escape-rejected",
        "hello/wrong-output",
    ] {
        assert!(text.contains(&format!("PASS {case} (")), "{case}: {text}");
    }
}

#[test]
fn passing_and_failing_cases() {
    let root = tempfile::tempdir().unwrap();
    let pkg = package(
        root.path(),
        "p",
        "harness:\n  cases:\n    - name: good\n      inputs: { items: [{ name: a, tags: [x, y] }, { name: b }] }\n      expect: { output: { subset: { items: [{ tags: [x] }, {}] } } }\n",
        &[(
            "fixtures/bad.yaml",
            "name: bad\ninputs: { items: [{ name: a }, { name: b, n: 1 }] }\nexpect: { output: { subset: { items: [{}, { name: c }] } } }\n",
        )],
    );
    let p = pkg.to_str().unwrap();
    let out = run_in(root.path(), &["harness", p], &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("PASS p/good ("), "{text}");
    assert!(text.contains("FAIL p/bad ("), "{text}");
    assert!(text.contains("$.output.items[1].name"), "{text}");
    assert!(text.contains("\"c\"") && text.contains("\"b\""), "{text}");
    assert_eq!(last_line(&out), "1 passed, 1 failed");

    let (v, code) = json_in(root.path(), &["harness", p], &[]);
    assert_eq!(code, 1);
    assert_eq!(v["status"], "failed");
    assert_eq!(v["case_count"], 2);
    assert_eq!(v["passed"], 1);
    let f = &v["failures"][0];
    assert_eq!(
        (
            &f["package"],
            &f["case"],
            &f["path"],
            &f["expected"],
            &f["actual"]
        ),
        (
            &Value::from("p"),
            &Value::from("bad"),
            &Value::from("$.output.items[1].name"),
            &Value::from("c"),
            &Value::from("b")
        )
    );

    // A fixture file alone runs only its cases.
    let file = pkg.join("fixtures/bad.yaml");
    let out = run_in(root.path(), &["harness", file.to_str().unwrap()], &[]);
    assert_eq!(last_line(&out), "0 passed, 1 failed");
}

#[test]
fn malformed_fixture_exits_64_naming_file_and_line() {
    let root = tempfile::tempdir().unwrap();
    let pkg = package(
        root.path(),
        "p",
        "",
        &[(
            "fixtures/broken.yaml",
            "cases:\n  - name: a\n    expect: { status: sealedd }\n",
        )],
    );
    let out = run_in(root.path(), &["harness", pkg.to_str().unwrap()], &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(64), "{text}");
    assert!(text.contains("BROKEN p: "), "{text}");
    assert!(text.contains("broken.yaml:3:"), "{text}");
    assert_eq!(last_line(&out), "0 passed, 0 failed, 1 malformed package");
}

#[test]
fn package_without_cases_is_not_declared() {
    let root = tempfile::tempdir().unwrap();
    let pkg = package(root.path(), "empty", "", &[]);
    let out = run_in(root.path(), &["harness", pkg.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("not_declared"), "{}", stdout(&out));
    assert_eq!(last_line(&out), "0 passed, 0 failed");
    let (v, code) = json_in(root.path(), &["harness", pkg.to_str().unwrap()], &[]);
    assert_eq!(
        (v["status"].as_str(), v["case_count"].as_u64(), code),
        (Some("not_declared"), Some(0), 0)
    );

    // In a directory of packages, undeclared packages are listed and do not fail the run.
    package(
        root.path(),
        "full",
        "harness:\n  cases:\n    - name: ok\n",
        &[],
    );
    let (v, code) = json_in(
        root.path(),
        &["harness", root.path().to_str().unwrap()],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "passed");
    assert_eq!(v["not_declared"], serde_json::json!(["empty"]));
}

#[test]
fn harness_environment_does_not_leak_into_cases() {
    let root = tempfile::tempdir().unwrap();
    let pkg = package(
        root.path(),
        "p",
        "harness:\n  cases:\n    - name: no-env\n      expect: { output: { exact: { items: [], leaky: null } } }\n    - name: own-env\n      env: { LEAKY: mine }\n      expect: { output: { subset: { leaky: mine } } }\n",
        &[],
    );
    let out = run_in(
        root.path(),
        &["harness", pkg.to_str().unwrap()],
        &[("LEAKY", "1")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(last_line(&out), "2 passed, 0 failed");
}

/// Inputs refused inside a harness case seal the case's receipt `failed/input_contract_invalid`
/// (a direct run of the same inputs is `blocked/preflight_refused`), and a case may expect it.
#[test]
fn inputs_refused_in_a_case_seal_as_an_invalid_input_contract() {
    let root = tempfile::tempdir().unwrap();
    let pkg = package(
        root.path(),
        "p",
        "harness:\n  cases:\n    - name: wrong-type\n      inputs: { items: 3 }\n      expect:\n        status: failure\n        error: { kind: input, code: wrong_type }\n        receipt: { disposition: failed, reason_code: input_contract_invalid }\n",
        &[],
    );
    let (v, code) = json_in(
        root.path(),
        &["harness", pkg.to_str().unwrap(), "--receipt-dir", "hr"],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["passed"], 1, "{v}");
    let h: Value = serde_json::from_slice(
        &std::fs::read(root.path().join(v["receipt"].as_str().unwrap())).unwrap(),
    )
    .unwrap();
    let file = root
        .path()
        .join("hr")
        .join(h["cases"][0]["receipt"].as_str().unwrap());
    let receipt: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(
        (
            &receipt["seal"]["disposition"],
            &receipt["seal"]["reason_code"]
        ),
        (
            &Value::from("failed"),
            &Value::from("input_contract_invalid")
        )
    );
    assert_eq!(evidence(&receipt)["failure"]["code"], "wrong_type");
    // The same inputs run directly are refused before the run.
    let (v, code) = json_in(
        root.path(),
        &["skill", pkg.to_str().unwrap(), "--input-json", "items=3"],
        &[],
    );
    assert_eq!(code, 64, "{v}");
    assert_eq!(
        (
            &v["outcome"],
            &v["closure"]["disposition"],
            &v["closure"]["reason_code"]
        ),
        (
            &Value::from("blocked"),
            &Value::from("blocked"),
            &Value::from("preflight_refused")
        ),
        "{v}"
    );
}
