import type { ZodType } from "zod";
import type { Db } from "../db/client";
import type { EndpointName } from "../domain/budgets";
import type { Role, Scope } from "../domain/roles";
import type { ErrorCode } from "../lib/errors";
import { isNear, levenshtein } from "../lib/suggest";

/** What a route declares about its guards. */
export interface Guard {
  /** Rate-limit budget name; the route is rate limited when set. */
  endpoint?: EndpointName;
  scope?: Scope;
  /** Scopes needed besides `scope` (documented with it in `x-required-scopes`). */
  alsoScopes?: readonly Scope[];
  roles?: readonly Role[];
  /** Also accept the dashboard session cookie. */
  session?: boolean;
  /** Open to anyone, like the documents: no key, no budget (a reference, never tenant data). */
  anonymous?: true;
  /**
   * The answer carries a secret shown once (a webhook signing secret): its replay goes only
   * to the caller that made the first request; any other caller of the agency reusing the
   * idempotency key is 409 `idempotency_key_conflict` and learns nothing.
   */
  replaysToCallerOnly?: true;
  /**
   * Conditional requests: `read`, a GET answering the resource's ETag, where a matching
   * If-None-Match is 304 and costs no budget; `write`, a change that takes If-Match and is
   * 412 `resource_version_mismatch` when the resource has another version.
   */
  conditional?: "read" | "write";
  /**
   * A conditional read's version-only read of the requested resource (undefined when there
   * is none): a matching If-None-Match is answered 304 from it before the handler runs.
   */
  currentVersion?: (
    db: Db,
    agencyId: string,
    param: (name: string) => string | undefined,
  ) => Promise<number | undefined>;
  /** Largest accepted body in bytes (413 above it). */
  bodyLimit?: number;
  /** The route's own error codes, beyond those its guards can answer. */
  errors?: readonly ErrorCode[];
  /**
   * Served and guarded like any route, but left out of the OpenAPI document because it
   * never succeeds (a reserved route, the catch-all of a wire rule); the document says
   * so in the description of the operation's tag instead.
   */
  undocumented?: true;
  /**
   * Sandbox only (the test helpers): where `API_MODE` is `live` the route answers exactly
   * like an unknown path, for every method, and the live document leaves it out.
   */
  sandboxOnly?: true;
}

/** Everything the route factory knows of an operation, read back when the app is built. */
export interface RouteMeta extends Guard {
  surface: "public" | "internal";
  /** Largest accepted body in bytes, resolved: what every request to the route is held to. */
  bodyLimit: number;
  method: string;
  path: string;
  codes: ErrorCode[];
  schemas: { json?: ZodType; query?: ZodType; param?: ZodType };
}

/** Where the route factory leaves an operation's meta on its route definition. */
export const ROUTE_META = Symbol("route meta");

/** What a replayer needs to present a resource again. */
interface ReplayRequest {
  db: Db;
  env: Env;
  agencyId: string;
  origin: string;
}

/**
 * How a committed request is answered when its response was lost (the Worker died
 * between the D1 commit and caching the response): each resource type that handlers
 * mark has a replayer that presents the resource as it stands.
 */
export type Replayer = (req: ReplayRequest, resourceId: string) => Promise<unknown | undefined>;

interface Definitions {
  openAPIRegistry: { definitions: readonly unknown[] };
}

/** A path template as an exact pattern: a trailing slash is another path, as it is to the router. */
const patternOf = (template: string) =>
  new RegExp(`^${template.replaceAll(/\{\w+\}/g, "[^/]+").replaceAll(/:\w+/g, "[^/]+")}$`);
const routeKey = (method: string, path: string) => `${method.toUpperCase()} ${path.replaceAll(/\{(\w+)\}/g, ":$1")}`;

/**
 * The routes of both surfaces, built once, explicitly, when the app is created: the
 * operations the route factory described, the plain paths served beside them, and the
 * replayers of committed writes. Guards and hooks read it from `c.var.routes`.
 */
