use super::*;
use runx_profile::PROFILE_FILE;
use runx_runtime::{RunOutcome, Runtime};
use serde_json::{Value, json};
use std::path::Path;

fn path_of(m: Option<Mismatch>) -> String {
    m.map(|m| m.path).unwrap_or_default()
}

#[test]
fn subset_matches_nested_objects_and_arrays() {
    let actual = json!({
        "total": 6, "extra": true,
        "items": [{"name": "a", "n": 1}, {"name": "b"}, {"name": "c", "deep": {"x": [1, 2, 3]}}]
    });
    assert_eq!(match_subset(&json!({}), &actual, "$.output"), None);
    assert_eq!(
        match_subset(
            &json!({"items": [{"name": "a"}, {}, {"deep": {"x": [1, 2]}}], "total": 6.0}),
            &actual,
            "$.output"
        ),
        None
    );
    let m = match_subset(
        &json!({"items": [{}, {}, {"name": "z"}]}),
        &actual,
        "$.output",
    )
    .expect("differs");
    assert_eq!(m.path, "$.output.items[2].name");
    assert_eq!(m.expected, json!("z"));
    assert_eq!(m.actual, json!("c"));
    assert_eq!(
        path_of(match_subset(
            &json!({"items": [{}, {}, {"deep": {"x": [1, 5]}}]}),
            &actual,
            "$.output"
        )),
        "$.output.items[2].deep.x[1]"
    );
    let m =
        match_subset(&json!({"items": [{}, {}, {}, {}]}), &actual, "$.output").expect("too short");
    assert_eq!(m.path, "$.output.items[3]");
    assert_eq!(m.actual, Value::Null);
    let m = match_subset(&json!({"missing": 1}), &actual, "$.output").expect("missing");
    assert_eq!(
        (m.path.as_str(), m.message.as_str()),
        ("$.output.missing", "missing key")
    );
    assert_eq!(
        path_of(match_subset(&json!({"a b": 1}), &json!({}), "$")),
        "$[\"a b\"]"
    );
    // Type differences are differences.
    let m = match_subset(&json!({"items": {}}), &actual, "$.output").expect("type");
    assert_eq!(m.message, "expected object, got array");
    assert_eq!(
        path_of(match_subset(&json!([null]), &json!([0]), "$")),
        "$[0]"
    );
}

#[test]
fn exact_requires_equality() {
    let actual = json!({"a": [1, {"b": 2}], "c": "x"});
    assert_eq!(match_exact(&actual.clone(), &actual, "$.output"), None);
    assert_eq!(
        match_exact(&json!({"a": [1.0, {"b": 2}], "c": "x"}), &actual, "$"),
        None
    );
    let m = match_exact(&json!({"a": [1, {"b": 2}]}), &actual, "$.output").expect("extra key");
    assert_eq!(m.path, "$.output.c");
    assert_eq!((m.expected, m.actual), (Value::Null, json!("x")));
    assert_eq!(
        path_of(match_exact(
            &json!({"a": [1], "c": "x"}),
            &actual,
            "$.output"
        )),
        "$.output.a"
    );
    assert_eq!(
        path_of(match_exact(
            &json!({"a": [1, {"b": 3}], "c": "x"}),
            &actual,
            "$.output"
        )),
        "$.output.a[1].b"
    );
    assert_eq!(
        path_of(match_exact(&json!(1), &json!("1"), "$.output")),
        "$.output"
    );
}

fn outcome(output: Option<Value>, error: Option<runx_runtime::RunError>) -> RunOutcome {
    RunOutcome {
        skill: "s".into(),
        runner: "r".into(),
        result: match (output, error) {
            (_, Some(e)) => Err(e),
            (o, None) => Ok(o.unwrap_or(Value::Null)),
        },
        evidence: runx_receipts::RunEvidence::default(),
        receipt: Value::Null,
        stderr: None,
        receipt_path: None,
        unsealed_output: None,
        log: Default::default(),
    }
}

fn expect(yaml: &str) -> Expect {
    serde_yaml_ng::from_str(yaml).expect("expect parses")
}

