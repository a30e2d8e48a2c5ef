import { z } from "@hono/zod-openapi";
import type { QuotaState } from "../../domain/quotas";
import { json } from "../../http/route";
import { presentQuotas, QuotasSchema } from "../../schemas/quotas";

export const agencyParam = z.object({ agency_id: z.string() });

const AgencyQuotasSchema = z
  .object({
    agency_id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
    quotas: QuotasSchema,
    overridden: z.array(z.string()).openapi({
      description: "The resources whose quota is the agency's own rather than the default.",
      example: ["tours"],
    }),
  })
  .openapi("AgencyQuotas");

export const agencyQuotasAnswer = (description: string) =>
  ({ 200: { description, content: json(AgencyQuotasSchema) } }) as const;

export const presentAgencyQuotas = (agencyId: string, states: QuotaState[]) =>
  AgencyQuotasSchema.parse({
    agency_id: agencyId,
    quotas: presentQuotas(states),
    overridden: states.filter((q) => q.overridden).map((q) => q.resource),
  });
