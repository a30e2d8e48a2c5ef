import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { agencyQuotas, agencyUsage, quotaDefaults } from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";

/**
 * What an agency's quotas bound: rows of a table, or bytes of the fields a client chooses
 * the size of. The triggers of the agency_quotas migration keep `agency_usage` exact and
 * refuse the write that would pass a quota; `quota_defaults` (seeded there) holds the
 * defaults. `rowBytes` is the documented average size of a row, for approximate reports.
 */
export const QUOTA_RESOURCES = {
  tours: { unit: "rows", rowBytes: 1_200 },
  tour_bytes: { unit: "bytes", rowBytes: 0 },
  listings: { unit: "rows", rowBytes: 600 },
  listing_bytes: { unit: "bytes", rowBytes: 0 },
  media_uploads: { unit: "rows", rowBytes: 400 },
  api_keys: { unit: "rows", rowBytes: 500 },
  users: { unit: "rows", rowBytes: 300 },
  appointments: { unit: "rows", rowBytes: 250 },
} as const satisfies Record<string, { unit: "rows" | "bytes"; rowBytes: number }>;

export type QuotaResource = keyof typeof QUOTA_RESOURCES;
export const QUOTA_RESOURCE_NAMES = Object.keys(QUOTA_RESOURCES) as QuotaResource[];

/** The highest quota an override may set. */
export const MAX_QUOTA = 1_000_000_000_000;

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
function refusedResource(err: unknown): QuotaResource | undefined {
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
        unit: QUOTA_RESOURCES[resource].unit,
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
