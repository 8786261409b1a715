export function greet({ name, excited }) { return { greeting: `Hello, ${name}${excited ? "!" : "."}` }; }
export const notAFunction = 3;
