import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { cancelWebhookReplayHandler, cancelWebhookReplayRoute } from "./cancel-replay";
import { getWebhookReplayHandler, getWebhookReplayRoute } from "./get-replay";
import { listWebhookDeliveriesHandler, listWebhookDeliveriesRoute } from "./list-deliveries";
import { replayWebhookDeliveryHandler, replayWebhookDeliveryRoute } from "./replay-delivery";
import { startWebhookReplayHandler, startWebhookReplayRoute } from "./start-replay";

export const webhooksInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listWebhookDeliveriesRoute, listWebhookDeliveriesHandler)
  .openapi(replayWebhookDeliveryRoute, replayWebhookDeliveryHandler)
  .openapi(startWebhookReplayRoute, startWebhookReplayHandler)
  .openapi(getWebhookReplayRoute, getWebhookReplayHandler)
  .openapi(cancelWebhookReplayRoute, cancelWebhookReplayHandler);
