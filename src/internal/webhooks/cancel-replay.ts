import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { presentReplay, WebhookReplaySchema } from "../../schemas/replays";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { findReplay, stopReplay } from "../../webhooks/replays/records";
import { agencyReplayParams, REPLAYS_PATH } from "./replays";

export const cancelWebhookReplayRoute = internalRoute(["webhook_endpoint_not_found", "webhook_replay_not_found"], {
  method: "delete",
  path: `${REPLAYS_PATH}/{replay_id}`,
  operationId: "cancelWebhookReplay",
  tags: ["Webhooks"],
  summary: "Cancel a replay",
  description:
    "Stops a running replay where it is; events already sent keep their deliveries. One over is answered as it is.",
  request: { params: agencyReplayParams },
  responses: { 200: { description: "The replay.", content: json(WebhookReplaySchema) } },
});

export const cancelWebhookReplayHandler: RouteHandler<typeof cancelWebhookReplayRoute, AppEnv> = async (c) => {
  const { agency_id, endpoint_id, replay_id } = c.req.valid("param");
  const endpoint = await findEndpoint(c.var.db, agency_id, endpoint_id);
  const replay = await findReplay(c.var.db, endpoint, replay_id);
  const stopped = await stopReplay(c.var.db, replay, "cancelled");
  return c.json(WebhookReplaySchema.parse(presentReplay(stopped ?? replay)), 200);
};
