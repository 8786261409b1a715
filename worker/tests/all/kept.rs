//! A kept module instance (`EngineCall::keep_module`, what `pages.module: partition` asks for):
//! the calls of one run on an engine share the module's state when each keeps the module and
//! continues the run; any other call, and any call after a failure, starts from nothing.

use super::single;
use runx_worker::{
    Call, ConsoleLog, Engine, EngineCall, Failure, Limit, Limits, ModuleBundle, Pool, PoolConfig,
};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// How a call stands to the run before it.
#[derive(Clone, Copy)]
struct Step {
    keep: bool,
    continues: bool,
}

/// The first call of a run that keeps its module.
const FIRST: Step = Step {
    keep: true,
    continues: false,
};
/// A later call of that run.
const NEXT: Step = Step {
    keep: true,
    continues: true,
};
/// A later page of a run that does not keep its module (per-page mode).
const PAGE: Step = Step {
    keep: false,
    continues: true,
};

/// Calls `export` of `bundle` with `input` as `step` says; the output as JSON.
fn call_as(
    e: &mut dyn Engine,
    bundle: &Arc<ModuleBundle>,
    export: &str,
    input: Value,
    step: Step,
    limits: Limits,
) -> Result<(Value, ConsoleLog), Failure> {
    let input = serde_json::to_vec(&input).expect("JSON");
    e.call(&EngineCall {
        bundle,
        export: Some(export),
        input: &input,
        page: None,
        environment: &BTreeMap::new(),
        limits,
        continues: step.continues,
        probe: false,
        keep_module: step.keep,
    })
    .map(|out| (serde_json::from_slice(&out.output).expect("JSON"), out.log))
    .map_err(|(f, _)| f)
}

/// `f()`'s output under the default limits.
fn f(e: &mut dyn Engine, bundle: &Arc<ModuleBundle>, step: Step) -> Value {
    match call_as(e, bundle, "f", json!({}), step, Limits::default()) {
        Ok((v, _)) => v,
        Err(f) => panic!("on {}: {f}", e.name()),
    }
}

const COUNTER: &str = "let n = 0; export function f() { return ++n; }";

/// Module-level state lives for the kept calls of a run, and only for them: without
/// `keep_module`, after a call that does not continue, after a call that does not keep, for
/// another bundle or after a probe, the module is evaluated again.
pub fn module_state_lives_for_the_kept_calls_of_a_run(e: &mut dyn Engine) {
    let counter = single(COUNTER);
    let steps = [FIRST, NEXT, NEXT].map(|s| f(e, &counter, s));
    assert_eq!(steps, [json!(1), json!(2), json!(3)], "on {}", e.name());
    let pages = [FIRST, PAGE, PAGE].map(|s| f(e, &counter, s));
    assert_eq!(pages, [json!(1), json!(1), json!(1)], "on {}", e.name());
    // A kept instance, then a call that does not continue its run: a fresh module.
    assert_eq!(f(e, &counter, FIRST), json!(1));
    assert_eq!(f(e, &counter, NEXT), json!(2));
    assert_eq!(f(e, &counter, FIRST), json!(1));
    // A page that does not keep the module drops the kept one.
    assert_eq!(f(e, &counter, NEXT), json!(2));
    assert_eq!(f(e, &counter, PAGE), json!(1));
    assert_eq!(f(e, &counter, NEXT), json!(1));
    assert_eq!(f(e, &counter, NEXT), json!(2));
    // A continuing call of another bundle never finds this one's module.
    let other = single("let n = 100; export function f() { return ++n; }");
    assert_eq!(f(e, &other, NEXT), json!(101));
    assert_eq!(f(e, &counter, NEXT), json!(1));
    // A probe keeps nothing, and drops what was kept.
    let probe = e.call(&EngineCall {
        bundle: &counter,
        export: None,
        input: b"{}",
        page: None,
        environment: &BTreeMap::new(),
        limits: Limits::default(),
        continues: true,
        probe: true,
        keep_module: true,
    });
    assert!(probe.is_ok(), "{probe:?}");
    assert_eq!(f(e, &counter, NEXT), json!(1));
    assert_eq!(f(e, &counter, NEXT), json!(2));
}

