import type { ApiKey } from "../../db/schema";
import type { ShardName } from "../../db/shards";
import type { DomainError, ErrorCode } from "../../lib/errors";

export interface RateDecision {
  limit: number;
  remaining: number;
  /** Epoch seconds when the window has fully refilled. */
  reset: number;
  /** Seconds until a request fits again; set only when refused. */
  retryAfter?: number;
  /** Set when the agency's budget, shared by all its keys, refused the request (the numbers are the agency's). */
  scope?: "agency";
}

export interface Refusal {
  ok: false;
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

export type GateVerdict =
  | {
      ok: true;
      key: Pick<ApiKey, "id" | "agencyId" | "role" | "scopes" | "mintedByUserId">;
      rate?: RateDecision;
      /** The D1 bookmark of the key's latest committed write: its reads start there. */
      bookmark?: string;
      /** The shard that holds the key's agency: every D1 statement of the request runs there. */
      shard: ShardName;
      /** A write of the key has not reported its bookmark yet: a read goes to the primary, which has it. */
      primary?: boolean;
      /** A write's ticket: its bookmark hand-off carries it back, so the gate knows the write reported. */
      ticket?: string;
    }
  | Refusal;

/** Errors cross the RPC boundary as plain Errors; a refusal travels as data. */
export function refuse(err: DomainError): Refusal {
  return { ok: false, code: err.code, message: err.message, details: err.details };
}
