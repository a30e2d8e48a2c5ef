import { type RouteHandler, z } from "@hono/zod-openapi";
import { reconcileCalendars } from "../../calendar/reconcile/run";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { outsideHelperGuard, TEST_HELPERS_TAG } from "./schema";

/** Stored calendar events of each kind (shoots, tours) one run checks. */
const RECONCILE_LIMIT = 200;

const ReconcileResultSchema = z.object({
  checked: z
    .number()
    .int()
    .openapi({ description: "Stored calendar events compared with their calendar.", example: 3 }),
  detected: z.number().int().openapi({ description: "New discrepancies, each one event.", example: 1 }),
  resolved: z.number().int().openapi({ description: "Earlier discrepancies that healed.", example: 0 }),
  skipped: z
    .number()
    .int()
    .openapi({ description: "Events whose calendar is not connected or did not answer.", example: 0 }),
});

export const reconcileRoute = publicRoute(outsideHelperGuard("scheduling:read"), {
  method: "post",
  path: "/api/v1/test_helpers/calendar/reconcile",
  operationId: "testHelperReconcileCalendars",
  tags: [TEST_HELPERS_TAG],
  summary: "Run calendar reconciliation for your agency (emits appointment.orphan.detected)",
  description:
    "What the service does every 15 minutes, now and for your agency only: each scheduled shoot (and tour) with a " +
    "`calendar_event_id` is compared with the calendar that answers for its agent; a shoot that ended more than a " +
    "day ago is closed and no longer checked. An event that is missing, " +
    "moved (by more than a minute) or unreadable emits `appointment.orphan.detected` once while it lasts. A " +
    "sandbox calendar (`POST /api/v1/test_helpers/users/{user_id}/calendar/busy_blocks`) makes each case easy to " +
    "set up: a shoot whose event id no block has is `missing`, one whose block starts elsewhere is `moved`. At most " +
    `${RECONCILE_LIMIT} shoots and ${RECONCILE_LIMIT} tours, earliest first, are checked per call.`,
  responses: { 200: { description: "What the run found.", content: json(ReconcileResultSchema) } },
});

// Running it again finds nothing new: an open discrepancy is reported once.
export const reconcileHandler: RouteHandler<typeof reconcileRoute, AppEnv> = async (c) =>
  c.json(
    ReconcileResultSchema.parse(
      await reconcileCalendars(
        c.env,
        { agencyId: c.get("caller").agencyId, limit: RECONCILE_LIMIT },
        Date.now(),
        c.var.d1,
      ),
    ),
    200,
  );
