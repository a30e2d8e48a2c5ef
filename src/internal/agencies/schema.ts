import { z } from "@hono/zod-openapi";
import type { Agency } from "../../db/schema";
import { SHARD_NAMES, type ShardName } from "../../db/shards";

export const AgencySchema = z
  .object({
    id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
    name: z.string().openapi({ example: "Harbour Media" }),
    kind: z.enum(["media_agency", "broker", "platform"]),
    cancellation_notice_hours: z
      .number()
      .int()
      .openapi({ description: "No-fee cancellation ends this many hours before the first scheduled shoot." }),
    created_at: z.string(),
    shard: z.enum(SHARD_NAMES as [ShardName, ...ShardName[]]).openapi({
      description: "The database shard that holds the agency's rows (see `GET /internal/v1/shards`).",
      example: "shard-1",
    }),
  })
  .openapi("Agency");

export const presentAgency = (a: Agency & { shard: ShardName }) => ({
  id: a.id,
  name: a.name,
  kind: a.kind,
  cancellation_notice_hours: a.cancellationNoticeHours,
  created_at: a.createdAt,
  shard: a.shard,
});
