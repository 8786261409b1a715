//! Engine-level conformance: each test body takes the engine as a parameter and the
//! `engines!` macro instantiates it for every engine built (QuickJS always; V8 with `v8`).

use super::single;
use runx_worker::{
    Call, ConsoleLog, Engine, EngineCall, EngineOutput, Failure, FailureCode, Limit, Limits,
    ModuleBundle, PageInput, Pool, PoolConfig,
};
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
        continues: false,
        probe: false,
        keep_module: false,
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
    let allowed: Vec<&str> = runx_worker::ALLOWED_GLOBALS
        .iter()
        .copied()
        .chain(runx_worker::INSTALLED_GLOBALS.iter().copied())
        .collect();
    for n in out["names"].as_array().unwrap() {
        let n = n.as_str().unwrap();
        assert!(allowed.contains(&n), "unexpected global {n}");
    }
}

pub fn intrinsics_are_present(e: &mut dyn Engine) {
    let names: Vec<&str> = runx_worker::ALLOWED_GLOBALS
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

/// Date texts read back, on both engines: what `toString`, `toUTCString` and `toISOString`
/// write is what `Date.parse` reads; the ISO forms of the specification parse, with their
/// offsets; any other text is NaN.
pub fn dates_parse_what_they_print(e: &mut dyn Engine) {
    let out = output(run(
        e,
        r#"export default () => {
  const back = [];
  for (const t of [0, 1.7e12 + 123, -62198755200000, 8.64e15, -1, 951782400000]) {
    const d = new Date(t);
    const s = Math.floor(t / 1000) * 1000;
    back.push([Date.parse(d.toString()) === s, Date.parse(d.toUTCString()) === s, Date.parse(d.toISOString()) === t, new Date(d.toString()).getTime() === s]);
  }
  const parse = {};
  for (const text of ["2024-01-01", "2024-01", "2024", "2024-01-01T10:00Z", "2024-01-01T10:00:30.5+02:00",
      "+002024-01-01T00:00:00.000Z", "-000001-01-01T00:00:00Z", "2024-01-01T24:00:00Z", "2024-02-29", "2023-02-29",
      "2024-01-01T00:00:00z", "2024/01/01", "Jan 1 2024", "-000000-01-01T00:00:00Z", "2024-1-1", "x",
      "Tue Nov 14 2023 22:13:20 GMT+0130", "Tue Nov 14 2023 22:13:20 GMT+0000 (Coordinated Universal Time)",
      "Tue, 14 Nov 2023 22:13:20 GMT"]) parse[text] = Date.parse(text);
  return { back, parse, text: new Date(0).toString(), time: new Date(0).toTimeString(), called: Date() };
};"#,
        json!({}),
    ));
    for row in out["back"].as_array().unwrap() {
        assert_eq!(row, &json!([true, true, true, true]), "{out}");
    }
    let n = |x: i64| json!(x);
    let nan = Value::Null; // NaN is written as null
    assert_eq!(
        out["parse"],
        json!({
            "2024-01-01": n(1_704_067_200_000),
            "2024-01": n(1_704_067_200_000),
            "2024": n(1_704_067_200_000),
            "2024-01-01T10:00Z": n(1_704_103_200_000),
            "2024-01-01T10:00:30.5+02:00": n(1_704_096_030_500),
            "+002024-01-01T00:00:00.000Z": n(1_704_067_200_000),
            "-000001-01-01T00:00:00Z": n(-62_198_755_200_000),
            "2024-01-01T24:00:00Z": n(1_704_153_600_000),
            "2024-02-29": n(1_709_164_800_000),
            "2023-02-29": nan,
            "2024-01-01T00:00:00z": nan,
            "2024/01/01": nan,
            "Jan 1 2024": nan,
            "-000000-01-01T00:00:00Z": nan,
            "2024-1-1": nan,
            "x": nan,
            "Tue Nov 14 2023 22:13:20 GMT+0130": n(1_699_994_600_000),
            "Tue Nov 14 2023 22:13:20 GMT+0000 (Coordinated Universal Time)": n(1_700_000_000_000),
            "Tue, 14 Nov 2023 22:13:20 GMT": n(1_700_000_000_000),
        })
    );
    assert_eq!(out["text"], "Thu Jan 01 1970 00:00:00 GMT+0000");
    assert_eq!(out["time"], "00:00:00 GMT+0000");
    assert_eq!(out["called"], "Thu Jan 01 1970 00:00:00 GMT+0000");
}

