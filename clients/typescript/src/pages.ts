// Async iteration over the two list shapes: cursor pages (`data` and `next_cursor`, "" at the
// end) and the tours' numbered pages (`page` of `pages`).

interface PageCall {
  query?: Record<string, unknown>;
  maxPages?: number;
  signal?: AbortSignal;
}

type Send = (method: "get", path: never, options: never) => Promise<{ data: unknown }>;

const DEFAULT_MAX_PAGES = 1000;

function limitOf(call: PageCall) {
  const max = call.maxPages ?? DEFAULT_MAX_PAGES;
  if (!Number.isInteger(max) || max < 1) throw new RangeError("maxPages must be a positive integer");
  return max;
}

export async function* cursorItems<T>(send: Send, path: string, options: unknown): AsyncGenerator<T, void, undefined> {
  const call = (options ?? {}) as PageCall;
  const maxPages = limitOf(call);
  let cursor: string | undefined;
  for (let page = 1; page <= maxPages; page++) {
    const query = { ...call.query, cursor };
    const { data } = await send("get", path as never, { ...call, query } as never);
    const body = data as { data: T[]; next_cursor: string };
    yield* body.data;
    if (body.next_cursor === "") return;
    if (body.next_cursor === cursor) throw new Error(`${path} answered the same cursor twice`);
    cursor = body.next_cursor;
  }
  throw new RangeError(`${path} has more than ${maxPages} pages; raise maxPages or narrow the query`);
}

export async function* numberedItems<T>(
  send: Send,
  path: string,
  field: string,
  options: unknown,
): AsyncGenerator<T, void, undefined> {
  const call = (options ?? {}) as PageCall;
  const maxPages = limitOf(call);
  const first = Number(call.query?.page ?? 1);
  for (let page = first; page < first + maxPages; page++) {
    const query = { ...call.query, page };
    const { data } = await send("get", path as never, { ...call, query } as never);
    const body = data as Record<string, unknown> & { pages: number };
    const items = Object.hasOwn(body, field) ? body[field] : undefined;
    if (!Array.isArray(items)) throw new TypeError(`${path} answered no ${field} array`);
    yield* items as T[];
    if (page >= body.pages || items.length === 0) return;
  }
  throw new RangeError(`${path} has more than ${maxPages} pages; raise maxPages or narrow the query`);
}
