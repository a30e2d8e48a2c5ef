import { DurableObject } from "cloudflare:workers";
import { agencyShard, shardEnv } from "../db/shards";
import { log } from "../lib/telemetry/log";
import { replayStep } from "../webhooks/replays/step";

/** Steps one alarm runs before it hands over to the next, so an invocation stays well within D1's query limit. */
const STEPS_PER_ALARM = 5;
/** Failed steps in a row back off from 1 s, doubling, to this at most. */
const MAX_BACKOFF_MS = 60_000;

interface Job {
  replayId: string;
  agencyId: string;
  failures: number;
}

/**
 * One per webhook endpoint (addressed by its id), so one replay of an endpoint sends at a
 * time, in order, beside the endpoint's live deliveries. It holds only which replay it
 * drives: the replay's progress lives in the agency's database, each step guarded by it,
 * so the alarm picks up where the last step left off after a restart, and an agency moved
 * to another shard is followed (its shard is looked up at each alarm).
 */
export class WebhookReplayer extends DurableObject<Env> {
  /** Starts driving the replay (a replay recorded as running in the agency's database). */
  async start(replayId: string, agencyId: string): Promise<void> {
    await this.ctx.storage.put("job", { replayId, agencyId, failures: 0 } satisfies Job);
    await this.ctx.storage.setAlarm(Date.now());
  }

  async alarm(): Promise<void> {
    const job = await this.ctx.storage.get<Job>("job");
    if (!job) return;
    const placed = await agencyShard(this.env, job.agencyId);
    if (!placed) return this.#finish(job.replayId);
    const env = shardEnv(this.env, placed.shard);
    for (let i = 0; i < STEPS_PER_ALARM; i++) {
      let step: Awaited<ReturnType<typeof replayStep>>;
      try {
        step = await replayStep(env, job.agencyId, job.replayId);
      } catch (err) {
        const failures = job.failures + 1;
        log.warn("webhook replay step failed", { replay_id: job.replayId, failures, error: String(err) });
        await this.ctx.storage.put("job", { ...job, failures });
        return this.ctx.storage.setAlarm(Date.now() + Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1)));
      }
      if (job.failures) {
        job.failures = 0;
        await this.ctx.storage.put("job", job);
      }
      if (step.next === "never") return this.#finish(job.replayId);
      if (step.next === "later") return this.ctx.storage.setAlarm(step.at);
    }
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** Forgets the replay once over, unless another has started meanwhile. */
  async #finish(replayId: string): Promise<void> {
    const job = await this.ctx.storage.get<Job>("job");
    if (job?.replayId === replayId) await this.ctx.storage.delete("job");
  }
}
