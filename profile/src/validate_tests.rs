//! Validation of parsed profiles: each rule of a runner kind, of environment names, pages and
//! input declarations, refused with a message naming the key.

use super::*;
use crate::tests::{cli, err, ok};
use serde_json::Value;
use serde_json::json;
use std::time::Duration;

fn js_err(extra: &str) -> String {
    err(&format!(
        "skill: s\nrunners:\n  r:\n    type: javascript\n{extra}"
    ))
}

fn cli_err(extra: &str) -> String {
    err(&format!(
        "skill: s\nrunners:\n  r:\n    type: cli-tool\n{extra}"
    ))
}

#[test]
fn javascript_validation_errors() {
    let cases: &[(&str, &str)] = &[
        ("    export: run\n", "`module` is missing"),
        ("    module: ''\n", "`module` is empty"),
        (
            "    module: /abs/a.mjs\n",
            "absolute paths are not importable",
        ),
        ("    module: 'src\\a.mjs'\n", "backslashes"),
        ("    module: ../up.mjs\n", "leaves the skill directory"),
        (
            "    module: 'https://x/a.mjs'\n",
            "URL and `node:` specifiers",
        ),
        ("    module: a.ts\n", "only `.mjs` and `.js` files"),
        (
            "    module: a.js\n    export: 'not-ok'\n",
            "not a JavaScript export name",
        ),
        (
            "    module: a.js\n    timeout_seconds: 0\n",
            "`timeout_seconds` is 0",
        ),
        (
            "    module: a.js\n    timeout_seconds: 31\n",
            "allows 1 to 30",
        ),
        (
            "    module: a.js\n    command: x\n",
            "`command` applies only to cli-tool",
        ),
        (
            "    module: a.js\n    inputs: { runx_page: object }\n",
            "`inputs.runx_page` is reserved",
        ),
    ];
    for (extra, want) in cases {
        let e = js_err(extra);
        assert!(e.contains(want), "{extra:?}: {e}");
        assert!(e.contains("runners.r"), "{extra:?}: {e}");
    }
    assert!(
        ok(
            "skill: s\nrun: { type: javascript, module: a.js, timeout_seconds: 30, export: $x_1 }\n"
        )
        .runners
        .contains_key("default")
    );
}

#[test]
fn environment_validation_errors() {
    assert!(
        js_err("    module: a.js\n    environment: { required: [1BAD] }\n")
            .contains("`environment.required` entry `1BAD`")
    );
    assert!(
        js_err("    module: a.js\n    environment: { optional: [A-B] }\n")
            .contains("`environment.optional` entry `A-B`")
    );
    assert!(
        js_err("    module: a.js\n    environment: { required: [A], optional: [A] }\n")
            .contains("lists `A` more than once")
    );
    assert!(
        js_err("    module: a.js\n    environment: { requird: [A] }\n")
            .contains("unknown field `requird`")
    );
    let p =
        ok("skill: s\nrun: { type: javascript, module: a.js, environment: { required: [_A1] } }\n");
    assert_eq!(p.runners["default"].environment.required, vec!["_A1"]);
}

#[test]
fn pages_validation_errors() {
    let page = |p: &str| js_err(&format!("    module: a.js\n    pages: {p}\n"));
    assert!(
        page("{ path_from: 'a b', path_scope_from: s }").contains("`pages.path_from` is `a b`")
    );
    assert!(
        page("{ path_from: f, path_scope_from: 's/x' }")
            .contains("`pages.path_scope_from` is `s/x`")
    );
    assert!(page("{ path_from: f, path_scope_from: f }").contains("must be different inputs"));
    assert!(
        page("{ path_from: runx_page, path_scope_from: s }").contains("may not be `runx_page`")
    );
    assert!(
        page("{ path_from: f, path_scope_from: runx_page }")
            .contains("`pages.path_scope_from` may not be `runx_page`")
    );
    assert!(
        page("{ path_from: f, path_scope_from: s, framing: ndjson }")
            .contains("only framing is `json_array`")
    );
    assert!(
        page("{ path_from: f, path_scope_from: s, page_bytes: 0 }")
            .contains("`pages.page_bytes` is 0")
    );
    assert!(
        page("{ path_from: f, path_scope_from: s, page_bytes: 4194305 }")
            .contains("allowed 1 to 4194304")
    );
    assert!(
        page("{ path_from: f, path_scope_from: s, media_type: json }")
            .contains("`pages.media_type`")
    );
    assert!(page("{ path_from: f, path_scope_from: s, size: 1 }").contains("unknown field `size`"));
    assert!(page("{ path_from: f }").contains("missing field `path_scope_from`"));
    assert!(js_err("    module: a.js\n    inputs: { f: integer }\n    pages: { path_from: f, path_scope_from: s }\n")
            .contains("declared `integer`"));
    assert!(ok("skill: s\nrun: { type: javascript, module: a.js, pages: { path_from: f, path_scope_from: s, page_bytes: 4194304 } }\n")
            .runners.contains_key("default"));
}

