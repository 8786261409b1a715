// Summarises a numeric report; the runtime has already unwrapped any artifact envelope.
export function summarize({ report, title }) {
  const rows = report.rows;
  const total = rows.reduce((a, b) => a + b, 0);
  const max = rows.length ? Math.max(...rows) : null;
  return {
    summary: { title, count: rows.length, total, max },
    digest_hint: `${title}:${rows.length}:${total}`,
  };
}
