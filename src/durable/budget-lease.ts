import type { EndpointName } from "../domain/budgets";

/** What a key's gate asks of its agency's budget when its lease for an endpoint runs out. */
export interface LeaseAsk {
  endpoint: EndpointName;
  /** Requests the gate expects to admit before the lease ends. */
  want: number;
  /** The agency's budget for this endpoint, as the asking key sees it (see agencyBudgetFor). */
  ceiling: number;
  /** Leases of this gate that ended with requests unused: they leave the window now. */
  returning?: Returned[];
}

export interface Returned {
  id: string;
  unused: number;
}

export type LeaseAnswer =
  | { ok: true; id: string; granted: number }
  | { ok: false; limit: number; remaining: 0; reset: number; retryAfter: number };

/** The agency's budget of a key's gate. */
export const agencyBudget = (env: Env, agencyId: string) => env.AGENCY_BUDGET.getByName(agencyId);
