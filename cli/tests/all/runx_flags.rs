//! The flags and commands of runx 0.8.2's command line, taken here with runx's meaning:
//! `runx skill -j -R DIR --receipts DIR -p NAME --diagnostics`, a package named by its
//! `SKILL.md`, `runx history QUERY --skill --status --source --since --until
//! --include-harness --detail`, and runx's hosted-side commands answered with a reason.

use super::*;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const REGION: [(&str, &str); 1] = [("REGION", "eu")];

/// The receipt files (`sha256-*.json`) in `dir`, by name.
fn receipt_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("sha256-") && n.ends_with(".json"))
    });
    files.sort();
    files
}

#[test]
fn short_and_alias_flags_of_runx_skill_write_receipts_where_asked() {
    let (ws, _) = workspace_with("hello");
    for (flags, dir) in [
        (&["-R", "by-r"][..], "by-r"),
        (&["-R=by-r-eq"][..], "by-r-eq"),
        (&["--receipts", "by-receipts"][..], "by-receipts"),
        (&["--receipts=by-receipts-eq"][..], "by-receipts-eq"),
        (&["--receipt-dir", "by-receipt-dir"][..], "by-receipt-dir"),
    ] {
        let mut args = vec!["skill", "pkg", "-i", "name=Ada", "-j"];
        args.extend_from_slice(flags);
        let out = run_in(ws.path(), &args, &REGION);
        let (v, code) = json_of(&out);
        assert_eq!(code, 0, "{flags:?}: {v}");
        assert_eq!(v["status"], "sealed", "{flags:?}: {v}");
        assert_eq!(v["result"]["greeting"], "Hello, Ada.", "{v}");
        let files = receipt_files(&ws.path().join(dir));
        assert_eq!(files.len(), 1, "{flags:?}: {files:?}");
        assert_eq!(
            Path::new(v["receipt_path"].as_str().unwrap()).file_name(),
            files[0].file_name(),
            "{flags:?}"
        );
    }
    // None of them went to the default folder, nor became an input.
    assert!(!ws.path().join(".runx/receipts").exists());
}

#[test]
fn diagnostics_inline_the_evidence_and_leave_out_next() {
    let (ws, _) = workspace_with("hello");
    let args = ["skill", "pkg", "-i", "name=Ada", "-j", "-R", "r"];
    let (plain, code) = json_of(&run_in(ws.path(), &args, &REGION));
    assert_eq!(code, 0, "{plain}");
    assert!(plain.get("next").is_some() && plain.get("execution").is_none());

    let mut with = args.to_vec();
    with.push("--diagnostics");
    let (v, code) = json_of(&run_in(ws.path(), &with, &REGION));
    assert_eq!(code, 0, "{v}");
    assert!(v.get("next").is_none(), "{v}");
    let execution = &v["execution"];
    assert_eq!(execution["schema"], "runx-rs.run_evidence.v1", "{v}");
    assert_eq!(execution["run_id"], v["run_id"]);
    assert_eq!(execution["runner"], "greet");
    let engine = test_engine().unwrap_or_else(|| "quickjs".to_string());
    assert_eq!(execution["engine"]["name"], engine.as_str(), "{v}");
    assert_eq!(
        execution["output_digest"].as_str().map(|d| d.len()),
        Some(71),
        "{v}"
    );
    // Everything else is the envelope without --diagnostics.
    for key in ["schema", "status", "skill_name", "runner", "result"] {
        assert_eq!(v[key], plain[key], "{key}");
    }
}

#[test]
fn a_credential_profile_is_refused_as_runx_refuses_one_it_cannot_use() {
    let (ws, _) = workspace_with("hello");
    for flag in ["-p", "--profile", "--credential-profile"] {
        let out = run_in(
            ws.path(),
            &["skill", "pkg", "-i", "name=Ada", flag, "ops", "-j"],
            &REGION,
        );
        let (v, code) = json_of(&out);
        assert_eq!(code, 1, "{flag}: {v}");
        assert_eq!(v["status"], "failure", "{v}");
        assert_eq!(v["error"]["code"], "credential_error", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("no credential profiles"), "{message}");
        assert_eq!(stderr(&out).trim(), format!("runx: {message}"));
        // Refused before anything ran: no receipt.
        assert!(!ws.path().join(".runx").exists(), "{flag}");
    }
}

