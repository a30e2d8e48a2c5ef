import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { agencyQuotas, agencyUsage, quotaDefaults } from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";

/**
 * What an agency's quotas bound: rows of a table, or bytes of the fields a client chooses
 * the size of, and the rows each write derives (events, webhook deliveries and attempts,
 * commit marks, search grams). The triggers of the agency_quotas and derived_quotas
 * migrations keep `agency_usage` exact and refuse the write that would pass a quota;
 * `quota_defaults` (seeded there) holds the defaults.
 */
const QUOTA_RESOURCES = {
  tours: "rows",
  tour_bytes: "bytes",
  listings: "rows",
  listing_bytes: "bytes",
  media_uploads: "rows",
  /** Bytes kept in R2: the declared size of uploads under way or completed. */
  media_bytes: "bytes",
  api_keys: "rows",
  users: "rows",
  appointments: "rows",
  events: "rows",
  webhook_deliveries: "rows",
  webhook_attempts: "rows",
  idempotency_marks: "rows",
  tour_search_grams: "rows",
} as const satisfies Record<string, "rows" | "bytes">;

/**
 * Events of the platform's own making: they record what already happened (a payment, a
 * subscription, a calendar orphan, a finished media delivery), so they count against the
 * agency but are never refused. Every other event refuses its write while the agency is at
 * its events, webhook_deliveries or webhook_attempts quota (the events_quota trigger).
 */
export const UNREFUSED_EVENT_TYPES = [
  "invoice.payment_made",
  "subscription.created",
  "subscription.cancelled",
  "appointment.orphan.detected",
  "media.delivery.completed",
  "media.delivery.failed",
] as const;

/**
 * The tables the quotas count, for the usage report: the resource counting their rows, the
 * one counting their client-sized bytes, and the average size of the rest of a row (ids,
 * timestamps, fixed columns and index entries). Approximate: D1 reports no size per row; the
 * figures follow what test/operations/row-bytes.test.ts measures on real writes.
 */
export const STORED_TABLES = {
  tours: { rows: "tours", bytes: "tour_bytes", rowBytes: 700 },
  listings: { rows: "listings", bytes: "listing_bytes", rowBytes: 900 },
  media_uploads: { rows: "media_uploads", rowBytes: 500 },
  api_keys: { rows: "api_keys", rowBytes: 600 },
  users: { rows: "users", rowBytes: 400 },
  appointments: { rows: "appointments", rowBytes: 300 },
  events: { rows: "events", rowBytes: 700 },
  webhook_deliveries: { rows: "webhook_deliveries", rowBytes: 400 },
  webhook_delivery_attempts: { rows: "webhook_attempts", rowBytes: 260 },
  idempotency_marks: { rows: "idempotency_marks", rowBytes: 500 },
  tour_search_grams: { rows: "tour_search_grams", rowBytes: 60 },
} as const satisfies Record<string, { rows: QuotaResource; bytes?: QuotaResource; rowBytes: number }>;

export type QuotaResource = keyof typeof QUOTA_RESOURCES;
/** What a quota counts: rows, or bytes. */
export const quotaUnit = (resource: QuotaResource) => QUOTA_RESOURCES[resource];
export const QUOTA_RESOURCE_NAMES = Object.keys(QUOTA_RESOURCES) as QuotaResource[];

/** The highest quota an override may set. */
export const MAX_QUOTA = 1_000_000_000_000_000;

export interface QuotaState {
  resource: QuotaResource;
  unit: "rows" | "bytes";
  /** The agency's quota: its override, else the default. */
  limit: number;
  used: number;
  /** True when the agency has its own quota for this resource. */
  overridden: boolean;
}

const REFUSAL = /agency_quota_exceeded:([a-z_]+)/;

/** The resource whose quota refused a D1 write, or undefined when the failure is something else. */
export function refusedResource(err: unknown): QuotaResource | undefined {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const name = REFUSAL.exec(e instanceof Error ? e.message : String(e))?.[1];
    if (name && Object.hasOwn(QUOTA_RESOURCES, name)) return name as QuotaResource;
  }
  return undefined;
}

/**
 * Turns a write refused by a quota trigger into `agency_quota_exceeded`, with the agency's
 * limit and usage read after the failure (the write itself stored nothing); any other
 * failure is thrown as it came. Use as `.catch((err) => quotaRefusal(db, agencyId, err))`.
 */