#[test]
fn map_fold_pages_are_validated() {
    let page = |p: &str| js_err(&format!("    module: a.js\n    pages: {p}\n"));
    let base = "path_from: f, path_scope_from: s";
    for (extra, want) in [
        ("map: m", "`pages.map` is declared without `pages.fold`"),
        ("fold: f2", "`pages.fold` is declared without `pages.map`"),
        ("workers: 2", "`pages.workers` applies to a map/fold runner"),
        (
            "map: 'a-b', fold: f2",
            "`pages.map` `a-b` is not a JavaScript export name",
        ),
        (
            "map: m, fold: '9x'",
            "`pages.fold` `9x` is not a JavaScript export name",
        ),
        (
            "map: m, fold: f2, workers: 0",
            "`pages.workers` is 0; allowed 1 to 16",
        ),
        (
            "map: m, fold: f2, workers: 17",
            "`pages.workers` is 17; allowed 1 to 16",
        ),
    ] {
        let e = page(&format!("{{ {base}, {extra} }}"));
        assert!(e.contains(want), "{extra}: {e}");
    }
    let e = js_err(&format!(
        "    module: a.js\n    export: run\n    pages: {{ {base}, map: m, fold: f2 }}\n"
    ));
    assert!(e.contains("remove `export`"), "{e}");
    let p = ok(&format!(
        "skill: s\nrun: {{ type: javascript, module: a.js, pages: {{ {base}, map: m, fold: f2, workers: 4 }} }}\n"
    ));
    let RunnerKind::Javascript(js) = &p.runners["default"].kind else {
        panic!("a javascript runner");
    };
    let parallel = js.pages.as_ref().and_then(|p| p.parallel.clone());
    assert_eq!(
        parallel,
        Some(ParallelDecl {
            map: "m".into(),
            fold: "f2".into(),
            workers: 4
        })
    );
    assert_eq!(
        crate::limits_for(&p.runners["default"]).get("page_workers"),
        Some(4)
    );
    let p = ok(&format!(
        "skill: s\nrun: {{ type: javascript, module: a.js, pages: {{ {base}, map: m, fold: f2 }} }}\n"
    ));
    let RunnerKind::Javascript(js) = &p.runners["default"].kind else {
        panic!("a javascript runner");
    };
    assert_eq!(
        js.pages
            .as_ref()
            .and_then(|p| p.parallel.as_ref())
            .map(|p| p.workers),
        Some(4)
    );
}

