import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { type CalendarConnection, calendarConnections } from "../db/schema";
import { managerChainOf } from "../domain/people/hierarchy";
import { calendarCredentials, seal, unseal } from "../domain/sealed-columns";
import type { Keyring, KeyringSecrets } from "../lib/crypto/keyring";
import { keyringOf } from "../lib/crypto/keyring";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import type { OutboundPolicy } from "../lib/outbound-url";
import { type GoogleCredentials, googleSource } from "./google";
import { checkFeedUrl, icsSource } from "./ics/busy";
import { type CalendarSource, guarded } from "./outbound";
import { sandboxSource } from "./sandbox";

/** Sealed credentials open only for the connection row of that user (one per user) in that agency. */
const boundRow = (row: Pick<CalendarConnection, "agencyId" | "userId">) => ({
  agencyId: row.agencyId,
  boundId: row.userId,
});

type ConnectInput =
  | { provider: "google"; calendarId: string; credentials: GoogleCredentials }
  | { provider: "ics"; feedUrl: string };

/**
 * Connects (or replaces) a user's calendar; credentials are sealed before they are
 * stored. An ICS feed URL must pass the outbound policy.
 */
export async function connectCalendar(
  db: Db,
  keyring: Keyring,
  user: { id: string; agencyId: string },
  input: ConnectInput,
  policy: OutboundPolicy,
): Promise<CalendarConnection> {
  if (input.provider === "ics") input = { ...input, feedUrl: checkFeedUrl(input.feedUrl, policy) };
  const sealed = await seal(
    keyring,
    calendarCredentials,
    boundRow({ agencyId: user.agencyId, userId: user.id }),
    JSON.stringify(input.provider === "google" ? input.credentials : { feed_url: input.feedUrl }),
  );
  const values = {
    userId: user.id,
    agencyId: user.agencyId,
    provider: input.provider,
    calendarId: input.provider === "google" ? input.calendarId : null,
    credentialsSealed: sealed,
    // New credentials start with a clean record: the last check's failure was the old connection's.
    lastError: null,
    lastCheckedAt: null,
    updatedAt: nowIso(),
  };
  const [row] = await db
    .insert(calendarConnections)
    .values({ id: newId("cal"), ...values })
    .onConflictDoUpdate({ target: calendarConnections.userId, set: values })
    .returning();
  return row!;
}

export async function disconnectCalendar(db: Db, userId: string): Promise<void> {
  await db.delete(calendarConnections).where(eq(calendarConnections.userId, userId));
}

/**
 * The connection that answers for `userId`: the user's own, else the nearest manager's,
 * walking up the hierarchy inside the agency in one statement. None anywhere is 403
 * `calendar_not_connected`.
 */
export async function resolveConnection(db: Db, agencyId: string, userId: string): Promise<CalendarConnection> {
  const rows = await db
    .select({ userId: sql<string>`chain.id`, connection: calendarConnections })
    .from(sql`${managerChainOf(agencyId, userId)} AS chain`)
    // Only a connection bound to this agency: one saved while its user moved away stays the old agency's.
    .leftJoin(
      calendarConnections,
      and(eq(calendarConnections.userId, sql`chain.id`), eq(calendarConnections.agencyId, agencyId)),
    )
    .orderBy(sql`chain.depth`);
  const chain: string[] = [];
  for (const row of rows) {
    if (row.connection) return row.connection;
    if (!chain.includes(row.userId)) chain.push(row.userId);
  }
  throw new DomainError("calendar_not_connected", { details: { checked_user_ids: chain.length ? chain : [userId] } });
}

/** The provider behind a connection, with Google's refreshed tokens written back sealed. */
export async function sourceFor(
  db: Db,
  env: KeyringSecrets & { GOOGLE_CLIENT_SECRET?: string; ALLOW_HTTP_RECEIVERS: string },
  conn: CalendarConnection,
  timeoutMs?: number,
): Promise<CalendarSource> {
  if (conn.provider === "sandbox") return guarded("sandbox", sandboxSource(db, conn));
  const keyring = keyringOf(env);
  const creds = JSON.parse(await unseal(keyring, calendarCredentials, boundRow(conn), conn.credentialsSealed));
  if (conn.provider === "ics") {
    const policy = { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" };
    return guarded("ics", icsSource(creds.feed_url, { policy, timeoutMs }));
  }
  return guarded(
    "google",
    googleSource(conn.calendarId!, creds as GoogleCredentials, {
      clientSecret: env.GOOGLE_CLIENT_SECRET,
      timeoutMs,
      save: async (refreshed) => {
        const credentialsSealed = await seal(keyring, calendarCredentials, boundRow(conn), JSON.stringify(refreshed));
        await db
          .update(calendarConnections)
          .set({ credentialsSealed, updatedAt: nowIso() })
          .where(and(eq(calendarConnections.id, conn.id), eq(calendarConnections.agencyId, conn.agencyId)));
      },
    }),
  );
}
