export default function count({ items }) {
  return { count: items.length };
}
