export function answer() { return { ok: true }; }
