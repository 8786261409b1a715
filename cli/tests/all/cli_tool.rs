//! cli-tool runners through `runx skill`.

use super::*;
use serde_json::json;

fn tool(ws: &Path, runner: &str, args: &[&str], env: &[(&str, &str)]) -> (Value, i32) {
    let mut all = vec!["skill", "pkg", runner];
    all.extend_from_slice(args);
    json_in(ws, &all, env)
}

#[test]
fn env_json_normalises_names_and_denies_the_rest() {
    let (ws, _) = workspace_with("tool");
    let (v, code) = tool(
        ws.path(),
        "env-json",
        &[],
        &[
            ("RUNX_FIXTURE_SECRET", "hunter2"),
            ("http_proxy", "http://p"),
            ("HTTPS_PROXY", "http://q"),
            ("REGION", "eu"),
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["result"],
        json!({"title": "a title", "spaced": "spaced", "has_title_path": true, "region": "eu", "cwd_set": true, "secret": "", "proxy": ""})
    );
}

#[test]
fn stdin_large_input_cwd_and_large_output() {
    let (ws, _) = workspace_with("tool");
    let (v, _) = tool(ws.path(), "stdin-json", &["-i", "message=hi"], &[]);
    assert_eq!(v["result"]["received"], json!({"message": "hi"}));
    let blob = format!("blob={}", "z".repeat(80 * 1024));
    let (v, _) = tool(ws.path(), "large-input-path", &["-i", &blob], &[]);
    assert_eq!(
        v["result"],
        json!({"inline": false, "path_bytes": 80 * 1024, "inputs_json_inline": false})
    );
    let (v, _) = tool(ws.path(), "workspace-cwd", &[], &[]);
    assert_eq!(v["result"]["in_workspace"], true);
    let (v, code) = tool(ws.path(), "large-output", &[], &[]);
    assert_eq!(code, 0);
    assert_eq!(
        v["result"]["stdout"].as_str().unwrap().len(),
        2 * 1024 * 1024
    );
}

#[test]
fn nine_mib_of_stdout_is_a_truncated_failure() {
    let (ws, _) = workspace_with("tool");
    let (v, code) = tool(ws.path(), "large-output", &["-i", "bytes=9437184"], &[]);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["kind"], "resource_limit");
    assert_eq!(v["error"]["code"], "capture_bytes");
    let receipt = receipt_of(&v);
    let r = evidence(&receipt);
    assert_eq!(r["process"]["stdout"]["total_bytes"], 9437184);
    assert_eq!(r["process"]["stdout"]["truncated"], true);
    assert!(
        r["process"]["stdout"]["sha256"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn timeout_kills_the_grandchild_too() {
    let (ws, _) = workspace_with("tool");
    let started = std::time::Instant::now();
    let (v, code) = tool(ws.path(), "sleepy", &[], &[]);
    assert_eq!(code, 1);
    assert_eq!(v["error"]["kind"], "resource_limit");
    assert_eq!(v["error"]["code"], "wall_milliseconds");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let pid: u32 = std::fs::read_to_string(ws.path().join("grandchild.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty() || stat.contains(") Z "),
        "grandchild {pid} survived: {stat}"
    );
}

#[test]
fn failures_before_and_after_spawn() {
    let (ws, _) = workspace_with("tool");
    let (v, _) = tool(ws.path(), "fail", &[], &[]);
    assert_eq!(v["error"]["kind"], "exit");
    assert_eq!(v["error"]["code"], "exit_3");
    assert_eq!(v["error"]["exit_code"], 3, "the tool's exit status: {v}");
    assert_eq!(
        (&v["status"], &v["outcome"]),
        (&json!("sealed"), &json!("failed"))
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("something went wrong")
    );
    let (v, _) = tool(ws.path(), "missing", &[], &[]);
    assert_eq!(v["error"]["kind"], "not_found");
    let (v, _) = tool(ws.path(), "needs-secret", &[], &[]);
    assert_eq!(v["error"]["kind"], "environment");
    assert!(v["error"]["exit_code"].is_null(), "{v}");
    let receipt = receipt_of(&v);
    assert_eq!(evidence(&receipt)["failure"]["kind"], "environment");
    assert!(
        evidence(&receipt)["process"].is_null(),
        "nothing was spawned"
    );
    let (v, code) = tool(
        ws.path(),
        "name-collision",
        &["-i", "doc=x", "-i", "doc_path=y"],
        &[],
    );
    assert_eq!(v["error"]["code"], "input_name_collision", "{v}");
    assert_eq!(code, 64);
}

#[test]
fn staged_input_files_are_removed() {
    let (ws, _) = workspace_with("tool");
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().to_str().unwrap();
    tool(
        ws.path(),
        "stdin-json",
        &["-i", "message=x"],
        &[("TMPDIR", t)],
    );
    tool(ws.path(), "fail", &[], &[("TMPDIR", t)]);
    tool(ws.path(), "sleepy", &[], &[("TMPDIR", t)]);
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("inputs.json").exists())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_tool_output_with_an_integer_no_double_holds_is_refused() {
    // `9007199254740993` and `9007199254740992` are one double: as a sealed output they would
    // have one digest while the tool printed two values.
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: big\nversion: \"1\"\nrun:\n  type: cli-tool\n  command: /bin/sh\n  args: [\"-c\", \"printf '{\\\"amount\\\": 9007199254740993}'\"]\n",
    )
    .unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "pkg"], &[]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["kind"], "output_rejected", "{v}");
    assert_eq!(v["error"]["code"], "unsafe_integer", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("9007199254740993 at /amount"),
        "{v}"
    );
    // Beyond 64 bits JSON reads it as a double: found in the text, with its place. Text that
    // is not JSON is the `stdout` output, whatever digits it holds.
    for (printed, refused) in [
        ("{\\\"ids\\\": [1, 12345678901234567890123]}", true),
        ("order 12345678901234567890123 shipped", false),
    ] {
        std::fs::write(
            pkg.join("X.yaml"),
            format!("skill: big\nversion: \"1\"\nrun:\n  type: cli-tool\n  command: /bin/sh\n  args: [\"-c\", \"printf '{printed}'\"]\n"),
        )
        .unwrap();
        let (v, code) = json_in(ws.path(), &["skill", "pkg"], &[]);
        if refused {
            assert_eq!(code, 1, "{v}");
            assert_eq!(v["error"]["code"], "unsafe_integer", "{v}");
            let message = v["error"]["message"].as_str().unwrap();
            assert!(message.contains("12345678901234567890123 at /ids/1"), "{v}");
        } else {
            assert_eq!(code, 0, "{v}");
        }
    }
}

#[test]
fn an_input_integer_beyond_64_bits_is_refused_before_the_run() {
    let (v, code) = json_in(
        &fixtures(),
        &["skill", "json-echo", "-i", "amount=12345678901234567890123"],
        &[],
    );
    assert_eq!(code, 64, "{v}");
    assert_eq!(v["error"]["code"], "unsafe_integer", "{v}");
}
