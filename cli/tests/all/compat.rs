//! runx packages as written: the profile and fixture formats, through `runx skill`,
//! `runx skill inspect` and `runx harness`, on the compatibility corpus in `skill-fixtures/` and
//! on packages generated here (the broken ones never live in the gate directory).

use super::*;
use serde_json::json;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `files` (path, text) under `root`.
fn write_all(root: &Path, files: &[(&str, &str)]) {
    for (p, text) in files {
        let dest = root.join(p);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, text).unwrap();
    }
}

fn inspect(dir: &Path) -> Value {
    let (v, code) = json_in(dir, &["skill", "inspect", "."], &[]);
    assert_eq!(code, 0, "{v}");
    v
}

fn runner<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["runners"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no runner {name}: {doc}"))
}

#[test]
fn the_gate_runs_skill_cases_and_lists_the_others_skipped() {
    let (v, code) = json_in(&fixtures(), &["harness", "."], &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["status"], "passed");
    assert_eq!(v["failed"], 0);
    assert!(v["passed"].as_u64().unwrap() > 80, "{}", v["passed"]);
    let skipped: Vec<&Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "skipped")
        .collect();
    assert_eq!(skipped.len(), v["skipped"].as_u64().unwrap() as usize);
    let kinds: std::collections::BTreeSet<&str> =
        skipped.iter().filter_map(|c| c["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["a2a", "agent", "agent_task", "graph", "mcp", "skill"]
            .into_iter()
            .collect()
    );
    for c in &skipped {
        assert!(
            c["skip_reason"]
                .as_str()
                .unwrap()
                .contains("needs runx itself"),
            "{c}"
        );
        assert_eq!(c["run_status"], "skipped");
    }
    // Every case of kind `skill` on a javascript or cli-tool runner ran and passed.
    for c in v["cases"].as_array().unwrap() {
        if c["kind"] == "skill" && c["outcome"] != "skipped" {
            assert_eq!(c["outcome"], "passed", "{c}");
        }
    }
    // Nested packages are found and listed with their own result.
    let packages: Vec<&str> = v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["package"].as_str().unwrap())
        .collect();
    assert!(packages.contains(&"nested/graph/plan"), "{packages:?}");
    assert!(packages.contains(&"nested"), "{packages:?}");
    let nested = v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["package"] == "nested")
        .unwrap();
    assert_eq!(nested["status"], "skipped");
    // Load-time diagnostics travel with their package.
    let templates = v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["package"] == "templates")
        .unwrap();
    assert_eq!(templates["diagnostics"][0]["key"], "args[0]");

    let out = run_in(&fixtures(), &["harness", "."], &[]);
    let text = stdout(&out);
    assert!(
        text.contains("SKIP kinds/mcp-tool-call: a case of kind `mcp`"),
        "{text}"
    );
    assert!(
        text.contains("NOTE templates: runners.undeclared.args[0]"),
        "{text}"
    );
    assert!(
        text.lines()
            .last()
            .unwrap()
            .ends_with(" skipped (1 a2a, 3 agent, 4 graph, 1 mcp)"),
        "{text}"
    );
    assert!(
        text.contains("SKIPPED nested: 2 of 2 cases not run (2 graph)"),
        "{text}"
    );
    assert_eq!(
        v["not_run"],
        json!({"a2a": 1, "agent": 3, "graph": 4, "mcp": 1})
    );

    // --fail-skipped: the same run fails, and says why.
    let out = run_in(&fixtures(), &["harness", ".", "--fail-skipped"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("they fail this run (--fail-skipped)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_broken_package_is_an_error_of_that_package_and_the_others_still_run() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("json-echo"), &root.path().join("good"));
    write_all(
        root.path(),
        &[
            // A profile that does not load; its case expects a failure and must never count.
            (
                "broken-profile/X.yaml",
                "skill: broken\nrun:\n  type: javascript\n  module: m.mjs\n  inputs:\n    x: { type: strng }\n",
            ),
            ("broken-profile/m.mjs", "export default () => ({});\n"),
            (
                "broken-profile/fixtures/fails.yaml",
                "name: fails\nkind: skill\ntarget: ..\nexpect: { status: failure }\n",
            ),
            // A broken profile without any case is an error too.
            (
                "no-cases/X.yaml",
                "skill: no-cases\nrunners:\n  r: { type: cli-tool, command: x, retries: 2 }\n",
            ),
            // A malformed fixture file.
            (
                "bad-fixture/X.yaml",
                "skill: bad-fixture\nrun: { type: javascript, module: m.mjs }\n",
            ),
            ("bad-fixture/m.mjs", "export default () => ({});\n"),
            (
                "bad-fixture/fixtures/bad.yaml",
                "name: bad\nkind: skill\ntarget: ..\nexpect: { status: sealed, receipt: { state: sealed }, stepz: [] }\n",
            ),
            // Deeper down, a nested package.
            (
                "group/deep/X.yaml",
                "skill: deep\nrun: { type: javascript, module: m.mjs }\nharness: { cases: [{ name: deep-ok }] }\n",
            ),
            ("group/deep/m.mjs", "export default () => ({ ok: true });\n"),
        ],
    );
    let out = run_in(root.path(), &["harness", "."], &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(64), "{text}");
    assert!(text.contains("PASS good/number-payload"), "{text}");
    assert!(text.contains("PASS group/deep/deep-ok"), "{text}");
    assert!(!text.contains("broken-profile/fails"), "{text}");
    assert!(
        text.contains("BROKEN broken-profile: the profile does not load:"),
        "{text}"
    );
    assert!(text.contains("X.yaml:6:"), "{text}");
    assert!(text.contains("unknown type `strng`"), "{text}");
    assert!(text.contains("BROKEN no-cases:"), "{text}");
    assert!(text.contains("`retries` is not a runner key"), "{text}");
    assert!(text.contains("BROKEN bad-fixture:"), "{text}");
    assert!(text.contains("bad.yaml:4:"), "{text}");
    assert!(text.ends_with(", 3 malformed packages\n"), "{text}");

    let (v, code) = json_in(root.path(), &["harness", "."], &[]);
    assert_eq!(code, 64);
    assert_eq!(v["status"], "malformed");
    let errors: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["package"].as_str().unwrap())
        .collect();
    assert_eq!(errors, ["bad-fixture", "broken-profile", "no-cases"]);
    assert_eq!(v["errors"][1]["line"], 6);
    let statuses: Vec<(&str, &str)> = v["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["package"].as_str().unwrap(),
                p["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("bad-fixture", "malformed"),
            ("broken-profile", "malformed"),
            ("good", "passed"),
            ("group/deep", "passed"),
            ("no-cases", "malformed"),
        ]
    );
    // The broken package's own case never counts as a pass.
    assert!(
        v["cases"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["package"] != "broken-profile"),
        "{v}"
    );

    // Named alone, the broken package still fails.
    let out = run_in(root.path(), &["harness", "broken-profile"], &[]);
    assert_eq!(out.status.code(), Some(64));
    let out = run_in(root.path(), &["harness", "no-cases"], &[]);
    assert_eq!(out.status.code(), Some(64), "{}", stdout(&out));
}

#[test]
fn a_fixture_file_outside_a_package_names_its_packages_by_target() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(
        &fixtures().join("json-echo"),
        &root.path().join("skills/json-echo"),
    );
    write_all(
        root.path(),
        &[
            (
                "harness/echo.yaml",
                "name: echo-from-collection\nkind: skill\ntarget: ../skills/json-echo\ninputs: { payload: [1] }\nexpect: { output: { subset: { shape: array } } }\n",
            ),
            (
                "harness/graph.yaml",
                "name: graph-from-collection\nkind: graph\ntarget: ../skills/json-echo/X.yaml\nexpect: { status: sealed }\n",
            ),
            (
                "harness/lost.yaml",
                "name: lost\nkind: skill\ninputs: {}\nexpect: { status: sealed }\n",
            ),
            (
                "harness/missing.yaml",
                "name: missing\nkind: skill\ntarget: ../skills/nowhere\nexpect: { status: sealed }\n",
            ),
        ],
    );
    let h = root.path().join("harness");
    let file = |n: &str| h.join(n).to_str().unwrap().to_string();
    let (v, code) = json_in(
        root.path(),
        &["harness", &file("echo.yaml"), &file("graph.yaml")],
        &[],
    );
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(
        (&v["passed"], &v["skipped"]),
        (&json!(1), &json!(1)),
        "{v:#}"
    );
    // A case without a target has no package there; a target that does not exist fails.
    let (v, code) = json_in(root.path(), &["harness", &file("lost.yaml")], &[]);
    assert_eq!(code, 64, "{v:#}");
    assert!(
        v["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("has no `target`"),
        "{v}"
    );
    let (v, code) = json_in(root.path(), &["harness", &file("missing.yaml")], &[]);
    assert_eq!(code, 1, "{v:#}");
    assert!(
        v["failures"][0]["message"]
            .as_str()
            .unwrap()
            .contains("target `../skills/nowhere`"),
        "{v}"
    );
}

#[test]
fn expectations_runx_cannot_meet_fail_and_say_why() {
    let root = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("json-echo"), &root.path().join("p"));
    std::fs::remove_dir_all(root.path().join("p/fixtures")).unwrap();
    let case = |name: &str, expect: &str| {
        (
            format!("p/fixtures/{name}.yaml"),
            format!("name: {name}\nkind: skill\ntarget: ..\ninputs: {{ payload: 1 }}\n{expect}"),
        )
    };
    let cases = [
        case(
            "digest",
            "expect: { status: sealed, receipt: { receipt_digest: 'sha256:00' } }\n",
        ),
        case(
            "retired",
            "expect: { status: sealed, receipt: { skill_name: p } }\n",
        ),
        case("steps", "expect: { status: sealed, steps: [a, b] }\n"),
        case(
            "step-outputs",
            "expect: { status: sealed, step_outputs: { a: { subset: {} } } }\n",
        ),
        case("denied", "expect: { status: policy_denied }\n"),
        case(
            "answers",
            "caller: { answers: { agent.p.output: { ok: true } } }\nexpect: { status: sealed }\n",
        ),
        case(
            "both",
            "expect: { output: { exact: { shape: number, payload: 1, label: null, depth: 1 }, subset: { shape: string } } }\n",
        ),
    ];
    let files: Vec<(&str, &str)> = cases
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    write_all(root.path(), &files);
    let (v, code) = json_in(root.path(), &["harness", "p"], &[]);
    assert_eq!(code, 1, "{v:#}");
    assert_eq!(v["failed"], 7);
    let failure = |case: &str| {
        v["failures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["case"] == case)
            .unwrap_or_else(|| panic!("{case}: {v:#}"))
            .clone()
    };
    // `receipt_digest` is the digest of the whole receipt as written: checked, and differs.
    let f = failure("digest");
    assert_eq!(f["path"], "$.receipt.receipt_digest");
    assert_eq!(f["expected"], "sha256:00");
    assert!(
        f["actual"].as_str().unwrap().starts_with("sha256:")
            && f["actual"].as_str().unwrap().len() == 71,
        "{f}"
    );
    // A key runx retired is refused, naming it, never silently passed.
    let f = failure("retired");
    assert_eq!(f["path"], "$.receipt.skill_name");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("`skill_name` is a receipt expectation runx retired"),
        "{f}"
    );
    assert_eq!(failure("steps")["path"], "$.steps");
    assert_eq!(failure("step-outputs")["path"], "$.step_outputs");
    let f = failure("denied");
    assert_eq!(
        (&f["path"], &f["expected"]),
        (&json!("$.status"), &json!("policy_denied"))
    );
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("graph and agent runs"),
        "{f}"
    );
    assert_eq!(failure("answers")["path"], "$.caller.answers");
    let f = failure("both");
    assert_eq!(
        (&f["path"], &f["actual"]),
        (&json!("$.output.shape"), &json!("number"))
    );
}