#[test]
fn a_skill_md_or_x_yaml_names_its_package_and_another_file_does_not() {
    let (ws, pkg) = workspace_with("hello");
    std::fs::write(pkg.join("SKILL.md"), "# hello\n").unwrap();
    for named in ["pkg/SKILL.md", "pkg/X.yaml"] {
        let (v, code) = json_in(
            ws.path(),
            &["skill", named, "-i", "name=Ada", "-R", "r"],
            &REGION,
        );
        assert_eq!(code, 0, "{named}: {v}");
        assert_eq!(
            (&v["skill_name"], &v["result"]["greeting"]),
            (&"hello".into(), &"Hello, Ada.".into())
        );
    }
    let (v, code) = json_in(ws.path(), &["skill", "inspect", "pkg/SKILL.md"], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["skill"], "hello");
    let (v, code) = json_in(ws.path(), &["skill", "check", "pkg/SKILL.md"], &[]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["packages"].as_array().map(Vec::len), Some(1), "{v}");
    let (v, code) = json_in(ws.path(), &["harness", "pkg/SKILL.md", "-R", "h"], &REGION);
    assert_eq!(code, 0, "{v}");
    assert!(v["passed"].as_u64().unwrap() > 0, "{v}");
    // `-R` put the case receipts where it said.
    assert_eq!(
        receipt_files(&ws.path().join("h")).len() as u64,
        v["passed"].as_u64().unwrap() + v["failed"].as_u64().unwrap(),
        "{v}"
    );

    // Any other file is still not a package, and says what to name.
    let out = run_in(ws.path(), &["skill", "pkg/src/greet.mjs"], &REGION);
    assert_eq!(out.status.code(), Some(64));
    assert_eq!(
        stderr(&out).trim(),
        "runx: `pkg/src/greet.mjs` is a file, not a skill package: a package is a directory \
         holding X.yaml; name the directory, its SKILL.md or its X.yaml"
    );
    // A file named SKILL.md outside a package is a package without X.yaml: a usage error.
    std::fs::write(ws.path().join("SKILL.md"), "# nothing\n").unwrap();
    let out = run_in(ws.path(), &["skill", "SKILL.md"], &REGION);
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("X.yaml"), "{}", stderr(&out));
}

