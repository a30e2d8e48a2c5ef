// What observability costs: the authenticated GET and the idempotent POST on a product
// Worker with wide events, trace context and data points on, against the same Worker
// with OBSERVABILITY=off, in turns. Both Workers start alike, each on fresh state of its own.
import type { Figure } from "./load.ts";
import { createListingSpec, getUserSpec, measurePair, type Side } from "./product-pair.ts";

/** Throughput observability may cost a route: on ≥ (1 − this) × off. */
export const OBSERVABILITY_GOAL = 0.03;

export interface ObservabilityFigures {
  getOn: Figure;
  getOff: Figure;
  postOn: Figure;
  postOff: Figure;
}

export async function measureObservability(token: string, readyMs: number): Promise<ObservabilityFigures> {
  const side = (setting: "on" | "off"): Side => ({
    label: `observability ${setting}`,
    vars: { OBSERVABILITY: setting },
  });
  const [[getOn, getOff], [postOn, postOff]] = await measurePair([side("on"), side("off")], token, readyMs, [
    (p) => getUserSpec(p, `GET /api/v1/users/{id}, ${p.label}`),
    (p) => createListingSpec(p, `POST /api/v1/listings, ${p.label}`),
  ]);
  return { getOn: getOn!, getOff: getOff!, postOn: postOn!, postOff: postOff! };
}
