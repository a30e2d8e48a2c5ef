// One agency fills its shard with writes while an agency on another shard reads: the reader's
// p99 beside the filler, against its p99 alone (and, for contrast, a reader on the filler's
// own shard). The filler writes as fast as an agency may: its keys together get five times a
// key's budget, 1,000 listing creates a minute. The reader on the other shard is moved there
// through the internal API.
import { setTimeout as sleep } from "node:timers/promises";
import autocannon from "autocannon";
import type { Api } from "./api.ts";
import { CONNECTIONS, type Spec } from "./load.ts";

const MOVE_WAIT_MS = 120_000;
/** Listing creates per second of one agency at its whole budget (1,000 a minute, src/domain/budgets.ts). */
const FILL_RATE = Math.floor(1000 / 60);

/** An agency with an owner and a key whose budgets the bench raises. */
async function tenant(api: Api, name: string) {
  const agency = await api.agency(name);
  const owner = await api.user(agency.id, "media_agency", `${name} Owner`);
  return { agency, owner, key: await api.key(agency.id, owner.id) };
}

/** Moves an agency to `toShard`, unless it is there already, and waits until the move is done. */
async function moveTo(api: Api, agencyId: string, toShard: string): Promise<void> {
  const agency = await api.internal(`/internal/v1/agencies/${agencyId}`, undefined, "GET");
  if (agency.shard === toShard) return;
  const move = await api.internal(`/internal/v1/agencies/${agencyId}/move`, { to_shard: toShard });
  const until = Date.now() + MOVE_WAIT_MS;
  while (Date.now() < until) {
    const now = await api.internal(`/internal/v1/moves/${move.move_id}`, undefined, "GET");
    if (now.status === "done") return;
    if (now.status === "failed") throw new Error(`the move to ${toShard} failed: ${now.error}`);
    await sleep(200);
  }
  throw new Error(`the move to ${toShard} did not finish in ${MOVE_WAIT_MS / 1000} s`);
}

/** The rows: a reader on the second shard alone and beside the filler, and a reader on the filler's shard beside it. */
export async function shardSpecs(api: Api, origin: string): Promise<Spec[]> {
  const filler = await tenant(api, "Bench Filler");
  const far = await tenant(api, "Bench Far Reader");
  const near = await tenant(api, "Bench Near Reader");
  await moveTo(api, filler.agency.id, "shard-1");
  await moveTo(api, near.agency.id, "shard-1");
  await moveTo(api, far.agency.id, "shard-2");
  const read = (t: typeof far) => ({
    url: `${origin}/api/v1/users/${t.owner.id}`,
    headers: { "X-API-Key": t.key.secret },
  });
  const body = JSON.stringify({ address: "1 Filler Street", owner_user_id: filler.owner.id });
  const fill = {
    url: `${origin}/api/v1/listings`,
    connections: CONNECTIONS,
    overallRate: FILL_RATE,
    requests: [
      {
        method: "POST" as const,
        body,
        setupRequest: (req: any) => ({
          ...req,
          headers: {
            ...req.headers,
            "X-API-Key": filler.key.secret,
            "Content-Type": "application/json",
            "X-Idempotency-Key": crypto.randomUUID(),
          },
        }),
      },
    ],
  };
  // The filler writes for as long as the slice beside it runs, after a second to reach its pace.
  const besideFiller = async <T>(slice: () => Promise<T>): Promise<T> => {
    const writes = autocannon({ ...fill, duration: 3600 });
    await sleep(1000);
    try {
      return await slice();
    } finally {
      writes.stop();
      await writes;
    }
  };
  return [
    { name: "GET on shard-2, alone", opts: read(far) },
    { name: "GET on shard-2, while an agency fills shard-1", opts: read(far), around: besideFiller },
    { name: "GET on shard-1, while an agency fills shard-1", opts: read(near), around: besideFiller },
  ];
}
