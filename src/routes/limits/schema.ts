import { z } from "@hono/zod-openapi";
import { DEFAULT_BUDGETS, ENDPOINT_NAMES, type EndpointName } from "../../domain/budgets";
import type { RateDecision } from "../../durable/key-gate";
import { QuotasSchema } from "../../schemas/quotas";

const BudgetWindowSchema = z
  .object({
    limit: z.number().int().openapi({ description: "Requests allowed per 60-second window.", example: 200 }),
    remaining: z.number().int().openapi({ description: "Requests left in the window now.", example: 197 }),
    reset: z.number().int().openapi({
      description: "Unix epoch seconds when the window has fully refilled (now, when nothing is counted).",
      example: 1_767_225_660,
    }),
  })
  .openapi("BudgetWindow");

const budgetExample = (name: EndpointName) => ({
  limit: DEFAULT_BUDGETS[name],
  remaining: name === "create_listing" ? DEFAULT_BUDGETS[name] - 3 : DEFAULT_BUDGETS[name],
  reset: 1_767_225_660,
});

export const LimitsSchema = z
  .object({
    key_id: z.string().openapi({ description: "The calling key.", example: "key_0mhx3k2a1q8v2l0c9z7rj4" }),
    budgets: z.partialRecord(z.enum(ENDPOINT_NAMES), BudgetWindowSchema).openapi({
      description:
        "Every budget of the key by endpoint name (its overrides applied), with what is left of its sliding " +
        "window: the same numbers as the X-Rate-Limit-* headers of a request to that endpoint.",
      example: { create_listing: budgetExample("create_listing"), upload_media: budgetExample("upload_media") },
    }),
    quotas: QuotasSchema,
  })
  .openapi("Limits");

export const presentBudgets = (windows: Partial<Record<EndpointName, RateDecision>>) =>
  Object.fromEntries(
    Object.entries(windows).map(([name, w]) => [name, { limit: w.limit, remaining: w.remaining, reset: w.reset }]),
  );
