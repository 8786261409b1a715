//! The format of runx packages: every key read or refused with its line, definitions, `json`,
//! packets, artifacts, examples, retries, input modes and templates.

use super::*;
use serde_json::json;
use std::path::Path;

fn parse_in(dir: &Path, text: &str) -> Result<Profile, ProfileError> {
    parse(text, dir, &dir.join(PROFILE_FILE))
}

fn ok(text: &str) -> Profile {
    parse_in(Path::new("/pkg"), text).unwrap_or_else(|e| panic!("expected a valid profile: {e}"))
}

/// The error, with its line and column.
fn err(text: &str) -> (String, Option<usize>, Option<usize>) {
    match parse_in(Path::new("/pkg"), text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => {
            let (line, column) = match &e {
                ProfileError::Invalid { line, column, .. } => (*line, *column),
                _ => (None, None),
            };
            (e.to_string(), line, column)
        }
    }
}

const JS: &str = "skill: s\nrunners:\n  r:\n    type: javascript\n    module: a.mjs\n";

#[test]
fn top_level_keys_are_read_shown_or_refused_with_their_line() {
    let p = ok(
        "skill: s\nversion: '1'\nrunx: { category: ops }\npolicy: [a]\nemits: x\ncatalog: { kind: skill }\ncredentials: { gh: { provider: github } }\nrun: { type: javascript, module: a.mjs }\n",
    );
    assert_eq!(
        p.declared_only.keys().collect::<Vec<_>>(),
        ["catalog", "credentials", "emits", "policy", "runx"]
    );
    assert_eq!(p.declared_only["runx"], json!({"category": "ops"}));

    let (e, line, column) = err("skill: s\nrun: { type: javascript, module: a.mjs }\nsteps: []\n");
    assert!(e.contains("`steps` is not a top-level key"), "{e}");
    assert_eq!((line, column), (Some(3), Some(1)), "{e}");
    let (e, line, _) =
        err("skill: s\ninstructions: do it\nrun: { type: javascript, module: a.mjs }\n");
    assert!(e.contains("belongs in the package's SKILL.md"), "{e}");
    assert_eq!(line, Some(2));
    let (e, _, _) = err("skill: s\ncatalog: [a]\nrun: { type: javascript, module: a.mjs }\n");
    assert!(e.contains("`catalog` must be a mapping"), "{e}");
}

#[test]
fn runner_keys_are_read_shown_or_refused_with_their_line() {
    let p = ok(&format!(
        "{JS}    scopes: [repo.read]\n    risk: {{ mutating: false }}\n    runx: {{ post_run: {{ reflect: never }} }}\n    allow_private_network: false\n"
    ));
    let r = &p.runners["r"];
    assert_eq!(r.declared_only["scopes"], json!(["repo.read"]));
    assert_eq!(r.declared_only["risk"], json!({"mutating": false}));
    assert!(r.declared_only.contains_key("allow_private_network"));

    let (e, line, column) = err(&format!("{JS}    scopez: [x]\n"));
    assert!(e.contains("runners.r"), "{e}");
    assert!(
        e.ends_with("`scopez` is not a runner key; did you mean `scopes`?"),
        "{e}"
    );
    assert_eq!((line, column), (Some(6), Some(5)), "{e}");
    // With nothing near, every key is listed.
    let (e, _, _) = err(&format!("{JS}    zzzzzzzz: [x]\n"));
    assert!(e.contains("keys runx runs: type, default"), "{e}");
    assert!(!e.contains("did you mean"), "{e}");
    let (e, line, _) = err(&format!("{JS}    instructions: be nice\n"));
    assert!(
        e.contains("`instructions` belongs in the package's SKILL.md"),
        "{e}"
    );
    assert_eq!(line, Some(6));
    // Inside a nested block too.
    let (e, line, _) = err(
        "skill: s\nrunners:\n  r:\n    run:\n      type: javascript\n      module: a.mjs\n      modul: b.mjs\n",
    );
    assert!(e.contains("`modul` is not a runner key"), "{e}");
    assert_eq!(line, Some(7));
    // A nested `source:` block merges like `run:`, its declared-only keys too.
    let p = ok(
        "skill: s\nrunners:\n  r:\n    scopes: [a]\n    source: { type: javascript, module: a.mjs, tool: t }\n",
    );
    assert_eq!(p.runners["r"].declared_only["tool"], json!("t"));
    let (e, _, _) = err(
        "skill: s\nrunners:\n  r:\n    scopes: [a]\n    source: { type: javascript, module: a.mjs, scopes: [b] }\n",
    );
    assert!(e.contains("`scopes` is given both in `source:`"), "{e}");
}

