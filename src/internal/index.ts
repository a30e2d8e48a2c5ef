import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { registerPath } from "../lib/routing";
import { validationHook } from "../lib/validation";
import { agenciesInternal } from "./agencies";
import { apiKeysInternal } from "./api-keys";
import { calendarsInternal } from "./calendars";
import { listingsInternal } from "./listings";
import { mediaInternal } from "./media";
import { operatorAuth } from "./route";
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
  .route("/", mediaInternal)
  .route("/", webhooksInternal)
  .route("/", calendarsInternal);

internalApi.openAPIRegistry.registerComponent("securitySchemes", "OperatorToken", { type: "http", scheme: "bearer", description: "The operator token (Worker secret OPERATOR_TOKEN)." });
registerPath("get", "/internal/v1/openapi.json");
internalApi.get("/internal/v1/openapi.json", operatorAuth(), (c) =>
  c.json(
    internalApi.getOpenAPI31Document({
      openapi: "3.1.0",
      info: { title: "Agency Listing and Media Service: internal (dashboard) API", version: "1.0.0", description: "Operations the dashboard performs on the shared data. Not part of the public contract." },
      servers: [{ url: new URL(c.req.url).origin }],
      security: [{ OperatorToken: [] }],
    }),
  ),
);