#[test]
fn profile_keys_are_shown_or_refused_with_their_line() {
    let doc = inspect(&fixtures().join("declared-keys"));
    assert_eq!(doc["declared_only"]["catalog"]["role"], "harness-fixture");
    assert_eq!(doc["declared_only"]["runx"]["tags"], json!(["compat"]));
    let note = runner(&doc, "note");
    assert_eq!(note["declared_only"]["scopes"], json!(["notes.write"]));
    assert_eq!(note["declared_only"]["act"]["form"], "observation");
    let graph = runner(&doc, "compose");
    assert_eq!(graph["runs_here"], false);
    assert_eq!(graph["keys"]["graph"]["name"], "compose-note");
    assert_eq!(runner(&doc, "fetch")["keys"]["tool"], "notes.fetch");
    let human = run_in(
        &fixtures().join("declared-keys"),
        &["skill", "inspect", "."],
        &[],
    );
    let text = stdout(&human);
    assert!(text.contains("shown, not run by this runtime:"), "{text}");
    assert!(
        text.contains("runner fetch — mcp (not run by this runtime)"),
        "{text}"
    );

    let root = tempfile::tempdir().unwrap();
    for (profile, want) in [
        (
            "skill: s\nrun: { type: javascript, module: m.mjs }\nstepz: []\n",
            "X.yaml:3:1: `stepz` is not a top-level key",
        ),
        (
            "skill: s\nrunners:\n  r:\n    type: javascript\n    module: m.mjs\n    instructions: be brief\n",
            "X.yaml:6:5: runners.r: `instructions` belongs in the package's SKILL.md",
        ),
        (
            "skill: s\nrunners:\n  r:\n    type: javascript\n    module: m.mjs\n    inputs:\n      a: { type: string, requird: true }\n",
            "X.yaml:7:26: runners.r.inputs.a: unknown field `requird`",
        ),
        (
            "skill: s\nrunners:\n  r:\n    type: javascript\n    module: m.mjs\n    inputs: { n: integer }\n    examples: [{ n: x }]\n",
            "`examples[0]` does not match the runner's inputs: input `n` must be an integer",
        ),
        (
            "skill: s\nrunners:\n  r:\n    type: javascript\n    module: m.mjs\n    inputs: { p: { type: json, packet: nowhere.v1 } }\n",
            "packet `nowhere.v1` has no schema",
        ),
    ] {
        std::fs::write(root.path().join("X.yaml"), profile).unwrap();
        for args in [vec!["skill", "inspect", "."], vec!["skill", ".", "--json"]] {
            let out = run_in(root.path(), &args, &[]);
            assert_eq!(out.status.code(), Some(64), "{args:?} {profile}");
            let all = format!("{}{}", stdout(&out), stderr(&out));
            assert!(all.contains(want), "{args:?}: {all}");
        }
    }
}

