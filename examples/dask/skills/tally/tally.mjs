// One page of an order archive at a time: counts orders and sums amounts per region.
export function tally(inputs) {
  const page = inputs.runx_page;
  const state = page.state ?? { orders: 0, amount: 0, by_region: {} };
  for (const text of page.records) {
    const order = JSON.parse(text);
    state.orders += 1;
    state.amount += order.amount;
    state.by_region[order.region] = (state.by_region[order.region] ?? 0) + order.amount;
  }
  return page.eof ? state : { runx_page: { state } };
}
