import type { RouteHandler } from "@hono/zod-openapi";
import { getUserById } from "../../domain/people/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { getDestination } from "../../media/delivery/destinations";
import { DestinationSchema, destinationPath, presentDestination, userParams } from "./schema";

export const getDeliveryDestinationRoute = internalRoute(["user_not_found", "delivery_destination_not_found"], {
  method: "get",
  path: destinationPath,
  operationId: "getDeliveryDestination",
  tags: ["Media"],
  summary: "Read an agent's delivery destination (without its secret)",
  request: { params: userParams },
  responses: {
    200: { description: "The destination.", content: json(DestinationSchema) },
  },
});

export const getDeliveryDestinationHandler: RouteHandler<typeof getDeliveryDestinationRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const user = await getUserById(db, c.req.valid("param").user_id);
  return c.json(presentDestination(await getDestination(db, user)), 200);
};
