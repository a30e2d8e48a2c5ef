// Data growth: each list route, filter and search at a small and at a big agency, the
// big one's throughput against the small one's; the two rows whose work the spec makes
// grow (a deep numbered page, a search's exact total) by CPU per row skipped or counted.
import type { Api } from "./api.ts";
import { LIST_CONNECTIONS, measureAlternating, type Spec } from "./load.ts";
import { type Row, type Verdict, verdict } from "./report.ts";
import { type GrowthAgency, LISTING_STATUS_FILTER, TOUR_STATUS_FILTER } from "./seed.ts";

/** Deep pages sit this far into the list. */
const DEPTH = 0.4;
const TOUR_PAGE_SIZE = 20;

interface GrowthRoute {
  name: (a: GrowthAgency) => string;
  path: (a: GrowthAgency, cursor: string) => string;
  /** What the first answer must show, as a note when it does not. */
  check?: (a: GrowthAgency, json: any) => string | undefined;
  /**
   * The rows the spec makes this request skip or count (a numbered page's offset, a
   * search's exact total): such a route is judged by CPU ms per row, not by throughput.
   */
  work?: { what: string; rows: (a: GrowthAgency, json: any) => number };
}

/** How deep a numbered tour page may reach (`page` × `limit`, the service's `MAX_TOUR_PAGE_DEPTH`). */
const TOUR_MAX_DEPTH = 10_000;

/** The tour page DEPTH into the list, or the deepest page the list serves when that is shallower. */
const tourPage = (a: GrowthAgency) =>
  Math.min(Math.floor((DEPTH * a.rows) / TOUR_PAGE_SIZE) + 1, TOUR_MAX_DEPTH / TOUR_PAGE_SIZE);
const tourDepth = (a: GrowthAgency) => `${Math.round((100 * (tourPage(a) - 1) * TOUR_PAGE_SIZE) / a.rows)}% deep`;

const GROWTH_ROUTES: GrowthRoute[] = [
  { name: () => "GET /api/v1/listings", path: () => "/api/v1/listings" },
  {
    name: () => `GET /api/v1/listings?cursor= (${DEPTH * 100}% deep)`,
    path: (_, cursor) => `/api/v1/listings?cursor=${encodeURIComponent(cursor)}`,
  },
  {
    name: () => `GET /api/v1/listings?status=${LISTING_STATUS_FILTER}`,
    path: () => `/api/v1/listings?status=${encodeURIComponent(LISTING_STATUS_FILTER)}`,
  },
  { name: () => "GET /api/v1/listings?agent_id=", path: (a) => `/api/v1/listings?agent_id=${a.agentId}` },
  {
    name: () => "GET /api/v1/tours",
    path: () => "/api/v1/tours",
    check: (a, json) => (json?.total === a.rows ? undefined : `total ${json?.total}, expected ${a.rows}`),
  },
  {
    name: (a) => `GET /api/v1/tours?page=${tourPage(a)} (${tourDepth(a)})`,
    path: (a) => `/api/v1/tours?page=${tourPage(a)}`,
    check: (a, json) =>
      json?.tours?.length === TOUR_PAGE_SIZE && json?.total === a.rows
        ? undefined
        : `${json?.tours?.length} tours, total ${json?.total}`,
    work: { what: "skipped", rows: (a) => (tourPage(a) - 1) * TOUR_PAGE_SIZE },
  },
  {
    name: () => `GET /api/v1/tours?status=${TOUR_STATUS_FILTER}`,
    path: () => `/api/v1/tours?status=${TOUR_STATUS_FILTER}`,
  },
  {
    name: (a) => `GET /api/v1/tours?search=${a.streetTerm}`,
    path: (a) => `/api/v1/tours?search=${a.streetTerm}`,
    work: { what: "counted", rows: (_, json) => Number(json?.total) || 0 },
  },
  {
    name: () => "GET /api/v1/tours?search= (one address)",
    path: (a) => `/api/v1/tours?search=${encodeURIComponent(a.oneAddress)}`,
    check: (_, json) => (json?.total >= 1 ? undefined : `no match for the address`),
  },
];