#[test]
fn cli_tool_validation_errors() {
    let cases: &[(&str, &str)] = &[
        ("    args: [a]\n", "`command` is missing"),
        ("    command: ' '\n", "`command` is empty"),
        (
            "    command: x\n    module: a.js\n",
            "`module` applies only to javascript",
        ),
        (
            "    command: x\n    pages: { path_from: f, path_scope_from: s }\n",
            "`pages` applies only to javascript",
        ),
        (
            "    command: x\n    input_mode: file\n",
            "`input_mode` is `file`",
        ),
        (
            "    command: x\n    timeout_seconds: 3601\n",
            "allows 1 to 3600",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 1, max_attempts: 2 }\n",
            "both `attempts`",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { on: [crash] }\n",
            "needs `max_attempts`",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { max_attempts: 0 }\n",
            "`retry.max_attempts` is 0",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { max_attempts: 5 }\n",
            "allowed 1 to 4 runs",
        ),
        (
            "    command: x\n    idempotency: ''\n",
            "`idempotency` is empty",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 0 }\n",
            "`retry.attempts` is 0",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 4 }\n",
            "`retry.attempts` is 4",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 1, on: [timeout] }\n",
            "`retry.on` contains `timeout`",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 1, on: [] }\n",
            "`retry.on` is empty",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 1, backoff_seconds: 301 }\n",
            "`retry.backoff_seconds` is 301",
        ),
        (
            "    command: x\n    idempotent: true\n    retry: { attempts: 1, tries: 2 }\n",
            "unknown field `tries`",
        ),
    ];
    for (extra, want) in cases {
        let e = cli_err(extra);
        assert!(e.contains(want), "{extra:?}: {e}");
        assert!(e.contains("runners.r"), "{extra:?}: {e}");
    }
    let p = ok(
        "skill: s\nrun: { type: cli-tool, command: x, timeout_seconds: 3600, idempotent: true, retry: { attempts: 3 } }\n",
    );
    let r = &p.runners["default"];
    assert_eq!(r.timeout, Duration::from_secs(3600));
    let c = cli(r);
    assert_eq!(c.input_mode, InputMode::Closed);
    assert_eq!(c.args, Vec::<String>::new());
    assert_eq!(c.cwd, None);
    assert_eq!(
        c.retry,
        Some(RetryDecl {
            attempts: 3,
            on: vec![RetryOn::Crash],
            backoff: Duration::from_secs(30),
            inert: None,
        })
    );
}

#[test]
fn input_declaration_checks() {
    assert!(
        js_err("    module: a.js\n    inputs: { n: { type: integer, default: 1.5 } }\n")
            .contains("`default` is a number, but the input is declared `integer`")
    );
    assert!(js_err("    module: a.js\n    inputs: { n: { type: string, default: ab, schema: { minLength: 3 } } }\n")
            .contains("`default` does not match `schema`"));
    assert!(
        js_err("    module: a.js\n    inputs: { n: { schema: { type: 7 } } }\n")
            .contains("not a usable JSON Schema")
    );
    assert!(
        js_err("    module: a.js\n    outputs: { n: { type: object, schema: { type: wrong } } }\n")
            .contains("runners.r.outputs.n")
    );
    let p = ok(
        "skill: s\nrun: { type: javascript, module: a.js, inputs: { n: { type: json, default: null }, m: { type: integer, default: 2.0 } } }\n",
    );
    let inputs = &p.runners["default"].inputs;
    assert_eq!(inputs["n"].ty, ValueType::Json);
    assert_eq!(inputs["n"].default, Some(Value::Null));
    assert!(!inputs["n"].required);
    assert_eq!(inputs["m"].default, Some(json!(2.0)));
}

#[test]
fn remote_schema_refs_are_not_fetched() {
    let e = js_err(
        "    module: a.js\n    inputs: { n: { schema: { $ref: 'https://example.invalid/s.json' } } }\n",
    );
    assert!(e.contains("not a usable JSON Schema"), "{e}");
}

#[test]
fn value_type_matching() {
    assert!(ValueType::Integer.matches(&json!(3)));
    assert!(ValueType::Integer.matches(&json!(-3)));
    assert!(ValueType::Integer.matches(&json!(3.0)));
    assert!(!ValueType::Integer.matches(&json!(3.5)));
    assert!(ValueType::Number.matches(&json!(3.5)));
    assert!(!ValueType::Number.matches(&json!("3")));
    assert!(ValueType::Null.matches(&Value::Null));
    assert!(ValueType::Any.matches(&json!({"a": 1})));
    assert_eq!(ValueType::describe(&json!(1.5)), "number");
    assert_eq!(ValueType::describe(&json!(1)), "integer");
    assert_eq!(with_article("integer"), "an integer");
    assert_eq!(with_article("string"), "a string");
    assert_eq!(PathScope::from_name("skill"), Some(PathScope::Skill));
    assert_eq!(
        PathScope::from_name("workspace"),
        Some(PathScope::Workspace)
    );
    assert_eq!(PathScope::from_name("home"), None);
}
