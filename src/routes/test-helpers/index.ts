import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { activateListingHandler, activateListingRoute } from "./activate-listing";
import { busyBlockHandler, busyBlockRoute } from "./busy-block";
import { cancelAppointmentHandler, cancelAppointmentRoute } from "./cancel-appointment";
import { cancelSubscriptionHandler, cancelSubscriptionRoute } from "./cancel-subscription";
import { completeUploadsHandler, completeUploadsRoute } from "./complete-uploads";
import { createSubscriptionHandler, createSubscriptionRoute } from "./create-subscription";
import { createUserHandler, createUserRoute } from "./create-user";
import { deactivateUserHandler, deactivateUserRoute } from "./deactivate-user";
import { dropDeliveriesHandler, dropDeliveriesRoute } from "./drop-deliveries";
import { editListingHandler, editListingRoute } from "./edit-listing";
import { moveUserHandler, moveUserRoute } from "./move-user";
import { payInvoiceHandler, payInvoiceRoute } from "./pay-invoice";
import { reconcileHandler, reconcileRoute } from "./reconcile-calendars";
import { rescheduleAppointmentHandler, rescheduleAppointmentRoute } from "./reschedule-appointment";
import { scheduleAppointmentHandler, scheduleAppointmentRoute } from "./schedule-appointment";
import { setDestinationHandler, setDestinationRoute } from "./set-destination";

/**
 * The sandbox's test helpers: what the dashboard, the payment provider, the agent's
 * storage and calendar do, driven with a test key through the same code as the real
 * triggers. Every route is sandbox only; in live none of these paths exists.
 */
export const testHelpersApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(activateListingRoute, activateListingHandler)
  .openapi(editListingRoute, editListingHandler)
  .openapi(payInvoiceRoute, payInvoiceHandler)
  .openapi(scheduleAppointmentRoute, scheduleAppointmentHandler)
  .openapi(rescheduleAppointmentRoute, rescheduleAppointmentHandler)
  .openapi(cancelAppointmentRoute, cancelAppointmentHandler)
  .openapi(busyBlockRoute, busyBlockHandler)
  .openapi(reconcileRoute, reconcileHandler)
  .openapi(setDestinationRoute, setDestinationHandler)
  .openapi(completeUploadsRoute, completeUploadsHandler)
  .openapi(createSubscriptionRoute, createSubscriptionHandler)
  .openapi(cancelSubscriptionRoute, cancelSubscriptionHandler)
  .openapi(createUserRoute, createUserHandler)
  .openapi(moveUserRoute, moveUserHandler)
  .openapi(deactivateUserRoute, deactivateUserHandler)
  .openapi(dropDeliveriesRoute, dropDeliveriesHandler);
