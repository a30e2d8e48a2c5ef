/** The messages of an error and of its causes, outermost first. */
function* messagesOf(err: unknown): Generator<string> {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    yield e instanceof Error ? e.message : String(e);
  }
}

/** True when a D1 write failed on a UNIQUE constraint (optionally a given index or column). */
export function isUniqueViolation(err: unknown, hint?: string): boolean {
  for (const message of messagesOf(err))
    if (/UNIQUE constraint failed/i.test(message)) return hint ? message.includes(hint) : true;
  return false;
}

/** True when a D1 write failed on the NOT NULL constraint of `column` (as `table.column`). */
export function isNotNullViolation(err: unknown, column: string): boolean {
  for (const message of messagesOf(err)) if (message.includes(`NOT NULL constraint failed: ${column}`)) return true;
  return false;
}
