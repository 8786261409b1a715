//! Dry runs against packages made here: what they resolve, what they refuse, and that they
//! start nothing, write nothing and print no environment value.

use super::*;
use crate::environment::EnvSource;
use crate::failure::FailureKind;
use runx_worker::WorkerCommand;
use serde_json::json;
use std::path::{Path, PathBuf};

/// A runtime whose workers could never start: a plan must not need one.
fn runtime() -> Runtime {
    Runtime::new(WorkerCommand::new("/nonexistent/runx-worker"))
}

/// A package in `ws/pkg` with `profile` and `files` (path, text); `.sh` files are executable.
fn package(ws: &Path, profile: &str, files: &[(&str, &str)]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = ws.join("pkg");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("X.yaml"), profile).unwrap();
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        if path.extension().is_some_and(|e| e == "sh") {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir
}

fn request(ws: &Path, dir: &Path, runner: Option<&str>, inputs: Value) -> RunRequest {
    let mut req = RunRequest::new(dir, inputs.as_object().cloned().unwrap_or_default());
    req.runner = runner.map(str::to_string);
    req.workspace = ws.to_path_buf();
    req.receipt_dir = Some(ws.join("receipts"));
    req.env = EnvSource::Map(BTreeMap::from([(
        "STAGE".to_string(),
        "secret-stage-value".to_string(),
    )]));
    req
}

const TOOL: &str = "skill: t\nrunners:\n  mark:\n    default: true\n    type: cli-tool\n    command: ./bin/mark.sh\n    args: [\"{{name}}\", \"--stage={{env.STAGE}}\", \"{{count}}\"]\n    timeout_seconds: 7\n    environment: { optional: [STAGE, ABSENT] }\n    inputs:\n      name: { type: string, required: true }\n      count: { type: integer, default: 3 }\n  needs:\n    type: cli-tool\n    command: ./bin/mark.sh\n    environment: { required: [NOT_SET_HERE] }\n  gone:\n    type: cli-tool\n    command: ./bin/nothere.sh\n";
const MARK: &str = "#!/bin/sh\ntouch \"$RUNX_CWD/marker\"\n";

#[test]
fn a_cli_tool_plan_resolves_the_process_and_starts_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let dir = package(ws.path(), TOOL, &[("bin/mark.sh", MARK)]);
    let rt = runtime();
    let out = rt.plan(&request(ws.path(), &dir, None, json!({"name": "ada"})));
    assert_eq!(out.exit_code(), 0);
    let plan = out.result.expect("plan");
    assert_eq!((plan.skill.as_str(), plan.runner.as_str()), ("t", "mark"));
    assert_eq!(
        plan.inputs,
        *json!({"name": "ada", "count": 3}).as_object().unwrap()
    );
    assert_eq!(plan.timeout_ms, 7000);
    assert_eq!(plan.limits.get("wall_milliseconds"), Some(&7000));
    let p = plan.process.expect("a process");
    let real = dir.canonicalize().unwrap();
    // As the run looks it up: the package directory joined with the command as declared,
    // its `./` dropped.
    let program = real.join("bin/mark.sh").display().to_string();
    assert_eq!(p.program, program);
    assert_eq!(
        p.argv,
        [program.as_str(), "ada", "--stage={{env.STAGE}}", "3"]
    );
    assert_eq!(
        p.hidden,
        [HiddenValues {
            index: 2,
            names: vec!["STAGE".into()]
        }]
    );
    assert_eq!(p.cwd, real.display().to_string());
    assert_eq!(
        (p.input_mode, p.stdin_bytes, p.max_attempts),
        ("none", None, 1)
    );
    let names: Vec<(&str, &str)> = p
        .environment
        .iter()
        .map(|e| (e.name.as_str(), e.source.name()))
        .collect();
    for want in [
        ("PATH", "baseline"),
        ("HOME", "baseline"),
        ("STAGE", "declared"),
        ("RUNX_CWD", "runx"),
        ("RUNX_RECEIPT_DIR", "runx"),
        ("RUNX_INPUTS_PATH", "input"),
        ("RUNX_INPUT_NAME", "input"),
        ("RUNX_INPUT_COUNT_PATH", "input"),
    ] {
        assert!(names.contains(&want), "{want:?} in {names:?}");
    }
    assert!(!names.iter().any(|(n, _)| *n == "ABSENT"), "{names:?}");
    let files: Vec<(&str, u64)> = p
        .staged_files
        .iter()
        .map(|f| (f.name.as_str(), f.bytes))
        .collect();
    let whole = r#"{"count":3,"name":"ada"}"#.len() as u64;
    assert_eq!(
        files,
        [
            ("inputs.json", whole),
            ("input_COUNT", 1),
            ("input_NAME", 3)
        ]
    );
    assert_eq!(
        plan.environment,
        EnvNames {
            required: vec![],
            optional: vec!["STAGE".into(), "ABSENT".into()],
            set: vec!["STAGE".into()],
            unset: vec!["ABSENT".into()],
        }
    );
    // Nothing ran, nothing was written, and no value of the environment is in the plan.
    assert!(!ws.path().join("marker").exists());
    assert!(!ws.path().join("receipts").exists());
    assert!(rt.worker_pids().is_empty());
    let printed =
        crate::report::plan_json(&rt.plan(&request(ws.path(), &dir, None, json!({"name": "ada"}))))
            .to_string();
    assert!(!printed.contains("secret-stage-value"), "{printed}");
    assert!(printed.contains("STAGE"), "{printed}");
}

