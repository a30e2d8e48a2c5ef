import { agencyBudgetFor, type EndpointName } from "../../domain/budgets";
import { agencyBudget, type Returned } from "../budget-lease";
import type { RateDecision } from "./verdict";
import type { RateWindows } from "./windows";

/**
 * How long a lease of the agency's budget lasts: a gate asks for as many requests as its
 * key sent in the last lease period, and gives back what is left when the lease ends.
 */
export const LEASE_MS = 5_000;
/**
 * Renewals one request may wait for before the gate gives up (503): each grants at least
 * one request and asks for every request then waiting, so a request outrun this often
 * means the agency's object is not keeping up.
 */
const LEASE_ATTEMPTS = 32;

interface Lease {
  id: string;
  agencyId: string;
  left: number;
  /** In the clock of the requests that took it (epoch ms). */
  expires: number;
}

const leaseReturn = (lease: Lease): Returned => ({ id: lease.id, unused: lease.left });

/**
 * The key's leases of its agency's budget, one per endpoint. A request is counted in the
 * key's own window first (a request it refuses costs the agency's nothing), then takes a
 * request of the lease, renewed when it is spent or over. Concurrent requests of the key
 * wait for one renewal, which asks for all of them.
 */
export class BudgetLeases {
  #leases = new Map<string, Lease>();
  #renewing = new Map<string, Promise<RateDecision | undefined>>();
  /** Requests of the key waiting for a renewal, per endpoint: the renewal asks for them all. */
  #waiting = new Map<string, number>();

  constructor(
    private readonly env: Env,
    private readonly windows: RateWindows,
  ) {}

  async admit(agencyId: string, endpoint: EndpointName, limit: number, now: number): Promise<RateDecision> {
    for (let attempt = 0; attempt < LEASE_ATTEMPTS; attempt++) {
      if (this.windows.size(endpoint, now) >= limit) return this.windows.hit(endpoint, limit, now);
      const lease = this.#leases.get(endpoint);
      if (lease && lease.agencyId === agencyId && lease.left > 0 && now < lease.expires) {
        lease.left--;
        return this.windows.hit(endpoint, limit, now);
      }
      let renewal = this.#renewing.get(endpoint);
      if (!renewal) {
        renewal = this.#renew(agencyId, endpoint, limit, now).finally(() => this.#renewing.delete(endpoint));
        this.#renewing.set(endpoint, renewal);
      }
      this.#waiting.set(endpoint, (this.#waiting.get(endpoint) ?? 0) + 1);
      try {
        const refusal = await renewal;
        if (refusal) return refusal;
      } finally {
        this.#waiting.set(endpoint, (this.#waiting.get(endpoint) ?? 1) - 1);
      }
    }
    throw new Error("the agency's budget could not be leased");
  }

  /** When the first lease still held ends; undefined when none is held. */
  nextEnd(): number | undefined {
    let first: number | undefined;
    for (const lease of this.#leases.values()) if (first === undefined || lease.expires < first) first = lease.expires;
    return first;
  }

  /** Gives the agency back what ended leases left unused, so other keys may send it. */
  async returnEnded(now: number): Promise<void> {
    const giving: Promise<unknown>[] = [];
    for (const [endpoint, lease] of this.#leases) {
      if (now < lease.expires) continue;
      this.#leases.delete(endpoint);
      if (lease.left <= 0) continue;
      // Best effort: what is not given back leaves the agency's window with the lease's minute.
      giving.push(
        agencyBudget(this.env, lease.agencyId)
          .giveBack(endpoint as EndpointName, [leaseReturn(lease)])
          .catch(() => undefined),
      );
    }
    await Promise.all(giving);
  }

  async #renew(agencyId: string, endpoint: EndpointName, keyLimit: number, now: number) {
    const old = this.#leases.get(endpoint);
    this.#leases.delete(endpoint);
    const returning: Returned[] = old && old.left > 0 && old.agencyId === agencyId ? [leaseReturn(old)] : [];
    const used = this.windows.size(endpoint, now);
    // As many as the key sent in the last lease period, or has waiting now, never more than its own budget has left.
    const demand = Math.max(this.windows.countSince(endpoint, now - LEASE_MS) + 1, this.#waiting.get(endpoint) ?? 0);
    const want = Math.max(1, Math.min(demand, keyLimit - used));
    const answer = await agencyBudget(this.env, agencyId).lease(
      { endpoint, want, ceiling: agencyBudgetFor(endpoint, keyLimit), returning },
      now,
    );
    if (!answer.ok) {
      const { limit, remaining, reset, retryAfter } = answer;
      return { limit, remaining, reset, retryAfter, scope: "agency" as const };
    }
    this.#leases.set(endpoint, { id: answer.id, agencyId, left: answer.granted, expires: now + LEASE_MS });
    return undefined;
  }
}
