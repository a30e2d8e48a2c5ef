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

/** A shard's environment remembers its shard and the Worker's own environment. */
const SHARD = Symbol.for("alms.shard");
const ROOT = Symbol.for("alms.root-env");
type Scoped = Env & { [SHARD]?: ShardName; [ROOT]?: Env };

/** The Worker's own environment, under any shard's. */
const rootOf = (env: Env): Env => (env as Scoped)[ROOT] ?? env;

/** The D1 binding of a shard. */
export function shardD1(env: Env, shard: ShardName): D1Database {
  const binding = SHARD_BINDINGS.get(shard);
  if (!binding) throw new Error(`There is no shard named ${shard}.`);
  return rootOf(env)[binding];
}

/** The shard an environment is scoped to (`shardEnv`); the control database's for the Worker's own. */
export const shardOfEnv = (env: Env): ShardName => (env as Scoped)[SHARD] ?? CONTROL_SHARD;

/** A queue whose every message names the shard it was sent for, so its consumer reads that shard. */
function stamped<T>(queue: Queue<T>, shard: ShardName): Queue<T> {
  const mark = (body: T): T =>
    body && typeof body === "object" && !Array.isArray(body) ? ({ ...body, shard } as T) : body;
  return {
    send: (body, options) => queue.send(mark(body), options),
    sendBatch: (messages, options) =>
      queue.sendBatch(
        [...messages].map((m) => ({ ...m, body: mark(m.body) })),
        options,
      ),
    metrics: () => queue.metrics(),
  } as Queue<T>;
}

/**
 * The environment of work on one shard: `DB` is the shard's database, and every queue
 * message sent through it names the shard (`shard` in its body; none for the control
 * database's, which a message that names no shard is for). Code under it reads and
 * writes `env.DB` as before; the control database stays reachable through `controlDb`.
 * This is how a request, a job or a consumer is routed: it runs under its agency's shard's
 * environment, and nothing else picks a database.
 */
export function shardEnv(env: Env, shard: ShardName): Env {
  const root = rootOf(env);
  // A message that names no shard is the control database's: its messages stay as they were.
  const queues =
    shard === CONTROL_SHARD
      ? {}
      : { MEDIA_QUEUE: stamped(root.MEDIA_QUEUE, shard), WEBHOOK_QUEUE: stamped(root.WEBHOOK_QUEUE, shard) };
  return { ...root, DB: shardD1(root, shard), ...queues, [SHARD]: shard, [ROOT]: root } as Scoped;
}

/** The shard a queue message was sent for (`shardEnv`); the control database's for one that names none. */
export function shardOfMessage(body: unknown): ShardName {
  const named = body && typeof body === "object" ? (body as { shard?: unknown }).shard : undefined;
  return typeof named === "string" && isShardName(named) ? named : CONTROL_SHARD;
}

/** A shard's database handle. */
export const shardDb = (env: Env, shard: ShardName): Db => database(shardD1(env, shard));

/** The control database: the map of agencies to shards, and the first shard. */
export const controlDb = (env: Env): Db => database(rootOf(env).DB);

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

/** How many agencies each shard holds, from the control database's map (one query). */
async function agenciesByShard(env: Env): Promise<Map<string, number>> {
  const rows = await controlDb(env)
    .select({ shard: agencyShards.shard, agencies: count() })
    .from(agencyShards)
    .groupBy(agencyShards.shard)
    .all();
  return new Map(rows.map((r) => [r.shard, r.agencies]));
}

/** The open shard with the fewest agencies (the first such one in order on a tie). */
export async function emptiestShard(env: Env): Promise<ShardName> {
  const open = openShards(env);
  const held = await agenciesByShard(env);
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
  const agencies = await agenciesByShard(env);
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

/**
 * The key a secret belongs to and the shard of its agency, from the control database; undefined
 * for none. The control database's own secrets count only while the map places their agency
 * there (a moved agency's are deleted in pages after it left).
 */
export async function findSecret(env: Env, hash: string): Promise<{ keyId: string; shard: ShardName } | undefined> {
  const row = await rootOf(env)
    .DB.prepare(
      `SELECT s.key_id AS keyId, m.shard AS shard FROM api_key_secrets s
       JOIN api_keys k ON k.id = s.key_id JOIN agency_shards m ON m.agency_id = k.agency_id
       WHERE s.hash = ?1 AND m.shard = '${CONTROL_SHARD}'
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

/** Rows an internal route may name by id, and how each finds its agency. */
const OWNER_OF = new Map([
  ["user", "SELECT agency_id AS agencyId FROM users WHERE id = ?"],
  ["key", "SELECT agency_id AS agencyId FROM api_keys WHERE id = ?"],
  ["session", "SELECT u.agency_id AS agencyId FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?"],
  ["delivery", "SELECT agency_id AS agencyId FROM webhook_deliveries WHERE id = ?"],
  ["upload", "SELECT agency_id AS agencyId FROM media_uploads WHERE id = ?"],
] as const);
export type OwnedKind = Parameters<(typeof OWNER_OF)["get"]>[0];

/**
 * The agency of a row named by id, and its shard: one indexed look-up on every shard at once,
 * kept only where the map places the agency (a row an unfinished move left behind is not it).
 * Undefined when no shard holds it. For the operators' routes, which name rows before agencies.
 */
export async function ownerOf(
  env: Env,
  kind: OwnedKind,
  id: string,
): Promise<{ agencyId: string; shard: ShardName } | undefined> {
  const query = OWNER_OF.get(kind)!;
  const found = await Promise.all(
    SHARD_NAMES.map(async (shard) => {
      const row = await shardD1(env, shard).prepare(query).bind(id).first<{ agencyId: string }>();
      return row ? { agencyId: row.agencyId, shard } : undefined;
    }),
  );
  for (const hit of found) {
    if (hit && (await shardOfAgency(controlDb(env), hit.agencyId)) === hit.shard) return hit;
  }
  return undefined;
}
