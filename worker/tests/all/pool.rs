//! The pool driving real worker processes (the `runx-worker` binary).

use super::single;
use runx_worker::{Call, CancelToken, FailureCode, Limit, Limits, Pool, PoolConfig, WorkerCommand};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub fn worker_command() -> WorkerCommand {
    WorkerCommand::new(env!("CARGO_BIN_EXE_runx-worker"))
}

fn pool(size: usize) -> Pool {
    Pool::new(PoolConfig::new(worker_command()).size(size)).unwrap()
}

fn call(source: &str, input: Value) -> Call {
    Call::new(single(source), None, serde_json::to_vec(&input).unwrap())
}

fn out(r: &runx_worker::Reply) -> Value {
    serde_json::from_slice(&r.output).unwrap()
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn calls_are_served_and_workers_reused() {
    let p = pool(1);
    let c = call("export default (i) => ({ y: i.x + 1 });", json!({"x": 1}));
    let a = p.call(&c).unwrap();
    let b = p.call(&c).unwrap();
    assert_eq!(out(&a), json!({"y": 2}));
    assert_eq!(a.worker_pid, b.worker_pid, "the warm worker is reused");
}

/// A worker started ahead serves the first call, even in a pool with room for more, and a
/// second start ahead does nothing while it lives.
#[test]
fn the_worker_started_ahead_serves_the_first_call() {
    let p = pool(2);
    p.start_ahead();
    p.start_ahead();
    let started = Instant::now();
    while p.worker_pids().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no worker started ahead"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let ahead = p.worker_pids();
    assert_eq!(ahead.len(), 1, "{ahead:?}");
    let c = call("export default (i) => ({ y: i.x + 1 });", json!({"x": 1}));
    let reply = p.call(&c).unwrap();
    assert_eq!(out(&reply), json!({"y": 2}));
    assert_eq!(vec![reply.worker_pid], ahead);
    assert_eq!(p.worker_pids(), ahead, "no second worker was started");
}

/// A call made while the worker started ahead is still starting waits for it rather than
/// start another.
#[test]
fn a_call_waits_for_the_worker_started_ahead() {
    let p = pool(2);
    p.start_ahead();
    let c = call("export default () => 1;", json!({}));
    let reply = p.call(&c).unwrap();
    assert_eq!(p.worker_pids(), vec![reply.worker_pid]);
}

#[test]
fn worker_environment_is_empty_and_console_never_reaches_stdout() {
    let p = pool(1);
    let c = call(
        "export default () => { console.log('to the log'); return { tz: new Date(0).getHours(), off: new Date(0).getTimezoneOffset() }; };",
        json!({}),
    );
    let r = p.call(&c).unwrap();
    assert_eq!(out(&r), json!({"tz": 0, "off": 0}));
    assert_eq!(r.log.lines[0].message, "to the log");
}

#[test]
fn infinite_loop_times_out_and_the_pool_answers_next() {
    let p = pool(1);
    let mut c = call("export default () => { while (true) {} };", json!({}));
    c.limits = Limits::default().with_wall(Duration::from_secs(1));
    let started = Instant::now();
    let e = p.call(&c).unwrap_err();
    assert_eq!(e.failure.code, FailureCode::ResourceLimit);
    assert_eq!(e.failure.limit, Some(Limit::WallMilliseconds));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let ok = p
        .call(&call("export default () => ({ ok: true });", json!({})))
        .unwrap();
    assert_eq!(out(&ok), json!({"ok": true}));
}

#[test]
fn allocation_bomb_leaves_host_unharmed() {
    let p = pool(1);
    let e = p
        .call(&call(
            "export default () => { const a = new Array(1e9).fill(1); return {}; };",
            json!({}),
        ))
        .unwrap_err();
    assert_eq!(e.failure.limit, Some(Limit::HeapBytes), "{}", e.failure);
    let ok = p
        .call(&call("export default () => ({ ok: 1 });", json!({})))
        .unwrap();
    assert_eq!(out(&ok), json!({"ok": 1}));
}

#[test]
fn killed_worker_fails_the_call_and_is_replaced() {
    let p = pool(1);
    // Learn the worker's pid, then kill it while it spins.
    let first = p
        .call(&call("export default () => ({});", json!({})))
        .unwrap();
    let pid = first.worker_pid;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    });
    let mut spin = call("export default () => { while (true) {} };", json!({}));
    spin.limits = Limits::default().with_wall(Duration::from_secs(5));
    let e = p.call(&spin).unwrap_err();
    killer.join().unwrap();
    assert_eq!(e.failure.code, FailureCode::WorkerCrashed, "{}", e.failure);
    assert!(
        e.failure.message.contains("signal 9"),
        "{}",
        e.failure.message
    );
    let next = p
        .call(&call("export default () => ({ ok: 1 });", json!({})))
        .unwrap();
    assert_eq!(out(&next), json!({"ok": 1}));
    assert_ne!(next.worker_pid, pid);
    assert!(!pid_alive(pid));
}

