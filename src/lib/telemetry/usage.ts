/**
 * Usage data points for Workers Analytics Engine: one per request and one per webhook
 * delivery attempt, in one dataset. `blob1` names the kind of point, so one table holds
 * both; the index is the agency, so a query per agency reads only its own sample.
 * Column meanings are listed in docs/operators.md with the queries an operator runs.
 */
export interface RequestPoint {
  agencyId: string | null;
  keyId: string | null;
  operation: string | null;
  status: number;
  errorCode: string | null;
  environment: string;
  latencyMs: number;
  bodyBytes: number;
}

export interface DeliveryPoint {
  agencyId: string;
  endpointId: string;
  eventType: string;
  /** delivered, failed (retried later) or dead. */
  outcome: string;
  status: number | null;
  environment: string;
  latencyMs: number;
  attempt: number;
}

/** `2xx` … `5xx`; `none` when no status came back (a delivery that got no answer). */
const statusClass = (status: number | null): string => (status ? `${Math.floor(status / 100)}xx` : "none");

/** Writes one point; a missing binding (a script run outside the Worker) or a failing one costs the request nothing. */
function write(dataset: AnalyticsEngineDataset | undefined, point: AnalyticsEngineDataPoint): void {
  try {
    dataset?.writeDataPoint(point);
  } catch {
    // Usage is counted best effort; the request or delivery it describes has already happened.
  }
}

export function recordRequest(dataset: AnalyticsEngineDataset | undefined, p: RequestPoint): void {
  write(dataset, {
    indexes: [p.agencyId ?? ""],
    blobs: [
      "request",
      p.agencyId ?? "",
      p.keyId ?? "",
      p.operation ?? "",
      statusClass(p.status),
      p.errorCode ?? "",
      p.environment,
    ],
    doubles: [p.latencyMs, p.bodyBytes, p.status],
  });
}

export function recordDelivery(dataset: AnalyticsEngineDataset | undefined, p: DeliveryPoint): void {
  write(dataset, {
    indexes: [p.agencyId],
    blobs: ["delivery", p.agencyId, p.endpointId, p.eventType, p.outcome, statusClass(p.status), p.environment],
    doubles: [p.latencyMs, p.attempt, p.status ?? 0],
  });
}
