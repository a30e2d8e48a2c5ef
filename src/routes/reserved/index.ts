import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { publicRoute } from "../../http/route";
import { validationHook } from "../../http/validation";
import { DomainError } from "../../lib/errors";

/**
 * Routes announced for a later release of /api/v1. They authenticate like any route
 * (so an anonymous caller learns nothing) and answer 501 `not_implemented`.
 */
const bookAppointment = publicRoute(
  { endpoint: "book_appointment", scope: "listings:write", errors: ["not_implemented"], undocumented: true },
  {
    method: "post",
    path: "/api/v1/scheduling/appointments",
    operationId: "bookAppointment",
    tags: ["Scheduling"],
    summary: "Book a shoot appointment (reserved)",
    description:
      "Reserved for a future release: booking a shoot appointment through the API. Today appointments are booked " +
      "through the order form or the dashboard, and reported by the `appointment.scheduled` webhook. Answers 501 " +
      "`not_implemented`.",
    responses: {},
  },
);

export const reservedApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(bookAppointment, () => {
  throw new DomainError("not_implemented", { details: { available_via: ["dashboard", "order_form"] } });
});