/// `runx history --json` in `ws` with `args`, reading the receipt directory `r`: the ids
/// listed, and the whole object.
fn history(ws: &Path, args: &[&str]) -> (Vec<String>, Value) {
    let mut all = vec!["history", "--receipt-dir", "r", "--json"];
    all.extend_from_slice(args);
    let out = run_in(ws, &all, &[]);
    let (v, code) = json_of(&out);
    assert_eq!(code, 0, "{args:?}: {v} {}", stderr(&out));
    let ids = v["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    (ids, v)
}

#[test]
fn history_filters_select_as_runx_filters() {
    let (ws, _) = workspace_with("hello");
    let run = |args: &[&str]| {
        let mut all = vec!["skill", "pkg", "-R", "r"];
        all.extend_from_slice(args);
        let (v, _) = json_in(ws.path(), &all, &REGION);
        (
            v["receipt_id"].as_str().unwrap().to_string(),
            v["closure"]["closed_at"].as_str().unwrap().to_string(),
        )
    };
    let (greet, greet_at) = run(&["-i", "name=Ada"]);
    let (shout, shout_at) = run(&["shout", "-i", "name=Bo"]);
    let (blocked, _) = run(&[]);
    // A harness run's case receipts in the same directory are harness receipts.
    let (h, code) = json_in(ws.path(), &["harness", "pkg", "-R", "r"], &REGION);
    assert_eq!(code, 0, "{h}");
    let cases = h["case_count"].as_u64().unwrap() as usize;

    let newest_first = [blocked.clone(), shout.clone(), greet.clone()];
    assert_eq!(history(ws.path(), &[]).0, newest_first);
    let (all, _) = history(ws.path(), &["--include-harness"]);
    assert_eq!(all.len(), 3 + cases, "{all:?}");

    assert_eq!(
        history(ws.path(), &["--status", "blocked"]).0,
        [blocked.as_str()]
    );
    assert_eq!(
        history(ws.path(), &["--status", " CLOSED "]).0,
        [shout.as_str(), greet.as_str()]
    );
    assert_eq!(history(ws.path(), &["--skill", "HEL"]).0, newest_first);
    assert!(history(ws.path(), &["--skill", "nothing"]).0.is_empty());
    assert_eq!(history(ws.path(), &["Shout"]).0, [shout.as_str()]);
    assert_eq!(history(ws.path(), &[&greet[7..20]]).0, [greet.as_str()]);
    assert_eq!(history(ws.path(), &["--source", "local"]).0, newest_first);
    assert!(history(ws.path(), &["--source", "ci"]).0.is_empty());
    assert_eq!(
        history(ws.path(), &["--actor", "runx:principal:local_runtime"]).0,
        newest_first
    );
    assert_eq!(
        history(ws.path(), &["--since", &shout_at]).0,
        [blocked.as_str(), shout.as_str()]
    );
    assert_eq!(
        history(ws.path(), &["--until", &greet_at]).0,
        [greet.as_str()]
    );
    assert_eq!(
        history(ws.path(), &["--since", &greet_at, "--until", &shout_at]).0,
        [shout.as_str(), greet.as_str()]
    );
    assert_eq!(
        history(ws.path(), &["--status", "closed", "--limit", "1"]).0,
        [shout.as_str()]
    );

    // A whole id alone is runx's documented `runx history <receipt-id> --json`: that receipt
    // in full, as with --detail; with a filter it is a query again.
    let (one, code) = json_in(ws.path(), &["history", "--receipt-dir", "r", &shout], &[]);
    assert_eq!(code, 0, "{one}");
    assert_eq!(one["receipt"]["id"], shout.as_str(), "{one}");
    assert_eq!(
        history(ws.path(), &[&shout, "--status", "closed"]).0,
        [shout.as_str()]
    );
    // One receipt in full with --detail.
    let (one, code) = json_in(
        ws.path(),
        &["history", "--receipt-dir", "r", &shout, "--detail"],
        &[],
    );
    assert_eq!(code, 0, "{one}");
    assert_eq!(one["receipt"]["id"], shout.as_str(), "{one}");

    // What runx refuses.
    let refused = |args: &[&str], code: i32, says: &str| {
        let mut all = vec!["history", "--receipt-dir", "r"];
        all.extend_from_slice(args);
        let out = run_in(ws.path(), &all, &[]);
        assert_eq!(out.status.code(), Some(code), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    };
    refused(
        &["--since", "yesterday"],
        1,
        "invalid --since timestamp 'yesterday'",
    );
    refused(&["--detail"], 64, "requires one exact receipt id");
    refused(
        &[&shout, "--detail", "--status", "closed"],
        64,
        "list filters",
    );

    // A filter that selects nothing says so, and lists nothing.
    let out = run_in(
        ws.path(),
        &["history", "--receipt-dir", "r", "nothing"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("match"), "{}", stdout(&out));
}

#[test]
fn hosted_side_commands_answer_with_a_reason_and_exit_1() {
    let ws = tempfile::tempdir().unwrap();
    // As runx's Python SDK calls them (search_skills, continue_run), and the others.
    for (args, name) in [
        (&["registry", "search", "triage", "--json"][..], "registry"),
        (
            &["resume", "run_default_0", "answers.json", "--json"][..],
            "resume",
        ),
        (&["login", "-j"][..], "login"),
        (&["publish", "receipt.json", "--json"][..], "publish"),
    ] {
        let out = run_in(ws.path(), args, &[]);
        let (v, code) = json_of(&out);
        assert_eq!(code, 1, "{args:?}: {v}");
        assert_eq!(v["status"], "failure", "{v}");
        assert_eq!(v["error"]["code"], "hosted_command_unavailable", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        // It names the command and what to use instead.
        let instead = [
            "`runx skill DIR`",
            "`runx verify --receipt FILE`",
            "RUNX_RECEIPT_SIGN_",
        ];
        assert!(
            message.starts_with(&format!("`runx {name}` "))
                && instead.iter().any(|i| message.contains(i)),
            "{message}"
        );
        // One line on stderr, what runx's SDK puts in its exception.
        assert_eq!(stderr(&out), format!("runx: {message}\n"));
        // Without --json, the line alone.
        let out = run_in(ws.path(), &args[..args.len() - 1], &[]);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{}", stdout(&out));
        assert_eq!(stderr(&out), format!("runx: {message}\n"));
    }
    assert!(!ws.path().join(".runx").exists());
}

/// runx 0.8.2 itself: `RUNX_UPSTREAM_BIN`, else `../shared/runx/runx.gz` (beside the
/// repository, as its README describes) unpacked once into `target/upstream-runx/`. `None`
/// where neither is on this machine.
pub fn upstream_runx() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("RUNX_UPSTREAM_BIN").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(bin));
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let gz = root.join("../shared/runx/runx.gz");
    if !gz.is_file() {
        return None;
    }
    let dir = root.join("target/upstream-runx");
    let bin = dir.join("runx");
    if !bin.is_file() {
        std::fs::create_dir_all(&dir).unwrap();
        // Unpacked beside, then renamed: a test running at the same time sees it whole or not.
        let partial = dir.join(format!("runx.{}", std::process::id()));
        let done = Command::new("sh")
            .arg("-c")
            .arg("gunzip -c \"$1\" > \"$2\" && chmod +x \"$2\"")
            .args(["sh", gz.to_str().unwrap(), partial.to_str().unwrap()])
            .status()
            .unwrap();
        assert!(done.success(), "cannot unpack {}", gz.display());
        std::fs::rename(&partial, &bin).unwrap();
    }
    Some(bin)
}

/// `bin args...` in `cwd` with a scratch HOME: its exit code and stdout parsed when JSON.
fn side(bin: &Path, cwd: &Path, args: &[&str]) -> (i32, Option<Value>) {
    let out = Command::new(bin)
        .current_dir(cwd)
        .args(args)
        .env("HOME", cwd.join("home"))
        .env_remove("RUNX_RECEIPT_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).ok(),
    )
}

#[test]
fn runx_0_8_2_and_this_runx_agree_on_runx_flags() {
    let Some(upstream) = upstream_runx() else {
        eprintln!("runx 0.8.2 is not on this machine (../shared/runx/runx.gz): not compared");
        return;
    };
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_runx"));
    let run = |bin: &Path, args: &[&str]| {
        let ws = tempfile::tempdir().unwrap();
        copy_dir(
            &fixtures().join("hello-world"),
            &ws.path().join("hello-world"),
        );
        let (code, v) = side(bin, ws.path(), args);
        (code, v, ws)
    };
    let both = |args: &[&str]| (run(&upstream, args), run(&ours, args));

    // The same run under each of runx's names for --json and the receipt directory.
    for (args, dir) in [
        (&["-j", "-R", "r"][..], "r"),
        (&["--json", "--receipts", "r"][..], "r"),
        (&["-j", "--receipt-dir=r", "--diagnostics"][..], "r"),
    ] {
        for package in ["hello-world", "hello-world/SKILL.md"] {
            let mut all = vec!["skill", package, "--message", "hi"];
            all.extend_from_slice(args);
            let ((theirs, tv, tws), (mine, mv, mws)) = both(&all);
            let (tv, mv) = (tv.unwrap(), mv.unwrap());
            assert_eq!((theirs, mine), (0, 0), "{all:?}: {tv} / {mv}");
            for key in [
                "status",
                "outcome",
                "result",
                "skill_name",
                "runner",
                "run_id",
            ] {
                assert_eq!(tv[key], mv[key], "{all:?} {key}: {tv} / {mv}");
            }
            assert_eq!(
                tv.get("next").is_some(),
                mv.get("next").is_some(),
                "{all:?}"
            );
            for ws in [&tws, &mws] {
                assert_eq!(receipt_files(&ws.path().join(dir)).len(), 1, "{all:?}");
            }
        }
    }

    // Refusals: the same exit code and runx's failure object.
    for args in [
        &["skill", "hello-world", "--message", "hi", "-p", "ops", "-j"][..],
        &[
            "resume",
            "run_default_0123456789abcdef",
            "answers.json",
            "--json",
        ][..],
        &["publish", "receipt.json", "--json"][..],
    ] {
        let ((theirs, tv, _t), (mine, mv, _m)) = both(args);
        assert_eq!((theirs, mine), (1, 1), "{args:?}: {tv:?} / {mv:?}");
        assert_eq!(tv.unwrap()["status"], "failure", "{args:?}");
        assert_eq!(mv.unwrap()["status"], "failure", "{args:?}");
    }
    for (args, code) in [
        (&["history", "--since", "yesterday"][..], 1),
        (&["history", "--detail"][..], 64),
        (&["history", "sha256:0123456789abcdef", "--detail"][..], 1),
        (
            &[
                "history",
                "--skill",
                "x",
                "--status",
                "closed",
                "--include-harness",
                "q",
            ][..],
            0,
        ),
    ] {
        let ((theirs, _, _t), (mine, _, _m)) = both(args);
        assert_eq!((theirs, mine), (code, code), "{args:?}");
    }
}
