import type { Claim, Target } from "../delivery/claim";
import { type DeliveryMessage, retryLater } from "../delivery/settling";

/** A first-come, first-served limit on attempts running at once. */
export function slots(n: number) {
  let free = n;
  const waiting: (() => void)[] = [];
  return {
    async acquire() {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => waiting.push(resolve));
    },
    release() {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

export interface Lane {
  endpointId: string;
  agencyId: string;
  /** The endpoint failed before this batch: it is tried after the healthy ones, one attempt at a time. */
  failing: boolean;
  /** An attempt failed in this batch: the endpoint's other messages wait for a later batch. */
  failedHere: boolean;
  pending: { message: DeliveryMessage; target: Target; attempts: number }[];
}

/**
 * The endpoints of a batch in the order their attempts take connections: healthy
 * endpoints before failing ones, and round-robin across agencies (each agency's first
 * endpoint, then each one's second), so no agency's receivers go ahead of all others'.
 */
function inTurn(lanes: Lane[]): Lane[] {
  const seen = new Map<string, number>();
  return lanes
    .map((lane) => {
      const turn = seen.get(lane.agencyId) ?? 0;
      seen.set(lane.agencyId, turn + 1);
      return { lane, turn };
    })
    .sort((a, b) => Number(a.lane.failing) - Number(b.lane.failing) || a.turn - b.turn)
    .map(({ lane }) => lane);
}

const pausedUntil = (endpoint: Target["endpoint"]) => Date.parse(endpoint?.pausedUntil ?? "") || 0;

/**
 * The batch's messages to attempt, one lane per endpoint, in turn (see inTurn). A message
 * whose delivery is no longer pending is acked; one this batch did not lease (another
 * attempt holds it, in this batch or another, or its endpoint is paused) is retried, not
 * before the lease or the pause ends.
 */
export function lanesOf(messages: readonly DeliveryMessage[], claim: Claim): Lane[] {
  const byEndpoint = new Map<string, Lane>();
  const taken = new Set<string>();
  for (const message of messages) {
    const id = message.body.delivery_id;
    const target = claim.targets.get(id);
    if (target?.delivery.status !== "pending") {
      message.ack();
      continue;
    }
    const attempts = claim.leased.get(id);
    if (attempts === undefined || taken.has(id)) {
      // Another attempt holds it (in this batch or another), or its endpoint is paused.
      retryLater(message, Math.max(Date.parse(target.delivery.leasedUntil ?? "") || 0, pausedUntil(target.endpoint)));
      continue;
    }
    taken.add(id);
    const key = target.delivery.endpointId;
    let lane = byEndpoint.get(key);
    if (!lane) {
      const failing = (target.endpoint?.consecutiveFailures ?? 0) > 0;
      lane = { endpointId: key, agencyId: target.delivery.agencyId, failing, failedHere: false, pending: [] };
      byEndpoint.set(key, lane);
    }
    lane.pending.push({ message, target, attempts });
  }
  return inTurn([...byEndpoint.values()]);
}
