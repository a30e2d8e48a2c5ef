// What observability costs: the authenticated GET and the idempotent POST on a product
// Worker with wide events, trace context and data points on, against the same Worker
// with OBSERVABILITY=off, in turns. Both Workers start alike, each on fresh state of its own.
import { randomBytes, randomUUID } from "node:crypto";
import { join } from "node:path";
import { Api } from "./api.ts";
import { type Figure, measureAlternating, registerServer } from "./load.ts";
import { freePorts, runChild, startServer, stateDir, stopServer } from "./processes.ts";

/** Throughput observability may cost a route: on ≥ (1 − this) × off. */
export const OBSERVABILITY_GOAL = 0.03;

export interface ObservabilityFigures {
  getOn: Figure;
  getOff: Figure;
  postOn: Figure;
  postOff: Figure;
}

const SETTINGS = ["on", "off"] as const;

/** A product Worker with OBSERVABILITY set, a key for reads and one for writes. */
async function startProduct(setting: (typeof SETTINGS)[number], ports: number[], token: string, readyMs: number) {
  const persist = ["--persist-to", join(stateDir, `observability-${setting}`)];
  await runChild("wrangler", ["d1", "migrations", "apply", "DB", "--local", ...persist], `migrate-${setting}`, 300_000);
  const [port, inspector] = ports as [number, number];
  const origin = `http://127.0.0.1:${port}`;
  const child = await startServer(
    "wrangler",
    [
      "dev",
      "--port",
      String(port),
      "--inspector-port",
      String(inspector),
      "--ip",
      "127.0.0.1",
      "--log-level",
      "warn",
      "--show-interactive-dev-session=false",
      ...persist,
      "--var",
      `OPERATOR_TOKEN:${token}`,
      "--var",
      `SECRET_KEY:${randomBytes(32).toString("base64url")}`,
      "--var",
      `OBSERVABILITY:${setting}`,
    ],
    `observability-${setting}`,
    `${origin}/api/v1/openapi.json`,
    readyMs,
  );
  registerServer(origin, { group: child.pid, inspector });
  const api = new Api(origin, token);
  const agency = await api.agency(`Bench Observability ${setting}`);
  const owner = await api.user(agency.id, "media_agency", "Observability Owner");
  const [getKey, postKey] = [await api.key(agency.id, owner.id), await api.key(agency.id, owner.id)];
  return { setting, origin, child, ownerId: owner.id, getKey: getKey.secret, postKey: postKey.secret };
}

export async function measureObservability(token: string, readyMs: number): Promise<ObservabilityFigures> {
  const ports = await freePorts(4);
  const on = await startProduct("on", ports.slice(0, 2), token, readyMs);
  const off = await startProduct("off", ports.slice(2), token, readyMs).catch(async (err: unknown) => {
    await stopServer(on.child);
    throw err;
  });
  try {
    const getOf = (p: typeof on) => ({
      name: `GET /api/v1/users/{id}, observability ${p.setting}`,
      opts: { url: `${p.origin}/api/v1/users/${p.ownerId}`, headers: { "X-API-Key": p.getKey } },
    });
    const [getOn, getOff] = await measureAlternating([getOf(on), getOf(off)]);
    const postOf = (p: typeof on) => ({
      name: `POST /api/v1/listings, observability ${p.setting}`,
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
    const [postOn, postOff] = await measureAlternating([postOf(on), postOf(off)]);
    return { getOn: getOn!, getOff: getOff!, postOn: postOn!, postOff: postOff! };
  } finally {
    await Promise.all([stopServer(on.child), stopServer(off.child)]);
  }
}