/// A call that fails (a throw, or a limit) drops the kept instance: the run ends there, and a
/// call that claims to continue it anyway evaluates the module again.
pub fn a_failure_drops_the_kept_instance(e: &mut dyn Engine) {
    let bundle = single(
        "let n = 0; export function f(i) { n++; if (i.fail) throw new Error('page ' + n); return n; } export function spin() { for (;;) {} }",
    );
    let limits = Limits::default();
    let step = |e: &mut dyn Engine, input: Value, s: Step| {
        call_as(e, &bundle, "f", input, s, limits).map(|(v, _)| v)
    };
    assert_eq!(step(e, json!({}), FIRST).unwrap(), json!(1));
    assert_eq!(step(e, json!({}), NEXT).unwrap(), json!(2));
    let thrown = step(e, json!({"fail": true}), NEXT).unwrap_err();
    assert!(thrown.message.contains("page 3"), "{thrown}");
    assert_eq!(step(e, json!({}), NEXT).unwrap(), json!(1));
    assert_eq!(step(e, json!({}), NEXT).unwrap(), json!(2));
    let wall = limits.with_wall(std::time::Duration::from_millis(300));
    let spun = call_as(e, &bundle, "spin", json!({}), NEXT, wall).unwrap_err();
    assert_eq!(spun.limit, Some(Limit::WallMilliseconds), "{spun}");
    assert_eq!(step(e, json!({}), NEXT).unwrap(), json!(1));
}

/// Each kept call gets its own wall, console and log bound; the module's state counts against
/// the heap of every later call, so a state that grows page after page fails `heap_bytes` at
/// the same call on every run.
pub fn kept_state_fails_the_heap_at_the_same_call_every_run(e: &mut dyn Engine) {
    let bundle = single(
        "const a = []; export function f() { console.log('call', a.length); a.push(new Array(1e5).fill(1)); return a.length; }",
    );
    let limits = Limits {
        heap_bytes: 16 * runx_worker::MIB,
        log_bytes: 64,
        ..Limits::default()
    };
    let failing_call = |e: &mut dyn Engine| -> usize {
        let mut step = FIRST;
        for i in 1..=400 {
            match call_as(e, &bundle, "f", json!({}), step, limits) {
                Ok((v, log)) => {
                    assert_eq!(v, json!(i), "on {}", e.name());
                    assert_eq!(log.lines.len(), 1, "a log per call: {log:?}");
                    assert_eq!(log.lines[0].message, format!("call {}", i - 1));
                }
                Err(f) => {
                    assert_eq!(f.limit, Some(Limit::HeapBytes), "call {i}: {f}");
                    return i;
                }
            }
            step = NEXT;
        }
        panic!("on {}: 400 calls kept 40 million numbers", e.name());
    };
    let first = failing_call(e);
    assert!(first > 2, "on {}: call {first}", e.name());
    for _ in 0..3 {
        assert_eq!(failing_call(e), first, "on {}", e.name());
    }
    // Without a kept module, the same calls never grow.
    for _ in 0..first + 2 {
        let out = call_as(e, &bundle, "f", json!({}), PAGE, limits).map(|(v, _)| v);
        assert_eq!(out.ok(), Some(json!(1)));
    }
}

