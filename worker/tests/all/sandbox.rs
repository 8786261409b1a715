//! The worker where the kernel cannot install its seccomp filter: it refuses to serve unless
//! told otherwise.

use runx_worker::{Header, Message, read_frame, split_payload, write_frame};
use seccompiler::{SeccompAction, SeccompFilter, TargetArch};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

/// Starts the worker with `args` under a filter that makes `seccomp(2)` itself fail, as on a
/// kernel without seccomp; sends `hello` and returns the replies, exit code and stderr.
fn worker_without_seccomp(args: &[&str]) -> (Vec<Value>, Option<i32>, String) {
    let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
    let no_seccomp = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_seccomp, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .unwrap();
    let program: seccompiler::BpfProgram = no_seccomp.try_into().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_runx-worker"));
    command
        .args(args)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec the closure only makes the prctl and seccomp system calls
    // (no allocation: the program was built before the fork).
    unsafe {
        command.pre_exec(move || {
            seccompiler::apply_filter(&program).map_err(|e| std::io::Error::other(e.to_string()))
        });
    }
    let mut child = command.spawn().unwrap();
    let mut input = Vec::new();
    write_frame(&mut input, &Header::new(0, Message::Hello).to_bytes(), &[]).unwrap();
    write_frame(
        &mut input,
        &Header::new(0, Message::Shutdown).to_bytes(),
        &[],
    )
    .unwrap();
    let _ = child.stdin.take().unwrap().write_all(&input);
    let out = child.wait_with_output().unwrap();
    let mut r: &[u8] = &out.stdout;
    let mut replies = Vec::new();
    while let Ok(Some(frame)) = read_frame(&mut r) {
        let (h, _) = split_payload(&frame).unwrap();
        replies.push(serde_json::from_slice(h).unwrap());
    }
    (
        replies,
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn without_seccomp_the_worker_refuses_to_serve() {
    let (replies, code, stderr) = worker_without_seccomp(&[]);
    assert!(replies.is_empty(), "{replies:?}");
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("cannot install the worker's seccomp filter"),
        "{stderr}"
    );
    assert!(stderr.contains("RUNX_ALLOW_NO_SECCOMP=1"), "{stderr}");
}

#[test]
fn the_documented_option_lets_it_serve_without_the_filter() {
    let (replies, code, stderr) = worker_without_seccomp(&["--allow-no-seccomp"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(replies[0]["type"], "ready");
    assert!(stderr.contains("WITHOUT a system-call filter"), "{stderr}");
}
