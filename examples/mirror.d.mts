// Types of examples/mirror.mjs, for a TypeScript project that copies it.

/** What an event names: the resource it changed and the version the change gave it. */
export interface ResourceRef {
  type: "listing" | "user" | "order";
  id: string;
  version: number;
}

/** A webhook envelope or an item of the events feed, as far as the mirror reads it. */
export interface SyncEvent {
  event_id: string;
  event_type: string;
  sequence?: number;
  resource?: ResourceRef | null;
  data?: Record<string, unknown>;
}

/** A resource as its routes answer it; every one the mirror keeps carries `version`. */
export type Versioned = Record<string, unknown> & { version: number };

export interface MirrorOptions {
  /** The service's origin, or its `/api/v1` base. */
  baseUrl: string;
  apiKey: string;
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
  /** false: apply only what arrives (a copy that loses what it missed). */
  fillGaps?: boolean;
  timeoutMs?: number;
  /** Called for every event accounted for, with where it came from. */
  onEvent?: (event: SyncEvent, source: "webhook" | "feed") => void;
}

export interface Mirror {
  start(): Promise<void>;
  receive(envelope: SyncEvent): Promise<"ignored" | "duplicate" | "filled" | "applied">;
  fill(): Promise<void>;
  resync(lastSequence: number): Promise<void>;
  sweepTours(): Promise<void>;
  readonly through: number;
  readonly ahead: number[];
  listings: Map<string, Versioned>;
  users: Map<string, Versioned>;
  orders: Map<string, Map<string, Versioned>>;
  tours: Map<string, Versioned>;
  stats: Record<"applied" | "skipped" | "reads" | "notModified" | "fills" | "resyncs" | "sweeps", number>;
}

export class MirrorError extends Error {
  status: number;
  code: string;
}

export function createMirror(options: MirrorOptions): Mirror;

export function verifyDelivery(
  rawBody: string,
  signatureHeader: string | null | undefined,
  secret: string,
  now?: number,
): Promise<SyncEvent | null>;
