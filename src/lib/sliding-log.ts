/** Entries already evicted that may stay in the array before it is compacted. */
const COMPACT_AFTER = 1024;

/**
 * An exact sliding-window log: timestamps in arrival order, evicted from the oldest end.
 * Eviction moves a head index and the array is compacted only once most of it is dead,
 * so each request costs O(1) amortized however full the window is.
 */
export class SlidingLog {
  #times: number[] = [];
  #head = 0;

  /** Entries still counted. */
  get size(): number {
    return this.#times.length - this.#head;
  }

  /** Forgets every entry at or before `since`. */
  evict(since: number): void {
    const times = this.#times;
    while (this.#head < times.length && times[this.#head]! <= since) this.#head++;
    if (this.#head === times.length) {
      this.#times = [];
      this.#head = 0;
    } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= times.length) {
      this.#times = times.slice(this.#head);
      this.#head = 0;
    }
  }

  push(at: number): void {
    this.#times.push(at);
  }

  /** The `index`-th entry still counted, oldest first. */
  at(index: number): number | undefined {
    return index < 0 || index >= this.size ? undefined : this.#times[this.#head + index];
  }

  /** Entries after `since` (a binary search: the log is in arrival order). */
  countSince(since: number): number {
    const times = this.#times;
    let lo = this.#head;
    let hi = times.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (times[mid]! <= since) lo = mid + 1;
      else hi = mid;
    }
    return times.length - lo;
  }

  newest(): number | undefined {
    return this.size ? this.#times[this.#times.length - 1] : undefined;
  }
}
