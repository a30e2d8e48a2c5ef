import { errorOf } from "./errors.js";
import { cursorItems, numberedItems } from "./pages.js";
import { backoffMs, DEFAULT_RETRY, type RetryPolicy, retryDelayMs } from "./retry.js";
import type {
  CursorItem,
  CursorPaths,
  ItemsField,
  Method,
  NumberedItem,
  NumberedPaths,
  Operation,
  OptionsArg,
  PathsFor,
  RequestOptions,
  Success,
} from "./types.js";

export interface ClientOptions {
  /** Where the API is, without `/api/v1` (e.g. `http://127.0.0.1:8787` for `npm run dev`). */
  baseUrl: string;
  /** The secret key, `sk_test_…` or `sk_live_…`, sent as X-API-Key. */
  apiKey: string;
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** Per attempt (default 30 000 ms). */
  timeoutMs?: number;
  /** When and how often to retry; see RetryPolicy. */
  retry?: Partial<RetryPolicy>;
  /** Mints an idempotency key for a mutating call without one (default: crypto.randomUUID). */
  idempotencyKey?: () => string;
  /** Waits between attempts (tests pass a fake). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** In [0, 1), for the jitter (tests pass a fixed one). */
  random?: () => number;
}

/** A successful answer with its response, for headers such as X-Request-Id or X-Idempotent-Replay. */
export interface Answer<T> {
  data: T;
  response: Response;
  attempts: number;
}

const MUTATING = new Set<Method>(["post", "put", "patch", "delete"]);

function sleeper(ms: number, signal?: AbortSignal) {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

/** `/api/v1/listings/{listing_number}` with its parameters filled in, and the query appended. */
function urlOf(baseUrl: string, template: string, path: unknown, query: unknown): string {
  const params = (path ?? {}) as Record<string, unknown>;
  const filled = template.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => {
    const value = Object.hasOwn(params, name) ? params[name] : undefined;
    if (value === undefined || value === null || value === "") throw new TypeError(`Missing path parameter ${name}`);
    return encodeURIComponent(String(value));
  });
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (value === undefined || value === null) continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  const qs = search.toString();
  return `${baseUrl.replace(/\/+$/, "")}${filled}${qs ? `?${qs}` : ""}`;
}

export type Client = ReturnType<typeof createClient>;

/**
 * A client of the API. Every call sends the key, an X-Idempotency-Key on mutating calls (the
 * same on each retry), retries what the API says may be retried (see retryDelayMs), and throws
 * an AlmsError for any other error answer.
 */
export function createClient(options: ClientOptions) {
  const doFetch = options.fetch ?? ((request: Request) => fetch(request));
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...options.retry };
  const maxAttempts = Math.max(1, Math.min(10, Math.floor(policy.maxAttempts)));
  const timeoutMs = options.timeoutMs ?? 30_000;
  const mintKey = options.idempotencyKey ?? (() => crypto.randomUUID());
  const sleep = options.sleep ?? sleeper;
  const random = options.random ?? Math.random;

  async function send<M extends Method, P extends PathsFor<M>>(
    method: M,
    path: P,
    ...[opts]: OptionsArg<Operation<P, M>>
  ): Promise<Answer<Success<Operation<P, M>>>> {
    const call = (opts ?? {}) as RequestOptions<unknown> & { path?: unknown; query?: unknown; body?: unknown };
    const url = urlOf(options.baseUrl, path, call.path, call.query);
    const headers: Record<string, string> = { Accept: "application/json", "X-API-Key": options.apiKey };
    if (MUTATING.has(method)) headers["X-Idempotency-Key"] = call.idempotencyKey ?? mintKey();
    const body = call.body === undefined ? undefined : JSON.stringify(call.body);
    if (body !== undefined) headers["Content-Type"] = "application/json";

    for (let attempt = 1; ; attempt++) {
      const signal = call.signal
        ? AbortSignal.any([call.signal, AbortSignal.timeout(timeoutMs)])
        : AbortSignal.timeout(timeoutMs);
      let response: Response;
      try {
        // No redirects: the API never answers one, and following it would send the key elsewhere.
        response = await doFetch(
          new Request(url, { method: method.toUpperCase(), headers, body, signal, redirect: "manual" }),
        );
      } catch (failure) {
        // A lost connection or a timeout: the same key makes a resend safe.
        if (call.signal?.aborted || attempt >= maxAttempts) throw failure;
        await sleep(backoffMs(attempt, policy), call.signal);
        continue;
      }
      const text = await response.text();
      if (response.status >= 200 && response.status < 300) {
        const data = (text === "" ? undefined : JSON.parse(text)) as Success<Operation<P, M>>;
        return { data, response, attempts: attempt };
      }
      const error = errorOf(response, text, attempt);
      const wait = attempt < maxAttempts ? retryDelayMs(error, attempt, policy, random) : null;
      if (wait === null) throw error;
      await sleep(wait, call.signal);
    }
  }

  const verb =
    <M extends Method>(method: M) =>
    async <P extends PathsFor<M>>(path: P, ...opts: OptionsArg<Operation<P, M>>) =>
      (await send(method, path, ...opts)).data;

  return {
    /** The call with its response and attempt count. */
    send,
    get: verb("get"),
    post: verb("post"),
    put: verb("put"),
    patch: verb("patch"),
    delete: verb("delete"),
    /** Every item of a cursor list, page after page (at most `maxPages`, default 1000). */
    paginate<P extends CursorPaths>(
      path: P,
      ...[opts]: OptionsArg<Operation<P, "get">>
    ): AsyncGenerator<CursorItem<P>, void, undefined> {
      return cursorItems(send, path, opts);
    },
    /** Every item of a numbered list (the tours), in `field`, page 1 to the last. */
    pages<P extends NumberedPaths, K extends ItemsField<P>>(
      path: P,
      field: K,
      ...[opts]: OptionsArg<Operation<P, "get">>
    ): AsyncGenerator<NumberedItem<P, K>, void, undefined> {
      return numberedItems(send, path, field, opts);
    },
  };
}
