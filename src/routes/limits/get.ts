import type { RouteHandler } from "@hono/zod-openapi";
import { keyGate } from "../../accounts/key-changes";
import { agencyQuotaStates } from "../../domain/quotas";
import { agencyBudget } from "../../durable/budget-lease";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { presentQuotas } from "../../schemas/quotas";
import { LimitsSchema, presentAgencyBudgets, presentBudgets } from "./schema";

export const getLimitsRoute = publicRoute(
  { endpoint: "read_limits" },
  {
    method: "get",
    path: "/api/v1/limits",
    operationId: "getLimits",
    tags: ["Limits"],
    summary: "Your key's rate-limit budgets and your agency's quotas",
    description:
      "Any valid key may read its own limits, whatever its scopes and role. Each read counts against its own " +
      "budget, `read_limits`, and no other: the other windows are read as they stand. `agency_budgets` and " +
      "`quotas` are the agency's, shared by all its keys.",
    responses: { 200: { description: "The key's budgets and the agency's quotas.", content: json(LimitsSchema) } },
  },
);

export const getLimits: RouteHandler<typeof getLimitsRoute, AppEnv> = async (c) => {
  const caller = c.get("caller");
  const keyId = caller.keyId;
  if (!keyId) throw new DomainError("internal_error", { message: "The limits route needs a key." });
  const [windows, agencyUsed, quotas] = await Promise.all([
    keyGate(c.env, keyId).windows(keyId),
    agencyBudget(c.env, caller.agencyId).used(),
    agencyQuotaStates(c.var.db, caller.agencyId),
  ]);
  return c.json(
    LimitsSchema.parse({
      key_id: keyId,
      budgets: presentBudgets(windows ?? {}),
      agency_budgets: presentAgencyBudgets(windows ?? {}, agencyUsed),
      quotas: presentQuotas(quotas),
    }),
    200,
  );
};
