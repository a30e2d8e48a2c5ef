import { type RouteHandler, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { ERROR_DOCS_PATH } from "../../http/openapi/errors";
import { json, publicRoute } from "../../http/route";
import { errorCatalog } from "../../lib/error-guide";

const ErrorEntrySchema = z
  .object({
    code: z.string().openapi({ description: "The value of `error.code`.", example: "listing_not_found" }),
    status: z.number().int().openapi({ description: "The HTTP status it comes with.", example: 404 }),
    message: z.string().openapi({ description: "The default `error.message`.", example: "No such listing." }),
    retry: z.enum(["never", "after_retry_after", "after_change"]).openapi({
      description:
        "Whether the same request can succeed again: `never` (change the request), `after_retry_after` (wait " +
        "the Retry-After seconds and resend with the same idempotency key), `after_change` (once something " +
        "outside the request changes, such as a dashboard action).",
      example: "never",
    }),
    action: z.string().openapi({
      description: "What to do.",
      example: "Check the listing_number: 7 characters of [a-z0-9], of a listing of your agency.",
    }),
    doc_url: z.string().openapi({
      description: "This entry in the served docs.",
      example: "https://api.example.com/api/v1/docs/errors#listing_not_found",
    }),
  })
  .openapi("ErrorCatalogEntry");

const ErrorCatalogSchema = z
  .object({ data: z.array(ErrorEntrySchema).openapi({ description: "Every code the API can answer." }) })
  .openapi("ErrorCatalog");

export const errorCatalogRoute = publicRoute(
  { anonymous: true },
  {
    method: "get",
    path: "/api/v1/errors",
    operationId: "listErrors",
    tags: ["Errors"],
    summary: "The error catalog",
    description:
      "Every `error.code` the API can answer, with its status, whether a retry helps and what to do. Needs no " +
      "key. Each error envelope's `doc_url` links to the code's entry in the human-readable catalog.",
    responses: {
      200: { description: "The catalog.", content: json(ErrorCatalogSchema) },
    },
  },
);

export const errorCatalogHandler: RouteHandler<typeof errorCatalogRoute, AppEnv> = (c) => {
  const origin = new URL(c.req.url).origin;
  const data = errorCatalog(c.env.API_MODE).map((e) => ({ ...e, doc_url: `${origin}${ERROR_DOCS_PATH}#${e.code}` }));
  c.header("Cache-Control", "public, max-age=3600");
  return c.json(ErrorCatalogSchema.parse({ data }), 200);
};