/// Jobs a kept call's output queues (its `toJSON` awaits) run before that call's answer, in
/// its log and under its limits: none is left for the next call. Without a kept module they
/// never run at all.
pub fn a_kept_call_leaves_no_queued_job(e: &mut dyn Engine) {
    let bundle = single(
        "let n = 0; export function f() { return { toJSON() { Promise.resolve().then(() => { n += 10; console.log('job', n); }); return { n }; } }; }",
    );
    let limits = Limits::default();
    let step = |e: &mut dyn Engine, s: Step| {
        let (v, log) = call_as(e, &bundle, "f", json!({}), s, limits).expect("an output");
        let lines: Vec<String> = log.lines.into_iter().map(|l| l.message).collect();
        (v, lines)
    };
    assert_eq!(
        step(e, FIRST),
        (json!({"n": 0}), vec!["job 10".to_string()])
    );
    assert_eq!(
        step(e, NEXT),
        (json!({"n": 10}), vec!["job 20".to_string()])
    );
    assert_eq!(step(e, PAGE), (json!({"n": 0}), vec![]));
    assert_eq!(step(e, PAGE), (json!({"n": 0}), vec![]));
    // A job that never ends fails the call that queued it, at its wall.
    let spin = single(
        "export function f() { return { toJSON() { Promise.resolve().then(() => { for (;;) {} }); return 1; } }; }",
    );
    let wall = limits.with_wall(std::time::Duration::from_millis(300));
    let f = call_as(e, &spin, "f", json!({}), FIRST, wall).unwrap_err();
    assert_eq!(f.limit, Some(Limit::WallMilliseconds), "{f}");
}

/// The export is looked up on the kept module at every call: the same instance serves `map`,
/// then `fold`, with one module state.
pub fn the_export_is_looked_up_per_call(e: &mut dyn Engine) {
    let bundle = single(
        "const seen = []; export function map(i, c) { seen.push(i.x + c.environment.SUFFIX); return seen.length; } export function fold() { return seen; }",
    );
    let mut environment = BTreeMap::new();
    let input = |x: &str| format!("{{\"x\":\"{x}\"}}").into_bytes();
    let mut call = |e: &mut dyn Engine, export: &str, x: &str, suffix: &str, step: Step| {
        environment.insert("SUFFIX".to_string(), suffix.to_string());
        let input = input(x);
        let out = e
            .call(&EngineCall {
                bundle: &bundle,
                export: Some(export),
                input: &input,
                page: None,
                environment: &environment,
                limits: Limits::default(),
                continues: step.continues,
                probe: false,
                keep_module: step.keep,
            })
            .unwrap_or_else(|(f, _)| panic!("{f}"));
        serde_json::from_slice::<Value>(&out.output).expect("JSON")
    };
    assert_eq!(call(e, "map", "a", "1", FIRST), json!(1));
    assert_eq!(call(e, "map", "b", "2", NEXT), json!(2));
    assert_eq!(call(e, "fold", "", "", NEXT), json!(["a1", "b2"]));
    let missing = call_as(e, &bundle, "nope", json!({}), NEXT, Limits::default()).unwrap_err();
    assert!(missing.message.contains("nope"), "{missing}");
    assert_eq!(call(e, "fold", "", "", NEXT), json!([]));
}

/// A recursion that catches its overflow returns how deep it got.
const CAUGHT_DEPTH: &str = "export function f() { const g = (n) => { try { return g(n + 1); } catch { return n; } }; return g(0); }";

/// Makes the engine's next clean start (`Engine::idle`) `frames` calls deeper on the stack.
#[inline(never)]
fn idle_deeper(e: &mut dyn Engine, frames: usize) {
    let pad = std::hint::black_box([0u8; 512]);
    if frames == 0 {
        e.idle();
    } else {
        idle_deeper(e, frames - 1);
    }
    std::hint::black_box(pad);
}