#[test]
fn restart_budget_exhaustion_is_a_clear_error() {
    let mut cfg = PoolConfig::new(worker_command()).size(1);
    cfg.restart_budget = 1;
    cfg.backoff = Duration::from_millis(1);
    let p = Pool::new(cfg).unwrap();
    let kill_current = |p: &Pool| {
        for pid in p.worker_pids() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let trivial = call("export default () => ({});", json!({}));
    p.call(&trivial).unwrap();
    kill_current(&p);
    // The dead idle worker is noticed before the call is handed to it; the call moves on to
    // the one replacement the budget allows.
    p.call(&trivial).unwrap();
    kill_current(&p);
    let started = Instant::now();
    let e = p.call(&trivial).unwrap_err();
    assert_eq!(e.failure.code, FailureCode::WorkerCrashed);
    assert!(
        e.failure.message.contains("restart budget"),
        "{}",
        e.failure.message
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "no busy wait or long stall"
    );
    // And it stays a clear error, not a spin.
    let e = p.call(&trivial).unwrap_err();
    assert!(e.failure.message.contains("restart budget"));
}

#[test]
fn idempotent_calls_are_retried_after_a_crash() {
    let p = pool(1);
    let first = p
        .call(&call("export default () => ({});", json!({})))
        .unwrap();
    let pid = first.worker_pid;
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    });
    // Spins only on the first worker (its pid is in the input); the retry on a fresh worker
    // returns at once.
    let mut c = call(
        "export default (i, c) => { if (i.spin) { const t = Date.now(); let n = 0; while (n < 4e9) n++; } return { ok: 1 }; };",
        json!({"spin": true}),
    );
    c.idempotent = true;
    c.limits = Limits::default().with_wall(Duration::from_secs(2));
    let r = p.call(&c);
    killer.join().unwrap();
    // The retry spins too and hits the wall: what matters is that it ran on a new worker and
    // produced a typed limit failure, not `worker_crashed`.
    let e = r.unwrap_err();
    assert_eq!(
        e.failure.limit,
        Some(Limit::WallMilliseconds),
        "{}",
        e.failure
    );
}

#[test]
fn concurrent_calls_do_not_cross() {
    let p = pool(2);
    let handles: Vec<_> = (0..4)
        .map(|n| {
            let p = p.clone();
            std::thread::spawn(move || {
                let c = call(
                    "export default (i) => { let s = 0; for (let k = 0; k < 2e6; k++) s += k % 7; return { n: i.n, s }; };",
                    json!({"n": n}),
                );
                out(&p.call(&c).unwrap())
            })
        })
        .collect();
    for (n, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap()["n"], n);
    }
    assert!(p.worker_pids().len() <= 2);
}

#[test]
fn kill_all_stops_workers_and_refuses_calls() {
    let p = pool(1);
    p.call(&call("export default () => ({});", json!({})))
        .unwrap();
    let pids = p.worker_pids();
    p.kill_all();
    std::thread::sleep(Duration::from_millis(100));
    for pid in pids {
        assert!(!pid_alive(pid), "worker {pid} survived kill_all");
    }
    let e = p
        .call(&call("export default () => ({});", json!({})))
        .unwrap_err();
    assert!(e.failure.message.contains("shut down"));
}

#[test]
fn bundles_evicted_from_a_worker_are_sent_again() {
    let p = pool(1);
    // More distinct bundles than a worker caches, twice round: the second round finds the
    // first bundles evicted and the worker asks for them again.
    for round in 0..2 {
        for n in 0..20 {
            let c = call(&format!("export default () => ({{ n: {n} }});"), json!({}));
            let r = p
                .call(&c)
                .unwrap_or_else(|e| panic!("round {round}, bundle {n}: {e}"));
            assert_eq!(out(&r), json!({"n": n}));
        }
    }
}

fn spin(wall: Duration) -> Call {
    let mut c = call("export default () => { while (true) {} };", json!({}));
    c.limits = Limits::default().with_wall(wall);
    c.idempotent = true;
    c
}

