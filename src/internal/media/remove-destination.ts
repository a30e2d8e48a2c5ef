import type { RouteHandler } from "@hono/zod-openapi";
import { getUserById } from "../../domain/people/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { removeDestination } from "../../media/delivery/destinations";
import { destinationPath, userParams } from "./schema";

export const removeDeliveryDestinationRoute = internalRoute(["user_not_found", "delivery_destination_not_found"], {
  method: "delete",
  path: destinationPath,
  operationId: "removeDeliveryDestination",
  tags: ["Media"],
  summary: "Remove an agent's delivery destination",
  request: { params: userParams },
  responses: { 204: { description: "Removed." } },
});

export const removeDeliveryDestinationHandler: RouteHandler<typeof removeDeliveryDestinationRoute, AppEnv> = async (
  c,
) => {
  const db = c.var.db;
  await removeDestination(db, await getUserById(db, c.req.valid("param").user_id));
  return c.body(null, 204);
};