/** The cursor of the page that starts DEPTH into the agency's listings, found by following next_cursor. */
async function deepCursor(api: Api, key: string, a: GrowthAgency): Promise<string> {
  const target = Math.floor(DEPTH * a.rows);
  const limit = 200;
  let cursor = "";
  let seen = 0;
  for (let page = 0; page < Math.ceil(a.rows / limit) + 2 && seen < target; page++) {
    const take = Math.min(limit, target - seen);
    const json = await api.expect(
      200,
      `/api/v1/listings?limit=${take}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      key,
    );
    seen += json.data.length;
    cursor = json.next_cursor;
    if (!cursor) break;
  }
  if (!cursor) throw new Error(`no cursor ${target} rows into ${a.label}`);
  return cursor;
}

/** How many times the CPU per row skipped or counted may grow from the small agency to the big one. */
const PER_ROW_GOAL = 1.25;
/** Every other list row keeps this share of its throughput from the small agency to the big one. */
const THROUGHPUT_GOAL = 0.8;

/** CPU ms per row of the route's work, at one size; undefined without a CPU figure or rows. */
const perRow = (f: Row, rows: number) => (f.cpuMs !== undefined && rows > 0 ? f.cpuMs / rows : undefined);

function judge(route: GrowthRoute, small: GrowthAgency, atSmall: Row, atBig: Row, rows: number[]): Verdict {
  if (!route.work) {
    const r = atBig.rps / atSmall.rps;
    return verdict(r >= THROUGHPUT_GOAL, `${r.toFixed(3)}× @${small.label} (≥ ${THROUGHPUT_GOAL})`);
  }
  const [rowsSmall = 0, rowsBig = 0] = rows;
  const [s, b] = [perRow(atSmall, rowsSmall), perRow(atBig, rowsBig)];
  if (s === undefined || b === undefined)
    return verdict(false, `no cpu ms per row ${route.work.what} (rows ${rowsSmall} and ${rowsBig})`);
  const r = b / s;
  return verdict(
    r <= PER_ROW_GOAL,
    `cpu ms per row ${route.work.what} ${r.toFixed(3)}× @${small.label} (≤ ${PER_ROW_GOAL}): ` +
      `${s.toPrecision(3)} for ${rowsSmall}, ${b.toPrecision(3)} for ${rowsBig}`,
  );
}

/** Each list route at the small and at the big agency, each with a key of its own. */
export async function measureGrowth(api: Api, agencies: GrowthAgency[], notes: string[]): Promise<Row[]> {
  const [small, big] = agencies as [GrowthAgency, GrowthAgency];
  const cursors = new Map<GrowthAgency, string>();
  const rows: Row[] = [];
  for (const route of GROWTH_ROUTES) {
    const specs: Spec[] = [];
    const work: number[] = [];
    for (const a of [small, big]) {
      const key = await api.key(a.agencyId, a.ownerId);
      if (!cursors.has(a)) cursors.set(a, await deepCursor(api, key.secret, a));
      const path = route.path(a, cursors.get(a)!);
      const name = `${route.name(a)} @${a.label}`;
      const first = await api.expect(200, path, key.secret);
      const note = route.check?.(a, first);
      if (note) notes.push(`${name}: ${note}`);
      if (route.work) work.push(route.work.rows(a, first));
      specs.push({
        name,
        opts: { url: `${api.origin}${path}`, headers: { "X-API-Key": key.secret } },
        options: { connections: LIST_CONNECTIONS },
      });
    }
    // The two sizes in turns, so a drift of the machine falls on both.
    const [atSmall, atBig] = (await measureAlternating(specs)) as [Row, Row];
    rows.push(atSmall, {
      ...atBig,
      ref: atSmall,
      goal: judge(route, small, atSmall, atBig, work),
      perRow: !!route.work,
    });
  }
  return rows;
}