export class RouteRegistry {
  readonly #operations: RouteMeta[] = [];
  readonly #byKey = new Map<string, RouteMeta>();
  readonly #paths: { method: string; pattern: RegExp; template: string }[] = [];
  readonly #sandboxOnly: RegExp[] = [];
  readonly #replayers: Map<string, Replayer>;

  constructor(replayers: ReadonlyMap<string, Replayer>) {
    this.#replayers = new Map(replayers);
  }

  /** Every operation registered on an OpenAPI app (sub-apps mounted on it included). */
  addOperations(app: Definitions): this {
    for (const def of app.openAPIRegistry.definitions) {
      const route = (def as { type?: string; route?: Record<symbol, unknown> }).route;
      const meta = route?.[ROUTE_META] as RouteMeta | undefined;
      if ((def as { type?: string }).type !== "route" || !meta) continue;
      this.#operations.push(meta);
      this.#byKey.set(routeKey(meta.method, meta.path), meta);
      this.addPath(meta.method, meta.path);
      if (meta.sandboxOnly) this.#sandboxOnly.push(patternOf(meta.path));
    }
    return this;
  }

  /** True when `path` is a sandbox-only route's: in live it does not exist. */
  isSandboxOnly(path: string): boolean {
    return this.#sandboxOnly.some((pattern) => pattern.test(path));
  }

  /** A path served outside the OpenAPI operations (documents, the signed upload path, receivers). */
  addPath(method: string, template: string): this {
    this.#paths.push({ method: method.toUpperCase(), pattern: patternOf(template), template });
    return this;
  }

  operations(surface?: RouteMeta["surface"]): readonly RouteMeta[] {
    return surface ? this.#operations.filter((op) => op.surface === surface) : this.#operations;
  }

  /** The operation matched as `method` + Hono's route path (`/api/v1/listings/:listing_number`). */
  operation(method: string, routePath: string): RouteMeta | undefined {
    return this.#byKey.get(routeKey(method, routePath));
  }

  /**
   * Up to three paths of known routes that `path` is probably a typo of (each literal part
   * a few edits away, the path's own values in the template's places), the nearest first.
   * `visible` leaves out the routes the caller cannot see.
   */
  nearPaths(path: string, visible: (template: string) => boolean): string[] {
    const typed = path.split("/");
    const near = new Map<string, number>();
    for (const { template } of this.#paths) {
      const parts = template.split("/");
      if (parts.length !== typed.length || !visible(template)) continue;
      let cost = 0;
      const filled: string[] = [];
      for (const [i, part] of parts.entries()) {
        const given = typed[i]!;
        if (/^(\{\w+\}|:\w+)$/.test(part) || part === given) {
          filled.push(/^(\{\w+\}|:\w+)$/.test(part) ? given : part);
          continue;
        }
        if (!isNear(given, part)) {
          cost = Number.POSITIVE_INFINITY;
          break;
        }
        cost += levenshtein(given.toLowerCase(), part.toLowerCase()) || 1;
        filled.push(part);
      }
      const candidate = filled.join("/");
      if (cost > 0 && cost < Number.POSITIVE_INFINITY && cost < (near.get(candidate) ?? Number.POSITIVE_INFINITY))
        near.set(candidate, cost);
    }
    return [...near.entries()]
      .sort((a, b) => a[1] - b[1])
      .slice(0, 3)
      .map(([candidate]) => candidate);
  }

  allowedMethods(path: string): string[] {
    const methods = new Set(this.#paths.filter((r) => r.pattern.test(path)).map((r) => r.method));
    if (methods.has("GET")) methods.add("HEAD");
    if (methods.size) methods.add("OPTIONS");
    return [...methods].sort();
  }

  replayer(resourceType: string): Replayer | undefined {
    return this.#replayers.get(resourceType);
  }
}
