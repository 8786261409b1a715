use super::capture::utf8_safe_cut;
use super::*;
use crate::cancel::CancelToken;
use crate::failure::FailureKind;
use crate::limits::{CAPTURE_BYTES, INPUT_INLINE, KILL_GRACE};
use crate::profile::EnvDecl;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

fn kind_of(e: SubprocessError) -> FailureKind {
    crate::RunError::from(e).kind
}

const CAPTURE_LIMIT: usize = CAPTURE_BYTES.max as usize;
const INPUT_INLINE_LIMIT: usize = INPUT_INLINE.max as usize;
const DEFAULT_GRACE: Duration = Duration::from_millis(KILL_GRACE.max);

fn sh_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs `body` through `/bin/sh <script>` (not exec'ing the script itself
/// avoids ETXTBSY races with scripts written by parallel tests).
fn sh_spec(dir: &Path, body: &str) -> ProcessSpec {
    let script = sh_script(dir, "script.sh", body);
    ProcessSpec {
        program: PathBuf::from("/bin/sh"),
        args: vec![script.into_os_string()],
        cwd: dir.to_path_buf(),
        env: vec![(
            OsString::from("PATH"),
            OsString::from("/usr/local/bin:/usr/bin:/bin"),
        )],
        stdin: None,
        timeout: Duration::from_secs(10),
        grace: Duration::from_millis(500),
        capture_limit: CAPTURE_LIMIT,
    }
}

fn sha(bytes: &[u8]) -> String {
    crate::digest::sha256_hex(bytes)
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn env_get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn os_env_get<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_os_str())
}

/// Gone = no /proc entry, or a zombie waiting for its new parent to reap it.
fn process_gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

