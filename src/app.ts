import { OpenAPIHono } from "@hono/zod-openapi";
import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import type { AppEnv } from "./env";
import { allowedMethods, registerPath, unmatched } from "./lib/routing";
import { validationHook } from "./lib/validation";
import { errorResponse, handleError, httpsOnly, requestId } from "./lib/wire";
import { publicDocument } from "./openapi";
import { internalApi } from "./internal";
import { adminApi } from "./routes/admin";
import { listingsApi } from "./routes/listings";
import { mediaApi } from "./routes/media";
import { reservedApi } from "./routes/reserved";
import { schedulingApi } from "./routes/scheduling";
import { toursApi } from "./routes/tours";
import { usersApi } from "./routes/users";
import { demoCalendar } from "./routes/dev/demo-calendar";
import { stripeHook } from "./routes/hooks/stripe";
import { webhooksApi } from "./routes/webhooks";
import { drainAfterWrites } from "./webhooks/dispatch";

export const publicApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .route("/", listingsApi)
  .route("/", mediaApi)
  .route("/", toursApi)
  .route("/", usersApi)
  .route("/", webhooksApi)
  .route("/", schedulingApi)
  .route("/", reservedApi)
  .route("/", adminApi);

let publicDoc: ReturnType<typeof publicDocument> | undefined;
publicApi.get("/api/v1/openapi.json", (c) => c.json((publicDoc ??= publicDocument(publicApi, new URL(c.req.url).origin))));
registerPath("get", "/api/v1/openapi.json");
registerPath("get", "/api/v1/docs");
publicApi.get("/api/v1/docs", Scalar({ url: "/api/v1/openapi.json", pageTitle: "Agency Listing and Media Service API" }));

export const app = new Hono<AppEnv>()
  .use(requestId())
  .use(httpsOnly())
  .use(drainAfterWrites())
  .options("*", (c) => {
    const allowed = allowedMethods(c.req.path);
    if (!allowed.length || c.req.path.startsWith("/internal/")) return errorResponse(c, unmatched(c));
    return c.body(null, 204, { Allow: allowed.join(", ") });
  })
  .route("/", publicApi)
  .route("/", internalApi)
  .route("/", stripeHook)
  .route("/", demoCalendar)
  .notFound((c) => errorResponse(c, unmatched(c)))
  .onError(handleError);
