import type { OpenAPIHono } from "@hono/zod-openapi";
import { DEFAULT_BUDGETS } from "../../domain/budgets";
import { RATE_LIMIT_HEADERS } from "../admission/rate-limit";
import type { AppEnv } from "../env";
import type { RouteRegistry } from "../registry";
import { TRACE_ID_HEADER } from "../request-id";
import { MAX_JSON_DEPTH } from "../wire";
import { decorateConditional, registerConditionalParameters } from "./conditional";
import { withExamples } from "./examples";
import { TAGS, TEST_HELPERS_TAG } from "./tags";
import { withWebhooks } from "./webhooks";

const API_VERSION = "1.0.0";

type Doc = ReturnType<OpenAPIHono<AppEnv>["getOpenAPI31Document"]>;
type Operation = {
  parameters?: unknown[];
  responses?: Record<string, { headers?: Record<string, unknown> }>;
  [k: string]: unknown;
};

const rateLimitHeaders = {
  [RATE_LIMIT_HEADERS.limit]: {
    description: "Requests allowed in the 60-second window for this key and endpoint.",
    schema: { type: "integer" },
  },
  [RATE_LIMIT_HEADERS.remaining]: { description: "Requests left in the current window.", schema: { type: "integer" } },
  [RATE_LIMIT_HEADERS.reset]: {
    description: "Unix epoch seconds when the window has fully refilled.",
    schema: { type: "integer" },
  },
};
const requestIdHeader = {
  "X-Request-Id": { description: "Unique id of this request; error envelopes repeat it.", schema: { type: "string" } },
  [TRACE_ID_HEADER]: {
    description:
      "The W3C trace this request belongs to (32 lowercase hex digits): the trace id of the `traceparent` " +
      "request header when it is valid, otherwise a new trace. Webhook deliveries caused by the request carry " +
      "the same trace id in their `traceparent` header.",
    schema: { type: "string", pattern: "^[0-9a-f]{32}$", example: "4bf92f3577b34da6a3ce929d0e0e4736" },
  },
};

/**
 * Adds to the generated document what the guards do on every route: the idempotency
 * header on mutating operations, rate-limit headers and budgets, required scopes.
 */
function decorate(doc: Doc, routes: RouteRegistry): Doc {
  for (const meta of routes.operations("public")) {
    const path = doc.paths?.[meta.path] as Record<string, Operation> | undefined;
    if (meta.undocumented && path) {
      delete path[meta.method];
      if (!Object.keys(path).length) delete doc.paths?.[meta.path];
      continue;
    }
    const op = path?.[meta.method];
    if (!op) continue;
    const mutating = ["post", "put", "patch", "delete"].includes(meta.method);
    if (mutating) {
      op.parameters = [{ $ref: "#/components/parameters/IdempotencyKey" }, ...(op.parameters ?? [])];
    }
    if (meta.conditional) decorateConditional(op, meta.conditional);
    op["x-body-limit"] = meta.bodyLimit;
    if (meta.scope) op["x-required-scope"] = meta.scope;
    if (meta.alsoScopes?.length) op["x-required-scopes"] = [...(meta.scope ? [meta.scope] : []), ...meta.alsoScopes];
    if (meta.roles) op["x-allowed-roles"] = meta.roles;
    if (meta.endpoint) {
      op["x-rate-limit"] = { endpoint: meta.endpoint, requests_per_60s: DEFAULT_BUDGETS[meta.endpoint] };
    }
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      const auth401 = status === "401";
      response.headers = {
        ...requestIdHeader,
        ...(meta.endpoint && !auth401 ? rateLimitHeaders : {}),
        ...response.headers,
      };
      if (status === "429")
        response.headers["Retry-After"] = {
          description: "Seconds to wait before retrying (add 0 to 5 s of random jitter).",
          schema: { type: "integer" },
        };
      if (status === "405")
        response.headers.Allow = { description: "Methods the path supports.", schema: { type: "string" } };
      if (mutating) {
        response.headers["X-Idempotent-Replay"] = {
          description: "`true` when this is the cached answer of an earlier request with the same X-Idempotency-Key.",
          schema: { type: "string", enum: ["true"] },
        };
        response.headers["X-Original-Request-Id"] = {
          description:
            "On a replay: the `X-Request-Id` of the request that made the answer. The replay's own `X-Request-Id` " +
            "(and an error envelope's `request_id`) name the replaying request.",
          schema: { type: "string", example: "req_0mhx3k2a1q8v2l0c9z7rj4" },
        };
      }
    }
  }
  return doc;
}

/**
 * The public document as live serves it: the sandbox-only operations (the test helpers)
 * and their tag are left out, since in live those paths answer like unknown paths.
 */
export function liveDocument(doc: Doc, routes: RouteRegistry): Doc {
  const live = structuredClone(doc);
  for (const meta of routes.operations("public")) {
    const path = live.paths?.[meta.path] as Record<string, Operation> | undefined;
    if (!meta.sandboxOnly || !path) continue;
    delete path[meta.method];
    if (!Object.keys(path).length) delete live.paths?.[meta.path];
  }
  live.tags = live.tags?.filter((tag) => tag.name !== TEST_HELPERS_TAG);
  return live;
}

