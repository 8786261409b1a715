// Selects tweets whose text contains a keyword from a `window.YTD.tweets.part0 = [...]` archive,
// one page at a time, keeping a bounded state between pages.
export function selectPage(inputs) {
  const page = inputs.runx_page;
  const state = page.state ?? { matched: [], scanned: 0 };
  for (const text of page.records) {
    const record = JSON.parse(text);
    state.scanned += 1;
    const tweet = record.tweet ?? record;
    if (String(tweet.full_text ?? "").includes(inputs.keyword) && state.matched.length < 100) {
      state.matched.push(tweet.id_str);
    }
  }
  const done = inputs.stop_after > 0 && state.scanned >= inputs.stop_after;
  if (page.eof || done) {
    return { runx_page: { state, done }, matched: state.matched, scanned: state.scanned, source: page.whole_digest };
  }
  return { runx_page: { state } };
}

export function throwOnPage3(inputs) {
  const page = inputs.runx_page;
  if (page.page_index === 3) throw new Error("page three is cursed");
  return page.eof ? { runx_page: { state: null } } : { runx_page: { state: page.page_index } };
}

export function fatState(inputs) {
  return { runx_page: { state: "x".repeat(3 * 1024 * 1024) } };
}

export function extraKeys(inputs) {
  return { runx_page: { state: 1 }, partial: true };
}
