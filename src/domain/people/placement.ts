import { eq } from "drizzle-orm";
import type { PageRequest } from "../../db/pages";
import { keysetPage } from "../../db/pages";
import { type Agency, agencies, agencyShards, users } from "../../db/schema";
import {
  agencyShard,
  CONTROL_SHARD,
  controlDb,
  emptiestShard,
  SHARD_NAMES,
  type ShardName,
  shardDb,
} from "../../db/shards";
import { encodeCursor } from "../../lib/cursor";
import { DomainError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { isPlatformRole } from "../roles";
import { agencyRow, createAgency, getAgency, type NewAgency } from "./hierarchy";

export type PlacedAgency = Agency & { shard: ShardName };

/**
 * Creates an agency on `shard` (the emptiest open one by default, `emptiestShard`): its row on
 * the shard, then its place in the control database's map. Until the map names it the agency
 * is found nowhere, so a failure between the two leaves nothing that answers.
 */
export async function placeAgency(
  env: Env,
  input: NewAgency,
  shard?: ShardName,
): Promise<Agency & { shard: ShardName }> {
  // The platform's own staff agency stays on the control database, where platform keys and sessions are found.
  const target = shard ?? (input.kind === "platform" ? CONTROL_SHARD : await emptiestShard(env));
  if (target === CONTROL_SHARD) return { ...(await createAgency(controlDb(env), input)), shard: target };
  const db = shardDb(env, target);
  const [agency] = await db
    .insert(agencies)
    .values(agencyRow(newId("agy"), input))
    .returning();
  await controlDb(env).insert(agencyShards).values({ agencyId: agency!.id, shard: target });
  return { ...agency!, shard: target };
}

/** The agency as its shard holds it, with the shard's name: 404 `agency_not_found` for one the map does not know. */
export async function placedAgency(env: Env, agencyId: string): Promise<PlacedAgency> {
  const placed = await agencyShard(env, agencyId);
  if (!placed) throw new DomainError("agency_not_found");
  return { ...(await getAgency(placed.db, agencyId)), shard: placed.shard };
}

/**
 * One page of every shard's agencies, oldest first: each shard's page after the cursor, merged
 * in (created_at, id) order. One query per shard; the cursor is the last agency shown.
 */
export async function pageAgenciesOfEveryShard(
  env: Env,
  req: PageRequest,
  list: "agencies" | "usage" = "agencies",
): Promise<{ rows: PlacedAgency[]; nextCursor: string }> {
  const pages = await Promise.all(
    SHARD_NAMES.map(async (shard) => {
      const page = await keysetPage(shardDb(env, shard), agencies, list, undefined, req);
      return { shard, ...page };
    }),
  );
  const merged = pages
    .flatMap((p) => p.rows.map((row) => ({ ...row, shard: p.shard })))
    .sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));
  const rows = merged.slice(0, req.limit);
  const more = merged.length > req.limit || pages.some((p) => p.nextCursor !== "");
  const last = rows[rows.length - 1];
  return { rows, nextCursor: more && last ? await encodeCursor(req.keyring, list, last) : "" };
}

/**
 * Anchors a member of the platform's staff on `shard`, so that a key they mint for an agency
 * there can name them (a key's row names its minting user, on its own shard): a copy of their
 * user row and of the staff agency's row, written once. The copy only anchors: the key's gate
 * reads a staff minter's state from the control database, where staff live and change.
 * Nothing is written for anyone else, or on the control database itself.
 */
export async function anchorStaff(env: Env, shard: ShardName, userId: string): Promise<void> {
  if (shard === CONTROL_SHARD) return;
  const control = controlDb(env);
  const user = await control.select().from(users).where(eq(users.id, userId)).get();
  if (!user || !isPlatformRole(user.role)) return;
  const staff = await control.select().from(agencies).where(eq(agencies.id, user.agencyId)).get();
  if (staff?.kind !== "platform") return;
  const db = shardDb(env, shard);
  await db.batch([
    db.insert(agencies).values(staff).onConflictDoNothing(),
    db.insert(users).values(user).onConflictDoNothing(),
  ]);
}
