import { DurableObject } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { database } from "../db/client";
import { idempotencyMarks } from "../db/schema";
import { IDEMPOTENCY_TTL_MS, LOCK_LEASE_MS } from "../lib/limits";

interface CachedResponse {
  status: number;
  headers: [string, string][];
  /** Sealed by the idempotency guard before it is handed here: never stored in plaintext. */
  body: string;
}

interface State {
  agencyId: string;
  key: string;
  requestHash: string;
  expiresAt: number;
  lock?: { token: string; leaseUntil: number };
  response?: CachedResponse;
}

type Begin =
  | { state: "replay"; response: CachedResponse }
  | { state: "conflict" }
  | { state: "in_progress" }
  /** `recovering`: an earlier attempt with this key ended without a cached answer; it may have committed. */
  | { state: "acquired"; token: string; recovering: boolean };

/**
 * Retired: replaced by `IdempotencyLedger` and no longer bound, so nothing new reaches it.
 * It stays exported until the objects it left have expired: each one's alarm still
 * forgets its state and its D1 commit mark 24 hours after its request. Once that has run
 * (a day after the ledger went live), a later deploy deletes the class with a
 * `deleted_classes` migration.
 *
 * One per (agency, idempotency key). Holds the in-progress lock and, for 24 hours, the
 * complete response (its body sealed); an alarm forgets both (and the D1 commit mark)
 * when they expire. The request hash names the caller, so another caller's request is
 * a conflict, never a replay.
 */
export class IdempotencyLock extends DurableObject<Env> {
  async begin(agencyId: string, key: string, requestHash: string, now = Date.now()): Promise<Begin> {
    let state = await this.ctx.storage.get<State>("state");
    if (state && state.expiresAt <= now) {
      await this.#forget(state);
      state = undefined;
    }
    if (state?.response)
      return state.requestHash === requestHash ? { state: "replay", response: state.response } : { state: "conflict" };
    if (state && state.requestHash !== requestHash) return { state: "conflict" };
    if (state?.lock && state.lock.leaseUntil > now) return { state: "in_progress" };
    const token = crypto.randomUUID();
    const next: State = {
      agencyId,
      key,
      requestHash,
      expiresAt: state?.expiresAt ?? now + IDEMPOTENCY_TTL_MS,
      lock: { token, leaseUntil: now + LOCK_LEASE_MS },
    };
    await this.ctx.storage.put("state", next);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(next.expiresAt);
    return { state: "acquired", token, recovering: state !== undefined };
  }

  /** Caches the answer of the request holding `token` and frees the key. */
  async complete(token: string, response: CachedResponse): Promise<boolean> {
    const state = await this.ctx.storage.get<State>("state");
    if (!state?.lock || state.lock.token !== token) return false;
    await this.ctx.storage.put("state", { ...state, lock: undefined, response });
    return true;
  }

  /** Frees the key without caching (a 5xx): the same request may be retried. */
  async release(token: string): Promise<void> {
    const state = await this.ctx.storage.get<State>("state");
    if (state?.lock?.token === token) await this.ctx.storage.put("state", { ...state, lock: undefined });
  }

  /**
   * Forgets the state taken by the request holding `token`, which found that the key's
   * commit mark belongs to another request: the state it wrote names the wrong request,
   * and the next call (the owner's) must start afresh and be answered from the mark.
   */
  async discard(token: string): Promise<void> {
    const state = await this.ctx.storage.get<State>("state");
    if (state?.lock?.token === token) await this.ctx.storage.delete("state");
  }

  async alarm(): Promise<void> {
    const state = await this.ctx.storage.get<State>("state");
    if (state && state.expiresAt > Date.now()) {
      await this.ctx.storage.setAlarm(state.expiresAt);
      return;
    }
    if (state) await this.#forget(state);
  }

  async #forget(state: State): Promise<void> {
    await database(this.env.DB)
      .delete(idempotencyMarks)
      .where(and(eq(idempotencyMarks.agencyId, state.agencyId), eq(idempotencyMarks.idemKey, state.key)));
    await this.ctx.storage.delete("state");
  }
}
