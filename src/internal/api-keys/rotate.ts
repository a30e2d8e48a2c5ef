import type { RouteHandler } from "@hono/zod-openapi";
import { changeKey } from "../../accounts/key-changes";
import { withSecrets } from "../../domain/api-keys";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { keyParam, mintedResponse, presentKey } from "./schema";

export const rotateApiKeyRoute = internalRoute(["api_key_not_found", "api_key_not_rotatable"], {
  method: "post",
  path: "/internal/v1/api-keys/{key_id}/rotate",
  operationId: "rotateApiKey",
  tags: ["API keys"],
  summary: "Rotate a key: a new secret, the old one valid for 30 more days",
  request: { params: keyParam },
  responses: mintedResponse(200, "The key and its new secret."),
});

export const rotateApiKeyHandler: RouteHandler<typeof rotateApiKeyRoute, AppEnv> = async (c) => {
  const { key, secret } = await changeKey(c.env, c.req.valid("param").key_id, { op: "rotate" });
  return c.json({ key: presentKey(await withSecrets(c.var.db, key)), secret: secret! }, 200);
};
