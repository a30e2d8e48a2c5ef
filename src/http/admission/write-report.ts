import type { Context } from "hono";
import { UNREPORTED_WINDOW_MS } from "../../durable/key-gate/writes";
import type { D1Session } from "../d1-session";
import type { AppEnv } from "../env";
import { timed } from "../wide-event";
import { afterResponse } from "./after-response";
import { handOffBookmark } from "./key-auth";

/**
 * A key's write, as its gate admitted it: the secret's hash, the write's ticket and, once
 * open, its D1 session, whose bookmark the write reports to the gate however it ends.
 */
export interface Write {
  hash?: string;
  ticket?: string;
  session?: D1Session;
}

/** A write reports from the background unless it ran this long: then its answer waits for the report. */
const REPORT_INLINE_AFTER_MS = UNREPORTED_WINDOW_MS / 4;

/**
 * Reports a key's write to its gate: the bookmark its session reached and its ticket. The
 * answer does not wait for it (the gate sends reads to the primary until it arrives),
 * unless the write ran so long that the gate might stop waiting for it first.
 */
export async function report(c: Context<AppEnv>, write: Write, started: number): Promise<void> {
  if (!write.hash) return;
  const reported = handOffBookmark(c.env, write.hash, write.session?.bookmark() ?? null, write.ticket);
  if (Date.now() - started < REPORT_INLINE_AFTER_MS) afterResponse(c, reported);
  else await timed(c.var.event, "gateMs", reported);
}