#[test]
fn definitions_json_inputs_packets_and_artifacts_through_runx_skill() {
    let ledger = fixtures().join("ledger-defs");
    let dir = ledger.to_str().unwrap();
    let receipts = tempfile::tempdir().unwrap();
    let rd = receipts.path().to_str().unwrap();
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            dir,
            "--receipt-dir",
            rd,
            "--input",
            "from=ops/cash",
            "-i",
            "to=ops/rent",
            "-i",
            "cents=250",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["entry"]["balance"], 0);
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            dir,
            "--receipt-dir",
            rd,
            "-i",
            "from=Ops",
            "-i",
            "to=ops/rent",
            "-i",
            "cents=1",
        ],
        &[],
    );
    assert_eq!((code, &v["error"]["code"]), (64, &json!("schema")), "{v}");
    // Inputs refused before a direct run: a sealed receipt, blocked before the run.
    assert_eq!(
        (&v["status"], &v["outcome"]),
        (&json!("sealed"), &json!("blocked")),
        "{v}"
    );
    let receipt = receipt_of(&v);
    assert_eq!(
        (
            &receipt["seal"]["disposition"],
            &receipt["seal"]["reason_code"]
        ),
        (&json!("blocked"), &json!("preflight_refused"))
    );
    assert_eq!(evidence(&receipt)["reason_code"], "preflight_refused");
    assert_eq!(evidence(&receipt)["failure"]["code"], "schema");
    let doc = inspect(&ledger);
    assert_eq!(doc["input_definitions"]["account"]["required"], true);
    assert_eq!(
        runner(&doc, "post")["inputs"]["from"]["definition"],
        "account"
    );

    // `json` takes any value, including one given with --input-json; no type means string.
    let echo = fixtures().join("json-echo");
    let dir = echo.to_str().unwrap();
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            dir,
            "--receipt-dir",
            rd,
            "--input-json",
            "payload={\"a\": [1, null]}",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["payload"], json!({"a": [1, null]}));
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            dir,
            "--receipt-dir",
            rd,
            "--input-json",
            "payload=1",
            "-i",
            "label=42",
        ],
        &[],
    );
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "wrong_type");

    // A packet input is checked against the packet's schema; inspect says where it came from.
    let triage = fixtures().join("packet-triage");
    let doc = inspect(&triage);
    let packet = &runner(&doc, "triage")["inputs"]["ticket"]["packet"];
    assert_eq!(packet["id"], "corpus.ticket.v1");
    assert!(
        packet["file"]
            .as_str()
            .unwrap()
            .ends_with("packets/ticket.schema.json")
    );
    assert!(packet["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(
        runner(&doc, "triage")["artifacts"]["wrap_as"],
        "triage_packet"
    );
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            triage.to_str().unwrap(),
            "--receipt-dir",
            rd,
            "--input-json",
            "ticket={\"id\": \"T-1\", \"subject\": \"s\", \"channel\": \"pigeon\"}",
        ],
        &[],
    );
    assert_eq!((code, &v["error"]["code"]), (64, &json!("schema")), "{v}");

    // An artifact input given as an envelope is unwrapped.
    let art = fixtures().join("artifact-inputs");
    let (v, code) = json_in(
        &fixtures(),
        &[
            "skill",
            art.to_str().unwrap(),
            "--receipt-dir",
            rd,
            "--input-json",
            "report={\"schema\": \"r.v1\", \"data\": {\"rows\": [4, 5]}}",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["summary"]["total"], 9);
}

