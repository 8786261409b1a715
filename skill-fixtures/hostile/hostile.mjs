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
