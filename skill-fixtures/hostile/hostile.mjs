// Modules that try to escape or exhaust the worker. Each runner must fail with a typed error.
export function spin() { for (;;) {} }
export function heap() { const a = new Array(1e9).fill(1); return { n: a.length }; }
export function recurse() { const f = (n) => f(n + 1) + 1; return { v: f(0) }; }
export function random() { return { r: Math.random() }; }
export async function dynamicImport() { await import("./escape.mjs"); return {}; }
export function never() { return new Promise(() => {}); }
export function giant() { return { s: "x".repeat(5 * 1024 * 1024) }; }
export function globals() {
  const names = ["process", "require", "fetch", "setTimeout", "Deno", "crypto", "performance",
    "WeakRef", "FinalizationRegistry", "SharedArrayBuffer", "Atomics"];
  return { visible: names.filter((n) => typeof globalThis[n] !== "undefined"), now: Date.now() };
}

// Routes to the real clock: a replaced Reflect.construct, and the stack frames a
// prepareStackTrace hook would hand out while the Date constructor runs a valueOf.
export function clock() {
  let seen = null;
  const construct = Reflect.construct;
  Reflect.construct = (t, a, n) => { seen = new t().getTime(); return construct(t, a, n); };
  const viaConstruct = new Date().getTime();
  Reflect.construct = construct;
  Error.prepareStackTrace = (e, sites) => sites;
  let frames = "string";
  new Date({ valueOf() { frames = typeof new Error().stack; return 0; } });
  return { viaConstruct, seen, frames };
}
// Output values as JSON.stringify writes them, and what it cannot carry.
export function loose() {
  return { a: 1, b: undefined, f() {}, n: NaN, d: new Date(), m: new Map([[1, 2]]), l: [undefined, Infinity] };
}
export function deep() { let v = {}; for (let i = 0; i < 100; i++) v = { v }; return v; }
export function surrogate() { return { items: ["ok", "bad \uD800"] }; }
// The words the engines use for their limits, thrown by the module: its own failure.
export function forged() { throw new Error("out of memory"); }
export function throwNull() { throw null; }
export function bigThrow() { throw "x".repeat(20 * 1024 * 1024); }
export function chatty() { console.log("a\uD800b"); for (let i = 0; i < 100000; i++) console.log(); return { ok: true }; }
