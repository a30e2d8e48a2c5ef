import type { RouteHandler } from "@hono/zod-openapi";
import { driveStarted } from "../../durable/replay-driver";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { CreateReplayBody, presentReplay, rangeOf, WebhookReplaySchema } from "../../schemas/replays";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { startReplay } from "../../webhooks/replays/records";
import { agencyEndpointParams, REPLAYS_PATH } from "./replays";

export const startWebhookReplayRoute = internalRoute(
  [
    "webhook_endpoint_not_found",
    "webhook_replay_running",
    "webhook_replay_range_expired",
    "webhook_replay_range_invalid",
  ],
  {
    method: "post",
    path: REPLAYS_PATH,
    operationId: "startWebhookReplay",
    tags: ["Webhooks"],
    summary: "Replay a range of an agency's events to one of its endpoints",
    description:
      "What `POST /api/v1/webhooks/endpoints/{endpoint_id}/replays` does for the agency's integrator, for support: " +
      "every event of the range the endpoint's types and filters select, in sequence order, each a delivery of its " +
      "own marked with `replay_id`. One replay runs per endpoint (409 `webhook_replay_running`); a range past the " +
      "events kept is 422 `webhook_replay_range_expired`.",
    request: { params: agencyEndpointParams, body: { content: json(CreateReplayBody) } },
    responses: { 202: { description: "The replay.", content: json(WebhookReplaySchema) } },
  },
);

export const startWebhookReplayHandler: RouteHandler<typeof startWebhookReplayRoute, AppEnv> = async (c) => {
  const { agency_id, endpoint_id } = c.req.valid("param");
  const body = c.req.valid("json");
  const endpoint = await findEndpoint(c.var.db, agency_id, endpoint_id);
  // An operator's request carries no idempotency key: nothing to mark.
  const replay = await startReplay(c.var.db, endpoint, rangeOf(body), body.only_failed ?? false, () => []);
  await driveStarted(c.env, replay);
  return c.json(WebhookReplaySchema.parse(presentReplay(replay)), 202);
};