export function publicDocument(app: OpenAPIHono<AppEnv>, routes: RouteRegistry, origin: string): Doc {
  app.openAPIRegistry.registerComponent("securitySchemes", "ApiKey", {
    type: "apiKey",
    in: "header",
    name: "X-API-Key",
    description:
      "Your secret key: `sk_test_…` in the sandbox, `sk_live_…` in production. Never send it in a URL, query or " +
      "body; `Authorization: Bearer` is refused.\n\n" +
      "Every change to a key is effective from the very next request, even while other requests of the key are " +
      "running: a revoked key gets 401 `api_key_revoked`, a disabled one `api_key_disabled`, an expired one " +
      "`api_key_expired`, and a secret whose 30-day rotation grace has ended `api_key_invalid`.\n\n" +
      "A key acts for the user who minted it. When that user is deactivated or suspended in the dashboard, or " +
      "moves to another agency, each key it minted is refused from the very next request with 401 " +
      "`api_key_disabled` and `details.reason` `minting_user_inactive` or `minting_user_moved`. The key is not " +
      "revoked: it works again only once that user is active in the key's agency again. Otherwise mint a new key.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "SessionCookie", {
    type: "apiKey",
    in: "cookie",
    name: "alms_session",
    description:
      "Dashboard session cookie, accepted only by POST /api/v1/media/upload. When both are sent, the cookie wins.",
  });
  registerConditionalParameters(app);
  app.openAPIRegistry.registerComponent("parameters", "IdempotencyKey", {
    name: "X-Idempotency-Key",
    in: "header",
    required: true,
    description:
      "Required on every POST, PUT, PATCH and DELETE: an opaque string of at most 128 printable ASCII characters " +
      "(UUIDv4 recommended, ULID accepted). The full response is kept for 24 hours per agency and key; a repeat " +
      "replays it with `X-Idempotent-Replay: true`.\n\n" +
      "A key belongs to the agency: any API key of the agency (or its dashboard session) repeating the same " +
      "request with the same key gets the replay. One exception: an answer that carries a secret shown once " +
      "(registering a webhook endpoint returns its signing secret) is replayed only to the API key (or dashboard " +
      "user) that made the first call; from another caller of the agency the key is 409 " +
      "`idempotency_key_conflict`, and nothing of the answer is revealed. A replay carries its own " +
      "`X-Request-Id` (an error envelope's `request_id` names it too) and names the request that made the answer " +
      "in `X-Original-Request-Id`. Cached responses are stored encrypted.",
    schema: { type: "string", maxLength: 128, example: "3f1c1f9e-3c51-4e2b-9d1e-8d7c2b9f4a10" },
  });
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Agency Listing and Media Service",
      version: API_VERSION,
      description:
        "The HTTPS + JSON API for accredited media agencies and brokers: listings, media upload, scheduling " +
        "availability, users and orders, and webhooks. Every response is confined to the agency your key is bound " +
        "to; another agency's resources answer 404. Errors share one envelope (`error.code`, `message`, " +
        "`request_id`, `details`); branch on `error.code`. Each operation's `x-body-limit` is the largest request " +
        "body it accepts, in bytes: a body above it is 413 `request_body_too_large` with `details.limit_bytes`, " +
        "refused while it streams in, whether or not it declares a Content-Length. JSON bodies are UTF-8 and nest " +
        `at most ${MAX_JSON_DEPTH} levels (400 \`request_body_too_deep\` beyond). Use of the API is governed by ` +
        "your agency's service agreement.",
      license: PROPRIETARY,
    },
    tags: TAGS,
    // The origin alone: every path already starts with /api/v1, as the spec writes its paths.
    servers: [{ url: origin, description: "This environment" }],
    security: [{ ApiKey: [] }],
  });
  return withExamples(withWebhooks(decorate(doc, routes)));
}

/**
 * An OpenAPI 3.1 license object (its `identifier` is SPDX; the generator's types predate it). The name
 * stays short, so the reference page shows it whole; the terms are said in each description.
 */
const PROPRIETARY = { name: "Proprietary", identifier: "LicenseRef-Proprietary" } as { name: string; url?: string };

const withOperatorScheme = new WeakSet<object>();

/** The internal (dashboard) surface's own document; it never appears in the public one. */
export function internalDocument(app: OpenAPIHono<AppEnv>, routes: RouteRegistry, origin: string): Doc {
  if (!withOperatorScheme.has(app)) {
    app.openAPIRegistry.registerComponent("securitySchemes", "OperatorToken", {
      type: "http",
      scheme: "bearer",
      description: "The operator token (Worker secret OPERATOR_TOKEN).",
    });
    withOperatorScheme.add(app);
  }
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "Agency Listing and Media Service: internal (dashboard) API",
      version: "1.0.0",
      description:
        "Operations the dashboard performs on the shared data. Not part of the public contract; internal to the " +
        "platform's operators.",
      license: PROPRIETARY,
    },
    servers: [{ url: origin }],
    security: [{ OperatorToken: [] }],
  });
  for (const meta of routes.operations("internal")) {
    const op = (doc.paths?.[meta.path] as Record<string, Operation> | undefined)?.[meta.method];
    if (op) op["x-body-limit"] = meta.bodyLimit;
  }
  return doc;
}
