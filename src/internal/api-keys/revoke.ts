import type { RouteHandler } from "@hono/zod-openapi";
import { changeKey } from "../../accounts/key-changes";
import { withSecrets } from "../../domain/api-keys";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { keyParam, keyResponse, presentKey } from "./schema";

export const revokeApiKeyRoute = internalRoute(["api_key_not_found", "api_key_already_revoked"], {
  method: "post",
  path: "/internal/v1/api-keys/{key_id}/revoke",
  operationId: "revokeApiKey",
  tags: ["API keys"],
  summary: "Revoke a key, immediately and for good",
  request: { params: keyParam },
  responses: keyResponse("The revoked key."),
});

export const revokeApiKeyHandler: RouteHandler<typeof revokeApiKeyRoute, AppEnv> = async (c) => {
  const { key } = await changeKey(c.env, c.req.valid("param").key_id, { op: "revoke" });
  return c.json(presentKey(await withSecrets(c.var.db, key)), 200);
};
