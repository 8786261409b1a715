//! Engine-level conformance: each test body takes the engine as a parameter and the
//! `engines!` macro instantiates it for every engine built (QuickJS always; V8 with `v8`).

use super::single;
use runx_worker::bundle::ModuleBundle;
use runx_worker::engine::{ConsoleLog, Engine, EngineCall, EngineOutput, PageInput};
use runx_worker::failure::{Failure, FailureCode};
use runx_worker::limits::{Limit, Limits};
use runx_worker::pool::{Pool, PoolConfig};
use runx_worker::process::Call;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

type Outcome = Result<EngineOutput, (Failure, ConsoleLog)>;

fn run_with(
    engine: &mut dyn Engine,
    bundle: &Arc<ModuleBundle>,
    export: Option<&str>,
    input: Value,
    env: &[(&str, &str)],
    limits: Limits,
) -> Outcome {
    let input = serde_json::to_vec(&input).unwrap();
    let environment: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    engine.call(&EngineCall {
        bundle,
        export,
        input: &input,
        page: None,
        environment: &environment,
        limits,
    })
}

fn run(engine: &mut dyn Engine, source: &str, input: Value) -> Outcome {
    run_with(engine, &single(source), None, input, &[], Limits::default())
}

fn output(o: Outcome) -> Value {
    match o {
        Ok(out) => serde_json::from_slice(&out.output).unwrap(),
        Err((f, _)) => panic!("call failed: {f}"),
    }
}

fn failure(o: Outcome) -> Failure {
    match o {
        Ok(out) => panic!(
            "call succeeded with {}",
            String::from_utf8_lossy(&out.output)
        ),
        Err((f, _)) => f,
    }
}

pub fn absent_globals(e: &mut dyn Engine) {
    let names = [
        "process",
        "require",
        "module",
        "exports",
        "fetch",
        "setTimeout",
        "setInterval",
        "setImmediate",
        "clearTimeout",
        "queueMicrotask",
        "Deno",
        "Bun",
        "crypto",
        "performance",
        "WeakRef",
        "FinalizationRegistry",
        "SharedArrayBuffer",
        "Atomics",
        "XMLHttpRequest",
        "WebSocket",
        "navigator",
        "os",
        "std",
        "scriptArgs",
        "print",
        "gc",
        "InternalError",
        "Intl",
        "Temporal",
        "WebAssembly",
        "DisposableStack",
        "AsyncDisposableStack",
        "SuppressedError",
    ];
    let src = format!(
        "export default () => ({{ types: Object.fromEntries({names:?}.map(n => [n, typeof globalThis[n]])) }});"
    );
    let out = output(run(e, &src, json!({})));
    for n in names {
        assert_eq!(out["types"][n], "undefined", "{n} must be absent");
    }
    // Nor is the real clock reachable through `Date` (V8's Temporal bridge).
    let out = output(run(
        e,
        "export default () => ({ t: typeof Date.prototype.toTemporalInstant });",
        json!({}),
    ));
    assert_eq!(out, json!({"t": "undefined"}));
    // Nor does `import.meta` tell a module where it was loaded from.
    let out = output(run(
        e,
        "export default () => ({ keys: Reflect.ownKeys(import.meta).map(String) });",
        json!({}),
    ));
    assert_eq!(out, json!({"keys": []}));
}

pub fn only_intrinsics_are_global(e: &mut dyn Engine) {
    let out = output(run(
        e,
        "export default () => ({ names: Object.getOwnPropertyNames(globalThis).sort() });",
        json!({}),
    ));
    let allowed: Vec<&str> = runx_worker::quickjs::ALLOWED_GLOBALS
        .iter()
        .copied()
        .chain(["console"])
        .collect();
    for n in out["names"].as_array().unwrap() {
        let n = n.as_str().unwrap();
        assert!(allowed.contains(&n), "unexpected global {n}");
    }
}

pub fn intrinsics_are_present(e: &mut dyn Engine) {
    let names: Vec<&str> = runx_worker::quickjs::ALLOWED_GLOBALS
        .iter()
        .copied()
        .filter(|n| *n != "undefined")
        .collect();
    let src =
        format!("export default () => ({{ missing: {names:?}.filter(n => !(n in globalThis)) }});");
    let out = output(run(e, &src, json!({})));
    assert_eq!(
        out["missing"],
        json!([]),
        "every ECMAScript intrinsic is there"
    );
}