#[test]
fn an_injecting_value_stays_one_argument() {
    let ws = tempfile::tempdir().unwrap();
    let dir = package(ws.path(), TOOL, &[("bin/mark.sh", MARK)]);
    let hostile = "x; touch pwned $(id) `id` {{env.STAGE}}\n\u{1b}]0;title\u{7}";
    let out = runtime().plan(&request(ws.path(), &dir, None, json!({"name": hostile})));
    let p = out.result.expect("plan").process.expect("process");
    assert_eq!(p.argv.len(), 4, "{:?}", p.argv);
    // The value is the argument, verbatim: not split, not expanded again, not run.
    assert_eq!(p.argv[1], hostile);
    assert_eq!(p.hidden.len(), 1);
    assert!(!ws.path().join("pwned").exists());
}

#[test]
fn a_plan_refuses_what_a_run_refuses_without_a_receipt() {
    let ws = tempfile::tempdir().unwrap();
    let dir = package(ws.path(), TOOL, &[("bin/mark.sh", MARK)]);
    let rt = runtime();
    let cases = [
        (None, json!({}), FailureKind::Input, 64),
        (None, json!({"name": 42}), FailureKind::Input, 64),
        (
            None,
            json!({"name": "a", "NAME": "b"}),
            FailureKind::Input,
            64,
        ),
        (Some("needs"), json!({}), FailureKind::Environment, 1),
        (Some("gone"), json!({}), FailureKind::NotFound, 1),
        (Some("nope"), json!({}), FailureKind::Profile, 64),
    ];
    for (runner, inputs, kind, code) in cases {
        let req = request(ws.path(), &dir, runner, inputs.clone());
        let planned = rt.plan(&req);
        let e = planned.result.as_ref().expect_err("refused");
        assert_eq!(
            (e.kind, planned.exit_code()),
            (kind, code),
            "{runner:?} {inputs}: {e}"
        );
        assert!(
            !ws.path().join("receipts").exists(),
            "{runner:?}: a receipt"
        );
        // A run says the same, and leaves a receipt.
        let ran = rt.run(req);
        assert_eq!(ran.error(), Some(e), "{runner:?} {inputs}");
        assert_eq!(ran.exit_code(), code);
        assert!(ran.receipt_path.is_some_and(|p| p.exists()));
        std::fs::remove_dir_all(ws.path().join("receipts")).unwrap();
    }
    assert!(!ws.path().join("marker").exists());
    // A refusal found outside the runtime (an unreadable inputs file) is the run's refusal.
    let outside = RunError::new(FailureKind::Input, "inputs_file", "cannot read it");
    for runner in [None, Some("nope")] {
        let req = request(ws.path(), &dir, runner, json!({}));
        let refused = rt.refuse_plan(&req, outside.clone());
        assert_eq!(refused.result.as_ref().err(), Some(&outside));
        assert_eq!(refused.exit_code(), 64);
        let ran = rt.refuse(req, outside.clone());
        assert_eq!((ran.skill, ran.runner), (refused.skill, refused.runner));
    }
}