#[test]
fn retries_templates_and_input_modes_are_shown_by_inspect() {
    let doc = inspect(&fixtures().join("retry-tool"));
    let retry = &runner(&doc, "idempotent")["retry"];
    assert_eq!(
        (&retry["max_attempts"], &retry["applies"]),
        (&json!(3), &json!(true))
    );
    assert_eq!(runner(&doc, "idempotent")["limits"]["retry_attempts"], 2);
    let inert = &runner(&doc, "not-idempotent")["retry"];
    assert_eq!(inert["applies"], false);
    assert!(inert["inert"].as_str().unwrap().contains("not idempotent"));
    assert_eq!(runner(&doc, "keyed")["idempotent"], true);
    assert_eq!(doc["diagnostics"].as_array().unwrap().len(), 2);

    let doc = inspect(&fixtures().join("input-modes"));
    assert_eq!(runner(&doc, "args")["input_mode"], "args");
    assert_eq!(runner(&doc, "none")["input_mode"], "none");

    let templates = fixtures().join("templates");
    let doc = inspect(&templates);
    let d = &doc["diagnostics"][0];
    assert_eq!(
        (&d["runner"], &d["key"]),
        (&json!("undeclared"), &json!("args[0]"))
    );
    let human = stdout(&run_in(&templates, &["skill", "inspect", "."], &[]));
    assert!(
        human.contains("problems (`runx skill check`):\n  ")
            && human.contains(
                "X.yaml:21:12: warning: runner `undeclared`: `x={{extra}}` names input `extra`"
            ),
        "{human}"
    );
    let ws = tempfile::tempdir().unwrap();
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            templates.to_str().unwrap(),
            "undeclared",
            "-i",
            "extra=yes",
        ],
        &[],
    );
    assert_eq!((code, &v["result"]["argv"]), (0, &json!(["x=yes"])), "{v}");
    let (v, code) = json_in(
        ws.path(),
        &["skill", templates.to_str().unwrap(), "undeclared"],
        &[],
    );
    assert_eq!((code, &v["error"]["code"]), (64, &json!("template")), "{v}");
}