#[test]
fn check_reports_status_error_and_output_paths() {
    let sealed = outcome(Some(json!({"g": "hi", "n": [1, 2]})), None);
    assert_eq!(check(&expect("{}"), &sealed), None);
    assert_eq!(
        check(&expect("output: { exact: { g: hi, n: [1, 2] } }"), &sealed),
        None
    );
    assert_eq!(
        path_of(check(&expect("output: { subset: { n: [1, 3] } }"), &sealed)),
        "$.output.n[1]"
    );
    let m = check(&expect("error: { kind: input }"), &sealed).expect("status");
    assert_eq!(
        (m.path.as_str(), m.expected, m.actual),
        ("$.status", json!("failure"), json!("sealed"))
    );
    let failed = outcome(
        None,
        Some(runx_runtime::RunError::new(
            runx_runtime::FailureKind::ResourceLimit,
            "wall_milliseconds",
            "too slow: 1000 ms",
        )),
    );
    assert_eq!(path_of(check(&expect("{}"), &failed)), "$.status");
    assert_eq!(
        check(
            &expect(
                "{status: failure, error: { kind: resource_limit, code: wall_milliseconds, message_contains: '1000' }}"
            ),
            &failed
        ),
        None
    );
    let m = check(
        &expect("error: { kind: resource_limit, code: heap }"),
        &failed,
    )
    .expect("code");
    assert_eq!(
        (m.path.as_str(), m.actual),
        ("$.error.code", json!("wall_milliseconds"))
    );
    assert_eq!(
        path_of(check(&expect("error: { message_contains: nope }"), &failed)),
        "$.error.message"
    );
    assert_eq!(
        path_of(check(
            &expect("{status: failure, receipt: { schema: runx.receipt.v1 }}"),
            &failed
        )),
        "$.receipt"
    );
}

#[test]
fn case_syntax() {
    let c: Case = serde_yaml_ng::from_str(
            "name: a\nrunner: r\ninputs: { x: [1] }\nenv: { A: b }\nfiles: { d/e.txt: hi }\nexpect: { status: sealed, output: { subset: { y: 1 } }, receipt: { schema: runx.receipt.v1 } }\n",
        )
        .expect("parses");
    assert_eq!(c.runner.as_deref(), Some("r"));
    assert_eq!(c.files[&RelPath("d/e.txt".into())], "hi");
    assert_eq!(
        c.expect.output,
        Some(OutputExpect {
            exact: None,
            subset: Some(json!({"y": 1}))
        })
    );
    for bad in [
        "name: a\nfiles: { ../x: hi }\n",
        "name: a\nfiles: { /etc/x: hi }\n",
        "name: a\nexpect: { status: done }\n",
        "name: a\nexpect: { output: { exactly: 1 } }\n",
        "name: a\nnmae: b\n",
    ] {
        let e = serde_yaml_ng::from_str::<Case>(bad).expect_err(bad);
        assert!(e.location().is_some(), "{bad}: {e}");
    }
}

// ---- packages in temporary directories, run through a real runtime ----

fn package(profile: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(PROFILE_FILE), profile).expect("profile");
    for (p, text) in files {
        let dest = dir.path().join(p);
        std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
        std::fs::write(dest, text).expect("write");
    }
    dir
}

fn runtime() -> Runtime {
    Runtime::discover().with_pool_size(2)
}

const ECHO: &str = r#"
export function echo(inputs, { environment }) {
  return { inputs, env: environment, leaky: environment.LEAKY ?? null, path: environment.PATH ?? null };
}
export function readData(inputs) { return { ok: true }; }
"#;

const PROFILE: &str = "skill: echo\nrunners:\n  echo:\n    default: true\n    type: javascript\n    module: m.mjs\n    export: echo\n    environment: { optional: [LEAKY, PATH, HOME, GIVEN] }\n    inputs: { items: array }\n";

fn run(dir: &Path) -> Report {
    let suites = discover(&[dir.to_path_buf()]).expect("discover");
    run_suites(&runtime(), &suites)
}