/// Numbers in other radices and without a locale, the same text on both engines.
pub fn numbers_print_alike_in_every_radix(e: &mut dyn Engine) {
    let out = output(run(
        e,
        "export default () => ({ a: (2 ** 60).toString(7), b: (0.1).toString(3), c: (255.5).toString(16), d: (-12.375).toString(8), e: (1e21).toString(36), f: (1234.5).toLocaleString(), g: (12345n).toLocaleString(), h: ['b', 'a', 'B', 'ä'].sort((x, y) => x.localeCompare(y)), i: (() => { try { (1).toString(1); } catch (e) { return e.name; } })(), j: (5).toString(), k: (NaN).toString(2), l: (-0).toString(2) })",
        json!({}),
    ));
    assert_eq!(
        out,
        json!({
            // Exact digits of 2^60 (V8 wrote ...064200, QuickJS ...065400).
            "a": "2031000661631341065361",
            // The shortest digits that read back as 0.1 (V8's algorithm).
            "b": "0.0022002200220022002200220022002201",
            "c": "ff.8",
            "d": "-14.3",
            "e": "5v1j4f4ds79m9s",
            "f": "1234.5",
            "g": "12345",
            "h": ["B", "a", "b", "ä"],
            "i": "RangeError",
            "j": "5",
            "k": "NaN",
            "l": "0"
        })
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

/// runx's one global of its own, as runx's worker has it: frozen, not enumerable, the four
/// strings of the `url` crate, runx's TypeError for a text that is not an absolute URL.
pub fn runx_parse_url_is_runx_own(e: &mut dyn Engine) {
    let out = output(run(
        e,
        r#"export default (inputs) => {
            const caught = (f) => { try { f(); return null; } catch (e) { return `${e.name}: ${e.message}`; } };
            const before = Runx.parseUrl;
            return {
                frozen: Object.isFrozen(Runx) && Object.isFrozen(Runx.parseUrl),
                keys: Object.keys(Runx),
                enumerable: Object.keys(globalThis).includes("Runx"),
                replaced: caught(() => { Runx.parseUrl = () => 1; }) !== null && Runx.parseUrl === before,
                shape: [Runx.parseUrl.name, Runx.parseUrl.length, String(Runx.parseUrl).includes("[native code]")],
                parsed: inputs.urls.map((u) => Runx.parseUrl(u)),
                proto: Object.getPrototypeOf(Runx.parseUrl(inputs.urls[0])) === Object.prototype,
                object: Runx.parseUrl({ toString: () => "http://a.example/" }).href,
                refused: caught(() => Runx.parseUrl("not an absolute URL")),
                none: caught(() => Runx.parseUrl()),
                symbol: caught(() => Runx.parseUrl(Symbol("s"))),
                surrogate: Runx.parseUrl("https://a.example/\ud800").href,
                long: caught(() => Runx.parseUrl("https://a.example/" + "a".repeat(4194304))),
                hostile: (() => {
                    // What module code may replace does not reach the answer.
                    Object.defineProperty(Array.prototype, "0", { get() { return "evil"; }, set(v) {}, configurable: true });
                    String.prototype[Symbol.split] = () => ["evil"];
                    String.prototype.slice = () => "evil";
                    Object.defineProperty(Object.prototype, "href", { set(v) {}, configurable: true });
                    return Runx.parseUrl("https://b.example/p").href;
                })(),
            };
        };"#,
        json!({"urls": ["https://Example.com:8443/a?q=1#fragment", "sc-domain:example.com", "HTTP://[::1]:80/x/../y"]}),
    ));
    assert_eq!(out["frozen"], true, "{out}");
    assert_eq!(out["keys"], json!([]), "{out}");
    assert_eq!(out["enumerable"], false, "{out}");
    assert_eq!(out["replaced"], true, "{out}");
    assert_eq!(out["shape"], json!(["parseUrl", 1, true]), "{out}");
    assert_eq!(
        out["parsed"],
        json!([
            {"href": "https://example.com:8443/a?q=1#fragment", "origin": "https://example.com:8443", "protocol": "https:", "hostname": "example.com"},
            {"href": "sc-domain:example.com", "origin": "null", "protocol": "sc-domain:", "hostname": ""},
            {"href": "http://[::1]/y", "origin": "http://[::1]", "protocol": "http:", "hostname": "[::1]"},
        ]),
        "{out}"
    );
    assert_eq!(out["proto"], true, "{out}");
    assert_eq!(out["object"], "http://a.example/", "{out}");
    let refused = "TypeError: Runx.parseUrl requires an absolute URL: relative URL without a base";
    assert_eq!(out["refused"], refused, "{out}");
    assert_eq!(out["none"], refused, "{out}");
    assert!(
        out["symbol"].as_str().unwrap().starts_with("TypeError"),
        "{out}"
    );
    assert_eq!(out["surrogate"], "https://a.example/%EF%BF%BD", "{out}");
    assert_eq!(out["hostile"], "https://b.example/p", "{out}");
    assert_eq!(
        out["long"], "TypeError: Runx.parseUrl takes a text of at most 4194304 characters",
        "{out}"
    );
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
    // Every line counts its text and its line break; what is kept is a prefix.
    assert_eq!(out.log.lines.len(), 64 * 1024 / 1001);
    assert_eq!(
        out.log.kept_bytes() + out.log.dropped_bytes as usize,
        200 * 1001
    );
}

/// Empty lines are not free, and a hundred thousand of them are quick (the capture was
/// quadratic: 4.6 s).
pub fn console_counts_every_byte(e: &mut dyn Engine) {
    let out = run(
        e,
        "export default () => { for (let i = 0; i < 100000; i++) console.log(); return {}; };",
        json!({}),
    )
    .unwrap();
    assert_eq!(out.log.lines.len(), 64 * 1024);
    assert_eq!(out.log.dropped_bytes, 100_000 - 64 * 1024);
    let limits = Limits {
        log_bytes: 0,
        ..Limits::default()
    };
    let out = run_with(
        e,
        &single("export default () => { console.log('abc'); console.log(''); return {}; };"),
        None,
        json!({}),
        &[],
        limits,
    )
    .unwrap();
    assert!(out.log.lines.is_empty());
    assert_eq!(out.log.dropped_bytes, 5);
    // A line of 40 MiB in a 64 MiB heap, too large to copy, is counted by its UTF-8 bytes (it
    // was dropped without a count on QuickJS), and the lines after it are counted too.
    let out = run(
        e,
        "export default () => { console.log('x'.repeat(40 * 1024 * 1024)); console.log('é\\ud800'.repeat(4)); console.log('y'); return {}; };",
        json!({}),
    )
    .unwrap();
    assert!(out.log.lines.is_empty(), "{:?}", out.log.lines.len());
    assert_eq!(out.log.dropped_bytes, (40 << 20) + 1 + 5 * 4 + 1 + 2);
    // On QuickJS, a line of non-ASCII text and lone surrogates whose well-formed copy does not
    // fit an 8 MiB heap is counted by its UTF-8 bytes (2 for `é`, 3 for the U+FFFD a lone
    // surrogate becomes), as a line that fits would be. (V8 measures a line without copying
    // it, in the sink.) The count is a loop over the text: the wall is widened for a debug
    // build.
    if e.name() == "quickjs" {
        let limits = Limits {
            heap_bytes: 8 << 20,
            wall_milliseconds: 20_000,
            ..Limits::default()
        };
        let out = run_with(
            e,
            &single(
                "export default () => { console.log('é\\ud800'.repeat(1000000)); console.log('y'); return {}; };",
            ),
            None,
            json!({}),
            &[],
            limits,
        )
        .unwrap();
        assert!(out.log.lines.is_empty(), "{:?}", out.log.lines.len());
        assert_eq!(out.log.dropped_bytes, 5 * 1_000_000 + 1 + 2);
    }
}

/// Logging never throws into the module: lone surrogates become U+FFFD, values that cannot be
/// formatted print as something.
pub fn console_never_throws(e: &mut dyn Engine) {
    let out = run(
        e,
        r#"export default () => {
            const cyclic = {}; cyclic.self = cyclic;
            console.log('a\uD800b', '\uDC00');
            console.log(cyclic);
            console.log(Object.create(null), { toJSON() { throw 1; }, toString() { throw 2; } });
            console.log({ toJSON() { throw new Error('no'); } });
            console.log(Symbol('s'), 10n, undefined, null);
            console.info({ k: '\uD83D' });
            return { ok: true };
        };"#,
        json!({}),
    )
    .unwrap();
    let v: Value = serde_json::from_slice(&out.output).unwrap();
    assert_eq!(v, json!({"ok": true}));
    let messages: Vec<&str> = out.log.lines.iter().map(|l| l.message.as_str()).collect();
    assert_eq!(messages[0], "a\u{FFFD}b \u{FFFD}");
    assert_eq!(messages[1], "[object Object]");
    assert_eq!(messages[2], "{} [unprintable]");
    assert_eq!(messages[3], "[object Object]");
    assert_eq!(messages[4], "Symbol(s) 10 undefined null");
    // JSON.stringify escapes the lone surrogate, so the line is well-formed as it is.
    assert_eq!(messages[5], "{\"k\":\"\\ud83d\"}");
}