fn wait_gone(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        if process_gone(pid) {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
    process_gone(pid)
}

fn read_pid(path: &Path) -> i32 {
    let until = Instant::now() + Duration::from_secs(2);
    loop {
        let parsed = fs::read_to_string(path).map(|text| text.trim().parse::<i32>());
        if let Ok(Ok(pid)) = parsed {
            return pid;
        }
        assert!(Instant::now() < until, "pid file never written");
        thread::sleep(Duration::from_millis(10));
    }
}

// --- names and inputs -------------------------------------------------

#[test]
fn normalizes_input_names() {
    let cases = [
        ("thread.title", Some("THREAD_TITLE")),
        ("  repeated---separator  ", Some("REPEATED_SEPARATOR")),
        ("simple", Some("SIMPLE")),
        ("already_UPPER", Some("ALREADY_UPPER")),
        ("__lead.trail__", Some("LEAD_TRAIL")),
        ("a1-b2", Some("A1_B2")),
        ("caf\u{e9} au lait", Some("CAF_AU_LAIT")),
        ("---", None),
        ("", None),
    ];
    for (input, expected) in cases {
        assert_eq!(
            normalize_input_name(input).as_deref(),
            expected,
            "input {input:?}"
        );
    }
}

#[test]
fn colliding_input_names_are_rejected_naming_both_keys() {
    let inputs = obj(json!({"thread.title": "a", "thread_title": "b"}));
    let err = stage_inputs(&inputs).unwrap_err();
    let msg = err.to_string();
    assert_eq!(kind_of(err), FailureKind::Input);
    assert!(msg.contains("`thread.title`"), "{msg}");
    assert!(msg.contains("`thread_title`"), "{msg}");
    assert!(msg.contains("RUNX_INPUT_THREAD_TITLE"), "{msg}");
}

#[test]
fn input_key_without_alphanumerics_is_rejected() {
    let err = stage_inputs(&obj(json!({"--": 1}))).unwrap_err();
    assert!(matches!(err, SubprocessError::InvalidInputName { .. }));
    assert_eq!(kind_of(err), FailureKind::Input);
}

#[test]
fn small_inputs_get_paths_and_inline_mirrors() {
    let inputs = obj(json!({"thread.title": "Hello \u{1F600}", "count": 3, "tags": ["a", "b"]}));
    let (files, env) = stage_inputs(&inputs).unwrap();

    let whole = serde_json::to_string(&inputs).unwrap();
    assert_eq!(env_get(&env, "RUNX_INPUTS_JSON"), Some(whole.as_str()));
    let inputs_path = env_get(&env, "RUNX_INPUTS_PATH").unwrap();
    assert_eq!(Path::new(inputs_path), files.dir().join("inputs.json"));
    let parsed: Value = serde_json::from_slice(&fs::read(inputs_path).unwrap()).unwrap();
    assert_eq!(parsed, Value::Object(inputs.clone()));

    // Strings are raw text, other values serialized JSON.
    assert_eq!(
        env_get(&env, "RUNX_INPUT_THREAD_TITLE"),
        Some("Hello \u{1F600}")
    );
    let title_path = env_get(&env, "RUNX_INPUT_THREAD_TITLE_PATH").unwrap();
    assert_eq!(fs::read_to_string(title_path).unwrap(), "Hello \u{1F600}");
    assert_eq!(env_get(&env, "RUNX_INPUT_COUNT"), Some("3"));
    assert_eq!(env_get(&env, "RUNX_INPUT_TAGS"), Some(r#"["a","b"]"#));
    let tags_path = env_get(&env, "RUNX_INPUT_TAGS_PATH").unwrap();
    assert_eq!(fs::read_to_string(tags_path).unwrap(), r#"["a","b"]"#);

    let mode = fs::metadata(files.dir()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn large_input_is_delivered_by_path_only() {
    let big = "x".repeat(80 * 1024);
    let inputs = obj(json!({"body": big, "small": "ok"}));
    let (_files, env) = stage_inputs(&inputs).unwrap();

    assert_eq!(env_get(&env, "RUNX_INPUT_BODY"), None);
    let body_path = env_get(&env, "RUNX_INPUT_BODY_PATH").unwrap();
    assert_eq!(fs::read_to_string(body_path).unwrap(), big);
    // Whole object exceeds 48 KiB: no inline JSON, but the path is still there.
    assert_eq!(env_get(&env, "RUNX_INPUTS_JSON"), None);
    let inputs_path = env_get(&env, "RUNX_INPUTS_PATH").unwrap();
    let parsed: Value = serde_json::from_slice(&fs::read(inputs_path).unwrap()).unwrap();
    assert_eq!(parsed["body"].as_str(), Some(big.as_str()));
    // Other small values keep their inline mirror.
    assert_eq!(env_get(&env, "RUNX_INPUT_SMALL"), Some("ok"));
}

#[test]
fn inline_limits_are_inclusive() {
    let exactly = "y".repeat(INPUT_INLINE_LIMIT);
    let over = "y".repeat(INPUT_INLINE_LIMIT + 1);
    let (_f, env) = stage_inputs(&obj(json!({"a": exactly, "b": over}))).unwrap();
    assert!(env_get(&env, "RUNX_INPUT_A").is_some());
    assert!(env_get(&env, "RUNX_INPUT_B").is_none());
    assert!(env_get(&env, "RUNX_INPUT_B_PATH").is_some());
}

#[test]
fn input_directory_is_removed_on_drop() {
    let (files, env) = stage_inputs(&obj(json!({"a": 1}))).unwrap();
    let dir = files.dir().to_path_buf();
    let path = PathBuf::from(env_get(&env, "RUNX_INPUT_A_PATH").unwrap());
    assert!(dir.is_dir() && path.is_file());
    drop(files);
    assert!(!dir.exists());
    assert!(!path.exists());
}

// --- environment --------------------------------------------------------

fn fake_caller(name: &str) -> Option<OsString> {
    let vars = [
        ("PATH", "/usr/bin:/bin"),
        ("HOME", "/home/u"),
        ("LANG", "C.UTF-8"),
        ("AWS_SECRET_ACCESS_KEY", "hunter2"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("http_proxy", "http://user:pw@proxy:3128"),
        ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
        ("ALL_PROXY", "socks5://proxy"),
        ("NEEDED", "yes"),
        ("RUNX_CWD", "/caller/value"),
    ];
    vars.iter()
        .find(|(k, _)| *k == name)
        .map(|(_, v)| OsString::from(v))
}

/// The declared values of a run: what `environment::declared` reads for the declaration.
fn declared(decl: &EnvDecl) -> BTreeMap<String, String> {
    decl.required
        .iter()
        .chain(&decl.optional)
        .filter_map(|n| fake_caller(n).map(|v| (n.clone(), v.to_string_lossy().into_owned())))
        .collect()
}

fn env_for(decl: &EnvDecl, cwd: &Path, staged: &[(String, String)]) -> Vec<(OsString, OsString)> {
    build_env(&fake_caller, decl, &declared(decl), cwd, staged)
}

#[test]
fn env_is_baseline_plus_declared_plus_runtime_only() {
    let staged = vec![("RUNX_INPUTS_PATH".to_string(), "/x/inputs.json".to_string())];
    let decl = EnvDecl {
        required: vec!["NEEDED".to_string()],
        optional: vec!["OPTIONAL_ABSENT".to_string()],
    };
    let env = env_for(&decl, Path::new("/work/space"), &staged);

    let names: Vec<_> = env
        .iter()
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "PATH",
            "HOME",
            "LANG",
            "NEEDED",
            "RUNX_CWD",
            "RUNX_INPUTS_PATH"
        ]
    );
    assert_eq!(
        os_env_get(&env, "RUNX_CWD"),
        Some(OsStr::new("/work/space"))
    );
    assert_eq!(os_env_get(&env, "NEEDED"), Some(OsStr::new("yes")));
    for secret in [
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_TOKEN",
        "http_proxy",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "OPTIONAL_ABSENT",
    ] {
        assert!(os_env_get(&env, secret).is_none(), "{secret} leaked");
    }
}

#[test]
fn declared_proxy_is_admitted_explicitly() {
    let decl = EnvDecl {
        required: vec![],
        optional: vec!["HTTPS_PROXY".to_string()],
    };
    let env = env_for(&decl, Path::new("/w"), &[]);
    assert!(os_env_get(&env, "HTTPS_PROXY").is_some());
    assert!(os_env_get(&env, "http_proxy").is_none());
}

#[test]
fn a_declared_baseline_name_has_only_the_runs_value() {
    // A runner that declares PATH gets the run's PATH or none, never the host's.
    let decl = EnvDecl {
        required: vec![],
        optional: vec!["PATH".to_string()],
    };
    let env = build_env(&fake_caller, &decl, &BTreeMap::new(), Path::new("/w"), &[]);
    assert!(os_env_get(&env, "PATH").is_none());
    let run = BTreeMap::from([("PATH".to_string(), "/opt/bin".to_string())]);
    let env = build_env(&fake_caller, &decl, &run, Path::new("/w"), &[]);
    assert_eq!(os_env_get(&env, "PATH"), Some(OsStr::new("/opt/bin")));
}

#[test]
fn child_sees_exactly_the_spec_env() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        (OsString::from("ONLY_ME"), OsString::from("1")),
        (OsString::from("AND_ME"), OsString::from("two words")),
    ];
    let spec = ProcessSpec {
        program: resolve_command("env", Some(OsStr::new("/usr/bin:/bin")), dir.path()).unwrap(),
        args: vec![],
        cwd: dir.path().to_path_buf(),
        env,
        stdin: None,
        timeout: Duration::from_secs(5),
        grace: DEFAULT_GRACE,
        capture_limit: CAPTURE_LIMIT,
    };
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    let mut lines: Vec<_> = String::from_utf8(out.stdout.kept)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, ["AND_ME=two words", "ONLY_ME=1"]);
}

#[test]
fn staged_inputs_reach_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let (files, staged) = stage_inputs(&obj(json!({"thread.title": "hi there"}))).unwrap();
    let env = env_for(&EnvDecl::default(), dir.path(), &staged);
    let mut spec = sh_spec(
        dir.path(),
        r#"printf '%s|' "$RUNX_INPUT_THREAD_TITLE"; cat "$RUNX_INPUT_THREAD_TITLE_PATH"; printf '|%s' "$RUNX_CWD""#,
    );
    spec.env = env;
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert_eq!(
        String::from_utf8(out.stdout.kept).unwrap(),
        format!("hi there|hi there|{}", dir.path().display())
    );
    drop(files);
}

// --- command resolution -------------------------------------------------

#[test]
fn resolves_commands() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    fs::create_dir(&bin).unwrap();
    let tool = sh_script(&bin, "tool", "exit 0");
    fs::write(bin.join("plain"), "data").unwrap();

    let path_var = OsString::from(format!("relative:{}:/usr/bin:/bin", bin.display()));
    assert_eq!(
        resolve_command("tool", Some(&path_var), Path::new("/")).unwrap(),
        tool
    );
    assert_eq!(
        resolve_command("./bin/tool", None, dir.path()).unwrap(),
        dir.path().join("./bin/tool")
    );
    assert_eq!(
        resolve_command(tool.to_str().unwrap(), None, Path::new("/nowhere")).unwrap(),
        tool
    );

    for (command, path) in [
        ("definitely-not-a-command-runx", Some(path_var.as_os_str())),
        ("tool", None),
        ("plain", Some(path_var.as_os_str())),
        ("./bin/plain", None),
        ("./bin/missing", None),
        ("./bin", None),
        ("", Some(path_var.as_os_str())),
    ] {
        let err = resolve_command(command, path, dir.path()).unwrap_err();
        assert!(
            matches!(err, SubprocessError::NotFound { .. }),
            "{command}: {err}"
        );
        assert!(err.to_string().contains(command), "{err}");
    }
}

