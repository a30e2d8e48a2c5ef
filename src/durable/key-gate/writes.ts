/**
 * How long a write admitted by the gate may stay unreported (its bookmark not handed back)
 * before the gate stops sending the key's reads to the primary for it. A write answers and
 * hands its bookmark back well within it; a hand-off lost with its isolate ends here.
 */
export const UNREPORTED_WINDOW_MS = 60_000;
/** Open writes kept one by one; past this many the gate sends reads to the primary for the whole window. */
const OPEN_LIMIT = 1_000;
/** The longest ticket list a hand-off may carry. */
const CARRIED_LIMIT = 1_000;

/**
 * The key's writes the gate admitted whose bookmarks have not come back yet. While any
 * is open, the key's reads go to the primary, which has every committed write: so a write
 * can answer before its bookmark reaches the gate, and a read sent right after that answer,
 * from any isolate, still sees it.
 *
 * Each write gets a ticket at admission and closes it with its hand-off. The open tickets
 * live in memory; what survives a restart is only a bound on when the last of them ends
 * (`until`), stored at most once per window, so a restarted gate sends reads to the
 * primary until the writes the old instance admitted can no longer be open.
 */
export class OpenWrites {
  readonly #open = new Map<string, number>();
  readonly #epoch = crypto.randomUUID().slice(0, 8);
  #issued = 0;
  /** Reads go to the primary before this time, whatever is open. */
  #primaryUntil: number;
  /** The bound last stored: every ticket issued so far ends before it. */
  #stored: number;

  constructor(
    stored: number | undefined,
    private readonly store: (until: number) => void,
  ) {
    this.#stored = stored ?? 0;
    this.#primaryUntil = this.#stored;
  }

  /** True while a read of the key must go to the primary to see every write answered so far. */
  primary(now: number): boolean {
    for (const [ticket, at] of this.#open) {
      if (at + UNREPORTED_WINDOW_MS > now) break;
      this.#open.delete(ticket);
    }
    return this.#open.size > 0 || now < this.#primaryUntil;
  }

  /** A ticket for a write admitted now, closed by its hand-off. */
  open(now: number): string {
    if (this.#stored < now + UNREPORTED_WINDOW_MS) {
      this.#stored = now + 2 * UNREPORTED_WINDOW_MS;
      this.store(this.#stored);
    }
    if (this.#open.size >= OPEN_LIMIT) {
      this.#primaryUntil = Math.max(this.#primaryUntil, now + UNREPORTED_WINDOW_MS);
      this.#open.clear();
    }
    const ticket = `${this.#epoch}.${++this.#issued}`;
    this.#open.set(ticket, now);
    return ticket;
  }

  /** Closes the tickets a hand-off carried; unknown ones (another instance's, or ended) are ignored. */
  close(tickets: unknown): void {
    if (!Array.isArray(tickets)) return;
    for (const ticket of tickets.slice(0, CARRIED_LIMIT)) if (typeof ticket === "string") this.#open.delete(ticket);
  }
}
