// Product Workers that differ in one thing, each on fresh state of its own, measured in
// turns: what that one thing costs a route. The observability phase sets variables on
// them; the sequence phase changes one Worker's local database after its migrations.

import { randomBytes, randomUUID } from "node:crypto";
import { join } from "node:path";
import { applyLocalMigrations } from "../../scripts/local-migrations.ts";
import { Api } from "./api.ts";
import { type Figure, measureAlternating, type Spec } from "./load.ts";
import { stateDir, stopServer } from "./processes.ts";
import { serveWorker } from "./workers.ts";

/** One side of a pair: its label in the row names, its variables, and what to run on its state before it starts. */
export interface Side {
  label: string;
  vars?: Record<string, string>;
  /** Called with `--persist-to <dir>` after the migrations, before the Worker starts. */
  prepare?: (persist: string[]) => Promise<void>;
}

export interface RunningProduct {
  label: string;
  origin: string;
  ownerId: string;
  getKey: string;
  postKey: string;
}

/** A product Worker on state of its own, with an agency, its owner, a key for reads and one for writes. */
async function startProduct(side: Side, token: string, readyMs: number, instance: string) {
  const name = `pair-${instance}${side.label.replace(/[^a-z0-9]+/gi, "-")}`;
  const dir = join(stateDir, name);
  const persist = ["--persist-to", dir];
  await applyLocalMigrations(dir);
  await side.prepare?.(persist);
  const vars = { SECRET_KEY: randomBytes(32).toString("base64url"), OPERATOR_TOKEN: token, ...side.vars };
  const { child, origin } = await serveWorker({
    persist: dir,
    vars,
    logName: name,
    readyPath: "/api/v1/openapi.json",
    readyMs,
  });
  try {
    const api = new Api(origin, token);
    const agency = await api.agency(`Bench ${side.label}`);
    const owner = await api.user(agency.id, "media_agency", `Owner ${side.label}`);
    const [getKey, postKey] = [await api.key(agency.id, owner.id), await api.key(agency.id, owner.id)];
    const product: RunningProduct = {
      label: side.label,
      origin,
      ownerId: owner.id,
      getKey: getKey.secret,
      postKey: postKey.secret,
    };
    return { child, product };
  } catch (err) {
    await stopServer(child);
    throw err;
  }
}

/** The authenticated GET of the owner. */
export const getUserSpec = (p: RunningProduct, name: string): Spec => ({
  name,
  opts: { url: `${p.origin}/api/v1/users/${p.ownerId}`, headers: { "X-API-Key": p.getKey } },
});

/** The idempotent create of a listing, each request with a fresh idempotency key. */
export const createListingSpec = (p: RunningProduct, name: string): Spec => ({
  name,
  opts: {
    url: `${p.origin}/api/v1/listings`,
    requests: [
      {
        method: "POST",
        body: JSON.stringify({ address: "1 Bench Street", owner_user_id: p.ownerId, agent_one_id: p.ownerId }),
        setupRequest: (req: any) => ({
          ...req,
          headers: {
            ...req.headers,
            "X-API-Key": p.postKey,
            "Content-Type": "application/json",
            "X-Idempotency-Key": randomUUID(),
          },
        }),
      },
    ],
  },
});

/**
 * Starts every side, then measures each group of specs in turns (one spec per side, in
 * the order of `sides`), and stops every Worker whatever happened. `instance` sets this
 * start's state and logs apart from another start of the same sides.
 */
export async function measureSides(
  sides: Side[],
  token: string,
  readyMs: number,
  groups: ((p: RunningProduct) => Spec)[],
  instance = "",
): Promise<Figure[][]> {
  const started: Awaited<ReturnType<typeof startProduct>>[] = [];
  try {
    for (const side of sides) started.push(await startProduct(side, token, readyMs, instance));
    const out: Figure[][] = [];
    for (const spec of groups) out.push(await measureAlternating(started.map((s) => spec(s.product))));
    return out;
  } finally {
    await Promise.all(started.map((s) => stopServer(s.child)));
  }
}
