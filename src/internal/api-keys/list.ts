import { type RouteHandler, z } from "@hono/zod-openapi";
import { keysOfAgency } from "../../domain/api-keys";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { ApiKeySchema, presentKey } from "./schema";

export const listApiKeysRoute = internalRoute(["agency_not_found"], {
  method: "get",
  path: "/internal/v1/api-keys",
  operationId: "listApiKeys",
  tags: ["API keys"],
  summary: "List an agency's keys (never their secrets)",
  request: { query: z.strictObject({ agency_id: z.string() }) },
  responses: {
    200: {
      description: "The agency's keys.",
      content: json(z.object({ data: z.array(ApiKeySchema) })),
    },
  },
});

export const listApiKeysHandler: RouteHandler<typeof listApiKeysRoute, AppEnv> = async (c) => {
  const keys = await keysOfAgency(c.var.db, c.req.valid("query").agency_id);
  const now = Date.now();
  return c.json({ data: keys.map((k) => presentKey(k, now)) }, 200);
};
