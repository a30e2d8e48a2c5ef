import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { presentReplay, WebhookReplaySchema } from "../../schemas/replays";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { findReplay } from "../../webhooks/replays/records";
import { agencyReplayParams, REPLAYS_PATH } from "./replays";

export const getWebhookReplayRoute = internalRoute(["webhook_endpoint_not_found", "webhook_replay_not_found"], {
  method: "get",
  path: `${REPLAYS_PATH}/{replay_id}`,
  operationId: "getWebhookReplay",
  tags: ["Webhooks"],
  summary: "A replay's progress",
  request: { params: agencyReplayParams },
  responses: { 200: { description: "The replay.", content: json(WebhookReplaySchema) } },
});

export const getWebhookReplayHandler: RouteHandler<typeof getWebhookReplayRoute, AppEnv> = async (c) => {
  const { agency_id, endpoint_id, replay_id } = c.req.valid("param");
  const endpoint = await findEndpoint(c.var.db, agency_id, endpoint_id);
  return c.json(WebhookReplaySchema.parse(presentReplay(await findReplay(c.var.db, endpoint, replay_id))), 200);
};