pub fn clock_is_pinned(e: &mut dyn Engine) {
    let out = output(run(
        e,
        "export default () => ({ now: Date.now(), fresh: new Date().getTime(), iso: new Date().toISOString(), given: new Date(86400000).getTime(), str: typeof Date(), inst: new Date() instanceof Date });",
        json!({}),
    ));
    assert_eq!(
        out,
        json!({"now": 0, "fresh": 0, "iso": "1970-01-01T00:00:00.000Z", "given": 86400000, "str": "string", "inst": true})
    );
}

pub fn math_random_throws(e: &mut dyn Engine) {
    let f = failure(run(
        e,
        "export default () => ({ r: Math.random() });",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ExecutionFailed);
    assert!(f.message.contains("TypeError"), "{}", f.message);
    assert!(f.message.contains("deterministic"), "{}", f.message);
}

pub fn console_is_captured_and_bounded(e: &mut dyn Engine) {
    let out = run(
        e,
        "export default () => { console.log('hi', {a: 1}); console.warn('w'); console.error(new Error('boom').message); return {}; };",
        json!({}),
    )
    .unwrap();
    let lines: Vec<(String, String)> = out
        .log
        .lines
        .iter()
        .map(|l| (l.level.clone(), l.message.clone()))
        .collect();
    assert_eq!(
        lines,
        vec![
            ("log".into(), "hi {\"a\":1}".into()),
            ("warn".into(), "w".into()),
            ("error".into(), "boom".into())
        ]
    );
    let out = run(
        e,
        "export default () => { const s = 'x'.repeat(1000); for (let i = 0; i < 200; i++) console.log(s); return {}; };",
        json!({}),
    )
    .unwrap();
    assert!(out.log.truncated());
    let kept: usize = out.log.lines.iter().map(|l| l.message.len()).sum();
    assert!(kept <= 64 * 1024 + 100, "kept {kept}");
    assert!(out.log.lines.last().unwrap().message.contains("truncated"));
}

pub fn exports_and_arguments(e: &mut dyn Engine) {
    let b = single(
        "export function named(i, c) { return { self: this === undefined, x: i.x, env: c.environment.REGION, frozen: Object.isFrozen(c) && Object.isFrozen(c.environment) }; }\n\
         export default async function (i) { await null; return { d: i.x * 2 }; }",
    );
    let out = output(run_with(
        e,
        &b,
        Some("named"),
        json!({"x": 3}),
        &[("REGION", "eu")],
        Limits::default(),
    ));
    assert_eq!(
        out,
        json!({"self": true, "x": 3, "env": "eu", "frozen": true})
    );
    let out = output(run_with(
        e,
        &b,
        None,
        json!({"x": 4}),
        &[],
        Limits::default(),
    ));
    assert_eq!(out, json!({"d": 8}));
    let f = failure(run_with(
        e,
        &b,
        Some("missing"),
        json!({}),
        &[],
        Limits::default(),
    ));
    assert_eq!(f.code, FailureCode::ModuleRejected);
    assert!(f.message.contains("missing"), "{}", f.message);
}

pub fn imports_resolve_inside_the_bundle(e: &mut dyn Engine) {
    let b = Arc::new(ModuleBundle::from_sources(
        "src/main.mjs",
        [
            (
                "src/main.mjs",
                "import { a } from './lib/a.mjs'; export default () => ({ v: a() });",
            ),
            (
                "src/lib/a.mjs",
                "import { b } from '../b.js'; export const a = () => b + 1;",
            ),
            ("src/b.js", "export const b = 41;"),
        ],
    ));
    let out = output(run_with(e, &b, None, json!({}), &[], Limits::default()));
    assert_eq!(out, json!({"v": 42}));
}

pub fn escapes_are_module_rejected(e: &mut dyn Engine) {
    for (src, spec) in [
        (
            "import fs from 'node:fs'; export default () => ({});",
            "node:fs",
        ),
        (
            "import x from '/etc/passwd'; export default () => ({});",
            "/etc/passwd",
        ),
        (
            "import x from '../outside.mjs'; export default () => ({});",
            "../outside.mjs",
        ),
        (
            "import _ from 'lodash'; export default () => ({});",
            "lodash",
        ),
        (
            "export default async () => { await import('./x.mjs'); return {}; };",
            "./x.mjs",
        ),
        (
            "export default async () => { try { await import('./main.mjs'); } catch (_) {} return {}; };",
            "./main.mjs",
        ),
    ] {
        let f = failure(run(e, src, json!({})));
        assert_eq!(f.code, FailureCode::ModuleRejected, "{src}: {f}");
        assert!(f.message.contains(spec), "{src}: {}", f.message);
    }
}

pub fn wall_stops_infinite_loops(e: &mut dyn Engine) {
    let limits = Limits::default().with_wall(std::time::Duration::from_secs(1));
    let started = std::time::Instant::now();
    let f = failure(run_with(
        e,
        &single("export default () => { while (true) {} };"),
        None,
        json!({}),
        &[],
        limits,
    ));
    assert_eq!(f.code, FailureCode::ResourceLimit);
    assert_eq!(f.limit, Some(Limit::WallMilliseconds));
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    // The same engine answers the next call.
    assert_eq!(
        output(run(e, "export default () => ({ ok: 1 });", json!({}))),
        json!({"ok": 1})
    );
}

pub fn heap_bombs_hit_the_heap_limit(e: &mut dyn Engine) {
    for src in [
        "export default () => { let s = 'x'; while (true) s += s; };",
        "export default () => { const a = []; while (true) a.push({ x: [1, 2, 3] }); };",
        "export default () => ({ n: new ArrayBuffer(512 * 2 ** 20).byteLength });",
        "export default () => { const a = []; while (true) a.push(new Uint8Array(2 ** 20)); };",
    ] {
        // V8 collects garbage many times over before it declares the heap full (about a
        // second of CPU here); the long wall keeps a busy machine from turning that into a
        // wall failure. The wall is not under test.
        let f = failure(run_with(
            e,
            &single(src),
            None,
            json!({}),
            &[],
            Limits::default().with_wall(std::time::Duration::from_secs(10)),
        ));
        assert_eq!(f.code, FailureCode::ResourceLimit, "{src}: {f}");
        assert_eq!(f.limit, Some(Limit::HeapBytes), "{src}: {f}");
    }
    assert_eq!(
        output(run(e, "export default () => ({ ok: 1 });", json!({}))),
        json!({"ok": 1})
    );
}

/// `new Array(1e9).fill(1)` allocates inside a builtin's C++ loop that never checks for
/// termination. QuickJS fails the call and goes on; V8 cannot fail an allocation softly and ends
/// the process, which in-process would take the test binary with it. In a worker process both
/// engines answer with the heap limit, and the pool goes on with a worker that can serve.
pub fn heap_bomb_in_a_builtin_is_answered_by_the_worker(e: &mut dyn Engine) {
    let command = super::pool::worker_command().engine(e.name());
    let pool = Pool::new(PoolConfig::new(command).size(1)).unwrap();
    let mut bomb = Call::new(
        single(
            "export default () => { const a = new Array(1e9).fill(1); return { n: a.length }; };",
        ),
        None,
        b"{}".to_vec(),
    );
    // V8 takes about 1.5 s of CPU to fill its heap here, which becomes 5–10 s of wall when the
    // whole suite shares two busy cores; the wall is not under test, so it is the longest.
    bomb.limits = Limits::default().with_wall(Limits::MAX_WALL);
    let f = pool.call(&bomb).unwrap_err().failure;
    assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
    assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}");
    let next = Call::new(
        single("export default () => ({ ok: 1 });"),
        None,
        b"{}".to_vec(),
    );
    let ok = pool.call(&next).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&ok.output).unwrap(),
        json!({"ok": 1})
    );
}