#[test]
fn passing_and_failing_cases_through_the_runtime() {
    let pkg = package(
        &format!(
            "{PROFILE}harness:\n  cases:\n    - name: passes\n      inputs: {{ items: [{{ name: a }}, {{ name: b, n: 1 }}] }}\n      env: {{ GIVEN: yes }}\n      expect:\n        output: {{ subset: {{ inputs: {{ items: [{{}}, {{ name: b }}] }}, env: {{ GIVEN: 'yes' }} }} }}\n        receipt: {{ schema: runx.receipt.v1, status: sealed, skill: echo }}\n"
        ),
        &[
            ("m.mjs", ECHO),
            (
                "fixtures/more.yaml",
                "cases:\n  - name: fails\n    inputs: { items: [1, 2, { name: x }] }\n    expect: { output: { subset: { inputs: { items: [1, 2, { name: y }] } } } }\n",
            ),
            (
                "fixtures/single.yaml",
                "name: missing-runner\nrunner: nope\nexpect: { error: { kind: profile, code: unknown_runner } }\n",
            ),
        ],
    );
    let report = run(pkg.path());
    assert_eq!(report.case_count, 3, "{report:#?}");
    assert_eq!(report.passed, 2, "{report:#?}");
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.exit_code(), 1);
    assert_eq!(report.summary(), "2 passed, 1 failed");
    let f = &report.failures[0];
    assert_eq!(f.case, "fails");
    assert_eq!(f.path, "$.output.inputs.items[2].name");
    assert_eq!(
        (f.expected.clone(), f.actual.clone()),
        (json!("y"), json!("x"))
    );

    // A fixture file alone runs only its cases.
    let suites = discover(&[pkg.path().join("fixtures/single.yaml")]).expect("discover");
    assert_eq!(suites[0].cases.len(), 1);
    let r = run_suites(&runtime(), &suites);
    assert_eq!((r.status, r.passed), (ReportStatus::Passed, 1));
    let json = serde_json::to_value(&r).expect("serializes");
    assert_eq!(json["status"], "passed");
    assert_eq!(json["case_count"], 1);
}

#[test]
fn environment_is_only_the_cases_env() {
    // PATH (and HOME) are set in this test process; the runner declares them optional; the
    // case gives neither, so the skill sees neither.
    assert!(std::env::var_os("PATH").is_some());
    let pkg = package(
        &format!(
            "{PROFILE}harness:\n  cases:\n    - name: isolated\n      expect: {{ output: {{ exact: {{ inputs: {{}}, env: {{}}, leaky: null, path: null }} }} }}\n    - name: given\n      env: {{ PATH: /nowhere }}\n      expect: {{ output: {{ subset: {{ env: {{ PATH: /nowhere }}, path: /nowhere }} }} }}\n"
        ),
        &[("m.mjs", ECHO)],
    );
    let report = run(pkg.path());
    assert_eq!(report.status, ReportStatus::Passed, "{report:#?}");
}

#[test]
fn scratch_workspace_holds_data_and_files() {
    let pkg = package(
        r#"skill: ws
run:
  type: cli-tool
  command: /bin/sh
  args: ["-c", 'printf "{\"d\":\"%s\",\"n\":\"%s\"}" "$(cat data/d.txt)" "$(cat notes/n.txt)"']
  cwd: "{{env.RUNX_CWD}}"
  idempotent: true
"#,
        &[
            ("fixtures/data/d.txt", "from-data\n"),
            (
                "fixtures/case.yaml",
                "name: sees-files\nfiles: { notes/n.txt: \"from-case\\n\" }\nexpect: { output: { exact: { d: from-data, n: from-case } } }\n",
            ),
        ],
    );
    let report = run(pkg.path());
    assert_eq!(report.status, ReportStatus::Passed, "{report:#?}");
}

