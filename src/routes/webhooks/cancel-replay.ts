import type { RouteHandler } from "@hono/zod-openapi";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentReplay, replayParams, WebhookReplaySchema } from "../../schemas/replays";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { findReplay, stopReplay } from "../../webhooks/replays/records";

export const cancelReplayRoute = publicRoute(
  {
    endpoint: "replay_webhook_events",
    scope: "webhooks:write",
    roles: ["super_admin", "admin", "media_agency", "broker", "team_lead"],
    errors: ["webhook_endpoint_not_found", "webhook_replay_not_found"],
  },
  {
    method: "delete",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}/replays/{replay_id}",
    operationId: "cancelWebhookReplay",
    tags: ["Webhooks"],
    summary: "Cancel a replay",
    description:
      "Stops a running replay where it is: events already sent keep their deliveries (and retries); no other is " +
      "sent. The answer is the replay, `cancelled`; one already over is answered as it is.",
    request: { params: replayParams },
    responses: { 200: { description: "The replay.", content: json(WebhookReplaySchema) } },
  },
);

export const cancelReplayHandler: RouteHandler<typeof cancelReplayRoute, AppEnv> = async (c) => {
  const { endpoint_id, replay_id } = c.req.valid("param");
  const db = c.var.db;
  const endpoint = await findEndpoint(db, c.get("caller").agencyId, endpoint_id);
  const replay = await findReplay(db, endpoint, replay_id);
  const mark = idempotencyMark(c, db, {
    status: 200,
    resourceType: "webhook_replay",
    resourceId: replay.id,
    ifChanged: true,
  });
  const stopped = await stopReplay(db, replay, "cancelled", mark);
  return c.json(WebhookReplaySchema.parse(presentReplay(stopped ?? replay)), 200);
};
