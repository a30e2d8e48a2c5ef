// What observability costs: the authenticated GET and the idempotent POST on a product
// Worker with wide events, trace context and data points on at their defaults (every
// write's line, one ordinary read's line in twenty), against the same Worker with
// OBSERVABILITY=off, in turns. A third Worker has the wide events of ordinary reads sampled
// out (WIDE_EVENT_SAMPLE_RATE=0): a write still writes its line. The three start alike,
// each on fresh state of its own.
import type { Figure } from "./load.ts";
import { createListingSpec, getUserSpec, measureSides, type Side } from "./product-pair.ts";

/** Throughput observability may cost a route: on ≥ (1 − this) × off. */
export const OBSERVABILITY_GOAL = 0.03;

export interface ObservabilityFigures {
  getOn: Figure;
  getSampled: Figure;
  getOff: Figure;
  postOn: Figure;
  postSampled: Figure;
  postOff: Figure;
}

const SIDES: Side[] = [
  { label: "observability on (default sampling)", vars: { OBSERVABILITY: "on" } },
  {
    label: "observability on, no line for ordinary reads",
    vars: { OBSERVABILITY: "on", WIDE_EVENT_SAMPLE_RATE: "0" },
  },
  { label: "observability off", vars: { OBSERVABILITY: "off" } },
];

export async function measureObservability(token: string, readyMs: number): Promise<ObservabilityFigures> {
  const [gets = [], posts = []] = await measureSides(SIDES, token, readyMs, [
    (p) => getUserSpec(p, `GET /api/v1/users/{id}, ${p.label}`),
    (p) => createListingSpec(p, `POST /api/v1/listings, ${p.label}`),
  ]);
  const [getOn, getSampled, getOff] = gets;
  const [postOn, postSampled, postOff] = posts;
  return {
    getOn: getOn!,
    getSampled: getSampled!,
    getOff: getOff!,
    postOn: postOn!,
    postSampled: postSampled!,
    postOff: postOff!,
  };
}
