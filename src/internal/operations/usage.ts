import { type RouteHandler, z } from "@hono/zod-openapi";
import { SHARD_NAMES, shardDb } from "../../db/shards";
import { pageAgenciesOfEveryShard, placedAgency } from "../../domain/people/placement";
import { STORED_TABLES, usageOfAgencies } from "../../domain/quotas";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { cursorQuery, pageSchema } from "../../schemas/page";

const TableUsageSchema = z
  .object({
    rows: z.number().int().openapi({ example: 1_250 }),
    approx_bytes: z
      .number()
      .int()
      .openapi({
        description:
          "Approximate: the client-sized bytes the quotas count exactly (tours, listings), plus rows × the table's " +
          "average fixed row size (docs/limits.md).",
        example: 4_180_000,
      }),
  })
  .openapi("TableUsage");

const TABLE_NAMES = Object.keys(STORED_TABLES) as (keyof typeof STORED_TABLES)[];

const AgencyUsageSchema = z
  .object({
    agency_id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
    name: z.string().openapi({ example: "Harbour Media" }),
    approx_bytes: z.number().int().openapi({ description: "The sum over its tables.", example: 5_020_000 }),
    tables: z.object(
      Object.fromEntries(TABLE_NAMES.map((t) => [t, TableUsageSchema])) as Record<
        keyof typeof STORED_TABLES,
        typeof TableUsageSchema
      >,
    ),
  })
  .openapi("AgencyUsage");

export const usageRoute = internalRoute(["agency_not_found"], {
  method: "get",
  path: "/internal/v1/usage",
  operationId: "usage",
  tags: ["Operations"],
  summary: "What each agency stores: rows and approximate bytes per table",
  description:
    "A page of agencies, oldest first, with the rows and approximate bytes of each table their quotas count, " +
    "read from the usage counters (no table is scanned). Quotas and overrides: getAgencyQuotas.",
  request: {
    query: z.strictObject({
      ...cursorQuery,
      agency_id: z.string().optional().openapi({ description: "Report this agency only (one item, no next page)." }),
    }),
  },
  responses: { 200: { description: "A page of agencies.", content: json(pageSchema(AgencyUsageSchema, "UsagePage")) } },
});

export const usageHandler: RouteHandler<typeof usageRoute, AppEnv> = async (c) => {
  const { cursor, limit, agency_id } = c.req.valid("query");
  const page = agency_id
    ? { rows: [await placedAgency(c.env, agency_id)], nextCursor: "" }
    : // A list of its own: a cursor of the agencies list does not page the usage report, nor the other way.
      await pageAgenciesOfEveryShard(c.env, { keyring: keyringOf(c.env), cursor, limit }, "usage");
  // Each agency's usage is read on its own shard: one query per shard of the page.
  const usage = new Map(
    (
      await Promise.all(
        SHARD_NAMES.map((shard) => {
          const ids = page.rows.filter((a) => a.shard === shard).map((a) => a.id);
          return ids.length ? usageOfAgencies(shardDb(c.env, shard), ids) : new Map();
        }),
      )
    ).flatMap((m) => [...m]),
  );
  const data = page.rows.map((a) => {
    const tables = usage.get(a.id)!;
    const of = (t: keyof typeof STORED_TABLES) => ({ rows: tables[t].rows, approx_bytes: tables[t].approxBytes });
    return AgencyUsageSchema.parse({
      agency_id: a.id,
      name: a.name,
      approx_bytes: TABLE_NAMES.reduce((sum, t) => sum + tables[t].approxBytes, 0),
      tables: Object.fromEntries(TABLE_NAMES.map((t) => [t, of(t)])),
    });
  });
  return c.json({ data, next_cursor: page.nextCursor }, 200);
};
