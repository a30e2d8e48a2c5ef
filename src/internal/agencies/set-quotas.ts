import { type RouteHandler, z } from "@hono/zod-openapi";
import { getAgency } from "../../domain/people/hierarchy";
import { agencyQuotaStates, setAgencyQuotas } from "../../domain/quotas";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { QuotaOverridesInput } from "../../schemas/quotas";
import { agencyParam, agencyQuotasAnswer, presentAgencyQuotas } from "./quotas-schema";

export const setAgencyQuotasRoute = internalRoute(["agency_not_found"], {
  method: "patch",
  path: "/internal/v1/agencies/{agency_id}/quotas",
  operationId: "setAgencyQuotas",
  tags: ["Agencies"],
  summary: "Set or clear an agency's own quotas",
  description:
    "Resources left out keep their quota. The next write of the agency is held to the new quota. A quota below " +
    "what the agency holds is allowed: nothing stored is removed, new writes of that resource are refused.",
  request: { params: agencyParam, body: { content: json(z.strictObject({ quotas: QuotaOverridesInput })) } },
  responses: agencyQuotasAnswer("The agency's quotas with their usage, after the change."),
});

export const setAgencyQuotasHandler: RouteHandler<typeof setAgencyQuotasRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const agency = await getAgency(db, c.req.valid("param").agency_id);
  await setAgencyQuotas(db, agency.id, c.req.valid("json").quotas);
  return c.json(presentAgencyQuotas(agency.id, await agencyQuotaStates(db, agency.id)), 200);
};
