import { env } from "cloudflare:workers";
import { and, eq, getTableColumns, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { listings, tourCounts, tours } from "../../src/db/schema";
import { newId } from "../../src/lib/ids";
import { D1_LIMITS } from "../support/d1-guard";
import { call, db, makeTenant, type Tenant } from "../support/harness";

/** Inserts many rows in statements that each stay inside the bound-parameter limit. */
async function insertMany<T extends SQLiteTable>(table: T, rows: T["$inferInsert"][]) {
  const perStatement = Math.floor(D1_LIMITS.boundParameters / Object.keys(getTableColumns(table)).length);
  const d = db();
  const statements = [];
  for (let i = 0; i < rows.length; i += perStatement)
    statements.push(d.insert(table).values(rows.slice(i, i + perStatement)));
  for (let i = 0; i < statements.length; i += 50) {
    const [first, ...rest] = statements.slice(i, i + 50);
    await d.batch([first!, ...rest]);
  }
}

const BASE_MS = Date.parse("2026-01-01T00:00:00.000Z");
const at = (i: number) => new Date(BASE_MS + i * 1000).toISOString();

function tourRows(t: Tenant, addresses: string[], status = (_i: number) => "active") {
  return addresses.map((address, i) => ({
    id: newId("tour"),
    agencyId: t.agencyId,
    tourNumber: `t${String(i).padStart(7, "0")}`,
    address,
    city: "Portside",
    state: "CA",
    zipcode: "94110",
    status: status(i),
    createdAt: at(i),
    updatedAt: at(i),
  }));
}

/** Every tour the list answers for a query, following the pages. */
async function allPages(t: Tenant, query: string) {
  const first = await call(`/api/v1/tours?limit=100&${query}`, { key: t.key });
  expect(first.status, `${query}: ${first.text}`).toBe(200);
  const found = [...first.json.tours];
  for (let page = 2; page <= first.json.pages; page++) {
    const r = await call(`/api/v1/tours?limit=100&page=${page}&${query}`, { key: t.key });
    expect(r.json.total, r.text).toBe(first.json.total);
    found.push(...r.json.tours);
  }
  return { total: first.json.total as number, tours: found as { tour_number: string; address: string }[] };
}

/** What the list's total should be, counted the slow way. */
async function counted(agencyId: string, status?: string) {
  const [row] = await db()
    .select({ n: sql<number>`count(*)` })
    .from(tours)
    .where(and(eq(tours.agencyId, agencyId), status ? eq(tours.status, status) : undefined));
  return row!.n;
}

async function expectExactTotals(t: Tenant) {
  expect((await call("/api/v1/tours", { key: t.key })).json.total).toBe(await counted(t.agencyId));
  for (const status of ["active", "inactive", "archived"]) {
    const r = await call(`/api/v1/tours?status=${status}`, { key: t.key });
    expect(r.json.total, `${status}: ${r.text}`).toBe(await counted(t.agencyId, status));
  }
}

const tourBody = (address: string) => ({ address, city: "Portside", state: "CA", zipcode: "94110" });

describe("tour totals", () => {
  it("stay exact across creates, status changes and deletes, one at a time and concurrently", async () => {
    const t = await makeTenant();
    const created: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await call("/api/v1/tours", { key: t.key, body: tourBody(`${i} Count Street`) });
      expect(r.status, r.text).toBe(201);
      created.push(r.json.tour_number);
    }
    await expectExactTotals(t);
    const put = (n: string, status: string) =>
      call(`/api/v1/tours/${n}`, { method: "PUT", key: t.key, body: { status } });
    await put(created[0]!, "archived");
    await put(created[1]!, "inactive");
    await put(created[1]!, "inactive");
    await put(created[2]!, "archived");
    await put(created[2]!, "active");
    await call(`/api/v1/tours/${created[3]}`, { method: "DELETE", key: t.key });
    await expectExactTotals(t);

    const concurrent = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) =>
        call("/api/v1/tours", { key: t.key, body: tourBody(`${i} Concurrent Road`) }),
      ),
      put(created[4]!, "archived"),
      put(created[4]!, "inactive"),
      put(created[0]!, "active"),
      call(`/api/v1/tours/${created[5]}`, { method: "DELETE", key: t.key }),
      call(`/api/v1/tours/${created[5]}`, { method: "DELETE", key: t.key }),
      call(`/api/v1/tours/${created[1]}`, { method: "DELETE", key: t.key }),
      put(created[1]!, "archived"),
    ]);
    for (const r of concurrent) expect([200, 201, 204, 404], r.text).toContain(r.status);
    await expectExactTotals(t);
    expect((await call("/api/v1/tours", { key: t.key })).json.total).toBe(6 - 3 + 8);

    // Whatever writes the table, the counters follow: the triggers, not the routes, keep them.
    await db().update(tours).set({ status: "archived" }).where(eq(tours.agencyId, t.agencyId));
    await expectExactTotals(t);
    await db()
      .delete(tours)
      .where(and(eq(tours.agencyId, t.agencyId), eq(tours.status, "archived")));
    await expectExactTotals(t);
    const counters = await db().select().from(tourCounts).where(eq(tourCounts.agencyId, t.agencyId));
    expect(counters.reduce((n, c) => n + c.tours, 0)).toBe(0);
  });
});

