export function greet({ name, excited }) { return { greeting: `Hello, ${name}${excited ? "!" : "."}` }; }
export const notAFunction = 3;
export class Greeter { constructor({ name }) { this.greeting = `Hello, ${name}.`; } }
export function* steps() { yield { greeting: "Hello." }; }
