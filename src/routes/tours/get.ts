import type { RouteHandler } from "@hono/zod-openapi";
import { findTour, tourVersion } from "../../domain/tours";
import { setEtag } from "../../http/admission/conditional";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentTour, TourSchema, tourNumberParam } from "../../schemas/tours";

const tourAnswer = (status: 200 | 201, description: string) =>
  ({ [status]: { description, content: json(TourSchema) } }) as const;

export const getTourRoute = publicRoute(
  {
    endpoint: "read_tour_single",
    scope: "tours:read",
    conditional: "read",
    currentVersion: (db, agencyId, param) => tourVersion(db, agencyId, param("tourNumber") ?? ""),
    errors: ["tour_not_found"],
  },
  {
    method: "get",
    path: "/api/v1/tours/{tourNumber}",
    operationId: "getTour",
    tags: ["Tours"],
    summary: "Get a tour",
    request: { params: tourNumberParam },
    responses: tourAnswer(200, "The tour."),
  },
);

export const getTour: RouteHandler<typeof getTourRoute, AppEnv> = async (c) => {
  const tour = await findTour(c.var.db, c.get("caller").agencyId, c.req.valid("param").tourNumber);
  setEtag(c, tour.version);
  return c.json(TourSchema.parse(presentTour(tour)), 200);
};
