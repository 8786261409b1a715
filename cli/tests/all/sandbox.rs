//! The javascript sandbox under attack, through `runx skill` and `runx harness`: the clock, the
//! wall, bounded messages and logs, output values, the worker's stack and its confinement.

use super::*;
use serde_json::json;

/// A workspace holding a package `pkg` with one javascript runner per `(name, export)` over
/// `main.mjs` (timeout `seconds`), plus any extra files.
fn package(
    source: &str,
    runners: &[(&str, &str, u32)],
    extra: &[(&str, &str)],
) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let mut yaml = String::from("skill: attack\nversion: \"0.1.0\"\nrunners:\n");
    for (i, (name, export, seconds)) in runners.iter().enumerate() {
        yaml.push_str(&format!(
            "  {name}:\n    type: javascript\n    module: main.mjs\n    export: {export}\n    timeout_seconds: {seconds}\n{}",
            if i == 0 { "    default: true\n" } else { "" }
        ));
    }
    std::fs::write(pkg.join("X.yaml"), yaml).unwrap();
    std::fs::write(pkg.join("main.mjs"), source).unwrap();
    for (path, text) in extra {
        std::fs::write(pkg.join(path), text).unwrap();
    }
    ws
}

fn skill(ws: &Path, runner: &str) -> (Value, i32) {
    json_in(ws, &["skill", "pkg", runner], &[])
}

/// The evidence of the receipt a run wrote.
fn run_evidence(v: &Value) -> Value {
    evidence(&receipt_of(v)).clone()
}

#[test]
fn the_real_clock_cannot_be_captured() {
    let ws = package(
        r#"
        export function construct() {
            let real = null;
            const original = Reflect.construct;
            Reflect.construct = (t, a, n) => { real = new t().getTime(); return original(t, a, n); };
            return { date: new Date().getTime(), real };
        }
        export function frames() {
            let real = null;
            Error.prepareStackTrace = (e, sites) => sites;
            new Date({ valueOf() {
                const s = new Error().stack;
                if (typeof s !== 'string') for (const site of s) {
                    const f = site.getFunction();
                    if (typeof f === 'function' && f.name === 'Date') real = Math.max(real ?? 0, new f().getTime());
                }
                return 1;
            } });
            return { real, stack: typeof new Error().stack };
        }"#,
        &[("construct", "construct", 2), ("frames", "frames", 2)],
        &[],
    );
    let (v, code) = skill(ws.path(), "construct");
    assert_eq!(code, 0, "{v}");
    // The prelude no longer calls Reflect.construct at all: the replacement is never called.
    assert_eq!(v["result"], json!({"date": 0, "real": null}));
    let (v, code) = skill(ws.path(), "frames");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"], json!({"real": null, "stack": "string"}));
}

#[test]
fn output_values_follow_json_stringify() {
    let ws = package(
        r#"
        export const loose = () => ({ a: 1, b: undefined, f() {}, d: new Date(), n: NaN, m: new Map([[1, 2]]), l: [undefined, Infinity] });
        export const surrogate = () => ({ items: [{ name: 'ok' }, { name: 'bad \uD83D' }] });
        export const deep = () => { let v = {}; for (let i = 0; i < 100; i++) v = { v }; return v; };
        export const cycle = () => { const o = { list: [] }; o.list.push(o); return o; };"#,
        &[
            ("loose", "loose", 2),
            ("surrogate", "surrogate", 2),
            ("deep", "deep", 2),
            ("cycle", "cycle", 2),
        ],
        &[],
    );
    let (v, code) = skill(ws.path(), "loose");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["result"],
        json!({"a": 1, "d": "1970-01-01T00:00:00.000Z", "n": null, "m": {}, "l": [null, null]})
    );
    let (v, code) = skill(ws.path(), "surrogate");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["kind"], "output_rejected");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("output.items[1].name is a string with a lone surrogate"),
        "{message}"
    );
    let (v, _) = skill(ws.path(), "deep");
    assert_eq!(v["error"]["kind"], "resource_limit", "{v}");
    assert_eq!(v["error"]["code"], "output_depth");
    assert_eq!(run_evidence(&v)["failure"]["code"], "output_depth");
    assert_eq!(run_evidence(&v)["limits"]["output_depth"], 100);
    let (v, _) = skill(ws.path(), "cycle");
    assert_eq!(v["error"]["kind"], "output_rejected", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("output.list[0] is a cycle back to output")
    );
}

