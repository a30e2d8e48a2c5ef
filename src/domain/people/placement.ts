import type { PageRequest } from "../../db/pages";
import { keysetPage } from "../../db/pages";
import { type Agency, agencies, agencyShards } from "../../db/schema";
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
  const target = shard ?? (await emptiestShard(env));
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