pub fn infinite_recursion_is_typed(e: &mut dyn Engine) {
    let f = failure(run(
        e,
        "function f(n) { return f(n + 1) + 1; } export default () => ({ v: f(0) });",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
    assert_eq!(f.limit, Some(Limit::StackBytes));
}

pub fn nothing_survives_between_calls(e: &mut dyn Engine) {
    let first = "export default () => { Object.prototype.polluted = 1; Array.prototype.push = null; globalThis.leak = 2; return {}; };";
    output(run(e, first, json!({})));
    let out = output(run(
        e,
        "export default () => ({ p: typeof ({}).polluted, l: typeof globalThis.leak, push: typeof [].push });",
        json!({}),
    ));
    assert_eq!(
        out,
        json!({"p": "undefined", "l": "undefined", "push": "function"})
    );
}

/// Everything a call can change in its realm is gone for the next call on the same engine:
/// module-level state, intrinsics and their prototypes, the clock, stack-trace hooks.
pub fn module_state_and_intrinsics_start_over(e: &mut dyn Engine) {
    let counter = single(
        "let n = 0; const seen = []; export default () => { n += 1; seen.push(n); return { n, seen: seen.length }; };",
    );
    for _ in 0..3 {
        let out = output(run_with(
            e,
            &counter,
            None,
            json!({}),
            &[],
            Limits::default(),
        ));
        assert_eq!(out, json!({"n": 1, "seen": 1}));
    }
    let first = "export default () => {\n\
        Object.defineProperty(Object.prototype, 'polluted', { get() { return 'yes'; }, configurable: true });\n\
        Array.prototype.map = () => 'hijacked'; JSON.parse = () => 'hijacked'; JSON.stringify = () => '\"hijacked\"';\n\
        Function.prototype.call = () => 'hijacked'; Date.now = () => 5; Math.max = () => -1;\n\
        Error.prepareStackTrace = () => 'hijacked stack'; Error.stackTraceLimit = 0;\n\
        globalThis.leak = 2; Symbol.prototype.toString = () => 'x';\n\
        return {};\n\
    };";
    output(run(e, first, json!({})));
    let out = output(run(
        e,
        "export default () => ({ p: typeof ({}).polluted, l: typeof globalThis.leak, map: [1, 2].map((x) => x * 2), parse: JSON.parse('[7]'), call: Math.max.call(null, 1, 3), now: Date.now(), stack: String(new Error('e').stack).startsWith('Error: e') || String(new Error('e').stack).includes('main.mjs') });",
        json!({}),
    ));
    assert_eq!(
        out,
        json!({"p": "undefined", "l": "undefined", "map": [2, 4], "parse": [7], "call": 3, "now": 0, "stack": true})
    );
    // The hooks of the first call do not shape the failure messages of the next.
    output(run(
        e,
        "export default () => { Error.prepareStackTrace = () => 'hijacked'; return {}; };",
        json!({}),
    ));
    let f = failure(run(
        e,
        "export default () => { throw new TypeError('plain'); };",
        json!({}),
    ));
    assert!(f.message.contains("TypeError: plain"), "{}", f.message);
    assert!(!f.message.contains("hijacked"), "{}", f.message);
}

/// Jobs a call leaves queued never run, in a later call or at all: not after a synchronous
/// throw, not after a wall termination in the middle of a microtask loop.
pub fn queued_jobs_do_not_cross_calls(e: &mut dyn Engine) {
    let f = failure(run(
        e,
        "export default () => { Promise.resolve().then(() => { console.log('leaked'); globalThis.late = 1; }); throw new Error('early'); };",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ExecutionFailed, "{f}");
    let out = run(
        e,
        "export default async () => { await null; await null; return { late: typeof globalThis.late }; };",
        json!({}),
    )
    .unwrap();
    assert!(out.log.lines.is_empty(), "{:?}", out.log);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.output).unwrap(),
        json!({"late": "undefined"})
    );
    let limits = Limits::default().with_wall(std::time::Duration::from_secs(1));
    let f = failure(run_with(
        e,
        &single(
            "export default () => { const spin = () => { console.log('spin'); return Promise.resolve().then(spin); }; spin(); return new Promise(() => {}); };",
        ),
        None,
        json!({}),
        &[],
        limits,
    ));
    assert_eq!(f.limit, Some(Limit::WallMilliseconds), "{f}");
    let started = std::time::Instant::now();
    let out = run(e, "export default () => ({ ok: 1 });", json!({})).unwrap();
    assert!(out.log.lines.is_empty(), "{:?}", out.log);
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
}

/// A call that hit the heap limit, or held most of the heap or of the ArrayBuffer budget, leaves
/// the next call its whole budget.
pub fn heap_budget_starts_over(e: &mut dyn Engine) {
    // As in `heap_bombs_hit_the_heap_limit`, the wall is long and not under test.
    let f = failure(run_with(
        e,
        &single("export default () => { const a = []; while (true) a.push({ x: [1, 2, 3] }); };"),
        None,
        json!({}),
        &[],
        Limits::default().with_wall(std::time::Duration::from_secs(10)),
    ));
    assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}");
    // A third of the heap (an array of numbers costs 16 bytes an element on QuickJS, 8 on V8)
    // kept reachable from module state, then a 40 MiB buffer, again and again on one engine:
    // each call must get the budget back.
    let hold = single(
        "const kept = []; export default () => { for (let i = 0; i < 1500; i++) kept.push(new Array(1000).fill(i)); return { n: kept.length }; };",
    );
    let buffer = single(
        "export default () => { const b = new Uint8Array(40 * 2 ** 20); b[b.length - 1] = 7; return { n: b.length, last: b[b.length - 1] }; };",
    );
    for _ in 0..3 {
        let out = output(run_with(e, &hold, None, json!({}), &[], Limits::default()));
        assert_eq!(out, json!({"n": 1500}));
        let out = output(run_with(
            e,
            &buffer,
            None,
            json!({}),
            &[],
            Limits::default(),
        ));
        assert_eq!(out, json!({"n": 40 * 1024 * 1024, "last": 7}));
    }
}