#[test]
fn other_runners_keep_their_keys_and_refuse_unknown_ones() {
    let p = ok(
        "skill: s\nrunners:\n  g:\n    type: graph\n    inputs: { x: { definition: nowhere } }\n    graph: { name: g, steps: [], result_from: [s] }\n  a:\n    run: { type: agent-task, task: t }\n",
    );
    let g = &p.other_runners["g"];
    assert_eq!(
        g.keys["graph"],
        json!({"name": "g", "steps": [], "result_from": ["s"]})
    );
    assert_eq!(g.keys["inputs"], json!({"x": {"definition": "nowhere"}}));
    assert_eq!(p.other_runners["a"].keys["run"], json!({"task": "t"}));
    let (e, line, _) = err("skill: s\nrunners:\n  g:\n    type: graph\n    steps: []\n");
    assert!(e.contains("`steps` is not a runner key"), "{e}");
    assert_eq!(line, Some(5));
}

#[test]
fn definitions_resolve_wherever_they_stand() {
    // `input_definitions` after `runners:` still resolves.
    let p = ok(
        "skill: s\nrunners:\n  r:\n    type: javascript\n    module: a.mjs\n    inputs:\n      repo: { definition: repository }\ninput_definitions:\n  repository: { type: string, required: true, description: owner/name, schema: { pattern: '^[a-z]+/[a-z]+$' } }\n",
    );
    let repo = &p.runners["r"].inputs["repo"];
    assert_eq!(repo.ty, ValueType::String);
    assert!(repo.required);
    assert_eq!(repo.definition.as_deref(), Some("repository"));
    assert_eq!(
        repo.schema.as_ref().map(Schema::value),
        Some(&json!({"pattern": "^[a-z]+/[a-z]+$"}))
    );
    assert!(p.input_definitions.contains_key("repository"));

    let (e, line, _) = err(&format!(
        "input_definitions: {{ a: string }}\n{JS}    inputs:\n      x: {{ definition: b }}\n"
    ));
    assert!(
        e.contains(
            "`definition` names `b`, which `input_definitions` does not declare (declared: a)"
        ),
        "{e}"
    );
    assert_eq!(line, Some(8), "{e}");
    let (e, _, _) = err(&format!(
        "input_definitions: {{ a: string }}\n{JS}    inputs:\n      x: {{ definition: a, required: true }}\n"
    ));
    assert!(e.contains("must be the only key"), "{e}");
    let (e, _, _) = err(&format!(
        "input_definitions: {{ a: {{ definition: b }} }}\n{JS}"
    ));
    assert!(e.contains("inside `input_definitions`"), "{e}");
    let (e, line, column) = err(&format!(
        "{JS}    inputs:\n      x: {{ type: string, requird: true }}\n"
    ));
    assert!(e.contains("unknown field `requird`"), "{e}");
    assert_eq!((line, column), (Some(7), Some(26)), "{e}");
    let (e, _, _) = err(&format!("input_definitions:\n  a: {{ type: strng }}\n{JS}"));
    assert!(e.contains("input_definitions.a"), "{e}");
}

#[test]
fn json_type_and_string_by_default() {
    let p = ok(&format!(
        "{JS}    inputs:\n      j: json\n      k: {{ type: json, default: [1, {{a: null}}] }}\n      s: {{ required: true }}\n"
    ));
    let inputs = &p.runners["r"].inputs;
    assert_eq!(inputs["j"].ty, ValueType::Json);
    assert_eq!(inputs["k"].default, Some(json!([1, {"a": null}])));
    assert_eq!(inputs["s"].ty, ValueType::String);
    // No type means string, so a numeric default is refused.
    let (e, _, _) = err(&format!("{JS}    inputs:\n      n: {{ default: 5 }}\n"));
    assert!(
        e.contains("`default` is an integer, but the input is declared `string`"),
        "{e}"
    );
    assert!(ValueType::Json.matches(&json!(null)) && ValueType::Json.is_any());
}