#[test]
fn console_never_throws_and_every_byte_counts() {
    let ws = package(
        r#"export default () => { console.log('a\uD800'); for (let i = 0; i < 100000; i++) console.log(); return { ok: true }; };"#,
        &[("main", "default", 5)],
        &[],
    );
    let out = run_in(ws.path(), &["skill", "pkg"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("[log] a\u{FFFD}\n"), "{}", &stderr[..40]);
    // "a\u{FFFD}" and its line break take 5 bytes of 65,536; each empty line takes 1.
    let dropped = 100_000 - (64 * 1024 - 5);
    assert!(stderr.contains(&format!(
        "[runx: {dropped} more bytes of console output were dropped"
    )));
    let (v, _) = skill(ws.path(), "main");
    assert_eq!(v["console"]["dropped_bytes"], dropped);
    assert_eq!(run_evidence(&v)["console_dropped_bytes"], dropped);
}

/// 4,000 pages that each logged 60 KB held 242 MB in the host: the bound is one for the run.
#[test]
fn a_paged_run_has_one_console_bound() {
    let ws = tempfile::tempdir().unwrap();
    let pkg = ws.path().join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("X.yaml"),
        "skill: chatty\nversion: \"0.1.0\"\nrunners:\n  main:\n    default: true\n    type: javascript\n    module: main.mjs\n    inputs:\n      file: { type: string, required: true }\n      base: { type: string, default: workspace }\n    pages: { path_from: file, path_scope_from: base, page_bytes: 64 }\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("main.mjs"),
        "export default (i) => { console.log('x'.repeat(60000)); const n = (i.runx_page.state ?? 0) + 1; return i.runx_page.eof ? { pages: n } : { runx_page: { state: n } }; };",
    )
    .unwrap();
    let records: Vec<String> = (0..200).map(|i| format!("{{\"n\":\"{i:040}\"}}")).collect();
    std::fs::write(
        ws.path().join("data.json"),
        format!("[{}]", records.join(",")),
    )
    .unwrap();
    let (v, code) = json_in(ws.path(), &["skill", "pkg", "-i", "file=data.json"], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["result"]["pages"], 200);
    // One 60,001-byte line fits the 65,536-byte bound; the other 199 are dropped and counted.
    assert_eq!(v["console"]["dropped_bytes"], 199 * 60_001);
    assert_eq!(run_evidence(&v)["console_dropped_bytes"], 199 * 60_001);
    let out = run_in(ws.path(), &["skill", "pkg", "-i", "file=data.json"], &[]);
    assert!(
        out.stderr.len() < 70_000,
        "{} bytes of stderr",
        out.stderr.len()
    );
}

#[test]
fn giant_failure_messages_are_bounded() {
    let ws = package(
        "export default () => { throw 'x'.repeat(20 * 2 ** 20); };",
        &[("main", "default", 10)],
        &[],
    );
    let (v, code) = skill(ws.path(), "main");
    assert_eq!(code, 1);
    assert_eq!(
        v["error"]["kind"],
        "execution_failed",
        "{}",
        &v.to_string()[..300]
    );
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.len() <= 16 * 1024);
    assert!(message.ends_with("[message truncated: 20971520 bytes in total]"));
    let size = std::fs::metadata(v["receipt_path"].as_str().unwrap())
        .unwrap()
        .len();
    assert!(size < 64 * 1024, "receipt of {size} bytes");
}

/// Four cases of one package that throw 20 MB used to spend the pool's restart budget, so that
/// another package's case in the same harness run failed with "restart budget ... is spent".
#[test]
fn one_package_cannot_fail_another_packages_cases() {
    let root = tempfile::tempdir().unwrap();
    for (name, body, expect) in [
        (
            "aaa-giant",
            "throw 'x'.repeat(20 * 2 ** 20);",
            "{ status: failure, error: { kind: execution_failed } }",
        ),
        (
            "zzz-fine",
            "return { ok: true };",
            "{ status: sealed, output: { exact: { ok: true } } }",
        ),
    ] {
        let pkg = root.path().join(name);
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(
            pkg.join("main.mjs"),
            format!("export default () => {{ {body} }};"),
        )
        .unwrap();
        let cases: String = (0..4)
            .map(|i| format!("    - name: case-{i}\n      expect: {expect}\n"))
            .collect();
        std::fs::write(
            pkg.join("X.yaml"),
            format!("skill: {name}\nversion: \"0.1.0\"\nrunners:\n  main:\n    default: true\n    type: javascript\n    module: main.mjs\n    timeout_seconds: 10\nharness:\n  cases:\n{cases}"),
        )
        .unwrap();
    }
    let out = run_in(root.path(), &["harness", "."], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("8 passed, 0 failed"), "{stdout}");
    assert_eq!(out.status.code(), Some(0));
}