export async function quotaRefusal(db: Db, agencyId: string, err: unknown): Promise<never> {
  const resource = refusedResource(err);
  if (!resource) throw err;
  const state = (await agencyQuotaStates(db, agencyId)).find((q) => q.resource === resource);
  throw new DomainError("agency_quota_exceeded", {
    message: `The agency has reached its ${resource} quota; delete something or ask for a higher quota.`,
    details: { resource, limit: state?.limit ?? null, usage: state?.used ?? null },
  });
}

/** Every quota of the agency with its usage, in the order of QUOTA_RESOURCES. One indexed read. */
export async function agencyQuotaStates(db: Db, agencyId: string): Promise<QuotaState[]> {
  const rows = await db
    .select({
      resource: quotaDefaults.resource,
      byDefault: quotaDefaults.quota,
      override: agencyQuotas.quota,
      used: sql<number>`coalesce(${agencyUsage.used}, 0)`,
    })
    .from(quotaDefaults)
    .leftJoin(agencyQuotas, and(eq(agencyQuotas.agencyId, agencyId), eq(agencyQuotas.resource, quotaDefaults.resource)))
    .leftJoin(agencyUsage, and(eq(agencyUsage.agencyId, agencyId), eq(agencyUsage.resource, quotaDefaults.resource)));
  const byName = new Map(rows.map((r) => [r.resource, r]));
  return QUOTA_RESOURCE_NAMES.flatMap((resource) => {
    const row = byName.get(resource);
    if (!row) return [];
    return [
      {
        resource,
        unit: QUOTA_RESOURCES[resource],
        limit: row.override ?? row.byDefault,
        used: Math.max(0, row.used),
        overridden: row.override !== null,
      },
    ];
  });
}

/**
 * Sets (a number) or removes (null) the agency's own quotas, in one batch. A quota below
 * the current usage is allowed: what is stored stays, and new writes of that resource are
 * refused until usage is under it again.
 */
export async function setAgencyQuotas(
  db: Db,
  agencyId: string,
  quotas: Partial<Record<QuotaResource, number | null>>,
): Promise<void> {
  const entries = QUOTA_RESOURCE_NAMES.filter((r) => Object.hasOwn(quotas, r)).map((r) => [r, quotas[r]] as const);
  const [first, ...rest] = entries.map(([resource, quota]) =>
    quota === null || quota === undefined
      ? db.delete(agencyQuotas).where(and(eq(agencyQuotas.agencyId, agencyId), eq(agencyQuotas.resource, resource)))
      : db
          .insert(agencyQuotas)
          .values({ agencyId, resource, quota })
          .onConflictDoUpdate({
            target: [agencyQuotas.agencyId, agencyQuotas.resource],
            set: { quota, updatedAt: nowIso() },
          }),
  );
  if (first) await db.batch([first, ...rest]);
}

export interface TableUsage {
  rows: number;
  /** The client-sized bytes counted exactly, plus rows × the table's average fixed row size. */
  approxBytes: number;
}

/** What each of these agencies stores, by table (from agency_usage: one indexed read for the page). */
export async function usageOfAgencies(
  db: Db,
  agencyIds: string[],
): Promise<Map<string, Record<keyof typeof STORED_TABLES, TableUsage>>> {
  const rows = agencyIds.length
    ? await db
        .select()
        .from(agencyUsage)
        .where(sql`${agencyUsage.agencyId} IN (SELECT value FROM json_each(${JSON.stringify(agencyIds)}))`)
    : [];
  const used = new Map(rows.map((r) => [`${r.agencyId} ${r.resource}`, Math.max(0, r.used)]));
  const of = (agencyId: string, resource: QuotaResource | undefined) =>
    resource ? (used.get(`${agencyId} ${resource}`) ?? 0) : 0;
  return new Map(
    agencyIds.map((agencyId) => [
      agencyId,
      Object.fromEntries(
        Object.entries(STORED_TABLES).map(([table, t]) => {
          const n = of(agencyId, t.rows);
          const bytes = "bytes" in t ? of(agencyId, t.bytes) : 0;
          return [table, { rows: n, approxBytes: bytes + n * t.rowBytes }];
        }),
      ) as Record<keyof typeof STORED_TABLES, TableUsage>,
    ]),
  );
}
