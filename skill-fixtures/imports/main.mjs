import { sum } from "./lib/math.mjs";
import { label } from "./lib/label.js";

export function summarize({ values = [1, 2, 3] }) {
  return { total: sum(values), labels: values.map(label) };
}