#[test]
fn packets_are_found_and_enforced_as_schemas() {
    let root = tempfile::tempdir().expect("tempdir");
    let pkg = root.path().join("skills/p");
    std::fs::create_dir_all(root.path().join("dist/packets")).expect("mkdir");
    std::fs::create_dir_all(&pkg).expect("mkdir");
    std::fs::write(
        root.path().join("dist/packets/t.schema.json"),
        r##"{"$schema": "https://json-schema.org/draft/2020-12/schema", "x-runx-packet-id": "t.v1", "type": "object", "required": ["id"], "properties": {"id": {"$ref": "#/$defs/id"}}, "$defs": {"id": {"type": "string"}}}"##,
    )
    .expect("write");
    let text = |decl: &str| format!("{JS}    inputs:\n      t: {decl}\n");
    let p = parse_in(&pkg, &text("{ type: json, packet: t.v1 }")).expect("loads");
    let t = &p.runners["r"].inputs["t"];
    let packet = t.packet.as_ref().expect("packet");
    assert_eq!(packet.id, "t.v1");
    assert!(packet.file.ends_with("dist/packets/t.schema.json"));
    assert_eq!(
        t.schema.as_ref().expect("schema").value()["required"],
        json!(["id"])
    );

    let e = parse_in(&pkg, &text("{ type: object, packet: t.v1 }"))
        .expect_err("type")
        .to_string();
    assert!(e.contains("needs `type: json`"), "{e}");
    let e = parse_in(&pkg, &text("{ type: json, packet: t.v1, schema: {} }"))
        .expect_err("schema")
        .to_string();
    assert!(e.contains("`packet: t.v1` and `schema`"), "{e}");
    let e = parse_in(&pkg, &text("{ type: json, packet: t.v1, default: {} }"))
        .expect_err("default")
        .to_string();
    assert!(e.contains("no default"), "{e}");
    let e = parse_in(&pkg, &text("{ type: json, packet: u.v1 }"))
        .expect_err("missing")
        .to_string();
    assert!(e.contains("packet `u.v1` has no schema"), "{e}");
    assert!(e.contains("dist/packets"), "{e}");
    assert!(e.contains("X.yaml:7:"), "{e}");
}

#[test]
fn artifacts_are_checked_and_kept() {
    let p = ok(&format!(
        "{JS}    artifacts: {{ named_emits: {{ plan: plan }}, packets: {{ plan: p.v1 }}, emits: one }}\n"
    ));
    let a = p.runners["r"].artifacts.as_ref().expect("artifacts");
    assert_eq!(a.emits, vec!["one"]);
    assert_eq!(a.packets["plan"], "p.v1");
    let p = ok(&format!(
        "{JS}    artifacts: {{ wrapAs: packet, packet: p.v1 }}\n"
    ));
    assert_eq!(
        p.runners["r"]
            .artifacts
            .as_ref()
            .expect("artifacts")
            .wrap_as
            .as_deref(),
        Some("packet")
    );
    for (artifacts, want) in [
        (
            "{ packets: { plan: p.v1 } }",
            "names no `artifacts.named_emits` entry",
        ),
        ("{ packet: p.v1 }", "needs `artifacts.wrap_as`"),
        ("{ wrap_as: '' }", "`artifacts.wrap_as` holds an empty name"),
        ("{ emit: [a] }", "unknown field `emit`"),
    ] {
        let (e, line, _) = err(&format!("{JS}    artifacts: {artifacts}\n"));
        assert!(e.contains(want), "{artifacts}: {e}");
        assert!(line.is_some(), "{e}");
    }
}

