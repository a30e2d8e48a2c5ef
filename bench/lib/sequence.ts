// What the event sequence costs the idempotent POST: the create of a listing on a product
// Worker as migrated, against one whose local database has the trigger that numbers each
// agency's events (`events_sequence`) dropped after the migrations, in turns. Everything
// else (the event row, its resource and version, the outbox) is the same on both, so the
// difference is the trigger's two writes in the create's batch: the agency's counter (with
// its latest event time) and the event's `sequence` (with its unique index) and time.
import type { Figure } from "./load.ts";
import { runChild } from "./processes.ts";
import { createListingSpec, measureSides, type Side } from "./product-pair.ts";

export interface SequenceFigures {
  with: Figure;
  without: Figure;
}

const WITH: Side = { label: "with the event sequence" };
const WITHOUT: Side = {
  label: "without the event sequence",
  prepare: (persist) =>
    runChild(
      "wrangler",
      ["d1", "execute", "DB", "--local", ...persist, "--command", "DROP TRIGGER events_sequence"],
      "drop-sequence-trigger",
      120_000,
    ),
};

export async function measureSequence(token: string, readyMs: number): Promise<SequenceFigures> {
  const [posts = []] = await measureSides([WITH, WITHOUT], token, readyMs, [
    (p) => createListingSpec(p, `POST /api/v1/listings, ${p.label}`),
  ]);
  const [withSequence, withoutSequence] = posts;
  return { with: withSequence!, without: withoutSequence! };
}