/// Every route to the real clock that module code has: replaced intrinsics the prelude used to
/// read at call time, subclassing, `new.target`, proxies, and stack frames handed out by
/// `prepareStackTrace` while the real constructor waits on a `valueOf`.
pub fn clock_capture_routes(e: &mut dyn Engine) {
    let src = r#"
        const real = new Map();
        const note = (d) => { const t = d instanceof Object && typeof d.getTime === 'function' ? d.getTime() : d; real.set(real.size, t); };
        export default () => {
            const out = {};
            const construct = Reflect.construct, apply = Reflect.apply;
            // 1. A replaced Reflect.construct sees what the prelude constructs.
            Reflect.construct = (t, a, n) => { try { note(new t()); } catch (_) {} return construct(t, a, n); };
            out.construct = new Date().getTime();
            Reflect.construct = construct;
            // 2. A replaced Reflect.apply, Function.prototype.call/apply/bind.
            Reflect.apply = (f, t, a) => { note(t); return apply(f, t, a); };
            const call = Function.prototype.call, fapply = Function.prototype.apply;
            Function.prototype.call = function (t, ...a) { note(t); return apply(this, t, a); };
            Function.prototype.apply = function (t, a) { note(t); return apply(this, t, a); };
            out.apply = [new Date().getTime(), Date.parse(Date()), Date.now()];
            Reflect.apply = apply; Function.prototype.call = call; Function.prototype.apply = fapply;
            // 3. A replaced Date.prototype.toString sees the date Date() formats.
            const toString = Date.prototype.toString;
            Date.prototype.toString = function () { note(this); return toString.call(this); };
            out.string = Date.parse(Date());
            Date.prototype.toString = toString;
            // 4. Subclasses, new.target, proxies as new.target, the constructor of a date.
            class Sub extends Date { constructor() { super(); } }
            out.sub = [new Sub().getTime(), new Sub() instanceof Sub];
            const getTime = Date.prototype.getTime;
            out.target = getTime.call(Reflect.construct(Date, [], function () {}));
            const trap = new Proxy(function () {}, { get(t, k) { note(new Error().stack); return Date.prototype; } });
            out.proxy = Reflect.construct(Date, [], trap).getTime();
            out.ctor = new (Object.getPrototypeOf(new Date()).constructor)().getTime();
            out.proxied = new (new Proxy(Date, {}))().getTime();
            // 5. Iterators and inherited setters the prelude might use on its own arrays.
            const iter = Array.prototype[Symbol.iterator];
            Array.prototype[Symbol.iterator] = function* () { note(this); yield* iter.call(this); };
            Object.defineProperty(Array.prototype, '0', { set(v) { note(v); }, configurable: true });
            out.arrays = [new Date().getTime(), new Date(5).getTime(), new Date(2020, 1).getFullYear()];
            delete Array.prototype[0];
            Array.prototype[Symbol.iterator] = iter;
            // 6. Stack frames: every function on the stack while module code runs inside Date.
            let frames = [];
            Error.prepareStackTrace = (err, sites) => sites;
            const probe = { valueOf() { const s = new Error().stack; if (typeof s !== 'string') frames = s; return 7; } };
            out.valueOf = new Date(probe).getTime();
            out.toPrimitive = new Date({ [Symbol.toPrimitive](hint) { frames.push(hint); return 8; } }).getTime();
            out.stackIsText = typeof new Error().stack;
            out.frames = frames.length > 1 ? frames.slice(0, -1).map((s) => typeof s) : frames;
            Error.prepareStackTrace = undefined;
            // 7. Parsing defaults missing parts without the clock; no Temporal back door.
            note(Date.parse('Jan 1'));
            out.temporal = typeof Date.prototype.toTemporalInstant;
            // A time after 2023 can only come from the machine's clock.
            out.real = [...real.values()].filter((t) => typeof t === 'number' && t > 1.7e12);
            return out;
        };"#;
    let out = output(run(e, src, json!({})));
    assert_eq!(out["real"], json!([]), "{out}");
    assert_eq!(out["construct"], 0);
    assert_eq!(out["apply"], json!([0, 0, 0]));
    assert_eq!(out["string"], 0);
    assert_eq!(out["sub"], json!([0, true]));
    assert_eq!(out["target"], 0);
    assert_eq!(out["proxy"], 0);
    assert_eq!(out["ctor"], 0);
    assert_eq!(out["proxied"], 0);
    assert_eq!(out["arrays"], json!([0, 5, 2020]));
    assert_eq!(out["valueOf"], 7);
    assert_eq!(out["toPrimitive"], 8);
    assert_eq!(
        out["stackIsText"], "string",
        "prepareStackTrace must not take effect"
    );
    assert_eq!(out["frames"], json!(["default"]), "{out}");
    assert_eq!(out["temporal"], "undefined");
}

/// The prelude's helpers (output encoding, console, context) keep working whatever module code
/// replaced before they ran.
pub fn helpers_ignore_replaced_intrinsics(e: &mut dyn Engine) {
    let src = r#"
        export default () => {
            for (const k of ['0', 'parent', 'key', 'depth', 'array', 'code', 'message']) {
                Object.defineProperty(Object.prototype, k, { set() { throw new Error('setter ' + k); }, get() { return 'forged'; }, configurable: true });
            }
            JSON.stringify = () => '{"forged":true}';
            Reflect.apply = () => { throw new Error('apply'); };
            Reflect.construct = () => { throw new Error('construct'); };
            Function.prototype.call = Function.prototype.apply = Function.prototype.bind = () => { throw new Error('call'); };
            Object.freeze = Object.defineProperty = Object.create = () => { throw new Error('object'); };
            Array.isArray = () => false;
            Map.prototype.get = Map.prototype.set = () => { throw new Error('map'); };
            String.prototype.isWellFormed = () => false;
            String.prototype.toWellFormed = () => 'forged';
            String.prototype.charCodeAt = () => 0xd800;
            Number.prototype.valueOf = String.prototype.valueOf = Boolean.prototype.valueOf = () => 1;
            Array.prototype[Symbol.iterator] = function* () { throw new Error('iterator'); };
            console.log('still', { logs: [1] });
            return { a: [1, { b: 'x' }], d: new Date(), n: NaN };
        };"#;
    let out = run(e, src, json!({})).unwrap();
    let v: Value = serde_json::from_slice(&out.output).unwrap();
    assert_eq!(
        v,
        json!({"a": [1, {"b": "x"}], "d": "1970-01-01T00:00:00.000Z", "n": null})
    );
    assert_eq!(out.log.lines[0].message, "still {\"logs\":[1]}");
}

/// Output values are what `JSON.stringify` makes of them, byte for byte, every time.
pub fn outputs_follow_json_stringify(e: &mut dyn Engine) {
    let src = r#"
        const make = () => {
            const shared = { s: 1 };
            return {
                a: 1, b: undefined, f() {}, sym: Symbol('x'), [Symbol('k')]: 1,
                list: [1, undefined, () => 0, Symbol('y'), NaN, -0, Infinity, , 2],
                n: NaN, inf: -Infinity, date: new Date(), later: new Date(86400000),
                custom: { toJSON(key) { return { key, v: 1 }; } },
                map: new Map([[1, 2]]), set: new Set([1]), boxed: [Object(1), Object('s'), Object(false)],
                dag: [shared, shared], nested: { deeper: { x: [[[]]] } },
                get getter() { return 'got'; }, proto: Object.create({ inherited: 1 }),
                typed: new Uint8Array([1, 2]), nul: null, e: new Error('x'), re: /x/g,
            };
        };
        export const expected = () => ({ text: JSON.stringify(make()) });
        export default () => make();"#;
    let b = single(src);
    let first = run_with(e, &b, None, json!({}), &[], Limits::default()).unwrap();
    let again = run_with(e, &b, None, json!({}), &[], Limits::default()).unwrap();
    assert_eq!(first.output, again.output, "deterministic");
    let expected = output(run_with(
        e,
        &b,
        Some("expected"),
        json!({}),
        &[],
        Limits::default(),
    ));
    assert_eq!(
        String::from_utf8(first.output.clone()).unwrap(),
        expected["text"].as_str().unwrap(),
        "the output is JSON.stringify's text"
    );
    let v: Value = serde_json::from_slice(&first.output).unwrap();
    assert_eq!(
        v["list"],
        json!([1, null, null, null, null, 0, null, null, 2])
    );
    assert_eq!(v["date"], "1970-01-01T00:00:00.000Z");
    assert_eq!(v["custom"], json!({"key": "custom", "v": 1}));
    assert_eq!(v["map"], json!({}));
    assert_eq!(v["boxed"], json!([1, "s", false]));
    assert!(v.get("b").is_none() && v.get("f").is_none() && v.get("sym").is_none());
}

