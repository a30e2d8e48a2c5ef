import { type CopySlots, copySlots } from "./copy-slots";

/**
 * Outbound calls (an R2 read and a PUT per file, a HEAD or two per settle) a batch may
 * start: under the 1,000 subrequests of one invocation. Ten messages of 40 files fit.
 */
const BATCH_SUBREQUESTS = 800;
/** A batch starts no new copy after this long: a PUT started last may take PUT_TIMEOUT_MS, inside 15 minutes. */
const BATCH_DEADLINE_MS = 4 * 60_000;
/**
 * Files a batch copies at once, across all its deliveries. A copy holds two of the six
 * connections an invocation may have open (the R2 read streaming into the PUT), so two
 * copies hold four; settles and notifications keep one (their lane runs one at a time),
 * and one is left for a delivery's short calls (its continuation's queue send).
 */
export const COPY_SLOTS = 2;

/** What a batch may still spend: outbound calls, time to start new work, and the copy slots. */
export interface Budget {
  subrequests: number;
  deadline: number;
  copies: CopySlots;
}

/** The whole budget of a batch that starts now. */
export const batchBudget = (): Budget => ({
  subrequests: BATCH_SUBREQUESTS,
  deadline: Date.now() + BATCH_DEADLINE_MS,
  copies: copySlots(COPY_SLOTS),
});

/** Spends `calls` of the budget; false (and nothing spent) when they do not fit or time is up. */
export const take = (budget: Budget, calls: number) => {
  if (budget.subrequests < calls || Date.now() >= budget.deadline) return false;
  budget.subrequests -= calls;
  return true;
};
