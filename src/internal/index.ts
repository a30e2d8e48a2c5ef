import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../http/env";
import { validationHook } from "../http/validation";
import { agenciesInternal } from "./agencies";
import { apiKeysInternal } from "./api-keys";
import { appointmentsInternal } from "./appointments";
import { calendarsInternal } from "./calendars";
import { listingsInternal } from "./listings";
import { mediaInternal } from "./media";
import { movesInternal } from "./moves";
import { operationsInternal } from "./operations";
import { sessionsInternal } from "./sessions";
import { usersInternal } from "./users";
import { webhooksInternal } from "./webhooks";

/** The operations the dashboard calls: everything the spec leaves to "the dashboard". */
export const internalApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .route("/", agenciesInternal)
  .route("/", usersInternal)
  .route("/", apiKeysInternal)
  .route("/", sessionsInternal)
  .route("/", listingsInternal)
  .route("/", appointmentsInternal)
  .route("/", mediaInternal)
  .route("/", webhooksInternal)
  .route("/", calendarsInternal)
  .route("/", operationsInternal)
  .route("/", movesInternal);