#[test]
fn json_output_carries_console_and_stderr_bounded() {
    let voices = fixtures().join("voices");
    let ws = tempfile::tempdir().unwrap();
    let dir = voices.to_str().unwrap();
    let (v, code) = json_in(ws.path(), &["skill", dir], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["console"],
        json!({
            "lines": [
                {"level": "log", "message": "line 0"},
                {"level": "log", "message": "line 1"},
                {"level": "warn", "message": "careful"}
            ],
            "line_count": 3, "bytes": 19, "printed_bytes": 19, "dropped_bytes": 0
        })
    );
    assert_eq!(v["stderr"], Value::Null);
    let (v, code) = json_in(ws.path(), &["skill", dir, "grumbles"], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["stderr"]["text"], "warning: grumbling\n");
    assert_eq!(v["stderr"]["total_bytes"], 19);
    assert_eq!(v["stderr"]["truncated"], false);
    // A large stderr is cut in --json, with its full count beside it.
    let (v, code) = json_in(
        ws.path(),
        &["skill", dir, "grumbles", "-i", "bytes=200000"],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["stderr"]["total_bytes"], 200019);
    assert_eq!(v["stderr"]["printed_bytes"], 65536);
    assert_eq!(v["stderr"]["text"].as_str().unwrap().len(), 65536);
    assert_eq!(v["stderr"]["truncated"], true);
    // The human mode prints both to stderr, and only the output to stdout.
    let out = run_in(ws.path(), &["skill", dir], &[]);
    assert!(
        stderr(&out).contains("[log] line 1\n[warn] careful"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("careful"));
    let out = run_in(ws.path(), &["skill", dir, "grumbles"], &[]);
    assert!(
        stderr(&out).contains("warning: grumbling"),
        "{}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("grumbling"));
}

#[test]
fn runx_command_line_conventions() {
    let ws = tempfile::tempdir().unwrap();
    copy_dir(
        &fixtures().join("json-echo"),
        &ws.path().join("skills/json-echo"),
    );
    // A bare name is `skills/NAME` of the working directory.
    let (v, code) = json_in(
        ws.path(),
        &["skill", "json-echo", "--input", "payload=[1]"],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["shape"], "array");
    let (v, code) = json_in(ws.path(), &["skill", "inspect", "json-echo"], &[]);
    assert_eq!((code, &v["skill"]), (0, &json!("json-echo")));
    // ... but a directory of that name in the working directory wins.
    copy_dir(&fixtures().join("kinds"), &ws.path().join("json-echo"));
    let (v, _) = json_in(ws.path(), &["skill", "json-echo"], &[]);
    assert_eq!(v["skill_name"], "kinds");
    let (v, code) = json_in(ws.path(), &["skill", "no-such-skill"], &[]);
    assert_eq!((code, &v["error"]["code"]), (64, &json!("not_a_package")));

    // --input-json must be JSON.
    let (v, code) = json_in(
        ws.path(),
        &["skill", "skills/json-echo", "--input-json", "payload={nope"],
        &[],
    );
    assert_eq!(code, 64);
    assert_eq!(
        (&v["error"]["kind"], &v["error"]["code"]),
        (&json!("input"), &json!("invalid_json"))
    );
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            "skills/json-echo",
            "--input-json",
            "payload=1",
            "-i",
            "payload=2",
        ],
        &[],
    );
    assert_eq!((code, &v["error"]["code"]), (64, &json!("bad_pair")));

    // --inputs FILE may name a file inside RUNX_CWD.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(
        other.path().join("in.json"),
        r#"{"payload": "from RUNX_CWD"}"#,
    )
    .unwrap();
    let other_path = other.path().to_str().unwrap();
    let (v, code) = json_in(
        ws.path(),
        &["skill", "skills/json-echo", "--inputs", "in.json"],
        &[("RUNX_CWD", other_path)],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["payload"], "from RUNX_CWD");
    let abs = other.path().join("in.json");
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            "skills/json-echo",
            "--inputs",
            abs.to_str().unwrap(),
        ],
        &[("RUNX_CWD", other_path)],
    );
    assert_eq!(code, 0, "{v}");
    // Without RUNX_CWD the same file is outside and refused; a link out of RUNX_CWD is too.
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            "skills/json-echo",
            "--inputs",
            abs.to_str().unwrap(),
        ],
        &[("RUNX_CWD", "")],
    );
    assert_eq!(
        (code, &v["error"]["code"]),
        (64, &json!("inputs_file")),
        "{v}"
    );
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "{}").unwrap();
    std::os::unix::fs::symlink(secret.path(), other.path().join("link.json")).unwrap();
    let (v, code) = json_in(
        ws.path(),
        &["skill", "skills/json-echo", "--inputs", "link.json"],
        &[("RUNX_CWD", other_path)],
    );
    assert_eq!(
        (code, &v["error"]["code"]),
        (64, &json!("inputs_file")),
        "{v}"
    );
    // A link is refused whatever it points to: runx follows none inside the directory.
    assert!(
        v["error"]["message"].as_str().unwrap().contains("symlink"),
        "{v}"
    );
}