/// A caught overflow reaches a depth that depends on nothing but the calls of its run: on
/// QuickJS the same depth in every call, on a runtime made ahead while the worker waited or in
/// the call, at whatever stack depth either was made, kept or not (it did not: the depth was
/// measured from where the runtime was made, 1517 on a run's first page and 1522 on pages sent
/// ahead). On V8 the first call of every run reaches one depth; later calls on the run's
/// isolate reach others as the recursion's code moves up V8's tiers, the same on every run.
pub fn a_caught_overflow_reaches_the_same_depth_in_every_call(e: &mut dyn Engine) {
    let bundle = single(CAUGHT_DEPTH);
    let limits = Limits {
        stack_bytes: runx_worker::MIB,
        ..Limits::default()
    };
    let depth = |e: &mut dyn Engine, step: Step| {
        call_as(e, &bundle, "f", json!({}), step, limits)
            .map(|(v, _)| v)
            .unwrap_or_else(|f| panic!("{f}"))
    };
    // Each run's first call, then the rest: the depths of the runs' first calls, and of all.
    let sequence = |e: &mut dyn Engine| -> (Vec<Value>, Vec<Value>) {
        let mut firsts = Vec::new();
        let mut all = Vec::new();
        e.idle();
        firsts.push(depth(e, FIRST));
        all.extend([depth(e, NEXT), depth(e, NEXT), depth(e, PAGE)]);
        idle_deeper(e, 16);
        firsts.push(depth(e, FIRST));
        all.push(depth(e, NEXT));
        idle_deeper(e, 0);
        firsts.push(depth(e, PAGE));
        all.push(depth(e, NEXT));
        firsts.push(depth(e, FIRST));
        all.extend(firsts.iter().cloned());
        (firsts, all)
    };
    let (firsts, all) = sequence(e);
    let first = firsts[0].clone();
    assert!(
        firsts.iter().all(|d| *d == first),
        "on {}: the runs' first calls reached {firsts:?}",
        e.name()
    );
    if e.name() == "quickjs" {
        assert!(all.iter().all(|d| *d == first), "{all:?}");
    }
    assert_eq!(sequence(e), (firsts, all.clone()), "on {}", e.name());
    // And in a worker process: a first call on the runtime made while it waited, then the
    // calls of runs, which continue without one.
    let steps = [
        (None, false),
        (Some(9), false),
        (Some(9), false),
        (Some(10), true),
        (Some(10), true),
        (None, false),
    ];
    let answers = || -> Vec<Value> {
        let command = super::pool::worker_command().engine(e.name());
        let pool = Pool::new(PoolConfig::new(command).size(1)).expect("a pool");
        steps
            .iter()
            .map(|&(run, keep_module)| {
                let mut call = Call::new(bundle.clone(), Some("f"), b"{}".to_vec());
                call.limits = limits;
                call.run = run;
                call.keep_module = keep_module;
                let reply = pool.call(&call).expect("an answer");
                serde_json::from_slice(&reply.output).expect("JSON")
            })
            .collect()
    };
    let worker = answers();
    assert_eq!(answers(), worker, "on {}", e.name());
    if e.name() == "quickjs" {
        assert!(
            worker.iter().all(|d| *d == first),
            "{first} in process, {worker:?}"
        );
    } else {
        assert_eq!(
            [&worker[0], &worker[1], &worker[3]],
            [&first; 3],
            "{worker:?}"
        );
    }
}

/// Through a worker process: the calls of one run that keep the module share it, and another
/// run's calls do not.
pub fn a_worker_keeps_the_module_for_its_run(e: &mut dyn Engine) {
    let command = super::pool::worker_command().engine(e.name());
    let pool = Pool::new(PoolConfig::new(command).size(1)).expect("a pool");
    let counter = single(COUNTER);
    let answer = |run: Option<u64>, keep_module: bool| {
        let mut call = Call::new(counter.clone(), Some("f"), b"{}".to_vec());
        call.run = run;
        call.keep_module = keep_module;
        let reply = pool.call(&call).expect("an answer");
        String::from_utf8_lossy(&reply.output).into_owned()
    };
    let answers = [
        answer(Some(1), true),
        answer(Some(1), true),
        answer(Some(1), true),
        answer(Some(2), true),
        answer(Some(2), false),
        answer(None, true),
        answer(None, true),
    ];
    assert_eq!(
        answers,
        ["1", "2", "3", "1", "1", "1", "1"],
        "on {}",
        e.name()
    );
}

per_engine!(
    module_state_lives_for_the_kept_calls_of_a_run,
    a_failure_drops_the_kept_instance,
    kept_state_fails_the_heap_at_the_same_call_every_run,
    a_kept_call_leaves_no_queued_job,
    the_export_is_looked_up_per_call,
    a_caught_overflow_reaches_the_same_depth_in_every_call,
    a_worker_keeps_the_module_for_its_run,
);