#[test]
fn malformed_fixtures_name_file_and_line() {
    let pkg = package(
        PROFILE,
        &[
            ("m.mjs", ECHO),
            (
                "fixtures/bad.yaml",
                "cases:\n  - name: a\n    expect:\n      status: sealedd\n",
            ),
        ],
    );
    let broken = |path: &Path| {
        let suites = discover(&[path.to_path_buf()]).expect("discover");
        assert_eq!(suites.len(), 1);
        assert!(suites[0].cases.is_empty(), "{:?}", suites[0].cases);
        suites[0].broken.clone().expect("malformed")
    };
    let e = broken(pkg.path());
    assert!(e.file.ends_with("fixtures/bad.yaml"), "{e:?}");
    assert_eq!(e.line, Some(4), "{e:?}");
    assert!(e.message.contains("bad.yaml:4:"), "{e:?}");

    let pkg = package(
        &format!("{PROFILE}harness:\n  cases:\n    - name: a\n      inputz: {{}}\n"),
        &[("m.mjs", ECHO)],
    );
    assert!(broken(pkg.path()).message.contains("X.yaml:13:"));

    let pkg = package(PROFILE, &[("fixtures/broken.yaml", "cases: [\n")]);
    assert!(
        broken(&pkg.path().join("fixtures/broken.yaml"))
            .line
            .is_some()
    );

    let e = discover(&[pkg.path().join("m.mjs")]).expect_err("not a fixture");
    assert!(matches!(e, HarnessError::Path { .. }), "{e}");
}

#[test]
fn packages_without_cases_are_not_declared() {
    let root = tempfile::tempdir().expect("tempdir");
    for (name, profile) in [
        ("a", PROFILE.to_string()),
        (
            "b",
            format!(
                "{PROFILE}harness:\n  cases:\n    - name: ok\n      expect: {{ output: {{ subset: {{ leaky: null }} }} }}\n"
            ),
        ),
    ] {
        let d = root.path().join(name);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(PROFILE_FILE), profile).expect("profile");
        std::fs::write(d.join("m.mjs"), ECHO).expect("module");
    }
    std::fs::create_dir_all(root.path().join("not-a-package")).expect("mkdir");

    let only = run(&root.path().join("a"));
    assert_eq!(only.status, ReportStatus::NotDeclared);
    assert_eq!(only.case_count, 0);
    assert_eq!(only.exit_code(), 0);
    assert_eq!(only.not_declared, vec!["a"]);

    let all = run(root.path());
    assert_eq!(all.status, ReportStatus::Passed, "{all:#?}");
    assert_eq!(all.not_declared, vec!["a"]);
    assert_eq!(all.summary(), "1 passed, 0 failed");
}

#[test]
fn inline_files_must_be_regular_files_under_fixtures() {
    let outside = tempfile::NamedTempFile::new().expect("tempfile");
    let outside_dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside_dir.path().join("secret.txt"), "secret").expect("secret");
    for (files, want) in [
        ("[../secret.txt]", "must be relative"),
        ("[/etc/passwd]", "must be relative"),
        ("[m.mjs]", "under `fixtures/`"),
        ("[fixtures/missing.txt]", "under `fixtures/`"),
        ("[fixtures/link.txt]", "under `fixtures/`"),
        // A link in the middle of the path, to a directory outside the package.
        ("[fixtures/linked_dir/secret.txt]", "under `fixtures/`"),
        ("[fixtures]", "under `fixtures/`"),
    ] {
        let pkg = package(
            &format!("{PROFILE}harness:\n  files: {files}\n  cases: [{{ name: a }}]\n"),
            &[("m.mjs", ECHO), ("fixtures/ok.txt", "ok")],
        );
        std::os::unix::fs::symlink(outside.path(), pkg.path().join("fixtures/link.txt"))
            .expect("symlink");
        std::os::unix::fs::symlink(outside_dir.path(), pkg.path().join("fixtures/linked_dir"))
            .expect("symlink");
        let suites = discover(&[pkg.path().to_path_buf()]).expect("discover");
        let broken = suites[0].broken.clone().expect(files);
        assert!(broken.message.contains(want), "{files}: {broken:?}");
        assert!(suites[0].cases.is_empty());
    }
}

