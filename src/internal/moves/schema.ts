import { z } from "@hono/zod-openapi";
import { SHARD_NAMES, type ShardName } from "../../db/shards";
import type { AgencyMove } from "../../durable/mover/moves";

const shard = z.enum(SHARD_NAMES as [ShardName, ...ShardName[]]);

export const MoveInput = z.strictObject({
  to_shard: shard.openapi({ description: "The shard the agency's rows go to.", example: "shard-2" }),
});

export const MoveSchema = z
  .object({
    move_id: z.string().openapi({ example: "mov_0mhx3k2a1q8v2l0c9z7rj4" }),
    agency_id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
    from_shard: shard,
    to_shard: shard,
    status: z.enum(["copying", "switching", "done", "failed"]).openapi({
      description:
        "`copying`: the agency's rows are copied in pages while it serves, and what it changes meanwhile is " +
        "journalled and applied after. `switching`: its writes answer 503 `agency_moving` while the last changes " +
        "are applied, both shards' rows are counted and the map flips; then the old shard's rows are deleted in " +
        "pages (reads and writes are served by the new shard). `done`: nothing of the agency is left on the old " +
        "shard. `failed`: the agency stayed whole on its old shard and the copy was deleted (see `error`).",
      example: "copying",
    }),
    step: z.string().openapi({
      description:
        "The step within the status: start, copy, catch_up, drain, check, flip, requeue, dwell, purge, abandon, " +
        "finished.",
      example: "copy",
    }),
    counts: z.object({
      rows_copied: z.number().int().openapi({ example: 12840 }),
      changes_applied: z
        .number()
        .int()
        .openapi({ description: "Journalled changes applied to the new shard.", example: 73 }),
      rows_deleted: z.number().int().openapi({ description: "Rows deleted from the old shard.", example: 0 }),
    }),
    error: z.string().nullable().openapi({ description: "The last step's failure, if any.", example: null }),
    created_at: z.string().openapi({ example: "2026-11-28T06:00:00.000Z" }),
    updated_at: z.string().openapi({ example: "2026-11-28T06:00:04.000Z" }),
    switched_at: z.string().nullable().openapi({ description: "When the new shard began to serve the agency." }),
    finished_at: z.string().nullable(),
  })
  .openapi("AgencyMove");

export const presentMove = (m: AgencyMove): z.infer<typeof MoveSchema> => ({
  move_id: m.id,
  agency_id: m.agencyId,
  from_shard: m.fromShard as ShardName,
  to_shard: m.toShard as ShardName,
  status: m.status,
  step: m.step,
  counts: { rows_copied: m.rowsCopied, changes_applied: m.changesApplied, rows_deleted: m.rowsDeleted },
  error: m.error,
  created_at: m.createdAt,
  updated_at: m.updatedAt,
  switched_at: m.switchedAt,
  finished_at: m.finishedAt,
});