#[test]
fn spawning_a_missing_program_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), "exit 0");
    spec.program = dir.path().join("no-such-program");
    let err = run(&spec, &CancelToken::new()).unwrap_err();
    assert!(matches!(err, SubprocessError::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("no-such-program"), "{err}");
}

#[test]
fn bad_cwd_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), "exit 0");
    spec.cwd = dir.path().join("missing");
    let err = run(&spec, &CancelToken::new()).unwrap_err();
    assert!(matches!(err, SubprocessError::Cwd { .. }), "{err}");
    assert!(err.to_string().contains("missing"), "{err}");

    spec.cwd = dir.path().join("script.sh");
    let err = run(&spec, &CancelToken::new()).unwrap_err();
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

// --- running ------------------------------------------------------------

#[test]
fn runs_in_cwd_and_reports_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh_spec(dir.path(), "pwd; echo oops >&2; exit 7");
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(7));
    let cwd = fs::canonicalize(dir.path()).unwrap();
    assert_eq!(out.stdout.kept, format!("{}\n", cwd.display()).into_bytes());
    assert_eq!(out.stderr.kept, b"oops\n");
    assert_eq!(out.stderr.total_bytes, 5);
    assert_eq!(out.stderr.sha256, sha(b"oops\n"));
    assert!(!out.stdout.truncated);
    assert!(out.pid > 0);
}

