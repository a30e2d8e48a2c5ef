import { OpenAPIHono } from "@hono/zod-openapi";
import { tourById } from "../../domain/tours";
import type { AppEnv } from "../../http/env";
import type { Replayer } from "../../http/registry";
import { validationHook } from "../../http/validation";
import { presentTour, TourSchema } from "../../schemas/tours";
import { createTourHandler, createTourRoute } from "./create";
import { deleteTourHandler, deleteTourRoute } from "./delete";
import { getTour, getTourRoute } from "./get";
import { listTours, listToursRoute } from "./list";
import { updateTourHandler, updateTourRoute } from "./update";

/** A tour write whose response was lost is answered with the tour as it stands. */
export const replayTour: Replayer = async ({ db, agencyId }, id) => {
  const tour = await tourById(db, agencyId, id);
  return tour ? TourSchema.parse(presentTour(tour)) : undefined;
};

export const toursApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listToursRoute, listTours)
  .openapi(getTourRoute, getTour)
  .openapi(createTourRoute, createTourHandler)
  .openapi(updateTourRoute, updateTourHandler)
  .openapi(deleteTourRoute, deleteTourHandler);