/// runx's input flags: `--KEY VALUE`, `--KEY=VALUE` (kebab-case keys written snake_case),
/// `-i KEY VALUE`, and `--non-interactive`, on runx's documented first command; a misspelt
/// flag is an undeclared input with a suggestion, not a flag error.
#[test]
fn runx_input_flags_run_the_documented_first_command() {
    let ws = tempfile::tempdir().unwrap();
    let hello = fixtures().join("hello-world");
    let dir = hello.to_str().unwrap();
    let (v, code) = json_in(
        ws.path(),
        &[
            "skill",
            dir,
            "--message",
            "hello from docs",
            "--non-interactive",
        ],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (&v["schema"], &v["status"], &v["outcome"]),
        (
            &json!("runx.skill_run.v1"),
            &json!("sealed"),
            &json!("completed")
        ),
        "{v}"
    );
    assert_eq!(v["skill_name"], "hello-world");
    assert_eq!(v["runner"], "default");
    assert_eq!(v["result"], json!({"message": "hello from docs"}));
    assert!(v.get("error").is_none(), "{v}");
    let receipt = receipt_of(&v);
    assert_eq!(receipt["id"], v["receipt_id"]);
    // The same inputs given the other ways: the same run.
    for args in [
        vec!["skill", dir, "--message=hello from docs"],
        vec!["skill", dir, "-i", "message", "hello from docs"],
        vec!["skill", dir, "-i", "message=hello from docs"],
    ] {
        let (again, code) = json_in(ws.path(), &args, &[]);
        assert_eq!(code, 0, "{args:?}: {again}");
        assert_eq!(again["result"], v["result"], "{args:?}");
        assert_eq!(again["run_id"], v["run_id"], "{args:?}");
    }
    // A kebab-case flag names the snake_case input.
    let pkg = ws.path().join("kebab");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: kebab\nrun:\n  type: javascript\n  module: m.mjs\n  inputs:\n    first_name: { type: string, required: true }\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("m.mjs"),
        "export default (inputs) => ({ inputs });\n",
    )
    .unwrap();
    let (v, code) = json_in(
        ws.path(),
        &["skill", "kebab", "--first-name", "Ada", "--non-interactive"],
        &[],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["inputs"], json!({"first_name": "Ada"}));
    // A misspelt flag is an input the runner does not declare: refused, with a suggestion.
    let (v, code) = json_in(ws.path(), &["skill", dir, "--mesage", "x"], &[]);
    assert_eq!(code, 64, "{v}");
    assert_eq!(
        (&v["error"]["kind"], &v["error"]["code"]),
        (&json!("input"), &json!("undeclared_input")),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `message`"),
        "{v}"
    );
    assert_eq!(
        (&v["status"], &v["outcome"]),
        (&json!("sealed"), &json!("blocked")),
        "{v}"
    );
    // With --json the failure is also one line on stderr; without, the same words there.
    let out = run_in(ws.path(), &["skill", dir, "--mesage", "x", "--json"], &[]);
    assert_eq!(
        stderr(&out),
        "runx: hello-world default failed (input/undeclared_input): input `mesage` is not declared by runner `default`, which takes `message`; did you mean `message`?\n"
    );
    let out = run_in(ws.path(), &["skill", dir, "--mesage", "x"], &[]);
    assert_eq!(out.status.code(), Some(64));
    assert!(
        stderr(&out).contains("did you mean `message`"),
        "{}",
        stderr(&out)
    );
}

