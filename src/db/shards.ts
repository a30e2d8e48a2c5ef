import { count, eq } from "drizzle-orm";
import { type Db, database } from "./client";
import { agencyShards, secretDirectory } from "./schema";

/**
 * The shards: every D1 database of an environment, by name, with the binding that reaches it.
 * The first is also the control database, which holds the map of agencies to shards
 * (`agency_shards`) and whatever must be found before the agency is known. This module alone
 * turns a shard's name into a database: no route, domain function or job picks one by hand.
 */
const SHARD_BINDINGS = new Map([
  ["shard-1", "DB"],
  ["shard-2", "SHARD_2"],
] as const);

export type ShardName = "shard-1" | "shard-2";
export const SHARD_NAMES = [...SHARD_BINDINGS.keys()] as readonly ShardName[];
export const CONTROL_SHARD: ShardName = "shard-1";

const isShardName = (name: string): name is ShardName => SHARD_BINDINGS.has(name as ShardName);

/** The D1 binding of a shard. */
export function shardD1(env: Env, shard: ShardName): D1Database {
  const binding = SHARD_BINDINGS.get(shard);
  if (!binding) throw new Error(`There is no shard named ${shard}.`);
  return env[binding];
}

/** A shard's database handle. */
export const shardDb = (env: Env, shard: ShardName): Db => database(shardD1(env, shard));

/** The control database: the map of agencies to shards, and the first shard. */
export const controlDb = (env: Env): Db => database(env.DB);

/** The shard that holds the agency's rows, from the control database; undefined for an agency it does not know. */
async function shardOfAgency(control: Db, agencyId: string): Promise<ShardName | undefined> {
  const row = await control
    .select({ shard: agencyShards.shard })
    .from(agencyShards)
    .where(eq(agencyShards.agencyId, agencyId))
    .get();
  return row && isShardName(row.shard) ? row.shard : undefined;
}

/**
 * The shards that take new agencies: `OPEN_SHARDS` (names separated by commas) where it is
 * set, else every shard. An operator closes a shard that nears its size by leaving it out.
 */
function openShards(env: Env): ShardName[] {
  const listed = (env.OPEN_SHARDS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(isShardName);
  return listed.length ? listed : [...SHARD_NAMES];
}

/** The open shard with the fewest agencies (the first such one in order on a tie). */
export async function emptiestShard(env: Env): Promise<ShardName> {
  const open = openShards(env);
  const rows = await controlDb(env)
    .select({ shard: agencyShards.shard, agencies: count() })
    .from(agencyShards)
    .groupBy(agencyShards.shard)
    .all();
  const held = new Map(rows.map((r) => [r.shard, r.agencies]));
  return open.reduce((best, s) => ((held.get(s) ?? 0) < (held.get(best) ?? 0) ? s : best), open[0]!);
}

/** The shard holding the agency's rows, with its database handle; undefined for an agency the map does not know. */
export async function agencyShard(env: Env, agencyId: string): Promise<{ shard: ShardName; db: Db } | undefined> {
  const shard = await shardOfAgency(controlDb(env), agencyId);
  return shard && { shard, db: shardDb(env, shard) };
}

/** What a shard holds: its agencies (from the control database's map), rows of agency data, and its size. */
export interface ShardStats {
  name: ShardName;
  open: boolean;
  agencies: number;
  /** Rows the agencies' quotas count (everything an agency stores or derives). */
  rows: number;
  /** The database's size in bytes as D1 reports it. */
  approxBytes: number;
}

/** Every shard's figures: one query on the control database and one on each shard. */
export async function shardStats(env: Env, rowResources: readonly string[]): Promise<ShardStats[]> {
  const open = new Set(openShards(env));
  const held = await controlDb(env)
    .select({ shard: agencyShards.shard, agencies: count() })
    .from(agencyShards)
    .groupBy(agencyShards.shard)
    .all();
  const agencies = new Map(held.map((r) => [r.shard, r.agencies]));
  return Promise.all(
    SHARD_NAMES.map(async (name) => {
      const result = await shardD1(env, name)
        .prepare(
          "SELECT coalesce(sum(used), 0) AS rows FROM agency_usage WHERE resource IN (SELECT value FROM json_each(?))",
        )
        .bind(JSON.stringify(rowResources))
        .run<{ rows: number }>();
      return {
        name,
        open: open.has(name),
        agencies: agencies.get(name) ?? 0,
        rows: result.results[0]?.rows ?? 0,
        approxBytes: result.meta.size_after ?? 0,
      };
    }),
  );
}

/** The key a secret belongs to and the shard of its agency, from the control database; undefined for none. */
export async function findSecret(env: Env, hash: string): Promise<{ keyId: string; shard: ShardName } | undefined> {
  const row = await env.DB.prepare(
    `SELECT key_id AS keyId, '${CONTROL_SHARD}' AS shard FROM api_key_secrets WHERE hash = ?1
     UNION ALL
     SELECT d.key_id AS keyId, m.shard AS shard FROM secret_directory d
       JOIN agency_shards m ON m.agency_id = d.agency_id WHERE d.hash = ?1
     LIMIT 1`,
  )
    .bind(hash)
    .first<{ keyId: string; shard: string }>();
  return row && isShardName(row.shard) ? { keyId: row.keyId, shard: row.shard } : undefined;
}

/**
 * Enters a new secret of a key of another shard than the control database's in the control
 * database's directory, so requests find it (the control database finds its own keys' secrets).
 */
export async function enterSecret(env: Env, shard: ShardName, secret: typeof secretDirectory.$inferInsert) {
  if (shard === CONTROL_SHARD) return;
  await controlDb(env).insert(secretDirectory).values(secret).onConflictDoNothing();
}
