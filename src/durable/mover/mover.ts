import { DurableObject } from "cloudflare:workers";
import { type ShardName, shardD1 } from "../../db/shards";
import { log } from "../../lib/telemetry/log";
import { type AgencyMove, getMove } from "./moves";
import {
  begin,
  catchUp,
  compare,
  copy,
  drain,
  dwellMs,
  flip,
  lastTable,
  type Progress,
  purgePage,
  record,
  requeue,
} from "./steps";

/** Failed tries of one step before a move that has not switched gives up (the agency stays whole where it was). */
const MAX_FAILURES = 5;
/** Steps one alarm runs before it hands over to the next, so an invocation stays within D1's query limit. */
const STEPS_PER_ALARM = 4;

/**
 * Runs one move of an agency between shards, step by step, each step in bounded pages and
 * idempotent: its progress lives in the move's record in the control database, and its alarm
 * wakes it again after a restart, where it resumes. Until the switch, a step that keeps failing
 * abandons the move: the old shard keeps serving, and what was copied is deleted again.
 */
export class ShardMover extends DurableObject<Env> {
  /** Wakes the move now (its first step, or again after an operator's restart). */
  async wake(moveId: string): Promise<void> {
    await this.ctx.storage.put("move", moveId);
    await this.ctx.storage.setAlarm(Date.now());
  }

  async alarm(): Promise<void> {
    const moveId = await this.ctx.storage.get<string>("move");
    if (!moveId) return;
    let move = await getMove(this.env, moveId);
    for (let i = 0; i < STEPS_PER_ALARM; i++) {
      if (move.status === "done" || move.status === "failed") return;
      const at = waitsUntil(move);
      if (at > Date.now()) return this.ctx.storage.setAlarm(at);
      try {
        move = await record(this.env, move, { ...(await this.#step(move)), failures: 0 });
      } catch (err) {
        move = await this.#failed(move, err);
        return this.ctx.storage.setAlarm(Date.now() + 1000 * 2 ** Math.min(move.failures, 6));
      }
    }
    await this.ctx.storage.setAlarm(Date.now());
  }

  async #step(move: AgencyMove): Promise<Partial<AgencyMove>> {
    const cursor = move.cursor ? (JSON.parse(move.cursor) as Progress["cursor"]) : null;
    const progress = await this.#run(move, cursor);
    const { cursor: next, ...rest } = progress;
    return { ...rest, cursor: next ? JSON.stringify(next) : null };
  }

  async #run(move: AgencyMove, cursor: Progress["cursor"]): Promise<Progress | Partial<AgencyMove>> {
    switch (move.step) {
      case "start":
        return begin(this.env, move);
      case "copy":
        return copy(this.env, move, cursor ?? {});
      case "catch_up":
        return catchUp(this.env, move);
      case "drain":
        return drain(this.env, move);
      case "check": {
        const differences = await compare(this.env, move);
        if (differences.length) return { step: "abandon", error: `rows differ: ${differences.join("; ")}` };
        return { step: "flip" };
      }
      case "flip": {
        await flip(this.env, move);
        const until = Date.now() + dwellMs(this.env);
        return { step: "requeue", switchedAt: new Date().toISOString(), cursor: { until, lane: 0, at: null } };
      }
      case "requeue": {
        const next = await requeue(this.env, move, { lane: cursor?.lane ?? 0, after: cursor?.at ?? null });
        const until = cursor?.until ?? 0;
        return next
          ? { step: "requeue", cursor: { until, lane: next.lane, at: next.after } }
          : { step: "dwell", cursor: { until } };
      }
      case "dwell":
        return this.#leave(move);
      case "purge":
        return this.#purge(move, move.fromShard, cursor?.table ?? lastTable);
      case "abandon":
        return this.#abandon(move, cursor?.table ?? lastTable);
      default:
        throw new Error(`A move has no step ${move.step}.`);
    }
  }

  /** After the dwell, the old shard's rows are gone from its jobs' view, and are deleted in pages. */
  async #leave(move: AgencyMove): Promise<Progress> {
    await this.#departures(move.fromShard)
      .prepare("UPDATE agency_departures SET state = 'gone' WHERE agency_id = ?1")
      .bind(move.agencyId)
      .run();
    return { step: "purge", cursor: { table: lastTable } };
  }

  async #purge(move: AgencyMove, shard: string, table: number): Promise<Partial<AgencyMove> | Progress> {
    const page = await purgePage(this.env, move, shard, table);
    if (page.table >= 0)
      return { cursor: { table: page.table }, rowsDeleted: move.rowsDeleted + page.deleted } as Progress;
    const from = this.#departures(shard);
    await from.batch([
      from.prepare("DELETE FROM agency_departures WHERE agency_id = ?1").bind(move.agencyId),
      from.prepare("DELETE FROM move_journal WHERE agency_id = ?1").bind(move.agencyId),
    ]);
    return { step: "finished", status: "done", finishedAt: new Date().toISOString() };
  }

  /** Gives the move up before its switch: the old shard serves on unfenced, the copy is deleted. */
  async #abandon(move: AgencyMove, table: number): Promise<Partial<AgencyMove> | Progress> {
    const from = this.#departures(move.fromShard);
    await from.batch([
      from.prepare("DELETE FROM agency_departures WHERE agency_id = ?1").bind(move.agencyId),
      from.prepare("DELETE FROM move_journal WHERE agency_id = ?1").bind(move.agencyId),
    ]);
    const page = await purgePage(this.env, move, move.toShard, table);
    if (page.table >= 0) return { cursor: { table: page.table } } as Progress;
    await this.#departures(move.toShard)
      .prepare("DELETE FROM agency_departures WHERE agency_id = ?1")
      .bind(move.agencyId)
      .run();
    return { step: "finished", status: "failed", finishedAt: new Date().toISOString() };
  }

  async #failed(move: AgencyMove, err: unknown): Promise<AgencyMove> {
    const failures = move.failures + 1;
    log.warn("agency move step failed", { move_id: move.id, step: move.step, failures, error: String(err) });
    const switched = move.switchedAt !== null || move.step === "flip";
    const giveUp = !switched && failures >= MAX_FAILURES && move.step !== "abandon";
    return record(this.env, move, {
      failures,
      error: String(err).slice(0, 500),
      ...(giveUp ? { step: "abandon", cursor: null } : {}),
    });
  }

  #departures(shard: string): D1Database {
    return shardD1(this.env, shard as ShardName);
  }
}

/** When a move's step may run: a dwell waits out its time. */
const waitsUntil = (move: AgencyMove): number =>
  move.step === "dwell" && move.cursor ? ((JSON.parse(move.cursor) as { until?: number }).until ?? 0) : 0;
