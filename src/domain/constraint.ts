/** True when a D1 write failed on a UNIQUE constraint (optionally a given index or column). */
export function isUniqueViolation(err: unknown, hint?: string): boolean {
  const seen = new Set<unknown>();
  let e: unknown = err;
  while (e && !seen.has(e)) {
    seen.add(e);
    const message = e instanceof Error ? e.message : String(e);
    if (/UNIQUE constraint failed/i.test(message)) return hint ? message.includes(hint) : true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