/// Narrowed heap and stack limits apply, and the next call with the default limits gets the
/// default limits back.
pub fn narrowed_limits_apply(e: &mut dyn Engine) {
    let depth = single(
        "export default () => { let d = 0; const f = () => { d += 1; f(); }; try { f(); } catch (_) {} return { d }; };",
    );
    let deepest = |e: &mut dyn Engine, limits: Limits| -> u64 {
        let out = output(run_with(e, &depth, None, json!({}), &[], limits));
        out["d"].as_u64().unwrap()
    };
    let narrow = Limits {
        stack_bytes: Limits::default().stack_bytes / 8,
        ..Limits::default()
    };
    let wide = deepest(e, Limits::default());
    let small = deepest(e, narrow);
    assert!(
        small * 2 < wide,
        "{small} frames at 1/8 of the stack, {wide} at all of it"
    );
    let f = failure(run_with(
        e,
        &single("function f(n) { return f(n + 1) + 1; } export default () => ({ v: f(0) });"),
        None,
        json!({}),
        &[],
        narrow,
    ));
    assert_eq!(f.limit, Some(Limit::StackBytes), "{f}");
    assert!(
        f.message.contains(&narrow.stack_bytes.to_string()),
        "{}",
        f.message
    );
    let again = deepest(e, Limits::default());
    assert!(
        again * 2 > wide,
        "{again} frames after narrowing, {wide} before"
    );

    let twenty_mib = single(
        "export default () => { const kept = []; for (let i = 0; i < 2000; i++) kept.push(new Array(1000).fill(i)); return { n: kept.length }; };",
    );
    let small_heap = Limits {
        heap_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let f = failure(run_with(e, &twenty_mib, None, json!({}), &[], small_heap));
    assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}");
    let out = output(run_with(
        e,
        &twenty_mib,
        None,
        json!({}),
        &[],
        Limits::default(),
    ));
    assert_eq!(out, json!({"n": 2000}));
}

