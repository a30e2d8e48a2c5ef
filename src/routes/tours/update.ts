import type { RouteHandler } from "@hono/zod-openapi";
import { findTour, leavesTourUnchanged, updateTour } from "../../domain/tours";
import { keepAsItIs } from "../../domain/versions";
import { ifMatch, setEtag } from "../../http/admission/conditional";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { WRITER_ROLES } from "../../schemas/listings";
import { presentTour, TourSchema, tourNumberParam, UpdateTourBody } from "../../schemas/tours";

const tourAnswer = (status: 200 | 201, description: string) =>
  ({ [status]: { description, content: json(TourSchema) } }) as const;

export const updateTourRoute = publicRoute(
  {
    endpoint: "update_tour",
    scope: "tours:write",
    roles: WRITER_ROLES,
    conditional: "write",
    errors: ["tour_not_found", "agency_quota_exceeded"],
  },
  {
    method: "put",
    path: "/api/v1/tours/{tourNumber}",
    operationId: "updateTour",
    tags: ["Tours"],
    summary: "Update a tour's status, price or description",
    description:
      "Send any of `status`, `price`, `description` (at least one); fields left out keep their value, null " +
      "clears price or description. An update that leaves every field it sends as it is changes nothing: " +
      "200 with the tour, the same version and ETag.",
    request: { params: tourNumberParam, body: { content: json(UpdateTourBody) } },
    responses: tourAnswer(200, "The updated tour."),
  },
);

export const updateTourHandler: RouteHandler<typeof updateTourRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  if (b.status === undefined && b.price === undefined && b.description === undefined) {
    throw new DomainError("validation_missing_required", {
      message: "Send at least one of status, price, description.",
      details: {
        errors: [
          {
            field: "status",
            code: "validation_missing_required",
            message: "Send at least one of status, price, description.",
          },
        ],
      },
    });
  }
  const ifVersion = ifMatch(c);
  const db = c.var.db;
  const tour = await findTour(db, c.get("caller").agencyId, c.req.valid("param").tourNumber);
  const unchanged = leavesTourUnchanged(tour, b);
  const mark = idempotencyMark(c, db, {
    status: 200,
    resourceType: "tour",
    resourceId: tour.id,
    ifChanged: !unchanged,
  });
  const updated = unchanged
    ? await keepAsItIs(db, tour, mark, ifVersion)
    : await updateTour(db, tour, b, mark, ifVersion);
  setEtag(c, updated.version);
  return c.json(TourSchema.parse(presentTour(updated)), 200);
};
