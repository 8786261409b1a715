export function ok({ n }) {
  return { doubled: n * 2 };
}

export function throws() {
  throw new RangeError("closure: refused on purpose");
}

export function spins() {
  for (;;) {}
}
