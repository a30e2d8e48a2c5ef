// Request and response types of each operation, read off the generated `paths`.
import type { paths } from "./openapi.js";

export type Method = "get" | "post" | "put" | "patch" | "delete";

/** The paths that answer `method`. */
export type PathsFor<M extends Method> = {
  [P in keyof paths]: paths[P] extends Record<M, unknown> ? P : never;
}[keyof paths];

export type Operation<P extends keyof paths, M extends Method> = paths[P] extends Record<M, infer O> ? O : never;

type Parameters<O> = O extends { parameters: infer X } ? X : object;
type PathParameters<O> = Parameters<O> extends { path: infer X } ? X : never;
type QueryParameters<O> = Parameters<O> extends { query?: infer X } ? X : never;
type JsonBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

type PathPart<O> = [PathParameters<O>] extends [never] ? { path?: undefined } : { path: PathParameters<O> };
type QueryPart<O> = [QueryParameters<O>] extends [never] ? { query?: undefined } : { query?: QueryParameters<O> };
type BodyPart<O> = [JsonBody<O>] extends [never]
  ? { body?: undefined }
  : O extends { requestBody: unknown }
    ? { body: JsonBody<O> }
    : { body?: JsonBody<O> };

/** What a call takes besides its method and path. */
export interface CallOptions {
  /** The X-Idempotency-Key of a mutating call; a new UUID when omitted. Retries reuse it. */
  idempotencyKey?: string;
  /** Cancels the call, its waits between attempts included. */
  signal?: AbortSignal;
  /** paginate and pages only: stop with an error past this many pages (default 1000). */
  maxPages?: number;
}

export type RequestOptions<O> = CallOptions & PathPart<O> & QueryPart<O> & BodyPart<O>;

/** The options argument: optional when nothing in it is required. */
export type OptionsArg<O> =
  object extends RequestOptions<O> ? [options?: RequestOptions<O>] : [options: RequestOptions<O>];

type Responses<O> = O extends { responses: infer R } ? R : never;

/** The body of a successful answer: the JSON of its 200, 201 or 202, `undefined` for a 204. */
export type Success<O> = {
  [S in keyof Responses<O>]: S extends 200 | 201 | 202
    ? Responses<O>[S] extends { content: { "application/json": infer B } }
      ? B
      : undefined
    : S extends 204
      ? undefined
      : never;
}[keyof Responses<O>];

/** The paths whose GET answers a cursor page: `{ data: [...], next_cursor }`. */
export type CursorPaths = {
  [P in PathsFor<"get">]: Success<Operation<P, "get">> extends { data: unknown[]; next_cursor: string } ? P : never;
}[PathsFor<"get">];

/** The paths whose GET answers a numbered page: `{ page, pages, … }`. */
export type NumberedPaths = {
  [P in PathsFor<"get">]: Success<Operation<P, "get">> extends { page: number; pages: number } ? P : never;
}[PathsFor<"get">];

/** The fields of a numbered page that hold its items. */
export type ItemsField<P extends NumberedPaths> = {
  [K in keyof Success<Operation<P, "get">>]: Success<Operation<P, "get">>[K] extends unknown[] ? K : never;
}[keyof Success<Operation<P, "get">>] &
  string;

export type CursorItem<P extends CursorPaths> = Success<Operation<P, "get">> extends { data: (infer T)[] } ? T : never;

export type NumberedItem<P extends NumberedPaths, K extends ItemsField<P>> = Success<
  Operation<P, "get">
>[K] extends (infer T)[]
  ? T
  : never;