/** ASCII-only case folding, as SQLite's lower(). */
const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());

describe("tour search", () => {
  it("answers what a brute-force substring filter answers, for hundreds of tours and tricky terms", async () => {
    const t = await makeTenant();
    let seed = 7;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const alphabet = ["a", "A", "b", "B", "c", "%", "_", " ", "é", "É", "ß", "こ", "ん", "😀", "1", "\\", "'"];
    const word = (n: number) =>
      Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join("");
    const addresses = Array.from({ length: 300 }, (_, i) =>
      i % 10 === 0 ? word(1 + (i % 3)) : `${i} ${word(2 + Math.floor(rand() * 8))} Harbour Street`,
    );
    // SQLite's character functions stop at a NUL; instr, and so the search, does not.
    addresses.push("100% Lane_1", "Ünïcode ÉCOLE", "abc", "ab", "a", "x\u0000Harbour Lane", "\u0000");
    const rows = tourRows(t, addresses, (i) => ["active", "inactive", "archived"][i % 3]!);
    await insertMany(tours, rows);

    // Below 3 characters (code points, not UTF-16 units) a term is refused.
    const shortTerms = ["a", "A", "%", "_", "é", "É", "😀", "ab", "AB", "a%", "_1", "こん", "\u0000", "😀😀", "a😀"];
    for (const short of shortTerms) {
      const r = await call(`/api/v1/tours?search=${encodeURIComponent(short)}`, { key: t.key });
      expect(r.status, `${JSON.stringify(short)}: ${r.text}`).toBe(422);
    }
    const terms = [
      "abc",
      "ABC",
      "100%",
      "10_%",
      "lane_1",
      "Lane%1",
      "école",
      "ÉCOLE",
      "harbour street",
      "HARBOUR",
      "bour Str",
      "zzz",
      "\\''",
      "😀😀😀",
      "\u0000\u0000\u0000",
      "x\u0000h",
      "\u0000harbour lane",
      "harbour lane",
      ...Array.from({ length: 14 }, () => {
        const source = addresses[Math.floor(rand() * addresses.length)]!;
        const chars = [...source];
        const start = Math.floor(rand() * chars.length);
        const piece = chars.slice(Math.min(start, chars.length - 3), start + 3 + Math.floor(rand() * 3)).join("");
        return rand() < 0.5 ? piece.toUpperCase() : piece;
      }).filter((piece) => [...piece].length >= 3),
    ];
    const newestFirst = [...rows].sort((x, y) => (x.createdAt < y.createdAt ? 1 : -1));
    for (const term of terms) {
      const expected = newestFirst.filter((r) => asciiLower(r.address).includes(asciiLower(term)));
      const got = await allPages(t, `search=${encodeURIComponent(term)}`);
      expect(got.total, `total for ${JSON.stringify(term)}`).toBe(expected.length);
      expect(
        got.tours.map((x) => x.tour_number),
        `tours for ${JSON.stringify(term)}`,
      ).toEqual(expected.map((r) => r.tourNumber));
      const archived = await call(`/api/v1/tours?limit=100&status=archived&search=${encodeURIComponent(term)}`, {
        key: t.key,
      });
      const expectedArchived = expected.filter((r) => r.status === "archived");
      expect(archived.json.total, `archived total for ${JSON.stringify(term)}`).toBe(expectedArchived.length);
      expect(archived.json.tours.map((x: { tour_number: string }) => x.tour_number)).toEqual(
        expectedArchived.slice(0, 100).map((r) => r.tourNumber),
      );
    }
  });

  it("follows address changes and deletes, whatever writes the table, and stays within the agency", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const rows = tourRows(t, ["1 Wattle Street", "2 Wattle Street", "3 Banksia Road"]);
    await insertMany(tours, rows);
    await insertMany(tours, tourRows(other, ["9 Wattle Street"]));
    const numbers = async (term: string) => (await allPages(t, `search=${term}`)).tours.map((x) => x.tour_number);
    expect(await numbers("wattle")).toEqual([rows[1]!.tourNumber, rows[0]!.tourNumber]);
    await db().update(tours).set({ address: "1 Acacia Avenue" }).where(eq(tours.id, rows[0]!.id));
    expect(await numbers("wattle")).toEqual([rows[1]!.tourNumber]);
    expect(await numbers("acacia")).toEqual([rows[0]!.tourNumber]);
    await db().delete(tours).where(eq(tours.id, rows[1]!.id));
    expect(await numbers("wattle")).toEqual([]);
    expect(await numbers("wat")).toEqual([]);
    expect(await numbers("aca")).toEqual([rows[0]!.tourNumber]);
    const grams = await env.DB.prepare("SELECT count(*) AS n FROM tour_search_grams WHERE tour_id = ?")
      .bind(rows[1]!.id)
      .first<{ n: number }>();
    expect(grams?.n).toBe(0);
  });
});

