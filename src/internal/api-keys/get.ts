import type { RouteHandler } from "@hono/zod-openapi";
import { getKey, withSecrets } from "../../domain/api-keys";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { keyParam, keyResponse, presentKey } from "./schema";

export const getApiKeyRoute = internalRoute(["api_key_not_found"], {
  method: "get",
  path: "/internal/v1/api-keys/{key_id}",
  operationId: "getApiKey",
  tags: ["API keys"],
  summary: "Get a key",
  request: { params: keyParam },
  responses: keyResponse("The key."),
});

export const getApiKeyHandler: RouteHandler<typeof getApiKeyRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  return c.json(presentKey(await withSecrets(db, await getKey(db, c.req.valid("param").key_id))), 200);
};
