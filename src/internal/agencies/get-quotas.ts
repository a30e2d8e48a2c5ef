import type { RouteHandler } from "@hono/zod-openapi";
import { getAgency } from "../../domain/people/hierarchy";
import { agencyQuotaStates } from "../../domain/quotas";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { agencyParam, agencyQuotasAnswer, presentAgencyQuotas } from "./quotas-schema";

export const getAgencyQuotasRoute = internalRoute(["agency_not_found"], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}/quotas",
  operationId: "getAgencyQuotas",
  tags: ["Agencies"],
  summary: "Get an agency's quotas and what it holds of each",
  request: { params: agencyParam },
  responses: agencyQuotasAnswer("The agency's quotas with their usage."),
});

export const getAgencyQuotasHandler: RouteHandler<typeof getAgencyQuotasRoute, AppEnv> = async (c) => {
  const agency = await getAgency(c.var.db, c.req.valid("param").agency_id);
  return c.json(presentAgencyQuotas(agency.id, await agencyQuotaStates(c.var.db, agency.id)), 200);
};
