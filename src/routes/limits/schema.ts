import { z } from "@hono/zod-openapi";
import { agencyBudgetFor, DEFAULT_BUDGETS, ENDPOINT_NAMES, type EndpointName, WINDOW_MS } from "../../domain/budgets";
import type { RateDecision } from "../../durable/key-gate/verdict";
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
    agency_budgets: z.partialRecord(z.enum(ENDPOINT_NAMES), BudgetWindowSchema).openapi({
      description:
        "The agency's budgets, shared by all its keys, by endpoint name: a request fits only when both the key's " +
        "budget and the agency's have room. An agency's budget is five times a key's default; a key an " +
        "administrator raised above it is held to its own budget instead. `remaining` counts requests that the " +
        "agency's keys hold leased for the next few seconds as used.",
      example: {
        create_listing: { limit: DEFAULT_BUDGETS.create_listing * 5, remaining: 996, reset: 1_767_225_660 },
      },
    }),
    quotas: QuotasSchema,
  })
  .openapi("Limits");

export const presentBudgets = (windows: Partial<Record<EndpointName, RateDecision>>) =>
  Object.fromEntries(
    Object.entries(windows).map(([name, w]) => [name, { limit: w.limit, remaining: w.remaining, reset: w.reset }]),
  );

/** The agency's windows as the calling key sees them: its budgets' ceilings, less what the agency used. */
export function presentAgencyBudgets(
  keyWindows: Partial<Record<EndpointName, RateDecision>>,
  used: Partial<Record<EndpointName, { used: number; newest: number }>>,
  now = Date.now(),
) {
  return Object.fromEntries(
    (Object.keys(keyWindows) as EndpointName[]).map((name) => {
      const limit = agencyBudgetFor(name, keyWindows[name]!.limit);
      const window = Object.hasOwn(used, name) ? used[name] : undefined;
      return [
        name,
        {
          limit,
          remaining: Math.max(0, limit - (window?.used ?? 0)),
          reset: Math.ceil(((window?.newest ?? now - WINDOW_MS) + WINDOW_MS) / 1000),
        },
      ];
    }),
  );
}
