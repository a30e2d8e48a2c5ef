import { z } from "@hono/zod-openapi";
import { ENDPOINT_NAMES, type EndpointName, MAX_BUDGET, MIN_BUDGET } from "../domain/budgets";

export const budgetSchema = z.number().int().min(MIN_BUDGET).max(MAX_BUDGET);

const overrideShape = Object.fromEntries(ENDPOINT_NAMES.map((name) => [name, budgetSchema.nullable().optional()])) as {
  [K in EndpointName]: z.ZodOptional<z.ZodNullable<typeof budgetSchema>>;
};

/**
 * Per-key budget overrides as a request sends them: each endpoint name may carry a budget
 * (null clears its override). The names form a closed object, so any other name, one
 * found on every object's prototype included, is an unknown field with suggestions.
 */
export const BudgetOverridesInput = z.strictObject(overrideShape);
