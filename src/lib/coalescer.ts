export interface CoalescerOptions {
  /** Runs start at least this far apart. */
  spacingMs: number;
  /** Runs one demand makes back to back while the task reports work left over. */
  maxRuns: number;
  /** Told of a run that failed; its demand stops there, and the next demand runs again. */
  onError: (err: unknown) => void;
  /** Called when a demand stops at `maxRuns` while its last run still reported work left over. */
  onBound?: () => Promise<void>;
}

/** How often a demand that another invocation's run will serve looks whether it has. */
const POLL_MS = 10;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs a task on demand, one run at a time, serving every demand that arrives while a
 * run is under way with one more run after it. A demand is served by the first run that
 * begins after it, and `demand()` resolves once that run has finished, so whoever asks
 * (a request's `waitUntil`) keeps the work alive until it is done. The task answers whether
 * work is left over (a full page): the run's demand then runs it again, up to `maxRuns`
 * runs, and past them `onBound` hands the rest on (to another invocation).
 *
 * The coalescer is shared by every invocation of an isolate, but no invocation ever awaits
 * another's promise: the Workers runtime ties a promise to the request that made it, and a
 * request waiting on one that a finished request made is cancelled as hanging. So a run is
 * made by a demand in its own invocation, which stays alive until its own demand is served;
 * a demand that arrives while another invocation's run is under way waits on its own timers
 * and, if no run covers it by the time that one ends, makes the next run itself.
 */
export class Coalescer {
  readonly #task: () => Promise<boolean>;
  readonly #options: CoalescerOptions;
  /** Demands made so far; how many of them the latest run to begin covers; how many are served. */
  #demanded = 0;
  #covered = 0;
  #served = 0;
  #running = false;
  #lastStart = Number.NEGATIVE_INFINITY;

  constructor(task: () => Promise<boolean>, options: CoalescerOptions) {
    this.#task = task;
    this.#options = options;
  }

  /** Resolves once a run that began after this call has finished (or failed, which `onError` is told). */
  async demand(): Promise<void> {
    const ticket = ++this.#demanded;
    while (this.#served < ticket) {
      if (!this.#running) {
        await this.#run();
        continue;
      }
      // A run of another invocation is under way: the next one cannot start before the spacing.
      const next = this.#covered < ticket ? this.#lastStart + this.#options.spacingMs - Date.now() : 0;
      await sleep(Math.max(POLL_MS, next));
    }
  }

  /** Resolves once no run is under way and every demand made so far is served. */
  async idle(): Promise<void> {
    while (this.#running || this.#served < this.#demanded) await sleep(POLL_MS);
  }

  /** Runs the task for every demand made so far, again while it reports work left, within the bound. */
  async #run(): Promise<void> {
    this.#running = true;
    try {
      let runs = 0;
      let more = false;
      do {
        const wait = this.#lastStart + this.#options.spacingMs - Date.now();
        if (wait > 0) await sleep(wait);
        this.#lastStart = Date.now();
        const covers = this.#demanded;
        this.#covered = covers;
        try {
          more = await this.#task();
        } catch (err) {
          this.#options.onError(err);
          return;
        } finally {
          this.#served = Math.max(this.#served, covers);
        }
      } while (more && ++runs < this.#options.maxRuns);
      if (more) await this.#options.onBound?.();
    } finally {
      this.#running = false;
    }
  }
}
