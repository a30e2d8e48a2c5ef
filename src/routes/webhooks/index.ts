import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import type { Replayer } from "../../http/registry";
import { validationHook } from "../../http/validation";
import { presentReplay, WebhookReplaySchema } from "../../schemas/replays";
import { replayOf } from "../../webhooks/replays/records";
import { cancelReplayHandler, cancelReplayRoute } from "./cancel-replay";
import { catalogHandler, catalogRoute } from "./catalog";
import { createEndpointHandler, createEndpointRoute } from "./create-endpoint";
import { createReplayHandler, createReplayRoute } from "./create-replay";
import { deleteEndpointHandler, deleteEndpointRoute } from "./delete-endpoint";
import { getEndpointHandler, getEndpointRoute } from "./get-endpoint";
import { getReplayHandler, getReplayRoute } from "./get-replay";
import { listDeliveriesHandler, listDeliveriesRoute } from "./list-deliveries";
import { listEndpointsHandler, listEndpointsRoute } from "./list-endpoints";
import { testEndpointHandler, testEndpointRoute } from "./test-endpoint";
import { updateEndpointHandler, updateEndpointRoute } from "./update-endpoint";

export const webhooksApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(catalogRoute, catalogHandler)
  .openapi(createEndpointRoute, createEndpointHandler)
  .openapi(listEndpointsRoute, listEndpointsHandler)
  .openapi(getEndpointRoute, getEndpointHandler)
  .openapi(updateEndpointRoute, updateEndpointHandler)
  .openapi(deleteEndpointRoute, deleteEndpointHandler)
  .openapi(testEndpointRoute, testEndpointHandler)
  .openapi(listDeliveriesRoute, listDeliveriesHandler)
  .openapi(createReplayRoute, createReplayHandler)
  .openapi(getReplayRoute, getReplayHandler)
  .openapi(cancelReplayRoute, cancelReplayHandler);

/** A replay whose start was answered but lost is answered with the replay as it stands. */
export const replayWebhookReplay: Replayer = async ({ db, agencyId }, id) => {
  const replay = await replayOf(db, agencyId, id);
  return replay ? WebhookReplaySchema.parse(presentReplay(replay)) : undefined;
};
