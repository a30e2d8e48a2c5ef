import type { Context, MiddlewareHandler } from "hono";
import { agencyShard, type OwnedKind, ownerOf, type ShardName, shardD1, shardEnv } from "../db/shards";
import { openSession } from "./d1-session";
import type { AppEnv } from "./env";
import { checkedJsonBody } from "./wire";

/** Path parameters and body fields that name a row of one agency, and the kind of row each names. */
const NAMED: [field: string, kind: OwnedKind | "agency"][] = [
  ["agency_id", "agency"],
  ["user_id", "user"],
  ["manager_id", "user"],
  ["key_id", "key"],
  ["session_id", "session"],
  ["delivery_id", "delivery"],
];

async function shardNamed(env: Env, kind: OwnedKind | "agency", id: string): Promise<ShardName | undefined> {
  if (kind === "agency") return (await agencyShard(env, id))?.shard;
  return (await ownerOf(env, kind, id))?.shard;
}

/** Runs the rest of the request on `shard`: `c.var.db` and `c.var.d1` there, `c.env` scoped to it. */
function routeTo(c: Context<AppEnv>, shard: ShardName): void {
  const session = openSession(shardD1(c.env, shard), "first-primary", c.var.event);
  c.set("db", session.db);
  c.set("d1", session.binding);
  c.env = shardEnv(c.env, shard);
}

/**
 * Routes a request that names an agency or one of its rows before anyone is authenticated
 * (a signed upload URL, a payment provider's event) to that agency's shard; one that names
 * nothing any shard holds stays on the control database, where it is answered as unknown.
 */
export async function routeToNamed(c: Context<AppEnv>, kind: OwnedKind | "agency", id: string | undefined) {
  const shard = id ? await shardNamed(c.env, kind, id) : undefined;
  if (shard) routeTo(c, shard);
}

/**
 * Routes an operator's request to the shard of the agency it names: by the first of its
 * path parameters, query or JSON body fields that names an agency or one of its rows. The
 * request then runs there (`c.var.db`, and `c.env` scoped to the shard) like a key's; a
 * request that names none, or a row no shard holds, stays on the control database, where
 * the handler answers as it would (the list of agencies, a 404).
 */
export function internalTarget(): MiddlewareHandler<AppEnv> {
  return async function internalTarget(c, next) {
    const params = c.req.param() as Record<string, string | undefined>;
    // Only a body the route's JSON check has read and capped already: the stream itself is never read here.
    const parsed = await checkedJsonBody(c);
    const body = parsed && typeof parsed === "object" ? (parsed as Record<string, unknown>) : undefined;
    for (const [field, kind] of NAMED) {
      const fromBody = body && Object.hasOwn(body, field) ? body[field] : undefined;
      const value = (Object.hasOwn(params, field) ? params[field] : undefined) ?? c.req.query(field) ?? fromBody;
      if (typeof value !== "string" || value === "") continue;
      const shard = await shardNamed(c.env, kind, value);
      if (shard) routeTo(c, shard);
      break;
    }
    await next();
  };
}
