import type { RouteHandler } from "@hono/zod-openapi";
import { deleteTour, findTour } from "../../domain/tours";
import { ifMatch } from "../../http/admission/conditional";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { publicRoute } from "../../http/route";
import { WRITER_ROLES } from "../../schemas/listings";
import { tourNumberParam } from "../../schemas/tours";

export const deleteTourRoute = publicRoute(
  {
    endpoint: "delete_tour",
    scope: "tours:write",
    roles: WRITER_ROLES,
    conditional: "write",
    errors: ["tour_not_found"],
  },
  {
    method: "delete",
    path: "/api/v1/tours/{tourNumber}",
    operationId: "deleteTour",
    tags: ["Tours"],
    summary: "Delete a tour",
    request: { params: tourNumberParam },
    responses: { 204: { description: "Deleted; no body." } },
  },
);

export const deleteTourHandler: RouteHandler<typeof deleteTourRoute, AppEnv> = async (c) => {
  const ifVersion = ifMatch(c);
  const db = c.var.db;
  const tour = await findTour(db, c.get("caller").agencyId, c.req.valid("param").tourNumber);
  const mark = idempotencyMark(c, db, { status: 204, resourceType: "tour", resourceId: tour.id, ifChanged: true });
  await deleteTour(db, tour, mark, ifVersion);
  return c.body(null, 204);
};
