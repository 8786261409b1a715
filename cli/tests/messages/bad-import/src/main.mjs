import { helper } from "./gone.mjs";
export function go() { return { ok: helper() }; }
