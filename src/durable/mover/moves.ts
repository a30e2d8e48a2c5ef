import { and, eq, inArray } from "drizzle-orm";
import { agencyMoves } from "../../db/schema";
import { CONTROL_SHARD, controlDb, type ShardName } from "../../db/shards";
import { placedAgency } from "../../domain/people/placement";
import { DomainError } from "../../lib/errors";
import { newId } from "../../lib/ids";

export type AgencyMove = typeof agencyMoves.$inferSelect;

/** The move's object: one per move, woken by its alarm until the move is done or failed. */
const moverOf = (env: Env, moveId: string) => env.SHARD_MOVER.getByName(moveId);

/**
 * Starts moving an agency to `toShard`: records the move in the control database and wakes
 * its object, which copies the agency's rows while it serves (see `steps.ts`). One move of an
 * agency runs at a time; the platform's own agency stays with the control database.
 */
export async function startMove(env: Env, agencyId: string, toShard: ShardName): Promise<AgencyMove> {
  const control = controlDb(env);
  const placed = await placedAgency(env, agencyId);
  const agency = placed;
  if (agency.kind === "platform" && toShard !== CONTROL_SHARD)
    throw new DomainError("agency_move_refused", {
      message: "The platform's own agency stays with the control database.",
      details: { agency_id: agency.id, to_shard: toShard },
    });
  if (placed.shard === toShard)
    throw new DomainError("agency_move_refused", {
      message: `The agency is already on ${toShard}.`,
      details: { agency_id: agency.id, to_shard: toShard },
    });
  const running = await control
    .select({ id: agencyMoves.id })
    .from(agencyMoves)
    .where(and(eq(agencyMoves.agencyId, agency.id), inArray(agencyMoves.status, ["copying", "switching"])))
    .get();
  if (running) throw new DomainError("agency_move_in_progress", { details: { move_id: running.id } });
  const move = await control
    .insert(agencyMoves)
    .values({
      id: newId("mov"),
      agencyId: agency.id,
      fromShard: placed.shard,
      toShard,
      status: "copying",
      step: "start",
    })
    .returning()
    .get()
    .catch((err: unknown) => {
      // Two starts at once: the running-move index lets one through.
      if (String(err).includes("UNIQUE")) throw new DomainError("agency_move_in_progress");
      throw err;
    });
  await moverOf(env, move.id).wake(move.id);
  return move;
}

/** A move by id. */
export async function getMove(env: Env, moveId: string): Promise<AgencyMove> {
  const move = await controlDb(env).select().from(agencyMoves).where(eq(agencyMoves.id, moveId)).get();
  if (!move) throw new DomainError("move_not_found");
  return move;
}