/// A call that spends its time in native code the interrupt never reaches (a typed-array sort)
/// cannot outlast its wall: it fails `wall_milliseconds` (it used to come back sealed). Its
/// 200 sorts of 48 MB take seconds on any machine, so whether the worker returns late (and the
/// check at return refuses the result) or is killed at the wall plus the host's grace, the run
/// fails on time. The check at return alone is tested with a stub engine in the worker's
/// protocol tests, where timing is in the test's hands.
#[test]
fn a_native_builtin_cannot_outlast_the_wall() {
    let source = "export default () => { const a = new Float64Array(6e6); for (let i = 0; i < 200; i++) a.sort(); return { ok: true }; };";
    let ws = package(source, &[("main", "default", 1)], &[]);
    let (v, code) = skill(ws.path(), "main");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["kind"], "resource_limit", "{v}");
    assert_eq!(v["error"]["code"], "wall_milliseconds", "{v}");
    let receipt = receipt_of(&v);
    assert_eq!(
        (
            &receipt["seal"]["disposition"],
            &receipt["seal"]["reason_code"]
        ),
        (&json!("timed_out"), &json!("process_timed_out"))
    );
    let took = evidence(&receipt)["duration_ms"].as_u64().unwrap();
    assert!(took < 1000 + 1500, "{took} ms: {v}");
}

/// Under `ulimit -s 512` deep recursion gave SIGABRT and `worker_crashed`.
#[test]
fn a_low_host_stack_limit_still_gives_stack_bytes() {
    let ws = package(
        "function f(n) { return f(n + 1) + 1; } export default () => ({ v: f(0) });",
        &[("main", "default", 2)],
        &[],
    );
    let out = Command::new("/bin/sh")
        .current_dir(ws.path())
        .args(["-c", "ulimit -s 512 && exec \"$0\" skill pkg --json"])
        .arg(env!("CARGO_BIN_EXE_runx"))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["kind"], "resource_limit", "{v}");
    assert_eq!(v["error"]["code"], "stack_bytes");
}

/// While a skill runs, its worker holds no descriptor of the caller's, cannot gain privileges,
/// runs under a seccomp filter and, when runx runs as root, not as root.
#[test]
fn the_worker_of_a_run_is_confined() {
    let ws = package(
        "export default () => { while (true) {} };",
        &[("main", "default", 3)],
        &[],
    );
    // A descriptor the caller leaves open, as `exec 7<file` does in a shell.
    let file = std::fs::File::open(ws.path().join("pkg/X.yaml")).unwrap();
    let leaked = nix::unistd::dup(&file).unwrap();
    let leaked_target = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(&leaked)
    ))
    .unwrap();
    let mut child = runx()
        .current_dir(ws.path())
        .args(["skill", "pkg", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(leaked);
    let pid = workers_of(
        child.id(),
        std::time::Duration::from_secs(2),
        std::time::Duration::from_millis(20),
    )[0];
    std::thread::sleep(std::time::Duration::from_millis(200));
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let fds: Vec<std::path::PathBuf> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .collect();
    let _ = child.wait();
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("Seccomp:\t2"), "{status}");
    assert!(!status.contains("Uid:\t0"), "{status}");
    // stdin, stdout, stderr and the descriptor channel page files arrive on.
    assert_eq!(fds.len(), 4, "{fds:?}");
    assert!(
        fds.iter()
            .any(|f| f.to_string_lossy().starts_with("socket:")),
        "{fds:?}"
    );
    assert!(!fds.contains(&leaked_target), "{fds:?}");
}

/// Module paths count toward the source limit: a module of 4 MiB less 4 bytes of source is over
/// the limit with its name.
#[test]
fn module_paths_count_toward_the_source_limit() {
    let mut source = String::from("export default () => ({});\n//");
    source.push_str(&"x".repeat(4 * 1024 * 1024 - 4 - source.len()));
    let ws = package(&source, &[("main", "default", 2)], &[]);
    let (v, code) = skill(ws.path(), "main");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["error"]["kind"], "resource_limit");
    assert_eq!(v["error"]["code"], "source_bytes");
}
