import type { Db } from "../db/client";
import type { ApiKey } from "../db/schema";
import { SHARD_NAMES, shardDb, shardOfEnv } from "../db/shards";
import { type KeyChange, keyIdsMintedBy } from "../domain/api-keys";
import type { Refusal } from "../durable/key-gate/verdict";
import { DomainError } from "../lib/errors";

/** The gate of a key: its mutable state, its rate windows, and the only writer of its changes. */
export const keyGate = (env: Env, keyId: string) => env.KEY_GATE.getByName(keyId);

/** Changes a key through its gate, so the very next request sees the change. */
export async function changeKey(env: Env, keyId: string, change: KeyChange): Promise<{ key: ApiKey; secret?: string }> {
  const result = (await keyGate(env, keyId).apply(keyId, change, shardOfEnv(env))) as
    | { ok: true; key: ApiKey; secret?: string }
    | Refusal;
  if (!result.ok) throw new DomainError(result.code, { message: result.message, details: result.details });
  return { key: result.key as ApiKey, secret: result.secret };
}

/** Gates told at once, one page of keys at a time. */
const REFRESH_PAGE = 50;

/**
 * Tells the gate of every key minted by `userId` (with `subtree`, also by anyone below
 * it) to read its state afresh, page by page: after a change to those users, the very
 * next request of each key is decided on the new state. Answers how many gates were told.
 */
export async function refreshKeysMintedBy(
  env: Env,
  db: Db,
  userId: string,
  opts: { subtree: boolean; everyShard?: boolean },
): Promise<number> {
  // Staff may have minted keys for agencies on every shard (see `anchorStaff`): each shard is walked.
  const dbs = opts.everyShard ? SHARD_NAMES.map((shard) => shardDb(env, shard)) : [db];
  let told = 0;
  for (const on of dbs) {
    let after = "";
    for (;;) {
      const ids = await keyIdsMintedBy(on, userId, { subtree: opts.subtree, after, limit: REFRESH_PAGE });
      await Promise.all(ids.map((id) => keyGate(env, id).reload()));
      told += ids.length;
      const last = ids[ids.length - 1];
      if (ids.length < REFRESH_PAGE || last === undefined) break;
      after = last;
    }
  }
  return told;
}