#[test]
fn success_is_exit_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&sh_spec(dir.path(), "true"), &CancelToken::new()).unwrap();
    assert!(out.termination.is_success());
    assert_eq!(out.stdout.total_bytes, 0);
    assert_eq!(out.stdout.sha256, sha(b""));
}

#[test]
fn delivers_stdin_then_closes_it() {
    let dir = tempfile::tempdir().unwrap();
    let payload: Vec<u8> = (0..3 * 1024 * 1024u32).map(|i| (i % 251) as u8).collect();
    let mut spec = sh_spec(dir.path(), "cat");
    spec.stdin = Some(payload.clone());
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert_eq!(out.stdout.total_bytes, payload.len() as u64);
    assert_eq!(out.stdout.sha256, sha(&payload));
    assert_eq!(out.stdout.kept, payload);
}

#[test]
fn stdin_is_closed_when_absent() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), "cat; echo done");
    spec.timeout = Duration::from_secs(5);
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert_eq!(out.stdout.kept, b"done\n");
}

#[test]
fn reports_signal_deaths() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(&sh_spec(dir.path(), "kill -KILL $$"), &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Signaled(9));
}

#[test]
fn timeout_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut spec = sh_spec(
        dir.path(),
        &format!("sleep 30 &\necho $! > {}\nsleep 30", pid_file.display()),
    );
    spec.timeout = Duration::from_millis(400);
    spec.grace = Duration::from_millis(500);
    let started = Instant::now();
    let out = run(&spec, &CancelToken::new()).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.termination, Termination::TimedOut);
    assert!(
        elapsed < spec.timeout + spec.grace + Duration::from_secs(1),
        "{elapsed:?}"
    );
    assert!(elapsed >= spec.timeout, "{elapsed:?}");
    let grandchild = read_pid(&pid_file);
    assert!(wait_gone(grandchild), "grandchild {grandchild} survived");
    assert!(process_gone(i32::try_from(out.pid).unwrap()));
}

