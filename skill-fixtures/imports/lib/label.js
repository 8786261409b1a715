import { sum } from "./math.mjs";
export const label = (x) => `#${x}/${sum([x, x])}`;
