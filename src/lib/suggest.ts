/** The edit distance between two strings (insertions, deletions and substitutions). */
export function levenshtein(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}

/** True when `typed` is close enough to `known` to be a typo of it (case aside). */
export const isNear = (typed: string, known: string): boolean =>
  levenshtein(typed.toLowerCase(), known.toLowerCase()) <= Math.max(2, Math.floor(known.length / 3));

/** Up to three of `known` that `typed` is probably a typo of, the nearest first (`did_you_mean`). */
export function suggestions(typed: string, known: string[]): string[] {
  const k = typed.toLowerCase();
  return known
    .map((name) => ({ name, d: levenshtein(k, name.toLowerCase()) }))
    .filter(
      ({ name, d }) =>
        d <= Math.max(2, Math.floor(name.length / 3)) ||
        name.toLowerCase().includes(k) ||
        k.includes(name.toLowerCase()),
    )
    .sort((a, b) => a.d - b.d)
    .slice(0, 3)
    .map(({ name }) => name);
}
