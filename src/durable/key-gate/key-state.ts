import { eq } from "drizzle-orm";
import { database } from "../../db/client";
import { type ApiKey, type ApiKeySecret, apiKeySecrets, apiKeys, users } from "../../db/schema";
import type { KeyState } from "../../domain/keys";
import { isPlatformRole } from "../../domain/roles";

export interface LoadedKey {
  key: ApiKey;
  minter: KeyState["minter"];
  secrets: Map<string, Pick<ApiKeySecret, "supersededAt" | "deactivatedAt">>;
  /** When the load began (epoch ms). */
  at: number;
}

/**
 * Cached state older than this is read again. Every change reaches the gate at once
 * (`apply`, `reload`); this only bounds how long a change whose notice was lost (a
 * Worker that died between its D1 write and the notice) could go unseen.
 */
const KEY_STATE_MAX_AGE_MS = 60_000;
/** Loads in a row that a change may overtake before the gate gives up (503, retried by the client). */
const LOAD_ATTEMPTS = 3;

/**
 * The key's row, its minter and its secrets, read once and kept. Every change bumps the
 * generation; a load that was under way when the generation moved is thrown away, so no
 * decision is ever taken on state read before a change.
 */
export class KeyStateCache {
  #loaded: LoadedKey | undefined;
  #generation = 0;

  /**
   * The bindings are read at each load, from the object's env as it stands then: the key's
   * shard, and the control database, which holds the platform's staff (a staff member who
   * minted a key for an agency on another shard is only anchored there, see `anchorStaff`).
   */
  constructor(
    private readonly d1: () => D1Database,
    private readonly control: () => D1Database = d1,
  ) {}

  async load(keyId: string): Promise<LoadedKey | undefined> {
    for (let attempt = 0; attempt < LOAD_ATTEMPTS; attempt++) {
      const cached = this.#loaded;
      if (cached && Date.now() - cached.at < KEY_STATE_MAX_AGE_MS) return cached;
      const generation = this.#generation;
      const at = Date.now();
      const db = database(this.d1());
      const [row, secrets] = await Promise.all([
        db
          .select({
            key: apiKeys,
            minter: { isActive: users.isActive, agencyId: users.agencyId, role: users.role },
          })
          .from(apiKeys)
          .leftJoin(users, eq(users.id, apiKeys.mintedByUserId))
          .where(eq(apiKeys.id, keyId))
          .get(),
        db.select().from(apiKeySecrets).where(eq(apiKeySecrets.keyId, keyId)).all(),
      ]);
      // Staff are read where they live: their state on another shard is only an anchor for the key's row.
      const minter =
        row?.minter && isPlatformRole(row.minter.role) && this.control() !== this.d1()
          ? ((await database(this.control())
              .select({ isActive: users.isActive, agencyId: users.agencyId, role: users.role })
              .from(users)
              .where(eq(users.id, row.key.mintedByUserId))
              .get()) ?? null)
          : (row?.minter ?? null);
      if (generation !== this.#generation) continue;
      if (!row) return undefined;
      this.#loaded = {
        key: row.key,
        minter,
        secrets: new Map(
          secrets.map((s) => [s.hash, { supersededAt: s.supersededAt, deactivatedAt: s.deactivatedAt }]),
        ),
        at,
      };
      return this.#loaded;
    }
    throw new Error("the key changed during every load");
  }

  /** Ends the cached state and any load under way; the next request reads the key afresh. */
  invalidate(): void {
    this.#generation++;
    this.#loaded = undefined;
  }
}
