import type { RouteHandler } from "@hono/zod-openapi";
import { SHARD_NAMES, shardDb } from "../../db/shards";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { presentRequestTrail, RequestTrailSchema, requestIdParam } from "../../schemas/request-trail";
import { requestTrail } from "../../webhooks/request-trail";

export const requestRoute = internalRoute(["request_not_found"], {
  method: "get",
  path: "/internal/v1/requests/{request_id}",
  operationId: "request",
  tags: ["Operations"],
  summary: "What a write of any agency did, by its request id",
  description:
    "The same as GET /api/v1/requests/{request_id}, for any agency (`agency_id` names it): a write that " +
    "committed in the last 24 hours, its events and their deliveries. Anything else is 404 `request_not_found`.",
  request: { params: requestIdParam },
  responses: { 200: { description: "The request and what it did.", content: json(RequestTrailSchema) } },
});

/** The request is looked for on every shard at once; the one whose agency wrote it answers. */
export const requestHandler: RouteHandler<typeof requestRoute, AppEnv> = async (c) => {
  const id = c.req.valid("param").request_id;
  const found = await Promise.all(
    SHARD_NAMES.map((shard) =>
      requestTrail(shardDb(c.env, shard), id).catch((err: unknown) => {
        if (err instanceof DomainError && err.code === "request_not_found") return undefined;
        throw err;
      }),
    ),
  );
  const trail = found.find((t) => t !== undefined);
  if (!trail) throw new DomainError("request_not_found");
  return c.json(presentRequestTrail(trail), 200);
};