pub fn promises_settle_or_fail_clearly(e: &mut dyn Engine) {
    let out = output(run(
        e,
        "export default async () => { let p = Promise.resolve(0); for (let i = 0; i < 5000; i++) p = p.then(v => v + 1); return { v: await p }; };",
        json!({}),
    ));
    assert_eq!(out, json!({"v": 5000}));
    for src in [
        "export default () => new Promise(() => {});",
        "await new Promise(() => {}); export default () => ({});",
    ] {
        let f = failure(run(e, src, json!({})));
        assert_eq!(f.code, FailureCode::ExecutionFailed, "{src}: {f}");
        assert!(f.message.contains("never settled"), "{src}: {}", f.message);
    }
    let f = failure(run(
        e,
        "export default async () => { throw new RangeError('nope'); };",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ExecutionFailed);
    assert!(f.message.contains("RangeError: nope"), "{}", f.message);
}

pub fn outputs_must_be_json(e: &mut dyn Engine) {
    for (src, needle) in [
        ("export default () => undefined;", "undefined"),
        (
            "export default () => ({ f() {} });",
            "output.f is a function",
        ),
        ("export default () => ({ s: Symbol('x') });", "symbol"),
        ("export default () => ({ b: 10n });", "BigInt"),
        (
            "export default () => { const o = {}; o.self = o; return o; };",
            "cycle",
        ),
        (
            "export default () => ({ a: [1, undefined] });",
            "output.a[1]",
        ),
        ("export default () => ({ m: new Map() });", "Map"),
        ("export default () => ({ n: NaN });", "NaN"),
    ] {
        let f = failure(run(e, src, json!({})));
        assert_eq!(f.code, FailureCode::OutputRejected, "{src}: {f}");
        assert!(f.message.contains(needle), "{src}: {}", f.message);
    }
    let limits = Limits {
        output_bytes: 1000,
        ..Limits::default()
    };
    let f = failure(run_with(
        e,
        &single("export default () => ({ s: 'x'.repeat(2000) });"),
        None,
        json!({}),
        &[],
        limits,
    ));
    assert_eq!(f.limit, Some(Limit::OutputBytes));
}

pub fn syntax_errors_and_throws(e: &mut dyn Engine) {
    let f = failure(run(e, "export default () => { ;;; +++ };", json!({})));
    assert_eq!(f.code, FailureCode::ModuleRejected, "{f}");
    let f = failure(run(
        e,
        "export default () => { throw 'plain'; };",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ExecutionFailed);
    assert!(f.message.contains("plain"));
    let f = failure(run(
        e,
        "throw new Error('top'); export default () => ({});",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ExecutionFailed);
    assert!(f.message.contains("top"));
}

pub fn pages_arrive_as_record_texts(e: &mut dyn Engine) {
    let b = single(
        "export default (i) => ({ n: i.runx_page.records.length, ids: i.runx_page.records.map(r => JSON.parse(r).id ?? null), idx: i.runx_page.page_index, k: i.k });",
    );
    let records: [&[u8]; 3] = [br#"{"id":1}"#, br#"{"id":"\u00e9,]"}"#, b"[3]"];
    let blob = records.concat();
    let mut ends = Vec::new();
    let mut at = 0u32;
    for r in records {
        at += r.len() as u32;
        ends.push(at);
    }
    let meta = br#"{"page_index":2,"state":null}"#;
    let input = br#"{"k":"v"}"#;
    let env = BTreeMap::new();
    let out = e
        .call(&EngineCall {
            bundle: &b,
            export: None,
            input,
            page: Some(PageInput {
                meta,
                blob: &blob,
                ends: &ends,
            }),
            environment: &env,
            limits: Limits::default(),
        })
        .unwrap();
    let v: Value = serde_json::from_slice(&out.output).unwrap();
    assert_eq!(
        v,
        json!({"n": 3, "ids": [1, "é,]", null], "idx": 2, "k": "v"})
    );
}

/// Instantiates every conformance test for one engine.
macro_rules! engine_suite {
    ($module:ident, $make:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            macro_rules! case {
                ($name:ident) => {
                    #[test]
                    fn $name() {
                        let mut engine = $make;
                        super::$name(&mut engine);
                    }
                };
            }
            case!(absent_globals);
            case!(only_intrinsics_are_global);
            case!(intrinsics_are_present);
            case!(clock_is_pinned);
            case!(math_random_throws);
            case!(console_is_captured_and_bounded);
            case!(exports_and_arguments);
            case!(imports_resolve_inside_the_bundle);
            case!(escapes_are_module_rejected);
            case!(wall_stops_infinite_loops);
            case!(heap_bombs_hit_the_heap_limit);
            case!(heap_bomb_in_a_builtin_is_answered_by_the_worker);
            case!(infinite_recursion_is_typed);
            case!(nothing_survives_between_calls);
            case!(module_state_and_intrinsics_start_over);
            case!(queued_jobs_do_not_cross_calls);
            case!(heap_budget_starts_over);
            case!(narrowed_limits_apply);
            case!(promises_settle_or_fail_clearly);
            case!(outputs_must_be_json);
            case!(syntax_errors_and_throws);
            case!(pages_arrive_as_record_texts);
        }
    };
}

engine_suite!(quickjs, runx_worker::quickjs::QuickJs::new());
#[cfg(feature = "v8")]
engine_suite!(v8, runx_worker::v8::V8::new());
