import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { cancelAppointmentHandler, cancelAppointmentRoute } from "./cancel";
import { rescheduleAppointmentHandler, rescheduleAppointmentRoute } from "./reschedule";
import { scheduleAppointmentHandler, scheduleAppointmentRoute } from "./schedule";

export const appointmentsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(scheduleAppointmentRoute, scheduleAppointmentHandler)
  .openapi(rescheduleAppointmentRoute, rescheduleAppointmentHandler)
  .openapi(cancelAppointmentRoute, cancelAppointmentHandler);
