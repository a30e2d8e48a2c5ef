import { type RouteHandler, z } from "@hono/zod-openapi";
import { changeKey } from "../../accounts/key-changes";
import { withSecrets } from "../../domain/api-keys";
import { SCOPES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { BudgetOverridesInput } from "../../schemas/budgets";
import { isoInstant, keyParam, keyResponse, presentKey } from "./schema";

export const updateApiKeyRoute = internalRoute(["api_key_not_found", "scope_not_grantable"], {
  method: "patch",
  path: "/internal/v1/api-keys/{key_id}",
  operationId: "updateApiKey",
  tags: ["API keys"],
  summary: "Disable or enable a key, set its expiry, scopes, name or rate-limit overrides",
  request: {
    params: keyParam,
    body: {
      content: json(
        z.strictObject({
          is_active: z.boolean().optional(),
          expires_at: isoInstant.nullable().optional(),
          scopes: z.array(z.enum(SCOPES)).min(1).optional(),
          name: z.string().max(100).optional(),
          rate_limit_overrides: BudgetOverridesInput.optional().openapi({
            description: "Per-endpoint budgets (requests per 60 s); null clears one override.",
          }),
        }),
      ),
    },
  },
  responses: keyResponse("The updated key."),
});

export const updateApiKeyHandler: RouteHandler<typeof updateApiKeyRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const patch = {
    isActive: b.is_active,
    expiresAt: b.expires_at,
    scopes: b.scopes,
    name: b.name,
    rateLimitOverrides: b.rate_limit_overrides,
  };
  const { key } = await changeKey(c.env, c.req.valid("param").key_id, { op: "update", patch });
  return c.json(presentKey(await withSecrets(c.var.db, key)), 200);
};