/// runx's two-token `-i KEY VALUE` takes the next argument as the value, but a flag of
/// `runx skill` itself (`--json`, `--receipt-dir`, ...) stays a flag, as the `--KEY VALUE`
/// rewrite promises: `-i name --json` is `-i name` without a value (`bad_pair`), printed as
/// JSON, not a run with `name` set to `--json` printed as text.
#[test]
fn a_two_token_input_leaves_the_flags_of_runx_skill_alone() {
    let ws = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("json-echo"), &ws.path().join("pkg"));
    let out = run_in(ws.path(), &["skill", "pkg", "-i", "payload", "--json"], &[]);
    let text = stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(64),
        "`--json` was taken as the value of `-i payload`: {text}"
    );
    let v: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["schema"], "runx.skill_run.v1", "{v}");
    assert_eq!(v["error"]["code"], "bad_pair", "{v}");
    // `--receipt-dir DIR` after it is still where the receipt goes (and DIR no runner name).
    let (v, code) = json_in(
        ws.path(),
        &["skill", "pkg", "-i", "payload", "--receipt-dir", "rcpt"],
        &[],
    );
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "bad_pair", "{v}");
    assert!(
        v["receipt_path"]
            .as_str()
            .is_some_and(|p| p.starts_with("rcpt/") || p.contains("/rcpt/")),
        "{v}"
    );
}
