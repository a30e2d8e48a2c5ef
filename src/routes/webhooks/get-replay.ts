import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentReplay, replayParams, WebhookReplaySchema } from "../../schemas/replays";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { findReplay } from "../../webhooks/replays/records";

export const getReplayRoute = publicRoute(
  {
    endpoint: "read_webhook_endpoints",
    scope: "webhooks:read",
    errors: ["webhook_endpoint_not_found", "webhook_replay_not_found"],
  },
  {
    method: "get",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}/replays/{replay_id}",
    operationId: "getWebhookReplay",
    tags: ["Webhooks"],
    summary: "A replay's progress",
    description:
      "The replay as it stands: `events_sent` and `events_skipped` grow to `events_total`, and `status` turns " +
      "`done`. Each sent event is in the endpoint's delivery log with this `replay_id`. Finished replays are kept " +
      "30 days.",
    request: { params: replayParams },
    responses: { 200: { description: "The replay.", content: json(WebhookReplaySchema) } },
  },
);

export const getReplayHandler: RouteHandler<typeof getReplayRoute, AppEnv> = async (c) => {
  const { endpoint_id, replay_id } = c.req.valid("param");
  const endpoint = await findEndpoint(c.var.db, c.get("caller").agencyId, endpoint_id);
  const replay = await findReplay(c.var.db, endpoint, replay_id);
  return c.json(WebhookReplaySchema.parse(presentReplay(replay)), 200);
};