#[test]
fn examples_must_match_the_inputs() {
    let base = format!(
        "{JS}    inputs:\n      n: {{ type: integer, required: true, schema: {{ minimum: 1 }} }}\n      tag: {{ type: string, default: x }}\n    examples:\n"
    );
    let p = ok(&format!(
        "{base}      - {{ n: 2 }}\n      - {{ n: 3, tag: y }}\n"
    ));
    assert_eq!(p.runners["r"].examples.len(), 2);
    for (example, want) in [
        ("{ n: 0 }", "does not match its schema"),
        ("{ tag: y }", "input `n` is required"),
        ("{ n: 1, other: 1 }", "input `other` is not declared"),
        ("{ n: '1' }", "must be an integer"),
    ] {
        let (e, _, _) = err(&format!("{base}      - {example}\n"));
        assert!(e.contains("`examples[0]` does not match"), "{e}");
        assert!(e.contains(want), "{example}: {e}");
    }
}

const CLI: &str = "skill: s\nrunners:\n  r:\n    type: cli-tool\n    command: x\n";

fn tool(p: &Profile) -> &CliToolRunner {
    match &p.runners["r"].kind {
        RunnerKind::CliTool(t) => t,
        other => panic!("not cli-tool: {other:?}"),
    }
}

#[test]
fn retries_in_both_forms_with_runx_rules() {
    let p = ok(&format!(
        "{CLI}    idempotent: true\n    retry: {{ max_attempts: 3 }}\n"
    ));
    let r = tool(&p).active_retry().expect("applies");
    assert_eq!(r.attempts, 2);
    assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    // An idempotency key makes the runner idempotent.
    let p = ok(&format!(
        "{CLI}    idempotency: {{ key: k }}\n    retry: {{ max_attempts: 2 }}\n"
    ));
    assert!(tool(&p).idempotent);
    assert!(tool(&p).active_retry().is_some());
    assert_eq!(
        p.runners["r"].declared_only["idempotency"],
        json!({"key": "k"})
    );
    // Not idempotent: kept, inert, noted.
    for extra in [
        "    retry: { max_attempts: 2 }\n",
        "    retry: { attempts: 1 }\n",
    ] {
        let p = ok(&format!("{CLI}{extra}"));
        let t = tool(&p);
        assert!(t.retry.is_some() && t.active_retry().is_none());
        assert_eq!(p.diagnostics.len(), 1);
        assert_eq!(p.diagnostics[0].key, "retry");
        assert!(
            p.diagnostics[0].message.contains("not idempotent"),
            "{:?}",
            p.diagnostics
        );
        assert!(
            crate::applied::limits_for(&p.runners["r"])
                .get("retry_attempts")
                .is_none()
        );
    }
    // One attempt in all: nothing to retry.
    let p = ok(&format!(
        "{CLI}    idempotent: true\n    retry: {{ max_attempts: 1 }}\n"
    ));
    assert!(tool(&p).active_retry().is_none());
    assert!(p.diagnostics[0].message.contains("`max_attempts: 1`"));
    // A javascript runner's retry is inert too.
    let p = ok(&format!("{JS}    retry: {{ max_attempts: 2 }}\n"));
    assert_eq!(
        p.runners["r"].declared_only["retry"],
        json!({"max_attempts": 2})
    );
    assert!(
        p.diagnostics[0]
            .message
            .contains("javascript call is deterministic")
    );
}

#[test]
fn input_modes() {
    for (mode, want) in [
        ("args", InputMode::Args),
        ("none", InputMode::Closed),
        ("stdin", InputMode::Stdin),
    ] {
        let p = ok(&format!("{CLI}    input_mode: {mode}\n"));
        assert_eq!(tool(&p).input_mode, want);
        assert_eq!(want.name(), mode);
    }
}

#[test]
fn templates_naming_undeclared_inputs_are_noted() {
    let p = ok(&format!(
        "{CLI}    args: ['{{{{name}}}}', '{{{{ name }}}}', '--x={{{{input.missing}}}}', '{{{{other}}}}', '{{{{env.NOPE}}}}', '{{{{env.RUNX_CWD}}}}', '{{{{open']\n    inputs:\n      name: string\n"
    ));
    let notes: Vec<String> = p.diagnostics.iter().map(|d| d.to_string()).collect();
    assert_eq!(notes.len(), 4, "{notes:?}");
    assert!(
        notes[0].starts_with("runners.r.args[2]: `--x={{input.missing}}` names input `missing`"),
        "{notes:?}"
    );
    assert!(
        notes[1].contains("args[3]") && notes[1].contains("input `other`"),
        "{notes:?}"
    );
    assert!(
        notes[2].contains("args[4]") && notes[2].contains("environment variable `NOPE`"),
        "{notes:?}"
    );
    assert!(
        notes[3].contains("args[6]") && notes[3].contains("unclosed"),
        "{notes:?}"
    );
}

