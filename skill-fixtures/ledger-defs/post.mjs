// Builds a balanced double-entry record from a transfer.
export function post({ from, to, cents, memo }) {
  if (from === to) {
    throw new Error(`a transfer needs two accounts, both are ${from}`);
  }
  const lines = [
    { account: from, debit: 0, credit: cents },
    { account: to, debit: cents, credit: 0 },
  ];
  const balance = lines.reduce((sum, l) => sum + l.debit - l.credit, 0);
  return { entry: { lines, balance, memo, books: [...new Set([from, to].map((a) => a.split("/")[0]))] } };
}
