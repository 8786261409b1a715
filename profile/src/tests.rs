use super::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

pub(crate) fn parse_str(text: &str) -> Result<Profile, ProfileError> {
    parse(text, Path::new("/pkg"), Path::new("/pkg/X.yaml"))
}

pub(crate) fn ok(text: &str) -> Profile {
    match parse_str(text) {
        Ok(p) => p,
        Err(e) => panic!("expected a valid profile, got: {e}"),
    }
}

/// Parses and returns the error text, panicking if the profile is accepted.
pub(crate) fn err(text: &str) -> String {
    match parse_str(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn js(r: &Runner) -> &JsRunner {
    match &r.kind {
        RunnerKind::Javascript(j) => j,
        other => panic!("not javascript: {other:?}"),
    }
}

pub(crate) fn cli(r: &Runner) -> &CliToolRunner {
    match &r.kind {
        RunnerKind::CliTool(c) => c,
        other => panic!("not cli-tool: {other:?}"),
    }
}

const FULL: &str = r#"
skill: sample
version: 1.0.0
catalog: { visible: true }
credentials: { github: { provider: github } }
runners:
  main:
    default: true
    type: javascript
    module: src/main.mjs
    export: run
    timeout_seconds: 5
    scopes: [fs.read]
    artifacts: { emits: [] }
    environment: { required: [REGION], optional: [TRACE] }
    inputs:
      name: { type: string, required: true, default: "x", description: "who", schema: { minLength: 1 } }
      count: integer
      archive_file: { type: string }
    outputs:
      greeting: string
      stats: { type: object, schema: { type: object, required: [n] } }
    pages: { path_from: archive_file, path_scope_from: archive_base, media_type: application/json, framing: json_array, page_bytes: 524288 }
  tool:
    type: cli-tool
    command: ./bin/tool.sh
    args: ["--name", "{{input.name}}", "{{env.REGION}}"]
    cwd: "{{env.RUNX_CWD}}"
    input_mode: stdin
    idempotent: true
    retry: { attempts: 2, on: [crash], backoff_seconds: 1 }
  plan:
    type: graph
    graph: { steps: [{ run: main }, { run: tool }], result_from: [tool] }
    inputs: "graphs have their own shapes"
harness:
  cases:
    - name: one
      inputs: { name: a }
"#;

#[test]
fn full_profile_parses() {
    let p = ok(FULL);
    assert_eq!(p.skill, "sample");
    assert_eq!(p.version, "1.0.0");
    assert_eq!(p.dir, Path::new("/pkg"));
    assert_eq!(p.default_runner.as_deref(), Some("main"));
    assert_eq!(p.runners.len(), 2);
    assert_eq!(p.other_runners.len(), 1);

    let main = &p.runners["main"];
    assert!(main.default);
    assert_eq!(main.timeout, Duration::from_secs(5));
    assert_eq!(main.environment.required, vec!["REGION"]);
    assert_eq!(main.environment.optional, vec!["TRACE"]);
    let name = &main.inputs["name"];
    assert_eq!(name.ty, ValueType::String);
    assert!(name.required);
    assert_eq!(name.default, Some(json!("x")));
    assert_eq!(name.description.as_deref(), Some("who"));
    assert_eq!(
        name.schema.as_ref().map(crate::Schema::value),
        Some(&json!({"minLength": 1}))
    );
    assert_eq!(main.inputs["count"].ty, ValueType::Integer);
    assert_eq!(
        main.outputs["greeting"],
        OutputDecl {
            ty: ValueType::String,
            schema: None,
            required: true,
            description: None,
            wrap_as: None,
        }
    );
    assert_eq!(main.outputs["stats"].ty, ValueType::Object);
    let j = js(main);
    assert_eq!(j.module, "src/main.mjs");
    assert_eq!(j.export.as_deref(), Some("run"));
    assert_eq!(
        j.pages,
        Some(PagesDecl {
            path_from: "archive_file".into(),
            path_scope_from: "archive_base".into(),
            media_type: "application/json".into(),
            framing: Framing::JsonArray,
            page_bytes: 524288,
            parallel: None,
            module: ModuleLifetime::Page,
        })
    );

    let tool = &p.runners["tool"];
    assert_eq!(tool.timeout, Duration::from_secs(60));
    let c = cli(tool);
    assert_eq!(c.command, "./bin/tool.sh");
    assert_eq!(c.args, vec!["--name", "{{input.name}}", "{{env.REGION}}"]);
    assert_eq!(c.cwd.as_deref(), Some("{{env.RUNX_CWD}}"));
    assert_eq!(c.input_mode, InputMode::Stdin);
    assert!(c.idempotent);
    assert_eq!(
        c.retry,
        Some(RetryDecl {
            attempts: 2,
            on: vec![RetryOn::Crash],
            backoff: Duration::from_secs(1),
            inert: None,
        })
    );

    assert_eq!(
        p.other_runners["plan"],
        OtherRunner {
            ty: "graph".into(),
            default: false,
            keys: BTreeMap::from([
                (
                    "graph".to_string(),
                    json!({"steps": [{"run": "main"}, {"run": "tool"}], "result_from": ["tool"]})
                ),
                ("inputs".to_string(), json!("graphs have their own shapes")),
            ]),
        }
    );
    assert!(!p.runners.contains_key("plan"));
}

#[test]
fn defaults_apply() {
    let p = ok(
        "skill: s\nrunners:\n  a:\n    type: javascript\n    module: m.js\n    pages: { path_from: f, path_scope_from: s }\n",
    );
    let a = &p.runners["a"];
    assert_eq!(a.timeout, Duration::from_secs(2));
    assert_eq!(p.version, "");
    assert_eq!(p.default_runner, None);
    let j = js(a);
    assert_eq!(j.export, None);
    let pages = j.pages.as_ref().expect("pages");
    assert_eq!(pages.page_bytes as u64, crate::limits::PAGE_BYTES.default);
    assert_eq!(pages.media_type, "application/json");
    assert_eq!(pages.framing, Framing::JsonArray);
    assert_eq!(a.environment, EnvDecl::default());
}

#[test]
fn nested_run_form_matches_flat_form() {
    let nested = ok(r#"
skill: s
runners:
  main:
    default: true
    timeout_seconds: 3
    inputs: { n: number }
    scopes: [x]
    run:
      type: javascript
      module: lib/a.mjs
      export: go
      outputs: { out: array }
      pages: { path_from: f, path_scope_from: scope }
"#);
    let flat = ok(r#"
skill: s
runners:
  main:
    default: true
    timeout_seconds: 3
    inputs: { n: number }
    type: javascript
    module: lib/a.mjs
    export: go
    outputs: { out: array }
    pages: { path_from: f, path_scope_from: scope }
"#);
    let (a, b) = (&nested.runners["main"], &flat.runners["main"]);
    assert_eq!(a.inputs, b.inputs);
    assert_eq!(a.outputs, b.outputs);
    assert_eq!(a.timeout, b.timeout);
    assert_eq!(a.default, b.default);
    assert_eq!(js(a).module, js(b).module);
    assert_eq!(js(a).export, js(b).export);
    assert_eq!(js(a).pages, js(b).pages);
}

#[test]
fn nested_run_conflicts_are_errors() {
    let e = err(
        "skill: s\nrunners:\n  m:\n    module: a.js\n    run: { type: javascript, module: b.js }\n",
    );
    assert!(e.contains("`module` is given both"), "{e}");
    assert!(e.contains("runners.m"), "{e}");
    let e = err("skill: s\nrunners:\n  m:\n    run: { type: javascript, module: b.js, run: {} }\n");
    assert!(e.contains("runners.m.run"), "{e}");
    assert!(e.contains("may not contain another `run:`"), "{e}");
    let e = err(
        "skill: s\nrunners:\n  m:\n    source: { type: javascript }\n    run: { module: b.js }\n",
    );
    assert!(e.contains("both `source` and `run` are given"), "{e}");
}

#[test]
fn single_top_level_run_is_default_runner() {
    let p = ok(r#"
skill: risk
version: 2
run:
  type: javascript
  module: risk-model.mjs
  export: assessRisk
  outputs:
    assessment: object
"#);
    assert_eq!(p.version, "2");
    assert_eq!(p.default_runner.as_deref(), Some("default"));
    let r = p.runner(None).expect("default runner");
    assert_eq!(r.name, "default");
    assert_eq!(js(r).module, "risk-model.mjs");
    assert!(p.runner(Some("default")).is_ok());
}

#[test]
fn numeric_versions_become_text() {
    assert_eq!(
        ok("skill: s\nversion: 1.5\nrun: { type: javascript, module: a.js }\n").version,
        "1.5"
    );
    assert_eq!(
        ok("skill: s\nversion: 1.0\nrun: { type: javascript, module: a.js }\n").version,
        "1.0"
    );
    assert_eq!(
        ok("skill: s\nversion: '1.10'\nrun: { type: javascript, module: a.js }\n").version,
        "1.10"
    );
}

#[test]
fn unsupported_runner_errors_only_when_selected() {
    let p = ok(
        "skill: s\nrunners:\n  g:\n    type: agent-task\n    default: true\n    allowed_tools: [x]\n    outputs: 7\n  j:\n    type: javascript\n    module: a.js\n",
    );
    let e = p.runner(None).expect_err("default is unsupported");
    assert!(
        matches!(&e, ProfileError::UnsupportedRunner { runner, ty } if runner == "g" && ty == "agent-task")
    );
    assert_eq!(
        e.to_string(),
        "runner `g` has type `agent-task`, which this runtime does not implement (supported: javascript, cli-tool)"
    );
    assert!(p.runner(Some("j")).is_ok());
    // The nested form carries its type inside `run:`.
    let p = ok("skill: s\nrun:\n  run: { type: graph, graph: { steps: [], result_from: [s] } }\n");
    assert!(matches!(
        p.runner(None),
        Err(ProfileError::UnsupportedRunner { .. })
    ));
}

#[test]
fn runner_selection_rules() {
    let two = ok(
        "skill: s\nrunners:\n  a: { type: javascript, module: a.js }\n  b: { type: cli-tool, command: b }\n",
    );
    let e = two.runner(None).expect_err("ambiguous");
    assert!(matches!(e, ProfileError::NoDefaultRunner { .. }));
    assert!(
        e.to_string().contains("a (javascript), b (cli-tool)"),
        "{e}"
    );
    assert_eq!(two.runner(Some("b")).expect("b").name, "b");
    let e = two.runner(Some("c")).expect_err("unknown");
    assert!(matches!(&e, ProfileError::UnknownRunner { runner, .. } if runner == "c"));
    assert!(e.to_string().contains("no runner `c`"), "{e}");
    assert!(
        e.to_string().contains("a (javascript), b (cli-tool)"),
        "{e}"
    );

    let one = ok("skill: s\nrunners:\n  only: { type: javascript, module: a.js }\n");
    assert_eq!(one.runner(None).expect("only").name, "only");

    let dflt = ok(
        "skill: s\nrunners:\n  a: { type: javascript, module: a.js }\n  b: { type: javascript, module: b.js, default: true }\n",
    );
    assert_eq!(dflt.runner(None).expect("default").name, "b");
    assert_eq!(dflt.runner(Some("a")).expect("named").name, "a");
}

#[test]
fn rust_type_names_never_reach_a_message() {
    let e = err("skill: s\nrun:\n  type: javascript\n  module: a.mjs\n  timeout_seconds: -1\n");
    assert!(e.ends_with("expected a whole number, 0 or more"), "{e}");
    assert_eq!(plain_types("expected u64s"), "expected u64s");
    assert_eq!(
        plain_types("invalid type: string \"x\", expected f64"),
        "invalid type: string \"x\", expected a number"
    );
}

#[test]
fn runner_types_runx_does_not_know_are_errors_with_the_nearest() {
    let e = err("skill: s\nrunners:\n  main:\n    type: javascrpt\n    module: a.mjs\n");
    assert!(e.starts_with("/pkg/X.yaml:4:"), "{e}");
    assert!(
        e.contains("`javascrpt` is not a runner type runx knows (javascript, cli-tool, graph,"),
        "{e}"
    );
    assert!(e.ends_with("did you mean `javascript`?"), "{e}");
    let e = err("skill: s\nrun:\n  run: { type: grahp }\n");
    assert!(e.ends_with("did you mean `graph`?"), "{e}");
    let e = err("skill: s\nrun: { type: http, url: x }\n");
    assert!(e.contains("`type: http` is no longer a runner type"), "{e}");
    // Every type runx knows still loads, run here or not.
    for ty in [
        "graph",
        "agent",
        "agent-task",
        "mcp",
        "a2a",
        "external-adapter",
        "thread-outbox-provider",
    ] {
        let graph = if ty == "graph" {
            ", graph: { result_from: [s] }"
        } else {
            ""
        };
        ok(&format!(
            "skill: s\nrunners:\n  x: {{ type: {ty}{graph} }}\n"
        ));
    }
}

#[test]
fn two_defaults_rejected() {
    let e = err(
        "skill: s\nrunners:\n  a: { type: javascript, module: a.js, default: true }\n  b: { type: graph, default: true, graph: { result_from: [s] } }\n",
    );
    assert!(e.contains("`a`, `b` are all marked `default: true`"), "{e}");
}

#[test]
fn top_level_errors() {
    assert!(err("").contains("empty"));
    assert!(
        err("runners:\n  a: { type: javascript, module: a.js }\n").contains("`skill:` is missing")
    );
    assert!(
        err("skill: ''\nrun: { type: javascript, module: a.js }\n").contains("`skill` is empty")
    );
    assert!(err("skill: s\n").contains("no runner is declared"));
    assert!(err("skill: s\nrunners: {}\n").contains("`runners:` is empty"));
    assert!(
            err("skill: s\nrun: { type: javascript, module: a.js }\nrunners:\n  a: { type: javascript, module: a.js }\n")
                .contains("both `runners:` and a top-level `run:`")
        );
    assert!(err("- a\n- b\n").contains("skill profile mapping"));
}

#[test]
fn yaml_errors_carry_file_and_line() {
    match parse_str("skill: s\nrunners:\n  a:\n    type: javascript\n    module: [\n") {
        Err(ProfileError::Invalid { file, line, .. }) => {
            assert_eq!(file, Path::new("/pkg/X.yaml"));
            assert!(line.is_some());
        }
        other => panic!("{other:?}"),
    }
    let e = parse_str("skill: s\nrunners:\n  a:\n    type: javascript\n    module: a.js\n    timeout_seconds: soon\n")
            .expect_err("bad type");
    let ProfileError::Invalid { line, message, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*line, Some(6));
    assert!(
        message.starts_with("runners.a.timeout_seconds: "),
        "{message}"
    );
    assert!(e.to_string().starts_with("/pkg/X.yaml:6:"), "{e}");
    // Duplicate keys are caught by the YAML reader.
    assert!(
        err("skill: s\nskill: t\nrun: { type: javascript, module: a.js }\n").contains("duplicate")
    );
}

#[test]
fn semantic_errors_name_runner_key_and_line() {
    let e = parse_str("skill: s\nrunners:\n  main:\n    type: javascript\n    module: a.js\n    timeout_seconds: 45\n")
            .expect_err("timeout");
    let ProfileError::Invalid { line, message, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(*line, Some(4), "line of the runner mapping");
    assert_eq!(
        message,
        "runners.main: `timeout_seconds` is 45; a javascript runner allows 1 to 30 seconds"
    );
}

#[test]
fn unknown_types_name_the_key() {
    let e = err(
        "skill: s\nrun:\n  type: javascript\n  module: a.js\n  outputs: { greeting: strnig }\n",
    );
    assert!(e.contains("run.outputs.greeting"), "{e}");
    assert!(e.contains("unknown type `strnig`"), "{e}");
    let e = err(
        "skill: s\nrun:\n  type: javascript\n  module: a.js\n  inputs: { name: { type: text } }\n",
    );
    assert!(e.contains("run.inputs.name.type"), "{e}");
    assert!(e.contains("unknown type `text`"), "{e}");
}

#[test]
fn every_value_type_parses() {
    let p = ok(
        "skill: s\nrun:\n  type: javascript\n  module: a.js\n  outputs: { a: string, b: number, c: integer, d: boolean, e: object, f: array, g: \"null\", h: any, i: { schema: { type: string } }, j: { type: null } }\n",
    );
    let kinds: Vec<_> = p.runners["default"]
        .outputs
        .values()
        .map(|o| o.ty.name())
        .collect();
    assert_eq!(
        kinds,
        [
            "string", "number", "integer", "boolean", "object", "array", "null", "any", "any",
            "null"
        ]
    );
}

#[test]
fn empty_short_declaration_is_an_error() {
    let e = err("skill: s\nrun:\n  type: javascript\n  module: a.js\n  inputs:\n    name:\n");
    assert!(
        e.contains("run.inputs.name: the declaration is empty"),
        "{e}"
    );
}

#[test]
fn missing_type_and_type_errors() {
    assert!(
        err("skill: s\nrunners:\n  a: { module: a.js }\n").contains("runner `a` has no `type:`")
    );
    let e = err("skill: s\nrunners:\n  a: { type: 5, module: a.js }\n");
    assert!(e.contains("runners.a: runner `a` has type `5`"), "{e}");
}

#[test]
fn load_reads_and_canonicalises() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = load(dir.path()).expect_err("no profile yet");
    assert!(matches!(&e, ProfileError::NotAPackage { .. }), "{e}");
    assert!(
        e.to_string()
            .ends_with("has no X.yaml; a skill package keeps its execution profile there"),
        "{e}"
    );
    std::fs::write(
        dir.path().join(PROFILE_FILE),
        "skill: s\nrun: { type: javascript, module: a.js }\n",
    )
    .expect("write");
    let p = load(&dir.path().join(".")).expect("load");
    assert_eq!(p.dir, dir.path().canonicalize().expect("canonical"));
    assert!(matches!(
        load(&dir.path().join("missing")),
        Err(ProfileError::Read { .. })
    ));
    std::fs::write(
        dir.path().join(PROFILE_FILE),
        "skill: s\nrun: { type: javascript, module: 3 }\n",
    )
    .expect("write");
    let e = load(dir.path()).expect_err("bad profile").to_string();
    assert!(e.contains("X.yaml:2:"), "{e}");
}

#[test]
fn a_javascript_runner_may_prefer_a_known_engine() {
    let with = |engine: &str| {
        format!(
            "skill: s\nversion: '1'\nrunners:\n  main:\n    type: javascript\n    module: main.mjs\n    engine: {engine}\n"
        )
    };
    let p = ok(&with("v8"));
    assert_eq!(js(&p.runners["main"]).engine.as_deref(), Some("v8"));
    let p = ok(
        "skill: s\nversion: '1'\nrunners:\n  main:\n    type: javascript\n    run: { module: main.mjs, engine: quickjs }\n",
    );
    assert_eq!(js(&p.runners["main"]).engine.as_deref(), Some("quickjs"));
    let p = ok(
        "skill: s\nversion: '1'\nrunners:\n  main:\n    type: javascript\n    module: main.mjs\n",
    );
    assert_eq!(js(&p.runners["main"]).engine, None);
    let e = err(&with("node"));
    assert!(
        e.contains("runners.main") && e.contains("`engine` is `node`") && e.contains("quickjs, v8"),
        "{e}"
    );
    let e = err(&with("[v8]"));
    assert!(e.contains("engine"), "{e}");
    let e = err(
        "skill: s\nversion: '1'\nrunners:\n  t:\n    type: cli-tool\n    command: echo\n    engine: v8\n",
    );
    assert!(
        e.contains("`engine` applies only to javascript runners"),
        "{e}"
    );
}

#[test]
fn receipt_signing_names_cannot_be_declared() {
    for (list, name) in [
        ("required", "RUNX_RECEIPT_SIGN_ED25519_SEED_BASE64"),
        ("optional", "RUNX_RECEIPT_SIGN_KID"),
        ("optional", "RUNX_RECEIPT_SIGN_ISSUER_TYPE"),
        ("required", "runx_receipt_sign_ed25519_seed_base64"),
    ] {
        for kind in [
            "type: javascript, module: a.js",
            "type: cli-tool, command: ./t.sh",
        ] {
            let text =
                format!("skill: s\nrun: {{ {kind}, environment: {{ {list}: [{name}] }} }}\n");
            let e = err(&text);
            assert!(
                e.contains(&format!("`environment.{list}` names `{name}`"))
                    && e.contains("receipt-signing material"),
                "{e}"
            );
        }
    }
    // Every other RUNX_ name is the runtime's too, as in runx: the runtime hands a runner the
    // receipt directory and verification key itself.
    for name in [
        "RUNX_RECEIPT_VERIFY_KID",
        "RUNX_RECEIPT_DIR",
        "RUNX_OPENAPI_BASE_URL",
    ] {
        let e = err(&format!(
            "skill: s\nrun: {{ type: cli-tool, command: ./t.sh, environment: {{ optional: [{name}] }} }}\n"
        ));
        assert!(
            e.contains("names starting with RUNX_ belong to the runtime"),
            "{e}"
        );
    }
}

#[test]
fn the_profile_digest_is_of_its_bytes() {
    let text = "skill: s\nrun: { type: javascript, module: a.js }\n";
    assert_eq!(ok(text).digest, runx_receipts::sha256_hex(text.as_bytes()));
    assert_ne!(ok(&format!("{text}# comment\n")).digest, ok(text).digest);
}
