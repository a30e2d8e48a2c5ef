/**
 * Lookups that found nothing, remembered for a while in a bounded map: a repeat of the
 * same miss is answered without another query. At the limit the oldest entry goes.
 */
export class RecentMisses {
  readonly #until = new Map<string, number>();
  readonly #limit: number;
  readonly #ttlMs: number;

  constructor(limit: number, ttlMs: number) {
    this.#limit = limit;
    this.#ttlMs = ttlMs;
  }

  has(key: string, now = Date.now()): boolean {
    const until = this.#until.get(key);
    if (until === undefined) return false;
    if (until > now) return true;
    this.#until.delete(key);
    return false;
  }

  add(key: string, now = Date.now()): void {
    this.#until.delete(key);
    if (this.#until.size >= this.#limit) {
      const oldest = this.#until.keys().next();
      if (!oldest.done) this.#until.delete(oldest.value);
    }
    this.#until.set(key, now + this.#ttlMs);
  }

  get size(): number {
    return this.#until.size;
  }

  clear(): void {
    this.#until.clear();
  }
}
