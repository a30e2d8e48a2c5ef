/**
 * Seconds to wait before try `attempt + 1` after `attempt` failed (1-based): `first`
 * doubling with each failure, never above `cap`.
 */
export const doublingBackoff = (attempt: number, first: number, cap: number): number =>
  Math.min(first * 2 ** (Math.max(attempt, 1) - 1), cap);
