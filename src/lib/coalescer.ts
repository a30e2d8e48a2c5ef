export interface CoalescerOptions {
  /** Runs of one chain start at least this far apart. */
  spacingMs: number;
  /** Runs one chain makes back to back before it stops; a demand it leaves unserved starts the next chain. */
  maxRuns: number;
  /** Told of a run that failed; the chain stops there, and the next demand starts a new one. */
  onError: (err: unknown) => void;
  /** Called when a chain stops at `maxRuns` while its last run still reported work left over. */
  onBound?: () => Promise<void>;
}

/**
 * Runs a task on demand, one run at a time, serving every demand that arrives while a
 * run is under way with one more run after it. A demand is served by the first run that
 * begins after it, and `demand()` resolves once that run has finished, so whoever asks
 * (a request's `waitUntil`) keeps the work alive until it is done. A chain stops after
 * `maxRuns`; a demand that arrived during its last run is then served by a chain the
 * demand itself starts, never left for a later caller. The task answers whether work is
 * left over (a full page): the chain then runs again, within the same bound, and past it
 * `onBound` hands the rest on (to another invocation).
 */
export class Coalescer {
  readonly #task: () => Promise<boolean>;
  readonly #options: CoalescerOptions;
  /** Demands made so far, and how many of them the latest run to begin covers. */
  #demanded = 0;
  #covered = 0;
  #lastStart = Number.NEGATIVE_INFINITY;
  #chain: Promise<void> | undefined;

  constructor(task: () => Promise<boolean>, options: CoalescerOptions) {
    this.#task = task;
    this.#options = options;
  }

  /** Resolves once a run that began after this call has finished (or failed, which `onError` is told). */
  async demand(): Promise<void> {
    const ticket = ++this.#demanded;
    while (this.#covered < ticket) {
      this.#chain ??= this.#runChain().finally(() => {
        this.#chain = undefined;
      });
      await this.#chain;
    }
  }

  /** Resolves once no chain is running or waiting. */
  async idle(): Promise<void> {
    while (this.#chain) await this.#chain;
  }

  async #runChain(): Promise<void> {
    let runs = 0;
    let more = false;
    do {
      const wait = this.#lastStart + this.#options.spacingMs - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      this.#lastStart = Date.now();
      this.#covered = this.#demanded;
      try {
        more = await this.#task();
      } catch (err) {
        this.#options.onError(err);
        return;
      }
    } while ((more || this.#covered < this.#demanded) && ++runs < this.#options.maxRuns);
    if (more && runs >= this.#options.maxRuns) await this.#options.onBound?.();
  }
}
