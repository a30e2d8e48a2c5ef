import { and, asc, eq, gt, inArray, isNotNull, isNull, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { type ApiKey, type ApiKeySecret, apiKeySecrets, apiKeys } from "../db/schema";
import type { Keyring } from "../lib/crypto/keyring";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import { hashSecret, type KeyMode, type KeyPrefix, mintSecret, ROTATION_GRACE_MS } from "./keys";
import { getAgency, getUserById } from "./people/hierarchy";
import { quotaRefusal } from "./quotas";
import { AGENCY_OWNER_ROLES, DEFAULT_SCOPES, isPlatformRole, type Scope } from "./roles";

export interface MintInput {
  agencyId: string;
  mintedByUserId: string;
  mode: KeyMode;
  /** `ma_live_` is the legacy live prefix; it is accepted in live mode only. */
  prefix?: KeyPrefix;
  name?: string;
  scopes?: Scope[];
  expiresAt?: string | null;
  /** The keyring that tags the secret (see `mintSecret`). */
  ring?: Keyring;
}

/**
 * Mints a key bound to one agency. Agency owners (media_agency, broker) mint for their
 * own agency; platform admins for any agency. Only the hash of the secret is stored.
 */
export async function mintKey(db: Db, input: MintInput): Promise<{ key: ApiKey; secret: string }> {
  const agency = await getAgency(db, input.agencyId);
  const minter = await getUserById(db, input.mintedByUserId);
  const platform = isPlatformRole(minter.role);
  const owner = (AGENCY_OWNER_ROLES as readonly string[]).includes(minter.role) && minter.agencyId === agency.id;
  if (!minter.isActive || (!platform && !owner) || agency.kind === "platform") {
    throw new DomainError("key_mint_forbidden", { details: { minted_by_user_id: minter.id, role: minter.role } });
  }
  const scopes = input.scopes ?? DEFAULT_SCOPES;
  if (scopes.includes("admin") && !platform) throw new DomainError("scope_not_grantable");
  const prefix = input.prefix ?? (input.mode === "test" ? "sk_test_" : "sk_live_");
  if ((prefix === "sk_test_") !== (input.mode === "test"))
    throw new DomainError("key_mint_forbidden", {
      message: `The prefix ${prefix} does not belong to ${input.mode} mode.`,
    });
  const secret = await mintSecret(input.mode, prefix, input.ring);
  const id = newId("key");
  const [[key]] = await db
    .batch([
      db
        .insert(apiKeys)
        .values({
          id,
          agencyId: agency.id,
          mintedByUserId: minter.id,
          role: minter.role,
          mode: input.mode,
          name: input.name ?? "",
          scopes,
          expiresAt: input.expiresAt ?? null,
        })
        .returning(),
      db.insert(apiKeySecrets).values({ hash: await hashSecret(secret), keyId: id, prefix, last4: secret.slice(-4) }),
    ])
    .catch((err: unknown) => quotaRefusal(db, agency.id, err));
  return { key: key!, secret };
}

/** A key by id; with `agencyId`, held to that agency in the statement (another agency's key is not found). */
export async function getKey(db: Db, keyId: string, agencyId?: string): Promise<ApiKey> {
  const key = await db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, keyId), agencyId === undefined ? undefined : eq(apiKeys.agencyId, agencyId)))
    .get();
  if (!key) throw new DomainError("api_key_not_found");
  return key;
}

/** The secret currently shown for display (last four characters), and a superseded one still in its grace window. */
async function keySecrets(db: Db, keyId: string) {
  return db
    .select()
    .from(apiKeySecrets)
    .where(and(eq(apiKeySecrets.keyId, keyId), isNull(apiKeySecrets.deactivatedAt)))
    .all();
}

/** A key with the secrets shown for it (see keySecrets). */
export interface KeyWithSecrets {
  key: ApiKey;
  secrets: ApiKeySecret[];
}

export async function withSecrets(db: Db, key: ApiKey): Promise<KeyWithSecrets> {
  return { key, secrets: await keySecrets(db, key.id) };
}

/**
 * The agency's keys, oldest first, each with the secrets shown for it. The secrets are
 * read by the agency in the same batch, not key by key: two statements, each binding
 * the agency id, however many keys the agency holds.
 */
export async function keysOfAgency(db: Db, agencyId: string): Promise<KeyWithSecrets[]> {
  const agencyKeyIds = db.select({ id: apiKeys.id }).from(apiKeys).where(eq(apiKeys.agencyId, agencyId));
  const [keys, secrets] = await db.batch([
    db.select().from(apiKeys).where(eq(apiKeys.agencyId, agencyId)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id)),
    db
      .select()
      .from(apiKeySecrets)
      .where(and(inArray(apiKeySecrets.keyId, agencyKeyIds), isNull(apiKeySecrets.deactivatedAt))),
  ]);
  const byKey = new Map<string, ApiKeySecret[]>();
  for (const s of secrets) {
    const ofKey = byKey.get(s.keyId);
    if (ofKey) ofKey.push(s);
    else byKey.set(s.keyId, [s]);
  }
  return keys.map((key) => ({ key, secrets: byKey.get(key.id) ?? [] }));
}

/**
 * Starts a rotation: a new secret is returned, and the current one keeps working for
 * 30 days. Only two secrets are ever valid at once: a secret already in its grace
 * window is deactivated by a second rotation.
 */