describe("listings by agent", () => {
  it("pages every listing a person is on, in any role, oldest first, by cursor", async () => {
    const t = await makeTenant();
    const person = t.agent.id;
    const roles = (i: number) => {
      const other = t.teamLead.id;
      switch (i % 5) {
        case 0:
          return { ownerUserId: person, agentOneId: other, agentTwoId: null };
        case 1:
          return { ownerUserId: other, agentOneId: person, agentTwoId: null };
        case 2:
          return { ownerUserId: other, agentOneId: other, agentTwoId: person };
        case 3:
          return { ownerUserId: person, agentOneId: person, agentTwoId: person };
        default:
          return { ownerUserId: other, agentOneId: other, agentTwoId: null };
      }
    };
    const rows = Array.from({ length: 40 }, (_, i) => ({
      id: newId("lst"),
      agencyId: t.agencyId,
      listingNumber: `l${String(i).padStart(6, "0")}`,
      address: `${i} Agent Way`,
      // Pairs share a created_at, so the id breaks the tie.
      createdAt: at(Math.floor(i / 2)),
      updatedAt: at(i),
      ...roles(i),
    }));
    await insertMany(listings, rows);
    const expected = rows
      .filter((r) => r.ownerUserId === person || r.agentOneId === person || r.agentTwoId === person)
      .sort((x, y) => (x.createdAt === y.createdAt ? (x.id < y.id ? -1 : 1) : x.createdAt < y.createdAt ? -1 : 1))
      .map((r) => r.listingNumber);
    const seen: string[] = [];
    let cursor = "";
    for (let i = 0; i < 20; i++) {
      const r = await call(`/api/v1/listings?agent_id=${person}&limit=3${cursor ? `&cursor=${cursor}` : ""}`, {
        key: t.key,
      });
      expect(r.status, r.text).toBe(200);
      seen.push(...r.json.data.map((l: { listing_number: string }) => l.listing_number));
      cursor = encodeURIComponent(r.json.next_cursor ?? "");
      if (!r.json.next_cursor) break;
    }
    expect(seen).toEqual(expected);
    const withStatus = await call(`/api/v1/listings?agent_id=${person}&status=Active&limit=3`, { key: t.key });
    expect(withStatus.json.data, withStatus.text).toEqual([]);
  });
});

interface Seen {
  query: string;
  values: unknown[];
}

