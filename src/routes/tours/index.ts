import { OpenAPIHono } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import type { AppEnv } from "../../env";
import { tours } from "../../db/schema";
import { registerReplay } from "../../guards/idempotency";
import { validationHook } from "../../lib/validation";
import { createTourHandler, createTourRoute } from "./create";
import { deleteTourHandler, deleteTourRoute } from "./delete";
import { getTour, getTourRoute } from "./get";
import { listTours, listToursRoute } from "./list";
import { presentTour, TourSchema } from "./schema";
import { updateTourHandler, updateTourRoute } from "./update";

// A tour write whose response was lost is answered with the tour as it stands.
registerReplay("tour", async (c, db, id) => {
  const tour = await db.select().from(tours).where(and(eq(tours.id, id), eq(tours.agencyId, c.get("caller").agencyId))).get();
  return tour ? TourSchema.parse(presentTour(tour)) : undefined;
});

export const toursApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listToursRoute, listTours)
  .openapi(getTourRoute, getTour)
  .openapi(createTourRoute, createTourHandler)
  .openapi(updateTourRoute, updateTourHandler)
  .openapi(deleteTourRoute, deleteTourHandler);
