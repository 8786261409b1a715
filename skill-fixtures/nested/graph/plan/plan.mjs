// Orders goals by effort (smallest first, then id) and sums the effort.
export function plan({ goals }) {
  const ordered = [...goals].sort((a, b) => a.effort - b.effort || (a.id < b.id ? -1 : 1));
  return {
    plan: {
      order: ordered.map((g) => g.id),
      total_effort: ordered.reduce((sum, g) => sum + g.effort, 0),
    },
  };
}
