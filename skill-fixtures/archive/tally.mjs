// A map/fold runner over the same archive (a runx extension, `pages.map` and `pages.fold`):
// each page is tallied on its own, on any worker and in any order (`tallyPage`), and the
// tallies are merged strictly in page order (`mergeTallies`), so the output is the same for
// any number of workers.
export function tallyPage(inputs) {
  const page = inputs.runx_page;
  if ("state" in page) throw new Error("a map sees no state");
  const tally = { matched: [], scanned: 0, favorites: 0 };
  for (const text of page.records) {
    const record = JSON.parse(text);
    const tweet = record.tweet ?? record;
    tally.scanned += 1;
    tally.favorites += Number(tweet.favorite_count ?? 0);
    if (String(tweet.full_text ?? "").includes(inputs.keyword)) tally.matched.push(tweet.id_str);
  }
  return tally;
}

export function mergeTallies(inputs) {
  const page = inputs.runx_page;
  if ("records" in page) throw new Error("a fold sees the page's result, not its records");
  const state = page.state ?? { matched: [], scanned: 0, favorites: 0, pages: 0 };
  const tally = page.result;
  for (const id of tally.matched) {
    if (state.matched.length < 100) state.matched.push(id);
  }
  state.scanned += tally.scanned;
  state.favorites += tally.favorites;
  state.pages += 1;
  const done = inputs.stop_after > 0 && state.scanned >= inputs.stop_after;
  if (page.eof || done) {
    return {
      runx_page: { state, done },
      matched: state.matched,
      scanned: state.scanned,
      favorites: state.favorites,
      pages: state.pages,
      source: page.whole_digest,
    };
  }
  return { runx_page: { state } };
}

// The same tally as one sequential page function: the reference a map/fold run must equal.
export function tallySequential(inputs) {
  const { state, ...page } = inputs.runx_page;
  const result = tallyPage({ ...inputs, runx_page: page });
  const { records, ...meta } = page;
  return mergeTallies({ ...inputs, runx_page: { ...meta, state: state ?? null, result } });
}

// A hostile map: page 3 fails after a while, page 5 at once, every other page succeeds. The
// run fails at page 3, the first failing page in page order, whichever failed first.
export function failingTally(inputs) {
  const page = inputs.runx_page;
  if (page.page_index === 3) {
    let spin = 0;
    for (let k = 0; k < 20000000; k++) spin = (spin + k) % 7;
    throw new Error(`page three is cursed (${spin >= 0})`);
  }
  if (page.page_index === 5) throw new Error("page five is cursed");
  return tallyPage(inputs);
}

// A fold whose state outgrows the 2 MiB carried between pages.
export function fatFold(inputs) {
  return { runx_page: { state: "x".repeat(3 * 1024 * 1024) } };
}
