// The goals, judged from a run's own figures, and the rows of its table in reading order.
import type { Figure } from "./load.ts";
import { OBSERVABILITY_GOAL, observabilityCost } from "./observability.ts";
import { type Goal, type Row, type Verdict, verdict } from "./report.ts";
import type { PipelineRun } from "./webhooks.ts";

/**
 * `figures` holds the core rows by id (bare, bareLogged, do, d1, 401, floorGet, floorGetLogged, get, single, tenants,
 * floorPost, post, the sequence rows seqWith and seqWithout, the observability rows
 * obsGetOn, obsGetSampled, obsGetOff, obsGetAgain, obsPostOn, obsPostSampled, obsPostOff, obsPostAgain and the
 * optional layer rows); `growthRows` come judged already.
 */
const cpu = (f: Figure) => (f.cpuMs === undefined ? "?" : f.cpuMs.toFixed(2));

export function judgeRun(
  figures: Map<string, Figure>,
  growthRows: Row[],
  hooks: PipelineRun[],
  sizes: string,
): { rows: Row[]; goals: Goal[] } {
  const f = (id: string) => figures.get(id);
  const rows: Row[] = [];
  const add = (id: string, extra: Partial<Row> = {}) => {
    const figure = f(id);
    if (figure) rows.push({ ...figure, bare: f("bare"), ...extra });
  };
  const goals: Goal[] = [];
  const judge = (title: string, verdicts: (Verdict | undefined)[]) =>
    goals.push({ title, verdicts: verdicts.filter((v): v is Verdict => v !== undefined) });

  const get = f("get");
  const floorGet = f("floorGet");
  const getVerdict =
    get && floorGet
      ? verdict(
          get.rps >= 0.9 * floorGet.rps && get.p50 <= floorGet.p50 + 3,
          `${(get.rps / floorGet.rps).toFixed(3)}× floor (≥ 0.9), ` +
            `p50 +${(get.p50 - floorGet.p50).toFixed(1)} ms (≤ +3)`,
        )
      : undefined;
  const post = f("post");
  const floorPost = f("floorPost");
  const bare = f("bare");
  const postVerdict =
    post && floorPost && bare
      ? verdict(
          post.rps >= 0.25 * bare.rps && post.rps >= 0.8 * floorPost.rps,
          `${(post.rps / bare.rps).toFixed(3)}× bare (≥ 0.25), ${(post.rps / floorPost.rps).toFixed(3)}× floor (≥ 0.8); ` +
            `cpu ms ${cpu(post)} against the floor's ${cpu(floorPost)}`,
        )
      : undefined;
  const tenants = f("tenants");
  const single = f("single");
  const tenantsVerdict =
    tenants && single
      ? verdict(tenants.rps >= 0.95 * single.rps, `${(tenants.rps / single.rps).toFixed(3)}× single key (≥ 0.95)`)
      : undefined;
  const observed = (on: Figure | undefined, off: Figure | undefined, again: Figure | undefined) =>
    on && off
      ? verdict(
          observabilityCost(on, off) <= 100 * OBSERVABILITY_GOAL,
          `${observabilityCost(on, off).toFixed(1)}% (≤ ${100 * OBSERVABILITY_GOAL}%); ` +
            `cpu ms ${cpu(on)} on, ${cpu(off)} off` +
            (again ? `; the control (a second default Worker) ${observabilityCost(again, on).toFixed(1)}%` : ""),
        )
      : undefined;
  const getObserved = observed(f("obsGetOn"), f("obsGetOff"), f("obsGetAgain"));
  const postObserved = observed(f("obsPostOn"), f("obsPostOff"), f("obsPostAgain"));

  add("bare");
  add("bareLogged", { floor: f("bare") });
  for (const id of ["do", "d1", "401", "floorGet"]) add(id);
  add("floorGetLogged", { floor: floorGet });
  add("get", { floor: floorGet, goal: getVerdict });
  add("single");
  add("tenants", { ref: single, goal: tenantsVerdict });
  add("floorPost");
  add("post", { floor: floorPost, goal: postVerdict });
  add("seqWithout");
  add("seqWith", { floor: f("seqWithout") });
  add("obsGetOff");
  add("obsGetSampled", { floor: f("obsGetOff") });
  add("obsGetOn", { floor: f("obsGetOff"), goal: getObserved });
  add("obsGetAgain", { floor: f("obsGetOn") });
  add("obsPostOff");
  add("obsPostSampled", { floor: f("obsPostOff") });
  add("obsPostOn", { floor: f("obsPostOff"), goal: postObserved });
  add("obsPostAgain", { floor: f("obsPostOn") });
  const shardAlone = f("shardAlone");
  const shardFar = f("shardFar");
  const shardVerdict =
    shardAlone && shardFar
      ? verdict(
          shardFar.p99 <= 1.1 * shardAlone.p99,
          `p99 ${shardFar.p99.toFixed(1)} ms beside the filler, ${shardAlone.p99.toFixed(1)} ms alone ` +
            `(${(shardFar.p99 / shardAlone.p99).toFixed(2)}×, ≤ 1.10×)`,
        )
      : undefined;
  add("shardAlone");
  add("shardFar", { ref: shardAlone, goal: shardVerdict });
  add("shardNear", { ref: shardAlone });
  for (const id of ["layer-format", "layer-unknown", "layer-scope"]) add(id);
  rows.push(...growthRows);
  // Every run at 10 endpoints is judged: the goal holds only when it holds in each of them.
  const hook10 = hooks.filter((h) => h.name.includes("10 endpoints"));
  for (const h of hooks) {
    rows.push({
      ...h,
      goal: hook10.includes(h)
        ? verdict(h.p99 < 2_000, `p99 ${(h.p99 / 1000).toFixed(2)} s (< 2 s), ${h.received}/${h.expected} received`)
        : undefined,
    });
  }

  judge("authenticated GET ≥ 0.9× its floor, p50 ≤ floor's + 3 ms", [getVerdict]);
  judge("idempotent POST ≥ 0.25× the bare route and ≥ 0.8× its floor", [postVerdict]);
  judge("many-tenant aggregate ≥ 0.95× single key", [tenantsVerdict]);
  judge(`wide events, trace context and data points cost ≤ ${100 * OBSERVABILITY_GOAL}% (GET, POST)`, [
    getObserved,
    postObserved,
  ]);
  judge("a reader on another shard keeps its p99 within 10% while an agency fills its own shard", [shardVerdict]);
  judge(
    `every other list route, filter and search ≥ 0.8× from ${sizes}`,
    growthRows.filter((r) => !r.perRow).map((r) => r.goal),
  );
  judge(
    `a deep tour page and a counted search: cpu ms per row skipped or counted ≤ 1.25× from ${sizes}`,
    growthRows.filter((r) => r.perRow).map((r) => r.goal),
  );
  // The consumer's pace against the deliveries offered, beside each p99: a run whose pace is near 1× cannot
  // work off a pause's backlog before the run ends.
  const paces = hook10.flatMap((h) => (h.batches ? [h.batches.capacity / h.offered] : []));
  judge(
    `a change reaches its receiver in p99 < 2 s at 10 endpoints, in each of ${hook10.length || "the"} run(s) ` +
      `(${hook10.map((h) => (h.p99 / 1000).toFixed(2)).join(", ")} s` +
      (paces.length ? `; consumer pace ${paces.map((p) => p.toFixed(2)).join(", ")}× the offered deliveries)` : ")"),
    rows.filter((r) => hook10.some((h) => h.name === r.name) && r.goal).map((r) => r.goal),
  );

  return { rows, goals };
}
