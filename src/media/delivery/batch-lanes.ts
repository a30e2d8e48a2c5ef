import { inArray } from "drizzle-orm";
import type { Db } from "../../db/client";
import { mediaDeliveries } from "../../db/schema";
import { log } from "../../lib/telemetry/log";
import type { MediaJob } from "../jobs";
import type { CopySlots } from "./copy-slots";

/** Delivery messages of one agency running at once in a batch. */
const DELIVERIES_PER_AGENCY = 2;
/** Delivery messages running at once in a batch; their copies share the batch's copy slots. */
const DELIVERIES_PER_BATCH = 4;

const deliveryIdOf = (body: unknown) =>
  (body as MediaJob | undefined)?.kind === "delivery" ? (body as { delivery_id: string }).delivery_id : undefined;

/**
 * The agency of each delivery named in the batch, in one statement (a batch holds at most
 * 10 messages, far under D1's 100 bound parameters). A delivery it cannot place (gone, or
 * the read failed) counts as an agency of its own: it still runs, and finds its own way out.
 */
async function agenciesOf(db: Db, ids: string[]) {
  if (!ids.length) return new Map<string, string>();
  try {
    const rows = await db
      .select({ id: mediaDeliveries.id, agencyId: mediaDeliveries.agencyId })
      .from(mediaDeliveries)
      .where(inArray(mediaDeliveries.id, ids.slice(0, 100)))
      .all();
    return new Map(rows.map((r) => [r.id, r.agencyId]));
  } catch (err) {
    log.error("media batch lanes failed", { job: "media", error: String(err) });
    return new Map<string, string>();
  }
}

/**
 * Runs a batch's messages on two lanes at once. Settles and R2 notifications (short: a
 * HEAD and a few writes) run one after another on their own lane, so a long delivery
 * never holds an upload's completion. Deliveries run side by side, at most
 * DELIVERIES_PER_AGENCY of one agency and DELIVERIES_PER_BATCH in all, a later agency
 * going ahead of an agency at its share; two messages of the same delivery run one
 * after the other, so the second sees what the first copied. Each agency with a
 * delivery in the batch holds a share of the copy slots until its last one ends.
 * `run` never throws.
 */
export async function runLanes<M extends { body: unknown }>(
  db: Db,
  messages: readonly M[],
  copies: CopySlots,
  run: (message: M) => Promise<void>,
): Promise<void> {
  const deliveries = messages.filter((m) => deliveryIdOf(m.body) !== undefined);
  const others = messages.filter((m) => deliveryIdOf(m.body) === undefined);
  const quickLane = (async () => {
    for (const m of others) await run(m);
  })();
  const agencies = await agenciesOf(db, [...new Set(deliveries.map((m) => deliveryIdOf(m.body)!))]);
  const agencyOf = (m: M) => {
    const id = deliveryIdOf(m.body)!;
    return agencies.get(id) ?? `unknown:${id}`;
  };
  // Every agency with a delivery in the batch counts for the copy shares from the start, so
  // an agency whose deliveries start first cannot take every slot before the others arrive.
  for (const m of deliveries) copies.join(agencyOf(m));
  const byAgency = new Map<string, number>();
  const runningDeliveries = new Set<string>();
  const pending = [...deliveries];
  let active = 0;
  const deliveryLane = new Promise<void>((done) => {
    const pump = () => {
      while (active < DELIVERIES_PER_BATCH) {
        const i = pending.findIndex(
          (m) =>
            (byAgency.get(agencyOf(m)) ?? 0) < DELIVERIES_PER_AGENCY && !runningDeliveries.has(deliveryIdOf(m.body)!),
        );
        if (i < 0) break;
        const m = pending.splice(i, 1)[0]!;
        const agency = agencyOf(m);
        const id = deliveryIdOf(m.body)!;
        byAgency.set(agency, (byAgency.get(agency) ?? 0) + 1);
        runningDeliveries.add(id);
        active++;
        void run(m).finally(() => {
          copies.leave(agency);
          byAgency.set(agency, byAgency.get(agency)! - 1);
          runningDeliveries.delete(id);
          active--;
          pump();
        });
      }
      if (!active && !pending.length) done();
    };
    pump();
  });
  await Promise.all([quickLane, deliveryLane]);
}