#[test]
fn output_declarations_are_closed() {
    let p = ok(&format!(
        "{JS}    outputs:\n      a: {{ type: string, required: false, description: d, enum: [x, y], wrap_as: w }}\n"
    ));
    let a = &p.runners["r"].outputs["a"];
    assert!(!a.required);
    assert_eq!(
        a.schema.as_ref().map(Schema::value),
        Some(&json!({"enum": ["x", "y"]}))
    );
    assert_eq!(a.wrap_as.as_deref(), Some("w"));
    let (e, line, _) = err(&format!(
        "{JS}    outputs:\n      a: {{ type: string, format: x }}\n"
    ));
    assert!(e.contains("unknown field `format`"), "{e}");
    assert_eq!(line, Some(7));
}

#[test]
fn hostile_yaml_in_declared_keys_is_refused() {
    // An alias bomb hidden in a key this runtime only shows.
    let mut text = String::from(
        "skill: s\nrun: { type: javascript, module: a.mjs }\npolicy:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 1..9 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text.push_str(&format!("  a{i}: &a{i} [{refs}]\n"));
    }
    let (e, line, _) = err(&text);
    assert!(e.contains("repetition limit exceeded"), "{e}");
    // Where it goes off: one of the last levels, whose aliases name the most (issue 46, item 3).
    assert!(matches!(line, Some(9..=12)), "{line:?}: {e}");
    assert!(e.contains("alias bomb"), "{e}");
    // A key that is not a string.
    let (e, line, _) = err("skill: s\nrun: { type: javascript, module: a.mjs }\n[a, b]: 1\n");
    assert!(line.is_some(), "{e}");
    // A key given twice.
    let (e, _, _) = err(&format!("{JS}    module: b.mjs\n"));
    assert!(
        e.contains("`module` is given twice") || e.contains("duplicate"),
        "{e}"
    );
}

/// runx refuses a graph without `graph.result_from`, and one that declares `environment`,
/// `outputs` or `artifacts` (its steps declare those): so does this runtime, at the runner's
/// line, though it does not run graphs.
#[test]
fn graphs_runx_refuses_are_refused() {
    let (e, line, _) = err("skill: s\nrunners:\n  g: { type: graph, graph: { steps: [] } }\n");
    assert!(
        e.contains("runner `g` of type `graph` has no `graph.result_from`"),
        "{e}"
    );
    assert_eq!(line, Some(3), "at the runner's line: {e}");
    let (e, _, _) = err("skill: s\nrunners:\n  g: { type: graph, graph: { result_from: [] } }\n");
    assert!(e.contains("has no `graph.result_from`"), "{e}");
    for key in [
        "environment: { required: [A] }",
        "outputs: { x: string }",
        "artifacts: { emits: [x] }",
    ] {
        let (e, _, _) = err(&format!(
            "skill: s\nrunners:\n  g: {{ type: graph, graph: {{ result_from: [s] }}, {key} }}\n"
        ));
        assert!(e.contains("which is ambiguous for a graph"), "{key}: {e}");
    }
}

/// A runner of a type this runtime does not run still may not name a `RUNX_` variable or a
/// packet whose schema is not there: runx refuses both.
#[test]
fn other_runners_keep_runx_environment_and_packet_rules() {
    let (e, _, _) = err(
        "skill: s\nrunners:\n  x: { type: external-adapter, environment: { optional: [RUNX_OPENAPI_BASE_URL] } }\n",
    );
    assert!(
        e.contains("runner `x` of type `external-adapter`")
            && e.contains("names starting with RUNX_"),
        "{e}"
    );
    let (e, _, _) = err(
        "skill: s\nrunners:\n  x: { type: agent-task, inputs: { p: { type: json, packet: nowhere.v1 } } }\n",
    );
    assert!(e.contains("input `p`") && e.contains("nowhere.v1"), "{e}");
}
