import type { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { Hono } from "hono";
import { database } from "../db/client";
import { kickOutbox } from "../webhooks/outbox/kick";
import type { AppEnv } from "./env";
import { errorResponse, handleError } from "./errors";
import { internalDocument, liveDocument, publicDocument } from "./openapi/document";
import { apiReference } from "./openapi/reference-page";
import { operatorAuth } from "./operator";
import { type Replayer, RouteRegistry } from "./registry";
import { requestId } from "./request-id";
import { hiddenInLive, unmatched } from "./routing";
import { httpsOnly } from "./wire";

const PUBLIC_OPENAPI_PATH = "/api/v1/openapi.json";
const PUBLIC_DOCS_PATH = "/api/v1/docs";
const PUBLIC_DOCS_SCRIPT_PATH = "/api/v1/docs/reference.js";
const INTERNAL_OPENAPI_PATH = "/internal/v1/openapi.json";

/** A plain Hono app served beside the OpenAPI operations, with the paths it answers. */
interface PlainRoutes {
  app: Hono<AppEnv>;
  paths: readonly (readonly [method: string, template: string])[];
}

export interface AppParts {
  /** The public operations under /api/v1, every resource mounted. */
  publicApi: OpenAPIHono<AppEnv>;
  /** The dashboard's operations under /internal/v1. */
  internalApi: OpenAPIHono<AppEnv>;
  /** Paths outside both documents: the signed upload path, the payment receiver, dev helpers. */
  plain: readonly PlainRoutes[];
  /** How each resource type marked by a committed write is presented again. */
  replayers: ReadonlyMap<string, Replayer>;
}

/**
 * Builds the Worker's app from its parts: the wire rules every request meets first, the
 * two surfaces with their documents, and the one error handler. The route registry is
 * built here, once, and handed to every request as `c.var.routes`.
 */
export function createApp(parts: AppParts): { app: Hono<AppEnv>; routes: RouteRegistry } {
  const routes = new RouteRegistry(parts.replayers).addOperations(parts.publicApi).addOperations(parts.internalApi);
  routes
    .addPath("get", PUBLIC_OPENAPI_PATH)
    .addPath("get", PUBLIC_DOCS_PATH)
    .addPath("get", PUBLIC_DOCS_SCRIPT_PATH)
    .addPath("get", INTERNAL_OPENAPI_PATH);
  for (const { paths } of parts.plain) for (const [method, template] of paths) routes.addPath(method, template);

  let publicDoc: ReturnType<typeof publicDocument> | undefined;
  let livePublicDoc: ReturnType<typeof publicDocument> | undefined;
  const documents = new Hono<AppEnv>()
    .get(PUBLIC_OPENAPI_PATH, (c) => {
      publicDoc ??= publicDocument(parts.publicApi, routes, new URL(c.req.url).origin);
      if (c.env.API_MODE !== "live") return c.json(publicDoc);
      livePublicDoc ??= liveDocument(publicDoc, routes);
      return c.json(livePublicDoc);
    })
    .route(
      "/",
      apiReference({
        pagePath: PUBLIC_DOCS_PATH,
        scriptPath: PUBLIC_DOCS_SCRIPT_PATH,
        documentPath: PUBLIC_OPENAPI_PATH,
        pageTitle: "Agency Listing and Media Service API",
      }),
    )
    .get(INTERNAL_OPENAPI_PATH, operatorAuth(), (c) =>
      c.json(internalDocument(parts.internalApi, routes, new URL(c.req.url).origin)),
    );

  const app = new Hono<AppEnv>()
    .use(requestId())
    .use(async function routeRegistry(c, next) {
      c.set("routes", routes);
      c.set("db", database(c.env.DB));
      c.set("d1", c.env.DB);
      await next();
    })
    .use(httpsOnly())
    .use(drainAfterWrites())
    .options("*", (c) => {
      const allowed = routes.allowedMethods(c.req.path);
      if (!allowed.length || c.req.path.startsWith("/internal/") || hiddenInLive(c))
        return errorResponse(c, unmatched(c));
      return c.body(null, 204, { Allow: allowed.join(", ") });
    })
    .route("/", documents)
    .route("/", parts.publicApi)
    .route("/", parts.internalApi);
  for (const { app: plain } of parts.plain) app.route("/", plain);
  app.notFound((c) => errorResponse(c, unmatched(c))).onError(handleError);
  return { app, routes };
}

/** After a successful change, drain the outbox in the background so its events leave within seconds. */
function drainAfterWrites(): MiddlewareHandler<AppEnv> {
  return async function drainAfterWrites(c, next) {
    await next();
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS" || c.res.status >= 400) return;
    let ctx: Pick<ExecutionContext, "waitUntil">;
    try {
      ctx = c.executionCtx;
    } catch {
      return; // no execution context (called outside a Worker invocation)
    }
    kickOutbox(c.env, ctx);
  };
}
