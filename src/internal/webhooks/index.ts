import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { listWebhookDeliveriesHandler, listWebhookDeliveriesRoute } from "./list-deliveries";
import { replayWebhookDeliveryHandler, replayWebhookDeliveryRoute } from "./replay-delivery";

export const webhooksInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listWebhookDeliveriesRoute, listWebhookDeliveriesHandler)
  .openapi(replayWebhookDeliveryRoute, replayWebhookDeliveryHandler);
