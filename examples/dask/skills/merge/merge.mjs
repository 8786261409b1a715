// The reduce step: adds up the tallies of every archive, in any order.
export function merge({ parts }) {
  const total = { archives: parts.length, orders: 0, amount: 0, by_region: {} };
  for (const part of parts) {
    total.orders += part.orders;
    total.amount += part.amount;
    for (const [region, amount] of Object.entries(part.by_region)) {
      total.by_region[region] = (total.by_region[region] ?? 0) + amount;
    }
  }
  const regions = Object.keys(total.by_region).sort();
  const by_region = {};
  for (const r of regions) by_region[r] = total.by_region[r];
  let top_region = "";
  for (const r of regions) if (top_region === "" || by_region[r] > by_region[top_region]) top_region = r;
  return { ...total, by_region, top_region };
}
