export function greet({ name, excited }, { environment }) {
  return { greeting: `Hello, ${name}${excited ? "!" : "."} (${environment.REGION})` };
}
export function throws() {
  throw new Error("the ledger is empty");
}
export function spins() {
  for (;;) {}
}
export function wrongOutput() {
  return { greeting: "hi" };
}
export function notObject() {
  return [1, 2, 3];
}
export function page({ runx_page }) {
  return { done: true, state: null, output: { records: runx_page.records.length } };
}
