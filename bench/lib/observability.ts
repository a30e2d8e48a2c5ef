// What observability costs: the authenticated GET and the idempotent POST on a product
// Worker with wide events, trace context and data points on at their defaults (every
// write's line, one ordinary read's line in twenty), against the same Worker with
// OBSERVABILITY=off, in turns. A third Worker has the wide events of ordinary reads sampled
// out (WIDE_EVENT_SAMPLE_RATE=0): a write still writes its line. The three start alike,
// each on fresh state of its own. Three Workers of one configuration differ by several per
// cent from one start to the next (2026-11-29 in bench/RESULTS.md), more than the goal's
// margin, so the Workers are started afresh BENCH_OBS_REPEATS times, in another order each
// time, and each configuration's figure is taken over all its starts. A fourth Worker, the
// default again, is the control: how far two Workers of the same code land apart in this
// run, the measurement's own noise beside the cost it judges.
import { type Figure, mergeFigures } from "./load.ts";
import { createListingSpec, getUserSpec, measureSides, type Side } from "./product-pair.ts";

/** Throughput observability may cost a route: on ≥ (1 − this) × off. */
export const OBSERVABILITY_GOAL = 0.03;

/** Fresh starts of the phase's Workers, each in another order. */
const REPEATS = Math.max(1, Number(process.env.BENCH_OBS_REPEATS ?? 3));

export interface ObservabilityFigures {
  getOn: Figure;
  getSampled: Figure;
  getOff: Figure;
  postOn: Figure;
  postSampled: Figure;
  postOff: Figure;
  /** The control: a second Worker of the default configuration. */
  getAgain: Figure;
  postAgain: Figure;
  /**
   * What each start measured, in per cent of req/s: the cost of observability on (default)
   * against off, and the control's (the second default Worker against the first).
   */
  starts: { get: number; post: number; getAgain: number; postAgain: number }[];
}

const SIDES: Side[] = [
  { label: "observability on (default sampling)", vars: { OBSERVABILITY: "on" } },
  {
    label: "observability on, no line for ordinary reads",
    vars: { OBSERVABILITY: "on", WIDE_EVENT_SAMPLE_RATE: "0" },
  },
  { label: "observability off", vars: { OBSERVABILITY: "off" } },
  { label: "observability on (default sampling), a second Worker", vars: { OBSERVABILITY: "on" } },
];

/** The cost of `on` against `off`, in per cent of req/s: what the goal judges. */
export const observabilityCost = (on: Figure, off: Figure) => 100 * (1 - on.rps / off.rps);

export async function measureObservability(token: string, readyMs: number): Promise<ObservabilityFigures> {
  // By side, in the order of SIDES: its GET and POST figure from each start.
  const measured = SIDES.map(() => ({ get: [] as Figure[], post: [] as Figure[] }));
  for (let start = 0; start < REPEATS; start++) {
    // Start `start` begins with side `start`, the order rotated: no side always starts or runs first.
    const order = SIDES.map((_, i) => (i + start) % SIDES.length);
    const [gets = [], posts = []] = await measureSides(
      order.map((i) => SIDES[i]!),
      token,
      readyMs,
      [
        (p) => getUserSpec(p, `GET /api/v1/users/{id}, ${p.label}`),
        (p) => createListingSpec(p, `POST /api/v1/listings, ${p.label}`),
      ],
      `${start}-`,
    );
    order.forEach((side, k) => {
      measured[side]!.get.push(gets[k]!);
      measured[side]!.post.push(posts[k]!);
    });
  }
  const [on, sampled, off, again] = measured as [
    (typeof measured)[0],
    (typeof measured)[0],
    (typeof measured)[0],
    (typeof measured)[0],
  ];
  return {
    getOn: mergeFigures(on.get),
    getSampled: mergeFigures(sampled.get),
    getOff: mergeFigures(off.get),
    postOn: mergeFigures(on.post),
    postSampled: mergeFigures(sampled.post),
    postOff: mergeFigures(off.post),
    getAgain: mergeFigures(again.get),
    postAgain: mergeFigures(again.post),
    starts: on.get.map((_, i) => ({
      get: observabilityCost(on.get[i]!, off.get[i]!),
      post: observabilityCost(on.post[i]!, off.post[i]!),
      getAgain: observabilityCost(again.get[i]!, on.get[i]!),
      postAgain: observabilityCost(again.post[i]!, on.post[i]!),
    })),
  };
}

/** Each start's figures, for the lines under the table. */
export function observabilityStarts(starts: ObservabilityFigures["starts"]): string[] {
  const each = (of: (s: ObservabilityFigures["starts"][0]) => number) =>
    starts.map((s) => `${of(s).toFixed(1)}%`).join(", ");
  return [
    `observability on against off, in each of ${starts.length} fresh start(s) of the Workers: ` +
      `GET ${each((s) => s.get)}; POST ${each((s) => s.post)}`,
    "the control, the default's second Worker against its first (the same code), in each start: " +
      `GET ${each((s) => s.getAgain)}; POST ${each((s) => s.postAgain)}`,
  ];
}