const MAIN: &str = "import { twice } from './lib/util.mjs';\nexport function run(i) { return { n: twice(i.n) }; }\n";
const UTIL: &str = "export const twice = (n) => 2 * n;\n";

#[test]
fn a_javascript_plan_lists_the_closure_with_digests() {
    let ws = tempfile::tempdir().unwrap();
    let profile = "skill: j\nrun:\n  type: javascript\n  module: main.mjs\n  export: run\n  environment: { required: [STAGE] }\n  inputs:\n    n: { type: integer, default: 2 }\n";
    let dir = package(
        ws.path(),
        profile,
        &[("main.mjs", MAIN), ("lib/util.mjs", UTIL)],
    );
    let rt = runtime();
    let plan = rt
        .plan(&request(ws.path(), &dir, None, json!({})))
        .result
        .expect("plan");
    let m = plan.module.expect("module");
    assert_eq!((m.entry.as_str(), m.export.as_str()), ("main.mjs", "run"));
    assert_eq!(m.engine, crate::pools::DEFAULT_ENGINE);
    let want = [("lib/util.mjs", UTIL), ("main.mjs", MAIN)].map(|(path, text)| ModuleFile {
        path: path.into(),
        bytes: text.len() as u64,
        digest: sha256(text.as_bytes()),
    });
    assert_eq!(m.modules, want);
    let bundle = runx_worker::collect_bundle(&dir, "main.mjs", 1 << 20).unwrap();
    assert_eq!(m.bundle_digest, bundle.digest());
    assert_eq!(plan.environment.set, ["STAGE"]);
    assert!(plan.process.is_none() && plan.pages.is_none());
    assert!(rt.worker_pids().is_empty(), "no worker started");
    // A module that imports what is not there is refused as the run refuses it.
    std::fs::remove_file(dir.join("lib/util.mjs")).unwrap();
    let e = rt
        .plan(&request(ws.path(), &dir, None, json!({})))
        .result
        .expect_err("refused");
    assert_eq!(
        (e.kind, e.code.as_str()),
        (FailureKind::ModuleRejected, "module_file")
    );
}

fn sha256(bytes: &[u8]) -> String {
    runx_receipts::sha256_hex(bytes)
}

/// A paged package over `file`, `page_bytes` a page.
fn paged(ws: &Path, page_bytes: usize) -> PathBuf {
    let profile = format!(
        "skill: p\nrun:\n  type: javascript\n  module: main.mjs\n  export: run\n  inputs:\n    file: {{ type: string, required: true }}\n    base: {{ type: string, default: workspace }}\n  pages:\n    path_from: file\n    path_scope_from: base\n    page_bytes: {page_bytes}\n"
    );
    package(ws, &profile, &[("main.mjs", MAIN), ("lib/util.mjs", UTIL)])
}