export async function rotateKey(db: Db, keyId: string, ring?: Keyring): Promise<{ key: ApiKey; secret: string }> {
  const key = await getKey(db, keyId);
  if (key.revokedAt || !key.isActive) throw new DomainError("api_key_not_rotatable", { details: { key_id: keyId } });
  const current = (await keySecrets(db, keyId)).find((s) => !s.supersededAt);
  const prefix = (current?.prefix as KeyPrefix | undefined) ?? (key.mode === "test" ? "sk_test_" : "sk_live_");
  const secret = await mintSecret(key.mode, prefix, ring);
  const at = nowIso();
  const [, , , [rotated]] = await db.batch([
    db
      .update(apiKeySecrets)
      .set({ deactivatedAt: at })
      .where(
        and(eq(apiKeySecrets.keyId, keyId), isNotNull(apiKeySecrets.supersededAt), isNull(apiKeySecrets.deactivatedAt)),
      ),
    db
      .update(apiKeySecrets)
      .set({ supersededAt: at })
      .where(and(eq(apiKeySecrets.keyId, keyId), isNull(apiKeySecrets.supersededAt))),
    db.insert(apiKeySecrets).values({ hash: await hashSecret(secret), keyId, prefix, last4: secret.slice(-4) }),
    db.update(apiKeys).set({ rotationStartedAt: at, updatedAt: at }).where(eq(apiKeys.id, keyId)).returning(),
  ]);
  return { key: rotated!, secret };
}

/** Revocation is immediate and final. */
export async function revokeKey(db: Db, keyId: string): Promise<ApiKey> {
  const key = await getKey(db, keyId);
  if (key.revokedAt) throw new DomainError("api_key_already_revoked", { details: { revoked_at: key.revokedAt } });
  const at = nowIso();
  const [updated] = await db
    .update(apiKeys)
    .set({ revokedAt: at, updatedAt: at })
    .where(eq(apiKeys.id, keyId))
    .returning();
  return updated!;
}

export interface KeyPatch {
  isActive?: boolean;
  expiresAt?: string | null;
  scopes?: Scope[];
  name?: string;
  /** Override changes: a number sets an endpoint's budget, null clears it. */
  rateLimitOverrides?: Partial<Record<string, number | null>>;
}

/**
 * A change to a key; each runs in the key's gate so the very next request sees it. An
 * update with `agencyId` (a public route's) changes only a key of that agency; any other is not found.
 */
export type KeyChange = { op: "rotate" } | { op: "revoke" } | { op: "update"; patch: KeyPatch; agencyId?: string };

export async function updateKey(db: Db, keyId: string, patch: KeyPatch, agencyId?: string): Promise<ApiKey> {
  const key = await getKey(db, keyId, agencyId);
  if (patch.scopes?.includes("admin") && !isPlatformRole(key.role)) throw new DomainError("scope_not_grantable");
  const { rateLimitOverrides, ...fields } = patch;
  // Override changes merge inside the statement (a JSON merge patch: null removes a
  // budget), so concurrent changes to different endpoints never undo each other.
  const overrides = rateLimitOverrides
    ? { rateLimitOverrides: sql`json_patch(${apiKeys.rateLimitOverrides}, ${JSON.stringify(rateLimitOverrides)})` }
    : {};
  const [updated] = await db
    .update(apiKeys)
    .set({ ...fields, ...overrides, updatedAt: nowIso() })
    .where(and(eq(apiKeys.id, keyId), agencyId === undefined ? undefined : eq(apiKeys.agencyId, agencyId)))
    .returning();
  if (!updated) throw new DomainError("api_key_not_found");
  return updated;
}

/**
 * One page of the nightly sweep: up to `limit` secrets whose 30-day rotation grace has
 * ended stop authenticating for good. Answers how many it deactivated and the ids of their
 * keys. (The request path already refuses such a secret by its age; the sweep makes it final.)
 */
export async function sweepRotatedSecrets(
  db: Db,
  nowMs: number,
  limit: number,
): Promise<{ secrets: number; keyIds: string[] }> {
  const cutoff = nowIso(nowMs - ROTATION_GRACE_MS);
  const page = db
    .select({ hash: apiKeySecrets.hash })
    .from(apiKeySecrets)
    .where(
      and(
        isNotNull(apiKeySecrets.supersededAt),
        isNull(apiKeySecrets.deactivatedAt),
        lte(apiKeySecrets.supersededAt, cutoff),
      ),
    )
    .limit(limit);
  const swept = await db
    .update(apiKeySecrets)
    .set({ deactivatedAt: nowIso(nowMs) })
    .where(and(inArray(apiKeySecrets.hash, page), isNull(apiKeySecrets.deactivatedAt)))
    .returning({ keyId: apiKeySecrets.keyId });
  return { secrets: swept.length, keyIds: [...new Set(swept.map((s) => s.keyId))] };
}

/**
 * One page (by key id) of the keys that are not revoked and were minted by `userId`, or,
 * with `subtree`, by that user or anyone below it: the keys a change of those users
 * reaches.
 */
export async function keyIdsMintedBy(
  db: Db,
  userId: string,
  opts: { subtree: boolean; after: string; limit: number },
): Promise<string[]> {
  const minters = opts.subtree
    ? sql`(WITH RECURSIVE tree(id) AS
          (SELECT ${userId} UNION SELECT u.id FROM users u JOIN tree t ON u.manager_id = t.id)
        SELECT id FROM tree)`
    : sql`(${userId})`;
  const rows = await db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(sql`${apiKeys.mintedByUserId} IN ${minters}`, isNull(apiKeys.revokedAt), gt(apiKeys.id, opts.after)))
    .orderBy(asc(apiKeys.id))
    .limit(opts.limit)
    .all();
  return rows.map((r) => r.id);
}