#[test]
fn discovery_does_not_follow_links_and_stays_bounded() {
    let root = tempfile::tempdir().expect("tempdir");
    let a = root.path().join("a");
    std::fs::create_dir_all(&a).expect("mkdir");
    std::fs::write(a.join(PROFILE_FILE), PROFILE).expect("profile");
    std::fs::write(a.join("m.mjs"), ECHO).expect("module");
    // A link back up would loop; a link to a package would list it twice.
    std::os::unix::fs::symlink(root.path(), a.join("loop")).expect("symlink");
    std::os::unix::fs::symlink(&a, root.path().join("again")).expect("symlink");
    // Hidden directories, node_modules and target are not searched.
    for skipped in [".git/p", "node_modules/p", "target/p"] {
        let d = root.path().join(skipped);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::write(d.join(PROFILE_FILE), "not: [a profile").expect("profile");
    }
    let suites = discover(&[root.path().to_path_buf()]).expect("discover");
    let names: Vec<&str> = suites.iter().map(|s| s.package.as_str()).collect();
    assert_eq!(names, ["a"]);

    // Deeper than the search depth is not reached.
    let mut deep = root.path().join("deep");
    for i in 0..=runx_profile::HARNESS_SEARCH_DEPTH.max {
        deep = deep.join(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).expect("mkdir");
    std::fs::write(deep.join(PROFILE_FILE), PROFILE).expect("profile");
    let suites = discover(&[root.path().join("deep")]);
    assert!(
        matches!(suites, Err(HarnessError::Path { .. })),
        "{suites:?}"
    );
}

#[test]
fn a_package_file_swapped_for_a_link_after_discovery_is_not_copied() {
    // Discovery saw a regular file; by the time the case runs, its directory is a link out of
    // the package. The copy opens the file inside the package and refuses the link.
    let outside = tempfile::tempdir().expect("tempdir");
    std::fs::write(outside.path().join("secret.json"), "{\"secret\": 1}").expect("secret");
    let pkg = package(
        &format!(
            "{PROFILE}harness:\n  files: [fixtures/d/secret.json]\n  cases: [{{ name: a }}]\n"
        ),
        &[("m.mjs", ECHO), ("fixtures/d/secret.json", "{}")],
    );
    let suites = discover(&[pkg.path().to_path_buf()]).expect("discover");
    assert!(suites[0].broken.is_none(), "{:?}", suites[0].broken);
    std::fs::remove_dir_all(pkg.path().join("fixtures/d")).expect("rm");
    std::os::unix::fs::symlink(outside.path(), pkg.path().join("fixtures/d")).expect("symlink");
    let workspace = tempfile::tempdir().expect("workspace");
    let rel = RelPath("fixtures/d/secret.json".into());
    let err = crate::run::copy_package_file(pkg.path(), &rel, workspace.path())
        .expect_err("a file reached through a link is refused");
    assert!(err.to_string().contains("symlink"), "{err}");
    assert!(!workspace.path().join("fixtures/d/secret.json").exists());
}

#[test]
fn a_package_whose_every_case_is_skipped_says_so_and_what_each_needs() {
    let dir = package(
        PROFILE,
        &[
            ("m.mjs", ECHO),
            (
                "fixtures/graph.yaml",
                "name: replay\nkind: graph\nexpect: { status: sealed }\n",
            ),
            (
                "fixtures/agent.yaml",
                "name: summarize\nkind: agent_task\nrunner: summarize\nexpect: { status: needs_agent }\n",
            ),
        ],
    );
    let report = run(dir.path());
    assert_eq!(report.status, ReportStatus::Skipped, "{report:#?}");
    assert_eq!((report.case_count, report.skipped), (0, 2));
    assert_eq!(report.exit_code(), 0);
    let counts: Vec<(&str, usize)> = report
        .not_run
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(counts, [("agent", 1), ("graph", 1)]);
    assert_eq!(
        report.summary(),
        "0 passed, 0 failed, 2 skipped (1 agent, 1 graph)"
    );
    let package = &report.packages[0];
    assert_eq!(package.status, PackageStatus::Skipped);
    assert_eq!(package.not_run, report.not_run);
    for case in &report.cases {
        let reason = case.skip_reason.as_deref().unwrap_or_default();
        assert!(reason.contains("needs runx itself"), "{reason}");
        assert!(reason.contains("runx-js-worker"), "{reason}");
        assert!(case.needs.is_some(), "{case:?}");
    }
}