/** Every statement the Worker prepares while `run` runs, with its bound values. */
async function statementsOf(run: () => Promise<void>): Promise<Seen[]> {
  const seen: Seen[] = [];
  const prepare = env.DB.prepare.bind(env.DB);
  vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
    const statement = prepare(query);
    const entry: Seen = { query, values: [] };
    seen.push(entry);
    const bind = statement.bind.bind(statement);
    statement.bind = (...values: unknown[]) => {
      entry.values = values;
      return bind(...values);
    };
    return statement;
  });
  try {
    await run();
  } finally {
    vi.restoreAllMocks();
  }
  return seen;
}

async function plan(s: Seen): Promise<string[]> {
  const r = await env.DB.prepare(`EXPLAIN QUERY PLAN ${s.query}`)
    .bind(...s.values)
    .all<{ detail: string }>();
  return r.results.map((row) => row.detail);
}

const LISTED = /\b(tours|listings|tour_search_grams)\b/;

/**
 * What a list statement may do to a big table: look rows up by primary key, or search an
 * index on more than the agency. Skipping to a page on a covering index by the agency alone
 * is allowed only where the statement cuts it with LIMIT (the numbered tour pages' ids).
 */
function refusedSteps(s: Seen, details: string[]): string[] {
  return details.filter((d) => {
    const m = /^(SCAN|SEARCH) (tours|listings|tour_search_grams)\b(.*)$/.exec(d);
    if (!m) return false;
    if (m[1] === "SCAN") return true;
    const rest = m[3]!;
    if (/\((id=\?|rowid=\?)\)$/.test(rest)) return false;
    if (/\(agency_id=\? AND /.test(rest)) return false;
    return !(/COVERING INDEX \w+ \(agency_id=\?\)$/.test(rest) && /\blimit\b/i.test(s.query));
  });
}

describe("list statements read through indexes", () => {
  afterEach(() => vi.restoreAllMocks());

  it("the tour list, status filter, deep page, search and the listings agent filter scan no table", async () => {
    const t = await makeTenant();
    await insertMany(
      tours,
      tourRows(
        t,
        Array.from({ length: 60 }, (_, i) => `${i} Wattle Street`),
        (i) => (i % 2 ? "active" : "archived"),
      ),
    );
    const paths = [
      "/api/v1/tours",
      "/api/v1/tours?page=3&limit=5",
      "/api/v1/tours?status=archived",
      "/api/v1/tours?status=archived&page=4&limit=5",
      "/api/v1/tours?search=wattle",
      "/api/v1/tours?search=WAT",
      "/api/v1/tours?search=wattle&status=active",
      `/api/v1/listings?agent_id=${t.agent.id}`,
    ];
    const problems: string[] = [];
    for (const path of paths) {
      const seen = await statementsOf(async () => {
        const r = await call(path, { key: t.key });
        expect(r.status, r.text).toBe(200);
      });
      const listed = seen.filter((s) => LISTED.test(s.query) && /^\s*select/i.test(s.query));
      if (!listed.length) problems.push(`${path}: no list statement seen`);
      const plans = await Promise.all(listed.map(plan));
      listed.forEach((s, i) => {
        const refused = refusedSteps(s, plans[i]!);
        if (refused.length) problems.push(`${path}: ${refused.join("; ")}\n  in ${s.query}`);
        // Without a search, the total comes from the counters: no count reads the tours.
        if (!path.includes("search=") && /\bcount\(/i.test(s.query) && plans[i]!.some((d) => / tours\b/.test(d)))
          problems.push(`${path}: the total counts tours\n  in ${s.query}`);
      });
      const all = plans.flat().join("\n");
      if (path.includes("search=") && !/SEARCH tour_search_grams .*\(agency_id=\? AND gram/.test(all))
        problems.push(`${path}: the search index is not used`);
      if (path.includes("agent_id=")) {
        for (const column of ["owner_user_id", "agent_one_id", "agent_two_id"])
          if (!new RegExp(`SEARCH listings USING .*\\(agency_id=\\? AND ${column}=\\?`).test(all))
            problems.push(`${path}: no index on ${column} is used`);
      }
    }
    expect(problems).toEqual([]);
  });
});
