//! Running a supervised process: exit codes and signals, stdin, timeouts that kill the whole
//! process group, escapes from it, and bounded, hashed output capture. The shared helpers are
//! in `tests.rs`.

use super::capture::utf8_safe_cut;
use super::tests::{CAPTURE_LIMIT, sh_spec};
use super::*;
use runx_worker::CancelToken;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

fn sha(bytes: &[u8]) -> String {
    runx_receipts::sha256_hex(bytes)
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

/// A descendant that leaves the group and moves itself to another cgroup (the root one, which
/// root may write to) is still killed with the run: the run's cgroup is the root of its cgroup
/// namespace, so the move is refused.
#[test]
fn descendant_moving_to_another_cgroup_is_killed_with_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("moved.pid");
    let moved_file = dir.path().join("moved.log");
    let escape = "for f in /sys/fs/cgroup/unified/cgroup.procs /sys/fs/cgroup/cgroup.procs; do \
         if [ -w \"$f\" ] && echo 0 > \"$f\"; then echo \"moved to $f\"; fi; done; exec sleep 20";
    let spec = sh_spec(
        dir.path(),
        &format!(
            "setsid sh -c '{escape}' > {} 2>&1 &\necho $! > {}\nsleep 0.5\nexit 0",
            moved_file.display(),
            pid_file.display()
        ),
    );
    let out = run(&spec, &CancelToken::new()).unwrap();
    assert_eq!(out.termination, Termination::Exited(0));
    let escaped = read_pid(&pid_file);
    let gone = wait_gone(escaped);
    if !gone {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(escaped),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let moved = std::fs::read_to_string(&moved_file).unwrap_or_default();
    assert!(gone, "the descendant {escaped} survived the run ({moved})");
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
