import { readFileSync } from "node:fs";
export function go() { return { text: readFileSync("/etc/passwd", "utf8") }; }