pub fn outputs_json_cannot_carry_are_rejected(e: &mut dyn Engine) {
    for (src, needle) in [
        ("export default () => undefined;", "output is undefined"),
        ("export default () => () => 1;", "output is function"),
        (
            "export default () => ({ toJSON() { return undefined; } });",
            "output is undefined",
        ),
        (
            "export default () => ({ a: { b: 10n } });",
            "output.a.b is a BigInt",
        ),
        (
            "export default () => { const o = { a: [] }; o.a.push(o); return o; };",
            "output.a[0] is a cycle back to output",
        ),
        (
            "export default () => { const o = { x: {} }; o.x.y = o.x; return o; };",
            "output.x.y is a cycle back to output.x",
        ),
        (
            r"export default () => ({ list: ['ok', 'a\uD800'] });",
            "output.list[1] is a string with a lone surrogate (U+D800 at index 1)",
        ),
        (
            r"export default () => ({ ['k\uDC01']: 1 });",
            "a property name with a lone surrogate",
        ),
        (
            r"export default () => ({ boxed: [new String('\uDBFF')] });",
            "a string with a lone surrogate",
        ),
        (
            "export default () => ({ t: { toJSON() { throw new Error('nope'); } } });",
            "nope",
        ),
    ] {
        let f = failure(run(e, src, json!({})));
        assert_eq!(f.code, FailureCode::OutputRejected, "{src}: {f}");
        assert!(f.message.contains(needle), "{src}: {}", f.message);
    }
    // A lone surrogate passed through unchanged would have been read back as invalid JSON.
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

/// One nesting limit for both engines, well inside what the host's JSON reader takes.
pub fn output_depth_is_one_documented_limit(e: &mut dyn Engine) {
    let nest = |levels: usize| {
        format!(
            "export default () => {{ let v = 1; for (let i = 1; i < {levels}; i++) v = [v]; return {{ v }}; }};"
        )
    };
    let ok = output(run(e, &nest(100), json!({})));
    let mut v = &ok["v"];
    let mut depth = 1;
    while let Some(inner) = v.get(0) {
        v = inner;
        depth += 1;
    }
    assert_eq!(depth, 100);
    let f = failure(run(e, &nest(101), json!({})));
    assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
    assert_eq!(f.limit, Some(Limit::OutputDepth), "{f}");
    assert!(f.message.contains("output.v[0][0]"), "{}", f.message);
    assert!(
        f.message.contains("output_depth limit is 100"),
        "{}",
        f.message
    );
    // Deep enough to overflow a recursive serializer: still the depth limit, not a crash.
    let f = failure(run(e, &nest(100_000), json!({})));
    assert_eq!(f.limit, Some(Limit::OutputDepth), "{f}");
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

/// A value a module throws is the module's failure, whatever it says: only the engine's own
/// state (its allocator refused, its heap callback fired) makes a failure the heap limit. Each
/// forgery of the engine's words, beside the real limit reached the same way.
pub fn a_thrown_value_is_never_a_limit(e: &mut dyn Engine) {
    let run_source = |e: &mut dyn Engine, src: &str| {
        let limits = Limits::default().with_wall(std::time::Duration::from_secs(10));
        failure(run_with(e, &single(src), None, json!({}), &[], limits))
    };
    // Texts the engines write when they run out of memory or of string length.
    let forged = [
        "new Error('out of memory')",
        "'out of memory'",
        "'InternalError: out of memory'",
        "new RangeError('Invalid string length')",
        "new RangeError('invalid string length')",
        "new RangeError('Array buffer allocation failed')",
        "Object.assign(new Error('string too long'), { name: 'InternalError' })",
        "Object.assign(new Error('out of memory'), { name: 'InternalError' })",
        "null",
    ];
    for value in forged {
        for src in [
            format!("export default () => {{ throw {value}; }};"),
            format!("export default async () => {{ await null; throw {value}; }};"),
            format!("export default () => Promise.reject({value});"),
            format!("throw {value}; export default () => ({{}});"),
        ] {
            let f = run_source(e, &src);
            assert_eq!(f.code, FailureCode::ExecutionFailed, "{src}: {f}");
            assert_eq!(f.limit, None, "{src}: {f}");
        }
    }
    // A length past what the prelude's ArrayBuffer accepts is an argument error on both.
    let f = run_source(e, "export default () => new ArrayBuffer(2 ** 32);");
    assert_eq!(f.code, FailureCode::ExecutionFailed, "{f}");

    // The real limit: a buffer past the budget, uncaught, and the engine's own error thrown
    // again, are the heap limit.
    let big = "new ArrayBuffer(100 * 2 ** 20)";
    for src in [
        format!("export default () => ({{ n: {big}.byteLength }});"),
        format!("export default async () => {{ await null; return {{ n: {big}.byteLength }}; }};"),
        format!("export default () => {{ try {{ {big}; }} catch (e) {{ throw e; }} }};"),
    ] {
        let f = run_source(e, &src);
        assert_eq!(f.code, FailureCode::ResourceLimit, "{src}: {f}");
        assert_eq!(f.limit, Some(Limit::HeapBytes), "{src}: {f}");
    }
    // What a module throws after catching QuickJS's error is its own, in its own words. V8
    // never hands the module its refusal: the call ends at the heap limit there.
    for (thrown, message) in [
        ("String(e)", "InternalError: out of memory"),
        ("null", "the module threw null"),
        ("new Error(e.message)", ""),
        (
            "{ caught: e.name }",
            r#"the module threw an object, {"caught":"InternalError"}"#,
        ),
    ] {
        let src =
            format!("export default () => {{ try {{ {big}; }} catch (e) {{ throw {thrown}; }} }};");
        let f = run_source(e, &src);
        if e.name() == "v8" {
            assert_eq!(f.limit, Some(Limit::HeapBytes), "{src}: {f}");
            continue;
        }
        assert_eq!(f.code, FailureCode::ExecutionFailed, "{src}: {f}");
        assert_eq!(f.limit, None, "{src}: {f}");
        if !message.is_empty() {
            assert_eq!(f.message, message, "{src}");
        }
    }
    // Nor is an error the module throws with the heap nearly full (QuickJS used to read any
    // failure past 90% of the heap as the limit). V8 never lets the module catch: filling its
    // heap inside a builtin even ends the process, which in-process is this test's.
    if e.name() != "v8" {
        let full = "export default () => { const a = []; try { for (;;) a.push(new Array(1000).fill(1)); } catch (e) { a.length -= 2; throw new Error('mine'); } };";
        let f = run_source(e, full);
        assert_eq!(f.code, FailureCode::ExecutionFailed, "{f}");
        assert!(f.message.starts_with("Error: mine"), "{f}");
    }
    // Heap exhaustion by many small objects, on a small heap (QuickJS may have no room left
    // for its error): the limit, sync or async, as after a forgery in the same call.
    let small = Limits {
        heap_bytes: 8 * runx_worker::MIB,
        ..Limits::default()
    }
    .with_wall(std::time::Duration::from_secs(10));
    for src in [
        "export default () => { const a = []; for (;;) a.push({ x: [a.length] }); };",
        "export default async () => { await null; const a = []; for (;;) a.push({ x: [a.length] }); };",
        "export default () => { try { throw null; } catch (_) {} const a = []; for (;;) a.push({ x: [a.length] }); };",
    ] {
        let f = failure(run_with(e, &single(src), None, json!({}), &[], small));
        assert_eq!(f.limit, Some(Limit::HeapBytes), "{src}: {f}");
    }
}

/// Thrown values that are not errors are named for what they are, in the same words on both
/// engines, thrown or rejected, from the export or from the module's top level.
pub fn thrown_values_read_alike_on_every_engine(e: &mut dyn Engine) {
    for (value, message) in [
        ("null", "the module threw null"),
        ("undefined", "the module threw undefined"),
        ("1", "the module threw the number 1"),
        ("-0", "the module threw the number -0"),
        (
            "2 ** -24",
            "the module threw the number 5.960464477539063e-8",
        ),
        ("NaN", "the module threw the number NaN"),
        ("1n", "the module threw the bigint 1n"),
        (
            "-(2n ** 70n)",
            "the module threw the bigint -1180591620717411303424n",
        ),
        ("false", "the module threw the boolean false"),
        ("Symbol('s')", "the module threw a symbol, Symbol(s)"),
        ("Symbol()", "the module threw a symbol, Symbol()"),
        ("{ a: 1 }", r#"the module threw an object, {"a":1}"#),
        ("[1, 'x']", r#"the module threw an object, [1,"x"]"#),
        (
            "{ toJSON() { return undefined; } }",
            "the module threw an object with no JSON form",
        ),
        ("{ b: 1n }", "the module threw an object with no JSON form"),
        ("() => 1", "the module threw a function"),
        ("'x'", "x"),
        ("'null'", "null"),
        ("''", "the module threw an empty string"),
    ] {
        for src in [
            format!("export default () => {{ throw {value}; }};"),
            format!("export default async () => {{ throw {value}; }};"),
            format!("export default () => Promise.reject({value});"),
            format!("throw {value}; export default () => ({{}});"),
            format!("await Promise.reject({value}); export default () => ({{}});"),
        ] {
            let f = failure(run(e, &src, json!({})));
            assert_eq!(f.code, FailureCode::ExecutionFailed, "{src}: {f}");
            assert_eq!(f.message, message, "{src}");
        }
    }
}

/// A string past the engine's longest (2^30 - 1 code units on QuickJS, about 2^29 on V8) is
/// an argument error the module can catch, not a limit: no engine tells it apart from the same
/// error thrown by the module. Cheap to reach with ropes, on both engines.
pub fn a_string_past_the_longest_is_the_modules_failure(e: &mut dyn Engine) {
    for src in [
        "export default () => { let s = 'x'; for (;;) s += s; };",
        "export default () => ({ n: 'x'.repeat(2 ** 30).length });",
    ] {
        let f = failure(run(e, src, json!({})));
        assert_eq!(f.code, FailureCode::ExecutionFailed, "{src}: {f}");
        assert!(f.message.to_lowercase().contains("string"), "{src}: {f}");
    }
    let out = output(run(
        e,
        "export default () => { let s = 'x'; try { for (;;) s += s; } catch (e) { return { caught: e instanceof Error }; } };",
        json!({}),
    ));
    assert_eq!(out, json!({"caught": true}));
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
            "export default () => { const spin = () => { console.log('spin'); Promise.resolve().then(spin); }; spin(); return new Promise(() => {}); };",
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

/// A call's outcome is the one it has alone, whatever ran before it on the engine: a call that
/// registers 40 MiB of `Symbol.for` keys (an isolate-wide table on V8, which no collection
/// empties) or leaves buffers behind changes nothing for the next call, another package's.
pub fn a_call_leaves_nothing_for_the_next(e: &mut dyn Engine) {
    // Numbers cost 16 bytes an element on QuickJS and 8 on V8: 32 MiB of the 64 either way (and
    // more while the array grows).
    let count = if e.name() == "v8" {
        4_000_000
    } else {
        2_000_000
    };
    let victim = single(&format!(
        "export default () => {{ const a = []; for (let i = 0; i < {count}; i++) a.push(i + 0.5); return {{ n: a.length }}; }};"
    ));
    // How many 1 MiB buffers fit before a catchable error (QuickJS), or the call's failure at the
    // heap limit (V8): a measure of what is left.
    let probe = single(
        "export default () => { const kept = []; try { for (;;) kept.push(new ArrayBuffer(2 ** 20)); } catch (e) { return { n: kept.length, error: e.name }; } };",
    );
    let filler = single(
        "export default () => { for (let i = 0; i < 40960; i++) Symbol.for(String(i).padStart(1024, 'k')); return {}; };",
    );
    let writer = single(
        "const left = []; export default () => { for (let i = 0; i < 16; i++) left.push(new ArrayBuffer(2 ** 20)); return {}; };",
    );
    let call = |e: &mut dyn Engine, bundle: &Arc<ModuleBundle>| {
        run_with(e, bundle, None, json!({}), &[], Limits::default())
            .map(|out| serde_json::from_slice::<Value>(&out.output).unwrap())
            .map_err(|(f, _)| (f.code, f.limit))
    };
    let alone = call(e, &victim);
    assert_eq!(alone, Ok(json!({"n": count})));
    let measured = call(e, &probe);
    assert!(
        matches!(&measured, Ok(v) if v["n"].as_u64().unwrap_or(0) > 16)
            || measured == Err((FailureCode::ResourceLimit, Some(Limit::HeapBytes))),
        "{measured:?}"
    );
    for _ in 0..2 {
        assert_eq!(call(e, &filler), Ok(json!({})));
        assert_eq!(call(e, &victim), alone);
        assert_eq!(call(e, &writer), Ok(json!({})));
        assert_eq!(call(e, &probe), measured);
    }
}

/// A runtime (an isolate) the engine makes while the worker waits serves the next call as a
/// runtime made for it would: nothing of an earlier call, and the call's own limits (heap,
/// wall, stack, console), however they differ from the defaults it was made under.
pub fn a_runtime_made_ahead_is_fresh_and_takes_the_calls_limits(e: &mut dyn Engine) {
    let run = |e: &mut dyn Engine, source: &str, limits: Limits| {
        let out = run_with(e, &single(source), None, json!({}), &[], limits);
        e.idle();
        out
    };
    let defaults = Limits::default();
    e.idle();
    output(run(
        e,
        "export default () => { globalThis.left = 1; Object.prototype.polluted = 1; return {}; };",
        defaults,
    ));
    let seen = output(run(
        e,
        "export default () => ({ left: typeof globalThis.left, polluted: typeof ({}).polluted });",
        defaults,
    ));
    assert_eq!(seen, json!({"left": "undefined", "polluted": "undefined"}));

    let heap = Limits {
        heap_bytes: 16 * runx_worker::MIB,
        ..defaults
    };
    let f = failure(run(
        e,
        "export default () => { const a = []; for (;;) a.push('x'.repeat(2 ** 20) + a.length); };",
        heap,
    ));
    assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}");
    assert!(f.message.contains(&heap.heap_bytes.to_string()), "{f}");

    let wall = defaults.with_wall(std::time::Duration::from_secs(1));
    let f = failure(run(e, "export default () => { for (;;) {} };", wall));
    assert_eq!(f.limit, Some(Limit::WallMilliseconds), "{f}");

    let stack = Limits {
        stack_bytes: defaults.stack_bytes / 8,
        ..defaults
    };
    let f = failure(run(
        e,
        "function f(n) { return f(n + 1) + 1; } export default () => ({ v: f(0) });",
        stack,
    ));
    assert_eq!(f.limit, Some(Limit::StackBytes), "{f}");
    assert!(f.message.contains(&stack.stack_bytes.to_string()), "{f}");

    let log = Limits {
        log_bytes: 100,
        ..defaults
    };
    let out = run(
        e,
        "export default () => { console.log('x'.repeat(1000)); return {}; };",
        log,
    )
    .unwrap_or_else(|(f, _)| panic!("{f}"));
    assert!(out.log.dropped_bytes > 0, "{:?}", out.log);
}

/// Resizable ArrayBuffers count against the call's memory on both engines: growing one past
/// `heap_bytes` fails `heap_bytes`, and what it holds leaves less for other buffers.
pub fn resizable_buffers_count_against_the_heap(e: &mut dyn Engine) {
    let grow = single(
        "export default () => { const b = new ArrayBuffer(0, { maxByteLength: 2 ** 30 }); b.resize(300 * 2 ** 20); new Uint8Array(b).fill(1); return { n: b.byteLength }; };",
    );
    let f = failure(run_with(e, &grow, None, json!({}), &[], Limits::default()));
    assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}");
    // Made at its size, and moved by `transfer`: still counted.
    for made in [
        "new ArrayBuffer(300 * 2 ** 20, { maxByteLength: 2 ** 30 })",
        "new ArrayBuffer(8, { maxByteLength: 2 ** 30 }).transfer(300 * 2 ** 20)",
    ] {
        let source = format!(
            "export default () => {{ const b = {made}; new Uint8Array(b).fill(1); return {{ n: b.byteLength }}; }};"
        );
        let f = failure(run_with(
            e,
            &single(&source),
            None,
            json!({}),
            &[],
            Limits::default(),
        ));
        assert_eq!(f.limit, Some(Limit::HeapBytes), "{made}: {f}");
    }
    // 40 MiB held by a resizable buffer and 40 MiB asked of a fixed one do not fit in 64.
    let both = single(
        "export default () => { const r = new ArrayBuffer(0, { maxByteLength: 2 ** 30 }); r.resize(40 * 2 ** 20); let fixed = 'ok'; try { new ArrayBuffer(40 * 2 ** 20); } catch (e) { fixed = e.name; } r.resize(8); return { fixed, n: r.byteLength, resizable: r.resizable }; };",
    );
    let out = run_with(e, &both, None, json!({}), &[], Limits::default());
    match out {
        Ok(out) => assert_eq!(
            serde_json::from_slice::<Value>(&out.output).unwrap(),
            // QuickJS reports running out of memory as an InternalError.
            json!({"fixed": if e.name() == "v8" { "RangeError" } else { "InternalError" }, "n": 8, "resizable": true})
        ),
        // QuickJS may fail the whole call on its one memory limit instead.
        Err((f, _)) => assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}"),
    }
    // The constructor keeps its identity and behaviour.
    let out = output(run(
        e,
        "class Sub extends ArrayBuffer {} export default () => { const s = new Sub(4, { maxByteLength: 16 }); s.resize(12); let plain = ''; try { ArrayBuffer(1); } catch (e) { plain = e.name; } return { sub: s instanceof Sub && s instanceof ArrayBuffer, n: s.byteLength, ctor: new ArrayBuffer(1).constructor === ArrayBuffer, view: ArrayBuffer.isView(new Uint8Array(1)), name: ArrayBuffer.name, length: ArrayBuffer.length, plain, text: /native code/.test(String(ArrayBuffer)) && /native code/.test(String(ArrayBuffer.prototype.resize)) }; };",
        json!({}),
    ));
    assert_eq!(
        out,
        json!({"sub": true, "n": 12, "ctor": true, "view": true, "name": "ArrayBuffer", "length": 1, "plain": "TypeError", "text": true})
    );
}

/// An output too large to send is a typed limit on both engines, never a crash: a 256 MiB
/// string made cheaply (V8 keeps `repeat` as a rope) is refused before its JSON text is made.
pub fn oversized_outputs_are_typed(e: &mut dyn Engine) {
    let f = failure(run(
        e,
        "export default () => ({ s: 'x'.repeat(2 ** 28) });",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
    assert!(
        matches!(f.limit, Some(Limit::OutputBytes | Limit::HeapBytes)),
        "{f}"
    );
    // Many references to one string: small in memory, large as text.
    let f = failure(run(
        e,
        "export default () => { const s = 'y'.repeat(1000); return { a: new Array(10000).fill(s) }; };",
        json!({}),
    ));
    assert_eq!(f.limit, Some(Limit::OutputBytes), "{f}");
    assert!(f.message.contains("output.a["), "{f}");
    // In a worker process, a text that outgrows the heap while it is made (a boxed string is
    // not counted beforehand) is answered as the heap limit, not lost with the process.
    let pool = engine_pool(e);
    let mut call = Call::new(
        single("export default () => ({ s: new String('z'.repeat(2 ** 28)) });"),
        None,
        b"{}".to_vec(),
    );
    call.limits = Limits::default().with_wall(Limits::MAX_WALL);
    let f = pool.call(&call).unwrap_err().failure;
    assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
    assert!(
        matches!(f.limit, Some(Limit::OutputBytes | Limit::HeapBytes)),
        "{f}"
    );
}

/// An input that fills the heap while it is parsed fails `heap_bytes`, never "not a JSON
/// object": 520,000 small objects are 4 MiB of text and more than 64 MiB of heap on QuickJS.
pub fn an_input_too_large_for_the_heap_is_the_heap_limit(e: &mut dyn Engine) {
    let items: Vec<Value> = (0..520_000).map(|_| json!({"a": 0})).collect();
    let out = run(
        e,
        "export default (i) => ({ n: i.items.length });",
        json!({ "items": items }),
    );
    match out {
        Ok(out) => assert_eq!(
            serde_json::from_slice::<Value>(&out.output).unwrap(),
            json!({"n": 520_000})
        ),
        Err((f, _)) => {
            assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
            assert_eq!(f.limit, Some(Limit::HeapBytes), "{f}");
        }
    }
}

/// What the prelude puts in place of intrinsics behaves alike on both engines and as the
/// specification asks, down to the errors (found by attacking it).
pub fn prelude_replacements_behave_alike(e: &mut dyn Engine) {
    let out = output(run(
        e,
        r#"const t = (f) => { try { return f(); } catch (e) { return e.name; } };
export default () => ({
  max: t(() => new ArrayBuffer(0, { maxByteLength: 2 ** 31 }).maxByteLength),
  huge: t(() => new ArrayBuffer(2 ** 31).byteLength),
  transfer: t(() => new ArrayBuffer(8, { maxByteLength: 16 }).transfer(32)),
  transferLength: ArrayBuffer.prototype.transfer.length,
  typedNegative: t(() => new Uint8Array(-1)),
  nowNew: t(() => new Date.now()),
  nowPrototype: Object.hasOwn(Date.now, "prototype") || Object.hasOwn(Math.random, "prototype"),
  native: [console.log, Object.getOwnPropertyDescriptor(Error, "prepareStackTrace").get, Date.now, Math.random]
    .every((f) => /native code/.test(Function.prototype.toString.call(f))),
  logName: console.log.name,
  edge: Date.parse("-271821-04-19T23:00:00-01:00"),
  badOffset: Date.parse("Tue Nov 14 2023 22:13:20 GMT+0099"),
  parseSymbol: t(() => Date.parse(Symbol())),
  compareSymbol: t(() => "a".localeCompare(Symbol())),
})"#,
        json!({}),
    ));
    assert_eq!(
        out,
        json!({
            "max": "RangeError",
            "huge": "RangeError",
            "transfer": "RangeError",
            "transferLength": 0,
            "typedNegative": "RangeError",
            "nowNew": "TypeError",
            "nowPrototype": false,
            "native": true,
            "logName": "log",
            "edge": -8_640_000_000_000_000i64,
            "badOffset": null,
            "parseSymbol": "TypeError",
            "compareSymbol": "TypeError",
        })
    );
    // An argument error thrown out of the module is the module's failure, not a limit.
    let f = failure(run(
        e,
        "export default () => new Uint8Array(-1);",
        json!({}),
    ));
    assert_eq!(f.code, FailureCode::ExecutionFailed, "{f}");
}

/// Console lines and outputs far past their bounds end the call with a limit or are counted,
/// never lose the worker: a 256 MiB line, 300 MiB of lines made from one string, and an output
/// of 300 references to a 1 MiB boxed String (whose text no count can see beforehand).
pub fn giant_logs_and_outputs_never_lose_the_worker(e: &mut dyn Engine) {
    let pool = engine_pool(e);
    for source in [
        "export default () => { console.log('x'.repeat(2 ** 28)); return { ok: 1 }; };",
        "export default () => { console.log(Array(300).fill('x'.repeat(2 ** 20))); return { ok: 1 }; };",
        "export default () => { const s = new String('x'.repeat(2 ** 20)); return { a: Array(300).fill(s) }; };",
        "export default () => { const big = 'y'.repeat(2 ** 24); const s = new String(''); s.toString = () => big; return { a: Array(40).fill(s) }; };",
    ] {
        let mut call = Call::new(single(source), None, b"{}".to_vec());
        call.limits = Limits::default().with_wall(Limits::MAX_WALL);
        match pool.call(&call) {
            Ok(out) => assert_eq!(
                serde_json::from_slice::<Value>(&out.output).unwrap(),
                json!({"ok": 1}),
                "{source}"
            ),
            Err(err) => {
                let f = err.failure;
                assert_eq!(f.code, FailureCode::ResourceLimit, "{source}: {f}");
            }
        }
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
    // A byte range of an artifact as it lies: separators and whitespace between the records,
    // which the spans leave out.
    let blob = br#" {"id":1},
  {"id":"\u00e9,]"} ,[3]"#;
    let spans = [(1, 9), (13, 30), (32, 35)];
    let meta = br#"{"page_index":2,"state":null}"#;
    let input = br#"{"k":"v"}"#;
    let env = BTreeMap::new();
    let mut call = EngineCall {
        bundle: &b,
        export: None,
        input,
        page: Some(PageInput {
            meta,
            blob,
            spans: &spans,
        }),
        environment: &env,
        limits: Limits::default(),
        continues: false,
        probe: false,
        keep_module: false,
    };
    let out = e.call(&call).unwrap();
    let v: Value = serde_json::from_slice(&out.output).unwrap();
    assert_eq!(
        v,
        json!({"n": 3, "ids": [1, "é,]", null], "idx": 2, "k": "v"})
    );
    // A span past the end of the bytes is refused, not read.
    let outside = [(1, 9), (32, 36)];
    call.page = Some(PageInput {
        meta,
        blob,
        spans: &outside,
    });
    let f = e.call(&call).map(|_| ()).unwrap_err().0;
    assert_eq!(f.code, FailureCode::InvalidRequest, "{}", f.message);
}

/// A pool of one worker process running `e`'s engine.
fn engine_pool(e: &dyn Engine) -> Pool {
    Pool::new(PoolConfig::new(super::pool::worker_command().engine(e.name())).size(1)).unwrap()
}

/// A probe (`runx skill check`) loads the module through a real worker, calling nothing, and
/// answers each export with its `typeof`: an export that would throw if called is only
/// described; a failing import or top-level code that throws fails as a call would.
pub fn a_probe_describes_the_exports_without_calling_them(e: &mut dyn Engine) {
    let pool = engine_pool(e);
    let probe = |source: &str| {
        let mut c = Call::new(single(source), None, b"{}".to_vec());
        c.probe = true;
        pool.call(&c)
    };
    let reply = probe(
        "export function greet() { throw new Error('called'); }\nexport const n = 3;\nexport default class {}\nexport const o = null;\nexport function* g() {}\nexport async function* ag() {}\nexport const a = async () => 1;\nexport const m = ({ class() { return 1; } }).class;\nexport const c = class /* c */ extends Object {};\nexport const s = Symbol();",
    )
    .unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&reply.output).unwrap(),
        json!({
            "default": "class", "greet": "function", "n": "number", "o": "null",
            "g": "generator function", "ag": "async generator function", "a": "async function",
            "m": "function", "c": "class", "s": "symbol",
        })
    );
    // What a probe refuses, a call refuses too, before calling it: a generator would
    // otherwise seal `{}`, a class fail with the engine's own text.
    for (export, kind) in [("default", "a class"), ("g", "a generator function")] {
        let c = Call::new(
            single("export default class {}\nexport function* g() { yield 1; }"),
            Some(export).filter(|e| *e != "default"),
            b"{}".to_vec(),
        );
        let f = pool.call(&c).unwrap_err().failure;
        assert_eq!(f.code, FailureCode::ModuleRejected, "{}", f.message);
        assert!(f.message.contains(kind), "{}", f.message);
    }
    let f = probe("throw new Error('top');\nexport default () => 1;")
        .unwrap_err()
        .failure;
    assert!(f.message.contains("top"), "{}", f.message);
    let f = probe("import { x } from './gone.mjs';\nexport default () => x;")
        .unwrap_err()
        .failure;
    assert_eq!(f.code, FailureCode::ModuleRejected, "{}", f.message);
    // The same worker then calls normally.
    let c = Call::new(
        single("export default () => ({ ok: 1 });"),
        None,
        b"{}".to_vec(),
    );
    let reply = pool.call(&c).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&reply.output).unwrap(),
        json!({"ok": 1})
    );
}

/// A 20 MB thrown string used to make a frame over 16 MiB, the worker exit, the call be retried
/// and the restart budget go. Its message now crosses the worker bounded, with its length, and
/// the same worker serves the next call.
pub fn failure_messages_are_bounded_across_the_worker(e: &mut dyn Engine) {
    let pool = engine_pool(e);
    for mb in [10, 20] {
        let mut c = Call::new(
            single(&format!(
                "export default () => {{ throw 'x'.repeat({mb} * 2 ** 20); }};"
            )),
            None,
            b"{}".to_vec(),
        );
        c.idempotent = true;
        c.limits = Limits::default().with_wall(std::time::Duration::from_secs(10));
        let f = pool.call(&c).unwrap_err().failure;
        assert_eq!(
            f.code,
            FailureCode::ExecutionFailed,
            "{}",
            &f.message[..200.min(f.message.len())]
        );
        assert!(
            f.message.len() <= runx_worker::MESSAGE_BYTES,
            "{}",
            f.message.len()
        );
        assert!(
            f.message
                .ends_with(&format!("[message truncated: {} bytes in total]", mb << 20)),
            "{}",
            &f.message[f.message.len() - 80..]
        );
    }
    let pids = pool.worker_pids();
    let ok = pool
        .call(&Call::new(
            single("export default () => ({ ok: 1 });"),
            None,
            b"{}".to_vec(),
        ))
        .unwrap();
    assert_eq!(pids, vec![ok.worker_pid], "no worker was lost");
}

/// Zero is not "unlimited", and no limit goes above its ceiling: the worker answers such a call
/// `invalid_request`, and the pool refuses it before sending it.
pub fn limits_out_of_range_are_invalid_requests(e: &mut dyn Engine) {
    let c = Limits::CEILING;
    let pool = engine_pool(e);
    for bad in [
        Limits { heap_bytes: 0, ..c },
        Limits {
            stack_bytes: 0,
            ..c
        },
        Limits {
            heap_bytes: c.heap_bytes * 2,
            ..c
        },
        Limits {
            stack_bytes: c.stack_bytes + 1,
            ..c
        },
    ] {
        let mut call = Call::new(single("export default () => ({});"), None, b"{}".to_vec());
        call.limits = bad;
        let f = pool.call(&call).unwrap_err().failure;
        assert_eq!(f.code, FailureCode::InvalidRequest, "{bad:?}: {f}");
        // The worker itself refuses it too, whoever sent it.
        let bundle = single("export default () => ({});");
        let header = runx_worker::Header::new(
            9,
            runx_worker::Message::Invoke {
                bundle_digest: bundle.digest(),
                bundle: Some((*bundle).clone()),
                export: None,
                environment: BTreeMap::new(),
                limits: bad,
                input_len: 2,
                probe: false,
                keep_module: false,
                run: None,
                page: None,
            },
        );
        let reply = raw_exchange(e.name(), &header.to_bytes(), b"{}");
        assert_eq!(reply["call_id"], 9);
        assert_eq!(
            reply["failure"]["code"], "invalid_request",
            "{bad:?}: {reply}"
        );
    }
}

/// Sends one frame to a fresh worker process of `engine` and returns its first reply header.
fn raw_exchange(engine: &str, header: &[u8], tail: &[u8]) -> Value {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_runx-worker"))
        .args(["--engine", engine])
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut input = Vec::new();
    runx_worker::write_frame(&mut input, header, &[tail]).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    let mut r: &[u8] = &out.stdout;
    let frame = runx_worker::read_frame(&mut r).unwrap().unwrap();
    let (h, _) = runx_worker::split_payload(&frame).unwrap();
    serde_json::from_slice(h).unwrap()
}

/// Under `ulimit -s 512` deep recursion aborted the worker (SIGABRT, `worker_crashed`): the
/// engine ran on the main thread, whose stack the caller sets. It runs on a thread whose stack
/// the worker sets, so the caller's limit no longer matters.
pub fn deep_recursion_under_a_small_host_stack(e: &mut dyn Engine) {
    let worker = env!("CARGO_BIN_EXE_runx-worker");
    let command = runx_worker::WorkerCommand::new("/bin/sh")
        .arg("-c")
        .arg("ulimit -s 512 && exec /usr/bin/env -i \"$0\" \"$@\"")
        .arg(worker)
        .arg("--engine")
        .arg(e.name());
    let pool = Pool::new(PoolConfig::new(command).size(1)).unwrap();
    let recurse = Call::new(
        single("function f(n) { return f(n + 1) + 1; } export default () => ({ v: f(0) });"),
        None,
        b"{}".to_vec(),
    );
    for _ in 0..2 {
        let f = pool.call(&recurse).unwrap_err().failure;
        assert_eq!(f.code, FailureCode::ResourceLimit, "{f}");
        assert_eq!(f.limit, Some(Limit::StackBytes), "{f}");
    }
    let deep = Call::new(
        single(
            "function f(n) { return n === 0 ? 0 : f(n - 1) + 1; } export default () => ({ v: f(500) });",
        ),
        None,
        b"{}".to_vec(),
    );
    let ok = pool.call(&deep).unwrap();
    assert_eq!(
        serde_json::from_slice::<Value>(&ok.output).unwrap(),
        json!({"v": 500})
    );
}

/// The worker process confines itself before any module runs: no descriptor but its pipes (not
/// even one the caller left open for it), no-new-privileges, a seccomp filter, and no root.
pub fn worker_process_is_confined(e: &mut dyn Engine) {
    // An inheritable descriptor in the caller, as `exec 7<file` in a shell would leave one.
    let leaked = nix::unistd::dup(std::io::stderr()).unwrap();
    let pool = engine_pool(e);
    let r = pool
        .call(&Call::new(
            single("export default () => ({});"),
            None,
            b"{}".to_vec(),
        ))
        .unwrap();
    drop(leaked);
    let pid = r.worker_pid;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(field("NoNewPrivs"), ["1"], "{status}");
    assert_eq!(field("Seccomp"), ["2"], "a filter is installed: {status}");
    assert!(field("Uid").iter().all(|u| *u != "0"), "{status}");
    assert!(field("Gid").iter().all(|g| *g != "0"), "{status}");
    assert!(field("Groups").iter().all(|g| *g != "0"), "{status}");
    let mut fds: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_str().unwrap().parse().unwrap())
        .collect();
    fds.sort();
    assert_eq!(
        fds,
        [0, 1, 2, 3],
        "only its own pipes and its descriptor channel"
    );
    let channel = std::fs::read_link(format!("/proc/{pid}/fd/3")).unwrap();
    assert!(
        channel.to_string_lossy().starts_with("socket:"),
        "fd 3 is the channel: {channel:?}"
    );
}

