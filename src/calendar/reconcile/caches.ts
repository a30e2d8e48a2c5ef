import { and, asc, eq, isNull } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type CalendarConnection, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { resolveConnection, sourceFor } from "../connections";
import type { CalendarSource } from "../outbound";

/** Promises by key: the first caller of a key loads it, every later one shares that answer (or failure). */
function promiseCache<T>(): (key: string, load: () => Promise<T>) => Promise<T> {
  const cache = new Map<string, Promise<T>>();
  return (key, load) => {
    let value = cache.get(key);
    if (!value) {
      value = load();
      cache.set(key, value);
    }
    return value;
  };
}

/**
 * What one reconciliation run looks up once and reuses: each agency's owner, each
 * user's calendar connection (null when not connected), each connection's source.
 */
export function reconcileCaches(db: Db, env: Env) {
  const owners = promiseCache<string | null>();
  const connections = promiseCache<CalendarConnection | null>();
  const sources = promiseCache<CalendarSource>();
  return {
    ownerOf: (agencyId: string) =>
      owners(agencyId, () =>
        db
          .select({ id: users.id })
          .from(users)
          .where(and(eq(users.agencyId, agencyId), isNull(users.managerId)))
          .orderBy(asc(users.createdAt))
          .get()
          .then((row) => row?.id ?? null),
      ),
    connectionOf: (agencyId: string, userId: string) =>
      connections(`${agencyId}:${userId}`, () =>
        resolveConnection(db, agencyId, userId).catch((err: unknown) => {
          if (err instanceof DomainError && err.code === "calendar_not_connected") return null;
          throw err;
        }),
      ),
    sourceOf: (conn: CalendarConnection) => sources(conn.id, () => sourceFor(db, env, conn)),
  };
}
