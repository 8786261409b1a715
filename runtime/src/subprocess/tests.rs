//! Staging and supervision inputs: input names and files, the environment a process gets, and
//! command resolution; the helpers the running tests (`run_tests.rs`) share.

use super::*;
use crate::failure::FailureKind;
use crate::subprocess::stage::normalize_input_name;
use runx_profile::{CAPTURE_BYTES, EnvDecl, INPUT_INLINE, KILL_GRACE};
use runx_worker::CancelToken;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn kind_of(e: SubprocessError) -> FailureKind {
    crate::RunError::from(e).kind
}

pub(super) const CAPTURE_LIMIT: usize = CAPTURE_BYTES.max as usize;
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
pub(super) fn sh_spec(dir: &Path, body: &str) -> ProcessSpec {
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
fn a_planned_staging_is_what_a_run_writes_and_writes_nothing() {
    let big = "z".repeat(usize::try_from(INPUT_INLINE.max).unwrap() + 1);
    let inputs = obj(json!({"thread.title": "hi", "n": 3, "blob": big}));
    let planned = plan_staging(&inputs).unwrap();
    let example = staging_dir_example();
    let planned_env = planned.env(&example);
    assert!(!Path::new(&example).exists(), "planning wrote a directory");
    let (files, env) = stage_inputs(&inputs).unwrap();
    let real = files.dir().display().to_string();
    assert_eq!(real.len(), example.len(), "{real} {example}");
    // The same variables, with the same values once the directory is the same.
    let moved: Vec<(String, String)> = planned_env
        .into_iter()
        .map(|(k, v)| (k, v.replace(&example, &real)))
        .collect();
    assert_eq!(moved, env);
    // The files listed are the files written, with their sizes.
    let mut written: Vec<(String, u64)> = fs::read_dir(files.dir())
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    written.sort();
    let mut listed: Vec<(String, u64)> = planned
        .files()
        .into_iter()
        .map(|f| (f.name, f.bytes))
        .collect();
    listed.sort();
    assert_eq!(listed, written);
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
