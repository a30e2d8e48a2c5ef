// The public API as `ops listen` and `ops trigger` call it: one sandbox key, JSON bodies,
// a fresh idempotency key per mutating call, and a timeout on every request.
import { randomUUID } from "node:crypto";

export const REQUEST_TIMEOUT_MS = 15_000;

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export type Call = (method: string, path: string, body?: unknown, signal?: AbortSignal) => Promise<Answer>;

export function publicApi(baseUrl: string, key: string): Call {
  return async (method, path, body, signal) => {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      redirect: "manual",
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      headers: {
        "X-API-Key": key,
        ...(method === "GET" ? {} : { "X-Idempotency-Key": randomUUID() }),
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}

/** `401 api_key_invalid: The API key is not recognised.`, or the status and body as they came. */
export function describeAnswer(a: Answer): string {
  const error = a.json?.error;
  return error ? `${a.status} ${error.code}: ${error.message}` : `${a.status} ${a.text.slice(0, 200)}`;
}

/** The key: `--key`, else ALMS_API_KEY (npm run dev prints a sandbox key when it starts). */
export function keyFrom(flags: Record<string, string>): string | undefined {
  const key = flags.key ?? process.env.ALMS_API_KEY;
  return key && key !== "true" ? key : undefined;
}