#[test]
fn cancelling_a_call_kills_its_worker_only() {
    let p = pool(2);
    let cancel = CancelToken::new();
    let spinning = {
        let (p, cancel) = (p.clone(), cancel.clone());
        std::thread::spawn(move || p.call_cancellable(&spin(Duration::from_secs(20)), &cancel))
    };
    std::thread::sleep(Duration::from_millis(300));
    // The other worker keeps serving while one spins.
    let other = p
        .call(&call("export default () => ({ ok: 1 });", json!({})))
        .unwrap();
    let spinner: Vec<u32> = p
        .worker_pids()
        .into_iter()
        .filter(|pid| *pid != other.worker_pid)
        .collect();
    assert_eq!(spinner.len(), 1, "{:?}", p.worker_pids());
    let started = Instant::now();
    cancel.cancel();
    let e = spinning.join().unwrap().unwrap_err();
    assert_eq!(e.failure.code, FailureCode::Interrupted, "{}", e.failure);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !pid_alive(spinner[0]),
        "the cancelled call's worker survived"
    );
    assert!(
        pid_alive(other.worker_pid),
        "the other worker was killed too"
    );
    let again = p
        .call(&call("export default () => ({ ok: 2 });", json!({})))
        .unwrap();
    assert_eq!(out(&again), json!({"ok": 2}));
}

#[test]
fn cancellations_spend_no_restart_budget() {
    let mut cfg = PoolConfig::new(worker_command()).size(1);
    cfg.restart_budget = 0;
    let p = Pool::new(cfg).unwrap();
    for _ in 0..4 {
        let cancel = CancelToken::new();
        let canceller = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(150));
                cancel.cancel();
            })
        };
        let e = p
            .call_cancellable(&spin(Duration::from_secs(20)), &cancel)
            .unwrap_err();
        canceller.join().unwrap();
        assert_eq!(e.failure.code, FailureCode::Interrupted);
    }
    let ok = p
        .call(&call("export default () => ({ ok: 3 });", json!({})))
        .unwrap();
    assert_eq!(out(&ok), json!({"ok": 3}));
}

#[test]
fn a_call_cancelled_before_it_starts_never_reaches_a_worker() {
    let p = pool(1);
    let cancel = CancelToken::new();
    cancel.cancel();
    let e = p
        .call_cancellable(&call("export default () => ({});", json!({})), &cancel)
        .unwrap_err();
    assert_eq!(e.failure.code, FailureCode::Interrupted);
    assert!(p.worker_pids().is_empty(), "a worker was started for it");
}

/// Losses are charged to the module that was running: one that keeps losing its workers is
/// refused on its own, and another module in the same pool (another package's cases in one
/// harness run) still gets workers.
#[test]
fn a_crashing_module_does_not_spend_another_modules_workers() {
    let mut cfg = PoolConfig::new(worker_command()).size(1);
    cfg.restart_budget = 1;
    cfg.backoff = Duration::from_millis(1);
    let p = Pool::new(cfg).unwrap();
    // The spinning module's worker is killed under it, every time.
    let mut spin = call("export default () => { while (true) {} };", json!({}));
    spin.limits = Limits::default().with_wall(Duration::from_secs(5));
    let spin_killed = |p: &Pool| {
        let q = p.clone();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            for pid in q.worker_pids() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        });
        let e = p.call(&spin).unwrap_err();
        killer.join().unwrap();
        e.failure
    };
    for _ in 0..2 {
        let f = spin_killed(&p);
        assert_eq!(f.code, FailureCode::WorkerCrashed, "{f}");
        assert!(f.message.contains("signal 9"), "{f}");
    }
    let refused = p.call(&spin).unwrap_err().failure;
    assert!(refused.message.contains("this module lost"), "{refused}");
    // Another module is served as if nothing happened.
    let ok = p
        .call(&call("export default () => ({ ok: 1 });", json!({})))
        .unwrap();
    assert_eq!(out(&ok), json!({"ok": 1}));
}

/// Killing a worker at its wall is a retirement, not a loss: a module that times out again and
/// again keeps getting typed wall failures, never "restart budget spent".
#[test]
fn timeouts_spend_no_restart_budget() {
    let mut cfg = PoolConfig::new(worker_command()).size(1);
    cfg.restart_budget = 0;
    let p = Pool::new(cfg).unwrap();
    // Native sorts the interrupt never sees (far fewer loop turns than QuickJS counts before
    // it polls): the host kills the worker at wall + grace. 40 sorts once finished in 986 ms on
    // a fast spell of the machine, under the 1 s wall; 400 cannot, and the kill bounds the
    // test's time either way.
    let mut c = call(
        "export default () => { const a = new Float64Array(6e6); for (let i = 0; i < 400; i++) a.sort(); return {}; };",
        json!({}),
    );
    c.limits = Limits::default().with_wall(Duration::from_secs(1));
    for _ in 0..3 {
        let e = p.call(&c).unwrap_err();
        assert_eq!(
            e.failure.limit,
            Some(Limit::WallMilliseconds),
            "{}",
            e.failure
        );
    }
}