#[test]
fn timeout_escalates_to_sigkill_when_sigterm_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let mut spec = sh_spec(
        dir.path(),
        &format!(
            "trap '' TERM\nsleep 30 &\necho $! > {}\nwhile :; do sleep 1; done",
            pid_file.display()
        ),
    );
    spec.timeout = Duration::from_millis(300);
    spec.grace = Duration::from_millis(400);
    let started = Instant::now();
    let out = run(&spec, &CancelToken::new()).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(out.termination, Termination::TimedOut);
    assert!(elapsed >= spec.timeout + spec.grace, "{elapsed:?}");
    assert!(
        elapsed < spec.timeout + spec.grace + Duration::from_secs(1),
        "{elapsed:?}"
    );
    let grandchild = read_pid(&pid_file);
    assert!(wait_gone(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn descendants_left_behind_after_exit_are_killed() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let spec = sh_spec(
        dir.path(),
        &format!("sleep 30 &\necho $! > {}\necho bye", pid_file.display()),
    );
    let started = Instant::now();
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert_eq!(out.stdout.kept, b"bye\n");
    assert!(started.elapsed() < Duration::from_secs(3));
    let grandchild = read_pid(&pid_file);
    assert!(wait_gone(grandchild), "grandchild {grandchild} survived");
}

/// A descendant that left the group (`setsid`) and holds stdout open is killed with the run
/// (per-run cgroup or subreaper sweep), so the stream ends and nothing is cut short.
#[test]
fn escaped_descendant_holding_stdout_is_killed_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("escaped.pid");
    let spec = sh_spec(
        dir.path(),
        &format!(
            "echo before\nsetsid sleep 20 &\necho $! > {}\nsleep 0.3\nexit 3",
            pid_file.display()
        ),
    );
    let started = Instant::now();
    let out = run(&spec, &CancelToken::new()).unwrap();
    let elapsed = started.elapsed();
    let escaped = read_pid(&pid_file);
    let gone = wait_gone(escaped);
    if !gone {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(escaped),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(gone, "the escaped descendant {escaped} survived the run");
    assert_eq!(out.termination, Termination::Exited(3));
    assert_eq!(out.stdout.kept, b"before\n");
    assert!(!out.stdout.truncated, "the stream end was observed");
    assert!(elapsed < super::supervise::DRAIN_DEADLINE, "{elapsed:?}");
}

#[test]
fn cancel_token_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), "echo started; sleep 30");
    spec.grace = Duration::from_millis(300);
    let token = CancelToken::new();
    let remote = token.clone();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        remote.cancel();
    });
    let started = Instant::now();
    let out = run(&spec, &token).unwrap();
    canceller.join().unwrap();
    assert!(token.is_cancelled());
    assert_eq!(out.termination, Termination::Cancelled);
    assert_eq!(out.stdout.kept, b"started\n");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn large_stdout_is_truncated_on_a_char_boundary_but_fully_hashed() {
    let dir = tempfile::tempdir().unwrap();
    // One ASCII byte then 2-byte characters: the 8 MiB limit falls inside one.
    let mut data = Vec::with_capacity(9 * 1024 * 1024);
    data.push(b'a');
    while data.len() + 2 <= 9 * 1024 * 1024 {
        data.extend_from_slice("\u{e9}".as_bytes());
    }
    let file = dir.path().join("big.txt");
    fs::write(&file, &data).unwrap();
    let spec = sh_spec(dir.path(), &format!("cat {}", file.display()));
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert!(out.stdout.truncated);
    assert_eq!(out.stdout.total_bytes, data.len() as u64);
    assert_eq!(out.stdout.sha256, sha(&data));
    assert_eq!(out.stdout.kept.len(), CAPTURE_LIMIT - 1);
    assert!(std::str::from_utf8(&out.stdout.kept).is_ok());
    assert_eq!(out.stdout.kept[..], data[..CAPTURE_LIMIT - 1]);
}

