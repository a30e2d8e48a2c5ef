import { and, eq } from "drizzle-orm";
import { expect } from "vitest";
import { agencyUsage } from "../../src/db/schema";
import { db, internal, type Tenant } from "./harness";

/** Sets (a number) or returns to the default (null) the agency's own quotas, through the internal API. */
export const setQuotas = async (t: Tenant, quotas: Record<string, number | null>) => {
  const r = await internal(`/internal/v1/agencies/${t.agencyId}/quotas`, { method: "PATCH", body: { quotas } });
  expect(r.status, r.text).toBe(200);
  return r.json;
};

/** What the agency's usage counter of `resource` holds (0 when it has none). */
export async function usage(agencyId: string, resource: string): Promise<number> {
  const row = await db()
    .select({ used: agencyUsage.used })
    .from(agencyUsage)
    .where(and(eq(agencyUsage.agencyId, agencyId), eq(agencyUsage.resource, resource)))
    .get();
  return row?.used ?? 0;
}
