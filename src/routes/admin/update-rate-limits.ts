import { type RouteHandler, z } from "@hono/zod-openapi";
import { changeKey } from "../../accounts/key-changes";
import { DEFAULT_BUDGETS, ENDPOINT_NAMES, effectiveBudgets, MAX_BUDGET, MIN_BUDGET } from "../../domain/budgets";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { BudgetOverridesInput, budgetSchema as budget } from "../../schemas/budgets";

const RateLimitsSchema = z
  .object({
    key_id: z.string().openapi({ example: "key_0mhx3k2a1q8v2l0c9z7rj4" }),
    overrides: z
      .partialRecord(z.enum(ENDPOINT_NAMES), budget)
      .openapi({ description: "The key's own budgets, by endpoint name.", example: { create_listing: 500 } }),
    effective_budgets: z.record(z.string(), budget).openapi({
      description: "Requests per 60 s for every endpoint name, overrides applied.",
      example: DEFAULT_BUDGETS,
    }),
  })
  .openapi("RateLimits");

export const updateRateLimitsRoute = publicRoute(
  { endpoint: "update_rate_limits", scope: "admin", roles: ["super_admin", "admin"], errors: ["api_key_not_found"] },
  {
    method: "patch",
    path: "/api/v1/admin/api-keys/{key_id}/rate-limits",
    operationId: "updateRateLimits",
    tags: ["Administration"],
    summary: "Set a key's rate-limit overrides",
    description:
      "Platform administrators only (scope `admin` on a key minted by a `super_admin` or `admin`). Such a key is " +
      "bound to the agency it was minted for, like any other: it manages that agency's keys only, and another " +
      "agency's key id is 404 `api_key_not_found`, exactly as an unknown one. " +
      "Each override replaces the endpoint's default budget for this key; `null` clears " +
      "one override. Changes apply from the key's next request.",
    request: {
      params: z.object({ key_id: z.string().openapi({ example: "key_0mhx3k2a1q8v2l0c9z7rj4" }) }),
      body: {
        content: json(
          z
            .strictObject({
              overrides: BudgetOverridesInput.openapi({
                description:
                  `Budgets by endpoint name, ${MIN_BUDGET} to ${MAX_BUDGET} requests per 60 s; ` +
                  "null clears an override.",
                example: { create_listing: 500, upload_media: null },
              }),
            })
            .openapi("RateLimitsUpdate"),
        ),
      },
    },
    responses: {
      200: {
        description: "The key's overrides and effective budgets.",
        content: json(RateLimitsSchema),
      },
    },
  },
);

export const updateRateLimits: RouteHandler<typeof updateRateLimitsRoute, AppEnv> = async (c) => {
  const { key_id } = c.req.valid("param");
  const { overrides } = c.req.valid("json");
  // Held to the calling key's agency in the statement: another agency's key id is not found, like an unknown one.
  const { key } = await changeKey(c.env, key_id, {
    op: "update",
    patch: { rateLimitOverrides: overrides },
    agencyId: c.get("caller").agencyId,
  });
  return c.json(
    RateLimitsSchema.parse({
      key_id: key.id,
      overrides: key.rateLimitOverrides,
      effective_budgets: effectiveBudgets(key.rateLimitOverrides),
    }),
    200,
  );
};
