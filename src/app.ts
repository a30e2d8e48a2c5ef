import { OpenAPIHono } from "@hono/zod-openapi";
import { createApp } from "./http/app";
import type { AppEnv } from "./http/env";
import { validationHook } from "./http/validation";
import { internalApi } from "./internal";
import { adminApi } from "./routes/admin";
import { DEMO_CALENDAR_PATH, demoCalendar } from "./routes/dev/demo-calendar";
import { errorDocsPath, errorsApi } from "./routes/errors";
import { eventsApi } from "./routes/events";
import { STRIPE_HOOK_PATH, stripeHook } from "./routes/hooks/stripe";
import { limitsApi } from "./routes/limits";
import { listingsApi, replayListing } from "./routes/listings";
import { meApi } from "./routes/me";
import { mediaApi, replayUpload, uploadPath } from "./routes/media";
import { requestsApi } from "./routes/requests";
import { reservedApi } from "./routes/reserved";
import { schedulingApi } from "./routes/scheduling";
import { testHelpersApi } from "./routes/test-helpers";
import { replayTour, toursApi } from "./routes/tours";
import { usersApi } from "./routes/users";
import { replayWebhookReplay, webhooksApi } from "./routes/webhooks";

/** The public surface: one line per resource. */
const publicApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .route("/", listingsApi)
  .route("/", mediaApi)
  .route("/", toursApi)
  .route("/", usersApi)
  .route("/", webhooksApi)
  .route("/", eventsApi)
  .route("/", schedulingApi)
  .route("/", reservedApi)
  .route("/", adminApi)
  .route("/", limitsApi)
  .route("/", meApi)
  .route("/", requestsApi)
  .route("/", testHelpersApi)
  .route("/", errorsApi);

export const { app, routes } = createApp({
  publicApi,
  internalApi,
  plain: [
    uploadPath,
    errorDocsPath,
    { app: stripeHook, paths: [["post", STRIPE_HOOK_PATH]] },
    { app: demoCalendar, paths: [["get", DEMO_CALENDAR_PATH]] },
  ],
  replayers: new Map([
    ["listing", replayListing],
    ["tour", replayTour],
    ["media_upload", replayUpload],
    ["webhook_replay", replayWebhookReplay],
  ]),
});
