/**
 * Outbound calls (an R2 read and a PUT per file, a HEAD or two per settle) a batch may
 * start: under the 1,000 subrequests of one invocation. Ten messages of 40 files fit.
 */
const BATCH_SUBREQUESTS = 800;
/** A batch starts no new copy after this long: a PUT started last may take PUT_TIMEOUT_MS, inside 15 minutes. */
const BATCH_DEADLINE_MS = 4 * 60_000;

/** What a batch may still spend: outbound calls and time to start new work. */
export interface Budget {
  subrequests: number;
  deadline: number;
}

/** The whole budget of a batch that starts now. */
export const batchBudget = (): Budget => ({ subrequests: BATCH_SUBREQUESTS, deadline: Date.now() + BATCH_DEADLINE_MS });

/** Spends `calls` of the budget; false (and nothing spent) when they do not fit or time is up. */
export const take = (budget: Budget, calls: number) => {
  if (budget.subrequests < calls || Date.now() >= budget.deadline) return false;
  budget.subrequests -= calls;
  return true;
};
