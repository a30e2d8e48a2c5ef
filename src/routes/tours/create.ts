import type { RouteHandler } from "@hono/zod-openapi";
import { createTour } from "../../domain/tours";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { created, json, publicRoute, setLocation } from "../../http/route";
import { WRITER_ROLES } from "../../schemas/listings";
import { CreateTourBody, presentTour, TourSchema } from "../../schemas/tours";

/** Room for 100 images with 2048-character URLs and captions, plus the description. */
const CREATE_TOUR_BODY_LIMIT = 256 * 1024;

export const createTourRoute = publicRoute(
  {
    endpoint: "create_tour",
    scope: "tours:write",
    roles: WRITER_ROLES,
    bodyLimit: CREATE_TOUR_BODY_LIMIT,
    errors: ["agency_quota_exceeded"],
  },
  {
    method: "post",
    path: "/api/v1/tours",
    operationId: "createTour",
    tags: ["Tours"],
    summary: "Create a tour",
    description:
      "`address`, `city`, `state` and `zipcode` are required; the rest is optional. The tour starts `active`, " +
      "with a server-minted `tour_number`.",
    request: { body: { content: json(CreateTourBody) } },
    responses: created("The created tour.", TourSchema, "/api/v1/tours/q7x2m9ka"),
  },
);

export const createTourHandler: RouteHandler<typeof createTourRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const db = c.var.db;
  const tour = await createTour(
    db,
    c.get("caller").agencyId,
    {
      address: b.address,
      city: b.city,
      state: b.state,
      zipcode: b.zipcode,
      mlsNumber: b.mls_number,
      price: b.price,
      bedrooms: b.bedrooms,
      bathrooms: b.bathrooms,
      sqft: b.sqft,
      description: b.description,
      images: b.images,
      virtualTourUrl: b.virtual_tour_url,
    },
    ({ id }) => idempotencyMark(c, db, { status: 201, resourceType: "tour", resourceId: id }),
  );
  setLocation(c, `/api/v1/tours/${tour.tourNumber}`);
  return c.json(TourSchema.parse(presentTour(tour)), 201);
};
