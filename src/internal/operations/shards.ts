import { type RouteHandler, z } from "@hono/zod-openapi";
import { SHARD_NAMES, shardStats } from "../../db/shards";
import { QUOTA_RESOURCE_NAMES, quotaUnit } from "../../domain/quotas";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";

const ShardSchema = z
  .object({
    name: z.enum(SHARD_NAMES as [string, ...string[]]).openapi({ example: "shard-1" }),
    open: z.boolean().openapi({ description: "Whether it takes new agencies (`OPEN_SHARDS`)." }),
    agencies: z.number().int().openapi({ description: "Agencies whose rows it holds.", example: 120 }),
    rows: z.number().int().openapi({
      description: "Rows its agencies' quotas count: everything they store and what their writes derive.",
      example: 1_250_000,
    }),
    approx_bytes: z.number().int().openapi({
      description: "The database's size in bytes, as D1 reports it (a shard's limit is 10 GB).",
      example: 1_073_741_824,
    }),
  })
  .openapi("Shard");

export const listShardsRoute = internalRoute([], {
  method: "get",
  path: "/internal/v1/shards",
  operationId: "listShards",
  tags: ["Operations"],
  summary: "List the database shards",
  description:
    "Each D1 shard of the environment, in order: whether it takes new agencies, how many agencies it holds, their " +
    "rows and the database's size. The first shard is also the control database, which maps agencies to shards.",
  responses: {
    200: { description: "Every shard.", content: json(z.object({ data: z.array(ShardSchema) }).openapi("ShardList")) },
  },
});

export const listShardsHandler: RouteHandler<typeof listShardsRoute, AppEnv> = async (c) => {
  const rowResources = QUOTA_RESOURCE_NAMES.filter((r) => quotaUnit(r) === "rows");
  const stats = await shardStats(c.env, rowResources);
  return c.json(
    {
      data: stats.map((s) => ({
        name: s.name,
        open: s.open,
        agencies: s.agencies,
        rows: s.rows,
        approx_bytes: s.approxBytes,
      })),
    },
    200,
  );
};