/// Instantiates every conformance test for one engine.
macro_rules! engine_suite {
    ($module:ident, $make:expr) => {
        mod $module {
            #[allow(
                unused_imports,
                reason = "a case module may use only some of the helpers"
            )]
            use super::*;
            macro_rules! case {
                ($name:ident) => {
                    #[test]
                    fn $name() {
                        super::super::on_engine_thread(|| {
                            let mut engine = $make;
                            super::$name(&mut engine);
                        });
                    }
                };
            }
            case!(absent_globals);
            case!(only_intrinsics_are_global);
            case!(intrinsics_are_present);
            case!(clock_is_pinned);
            case!(math_random_throws);
            case!(runx_parse_url_is_runx_own);
            case!(dates_parse_what_they_print);
            case!(numbers_print_alike_in_every_radix);
            case!(console_is_captured_and_bounded);
            case!(exports_and_arguments);
            case!(imports_resolve_inside_the_bundle);
            case!(escapes_are_module_rejected);
            case!(wall_stops_infinite_loops);
            case!(heap_bombs_hit_the_heap_limit);
            case!(heap_bomb_in_a_builtin_is_answered_by_the_worker);
            case!(a_thrown_value_is_never_a_limit);
            case!(thrown_values_read_alike_on_every_engine);
            case!(a_string_past_the_longest_is_the_modules_failure);
            case!(infinite_recursion_is_typed);
            case!(nothing_survives_between_calls);
            case!(module_state_and_intrinsics_start_over);
            case!(queued_jobs_do_not_cross_calls);
            case!(heap_budget_starts_over);
            case!(a_call_leaves_nothing_for_the_next);
            case!(a_runtime_made_ahead_is_fresh_and_takes_the_calls_limits);
            case!(resizable_buffers_count_against_the_heap);
            case!(oversized_outputs_are_typed);
            case!(an_input_too_large_for_the_heap_is_the_heap_limit);
            case!(prelude_replacements_behave_alike);
            case!(giant_logs_and_outputs_never_lose_the_worker);
            case!(narrowed_limits_apply);
            case!(promises_settle_or_fail_clearly);
            case!(outputs_follow_json_stringify);
            case!(outputs_json_cannot_carry_are_rejected);
            case!(output_depth_is_one_documented_limit);
            case!(console_counts_every_byte);
            case!(console_never_throws);
            case!(clock_capture_routes);
            case!(helpers_ignore_replaced_intrinsics);
            case!(failure_messages_are_bounded_across_the_worker);
            case!(a_probe_describes_the_exports_without_calling_them);
            case!(limits_out_of_range_are_invalid_requests);
            case!(deep_recursion_under_a_small_host_stack);
            case!(worker_process_is_confined);
            case!(syntax_errors_and_throws);
            case!(pages_arrive_as_record_texts);
        }
    };
}

engine_suite!(quickjs, runx_worker::QuickJs::new());
#[cfg(feature = "v8")]
engine_suite!(v8, runx_worker::V8::new());
