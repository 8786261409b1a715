// Reports the JSON shape of what it was given.
function shape(v) {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

export default function describe({ payload, label, settings }) {
  return { shape: shape(payload), payload, label: label ?? null, depth: settings.depth };
}