#[test]
fn hundred_mib_of_stderr_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), "head -c 104857600 /dev/zero >&2; echo finished");
    spec.timeout = Duration::from_secs(20);
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert_eq!(out.stdout.kept, b"finished\n");
    assert_eq!(out.stderr.total_bytes, 104_857_600);
    assert!(out.stderr.truncated);
    assert_eq!(out.stderr.kept.len(), CAPTURE_LIMIT);
    assert!(out.stderr.kept.iter().all(|&b| b == 0));
}

#[test]
fn non_utf8_output_is_kept_as_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let spec = sh_spec(dir.path(), r"printf '\377\376\000abc\303'");
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    assert_eq!(out.stdout.kept, b"\xff\xfe\x00abc\xc3");
    assert!(!out.stdout.truncated);
}

#[test]
fn small_capture_limit_cuts_binary_at_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), r"printf 'ab\377\200\200\200cd'");
    spec.capture_limit = 3;
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.stdout.kept, b"ab\xff");
    assert_eq!(out.stdout.total_bytes, 8);
    assert!(out.stdout.truncated);
    assert_eq!(out.stdout.sha256, sha(b"ab\xff\x80\x80\x80cd"));
}

#[test]
fn utf8_cut_helper() {
    let s = "a\u{e9}\u{20ac}\u{1F600}z".as_bytes(); // 1 + 2 + 3 + 4 + 1 bytes
    assert_eq!(s.len(), 11);
    // Short input: everything.
    assert_eq!(utf8_safe_cut(s, 11), 11);
    assert_eq!(utf8_safe_cut(s, 100), 11);
    // On boundaries: the limit itself.
    for limit in [0, 1, 3, 6, 10] {
        assert_eq!(utf8_safe_cut(s, limit), limit, "limit {limit}");
    }
    // Inside 2-, 3- and 4-byte characters: back to their start.
    assert_eq!(utf8_safe_cut(s, 2), 1);
    assert_eq!(utf8_safe_cut(s, 4), 3);
    assert_eq!(utf8_safe_cut(s, 5), 3);
    assert_eq!(utf8_safe_cut(s, 7), 6);
    assert_eq!(utf8_safe_cut(s, 8), 6);
    assert_eq!(utf8_safe_cut(s, 9), 6);
    // Not UTF-8 at the cut: the limit.
    let binary = [0x80u8, 0x80, 0x80, 0x80, 0x80];
    assert_eq!(utf8_safe_cut(&binary, 2), 2);
    let bad_lead = [b'x', 0xFF, 0x80, 0x80];
    assert_eq!(utf8_safe_cut(&bad_lead, 2), 2);
    // Lead byte promising more than the continuation bytes deliver.
    let broken = [b'x', 0xE2, 0x82, b'y'];
    assert_eq!(utf8_safe_cut(&broken, 2), 2);
    // Overlong / surrogate encodings are not characters either.
    let surrogate = [0xED, 0xA0, 0x80];
    assert_eq!(utf8_safe_cut(&surrogate, 1), 1);
    // Cut inside the char but look-ahead missing the tail: keep the limit.
    let partial = [b'x', 0xF0, 0x9F, 0x98];
    assert_eq!(utf8_safe_cut(&partial, 2), 2);
    // Zero limit keeps nothing.
    assert_eq!(utf8_safe_cut(s, 0), 0);
}

#[test]
fn raw_bytes_in_args_and_env_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh_spec(dir.path(), r#"printf '%s|%s' "$1" "$RAW""#);
    spec.args
        .push(OsStr::from_bytes(b"a b;$(echo no)").to_os_string());
    spec.env.push((
        OsString::from("RAW"),
        OsStr::from_bytes(b"\xffv").to_os_string(),
    ));
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.stdout.kept, b"a b;$(echo no)|\xffv");
}