#[test]
fn a_paged_plan_admits_the_artifact_and_frames_every_page() {
    let ws = tempfile::tempdir().unwrap();
    let dir = paged(ws.path(), 32);
    let body = format!(
        "[{}]",
        (0..10)
            .map(|n| format!("{{\"n\":{n},\"pad\":\"xxxxxxxx\"}}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    std::fs::write(ws.path().join("a.json"), &body).unwrap();
    let plan = runtime()
        .plan(&request(ws.path(), &dir, None, json!({"file": "a.json"})))
        .result
        .expect("plan");
    let a = plan.artifact.expect("artifact");
    assert_eq!((a.path.as_str(), a.scope), ("a.json", "workspace"));
    assert_eq!(a.bytes, body.len() as u64);
    assert_eq!(a.digest, sha256(body.as_bytes()));
    let pages = plan.pages.expect("pages");
    assert_eq!(pages.page_bytes, 32);
    assert!(pages.stop.is_none());
    // One record of 24 bytes a page under a 32-byte budget; the ranges tile the file.
    assert_eq!(pages.count, 10);
    assert_eq!(pages.pages.len(), 10);
    let mut at = 0;
    for (i, p) in pages.pages.iter().enumerate() {
        assert_eq!((p.index as usize, p.offset, p.records), (i, at, 1));
        at = p.next_offset;
    }
    assert_eq!(at, a.bytes);
    assert!(pages.pages.last().is_some_and(|p| p.eof));
    // The module sees neither path input, so the digest is of what is left.
    assert_eq!(plan.input_digest, runx_receipts::digest(&json!({})));
}

#[test]
fn a_page_that_will_not_frame_or_one_too_many_is_where_the_run_would_stop() {
    let ws = tempfile::tempdir().unwrap();
    let dir = paged(ws.path(), 1);
    std::fs::write(ws.path().join("bad.json"), "[1,2,{oops}]").unwrap();
    let plan = runtime()
        .plan(&request(ws.path(), &dir, None, json!({"file": "bad.json"})))
        .result
        .expect("a run could start");
    let pages = plan.pages.expect("pages");
    assert_eq!(pages.count, 2);
    let stop = pages.stop.expect("stop");
    assert_eq!(
        (stop.error.kind, stop.error.code.as_str()),
        (FailureKind::Page, "framing")
    );
    assert_eq!(stop.page_index, Some(2));
    // One record a page: 4097 records are one page more than a run may deliver.
    let many = format!("[{}]", vec!["1"; 4097].join(","));
    std::fs::write(ws.path().join("many.json"), many).unwrap();
    let plan = runtime()
        .plan(&request(
            ws.path(),
            &dir,
            None,
            json!({"file": "many.json"}),
        ))
        .result
        .expect("a run could start");
    let pages = plan.pages.expect("pages");
    assert_eq!(pages.count, 4096);
    let stop = pages.stop.expect("stop");
    assert_eq!(stop.page_index, Some(4096));
    assert_eq!(stop.error.code, "page_count");
    assert!(
        stop.error.message.starts_with("page 4096 (byte offset "),
        "{}",
        stop.error
    );
}

#[test]
fn a_symlink_or_a_fifo_artifact_is_refused_without_blocking() {
    let ws = tempfile::tempdir().unwrap();
    let dir = paged(ws.path(), 1024);
    std::fs::write(ws.path().join("real.json"), "[1]").unwrap();
    std::os::unix::fs::symlink("real.json", ws.path().join("link.json")).unwrap();
    nix::unistd::mkfifo(&ws.path().join("fifo.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    let (root, pkg) = (ws.path().to_path_buf(), dir.clone());
    std::thread::spawn(move || {
        let rt = runtime();
        for (file, code) in [
            ("link.json", "artifact_scope"),
            ("fifo.json", "artifact_type"),
        ] {
            let out = rt.plan(&request(&root, &pkg, None, json!({"file": file})));
            let exit = out.exit_code();
            let _ = done.send((file, code, out.result.map(|_| ()), exit));
        }
    });
    for _ in 0..2 {
        let (file, code, result, exit) = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the dry run blocked");
        let e = result.expect_err(file);
        assert_eq!(
            (e.kind, e.code.as_str(), exit),
            (FailureKind::Page, code, 1),
            "{e}"
        );
    }
}
