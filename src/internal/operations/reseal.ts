import { type RouteHandler, z } from "@hono/zod-openapi";
import { SHARD_NAMES, shardDb } from "../../db/shards";
import { reseal, UNNAMED_KEY } from "../../domain/reseal";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";

const ResealReportSchema = z
  .object({
    current_key_id: z.string().openapi({
      description: "The id of `SECRET_KEY`, the key that seals and signs.",
      example: "q3ZbN0sA",
    }),
    previous_key_ids: z.array(z.string()).openapi({
      description: "The ids of the keys in `SECRET_KEY_PREVIOUS`, which still open and verify.",
      example: ["Xk2pL9eR"],
    }),
    resealed: z
      .number()
      .int()
      .openapi({ description: "Values sealed again under the newest key by this run.", example: 12 }),
    unopenable: z.number().int().openapi({
      description: "Values this run found that open under no key of the ring; they are left as they are.",
      example: 0,
    }),
    remaining_by_key: z.record(z.string(), z.number().int()).openapi({
      description:
        "Values still sealed under another key than the newest, by key id; " +
        `\`${UNNAMED_KEY}\` counts those sealed before seals named their key.`,
      example: { Xk2pL9eR: 40 },
    }),
    done: z.boolean().openapi({
      description: "True when nothing is sealed under another key than the newest: the older keys can be dropped.",
      example: false,
    }),
  })
  .openapi("ResealReport");

export const resealRoute = internalRoute([], {
  method: "post",
  path: "/internal/v1/operations/reseal",
  operationId: "resealSecrets",
  tags: ["Operations"],
  summary: "Seal stored secrets again under the newest master key",
  description:
    "After `SECRET_KEY` is rotated: seals webhook signing secrets, calendar credentials and storage credentials " +
    "that an older key sealed again under `SECRET_KEY`, a bounded number per call (the nightly job does the same). " +
    "Call it again until `done`; then only cached idempotent answers (24 hours), cursors and upload URLs still " +
    "name the older key, and they expire on their own.",
  responses: { 200: { description: "What this run did and what is left.", content: json(ResealReportSchema) } },
});

export const resealHandler: RouteHandler<typeof resealRoute, AppEnv> = async (c) => {
  // Every shard in turn, each with its own bound; the report adds them up.
  const [first, ...rest] = await Promise.all(
    SHARD_NAMES.map((shard) => reseal(shardDb(c.env, shard), keyringOf(c.env))),
  );
  const report = { ...first!, remainingByKey: { ...first!.remainingByKey } };
  for (const r of rest) {
    report.resealed += r.resealed;
    report.unopenable += r.unopenable;
    report.done &&= r.done;
    for (const [k, n] of Object.entries(r.remainingByKey))
      report.remainingByKey[k] = (report.remainingByKey[k] ?? 0) + n;
  }
  return c.json(
    ResealReportSchema.parse({
      current_key_id: report.currentKeyId,
      previous_key_ids: report.previousKeyIds,
      resealed: report.resealed,
      unopenable: report.unopenable,
      remaining_by_key: report.remainingByKey,
      done: report.done,
    }),
    200,
  );
};
