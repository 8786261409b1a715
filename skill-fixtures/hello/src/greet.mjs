// A greeting skill: a named export that reads its environment, and an async default export.
export function greet(inputs, { environment }) {
  const mark = inputs.excited ? "!" : ".";
  return {
    greeting: `Hello, ${inputs.name}${mark}`,
    region: environment.REGION,
    trace: environment.TRACE_LABEL ?? null,
  };
}

export default async function shout(inputs) {
  await null;
  return { greeting: `HELLO, ${inputs.name.toUpperCase()}!` };
}

export function wrongOutput() {
  return { greeting: 42 };
}
