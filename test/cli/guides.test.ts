import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { root, startDev, stop } from "./dev-server";
import { type Exchange, fill, guides, parseGuide, remember, shapeProblems } from "./guide-examples";

/** Every guide's runnable examples against a fresh `npm run dev` (see guide-examples.ts). */
const state = mkdtempSync(join(tmpdir(), "alms-guides-"));
let running: Awaited<ReturnType<typeof startDev>> | undefined;

afterAll(async () => {
  await stop(running?.dev.child);
  rmSync(state, { recursive: true, force: true });
}, 60_000);

const REQUEST_TIMEOUT_MS = 15_000;
const GUIDES_WITH_EXAMPLES = ["listings.md", "sandbox.md", "media.md", "webhooks.md", "scheduling.md"];

/** Runs one guide's exchanges in order; answers every mismatch as "guide:line METHOD path: what". */
async function run(origin: string, key: string, exchanges: Exchange[]): Promise<string[]> {
  const values = new Map([["api_key", key]]);
  const problems: string[] = [];
  for (const ex of exchanges) {
    const at = `${ex.guide}:${ex.line} ${ex.method} ${ex.path}`;
    let res: Response;
    let text: string;
    try {
      const headers = Object.fromEntries(ex.headers.map(([name, value]) => [name, fill(value, values)]));
      const body = ex.body === undefined ? undefined : fill(ex.body, values);
      if (body !== undefined) JSON.parse(body);
      res = await fetch(origin + fill(ex.path, values), {
        method: ex.method,
        headers,
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await res.text();
    } catch (err) {
      problems.push(`${at}: ${(err as Error).message}`);
      break;
    }
    const answer = text ? JSON.parse(text) : undefined;
    if (res.status !== ex.status) problems.push(`${at}: documented ${ex.status}, answered ${res.status} ${text}`);
    else problems.push(...shapeProblems(ex.expected, answer).map((p) => `${at}: ${p}`));
    remember(values, answer);
  }
  return problems;
}

describe("the guides' examples", () => {
  it("run against npm run dev and answer what the guides show", async () => {
    const all = guides(root);
    const byGuide = Object.fromEntries(all.map((g) => [g.guide, g.exchanges]));
    expect(Object.keys(byGuide)).toEqual(expect.arrayContaining(GUIDES_WITH_EXAMPLES.map((name) => `docs/${name}`)));
    const statusChange = byGuide["docs/listings.md"]!.find((ex) => ex.path.endsWith("/status") && ex.status === 200);
    expect(statusChange?.body).toContain('"new_status"');
    const busy = byGuide["docs/sandbox.md"]!.find((ex) => ex.path.endsWith("/calendar/busy_blocks"));
    expect(busy?.body).toMatch(/"starts_at".*"ends_at"/);

    running = await startDev(state);
    const problems: string[] = [];
    for (const { exchanges } of all) problems.push(...(await run(running.origin, running.key, exchanges)));
    expect(problems).toEqual([]);
    expect(all.reduce((n, g) => n + g.exchanges.length, 0)).toBeGreaterThanOrEqual(15);
  }, 300_000);
});

describe("reading the guides' examples", () => {
  const guide = [
    "```http",
    "PATCH /api/v1/listings/{listing_number}/status",
    "X-API-Key: {api_key}",
    "",
    '{"new_status": "Active"}',
    "```",
    "",
    "```http",
    "HTTP/1.1 200 OK",
    "",
    '{"listing_number": "k3v9x2a", "status": "Active", "sections": {"floorplan": ["https://cdn.example.com/a.pdf"]}}',
    "```",
  ].join("\n");

  it("pairs a request with its answer and fills placeholders from earlier answers", () => {
    const [ex] = parseGuide("g.md", guide);
    expect(ex).toMatchObject({ method: "PATCH", status: 200, body: '{"new_status": "Active"}', line: 1 });
    const values = new Map([["api_key", "sk_test_x"]]);
    expect(() => fill(ex!.path, values)).toThrow("no earlier answer gave {listing_number}");
    remember(values, { data: [{ id: "usr_1", listing_number: "abc1234" }] });
    expect(fill(ex!.path, values)).toBe("/api/v1/listings/abc1234/status");
    expect(values.get("user_id")).toBe("usr_1");
    expect(fill("{uuid}", values)).toMatch(/^[0-9a-f-]{36}$/);
    expect(() => parseGuide("g.md", guide.split("\n").slice(0, 6).join("\n"))).toThrow("no answer block");
  });

  it("reports a missing or extra field, another type and another outcome", () => {
    const [ex] = parseGuide("g.md", guide);
    const answered = { listing_number: "zzz9999", status: "Active", sections: { floorplan: ["https://x"] } };
    expect(shapeProblems(ex!.expected, answered)).toEqual([]);
    expect(shapeProblems(ex!.expected, { ...answered, status: "Sold", extra: 1, sections: null })).toEqual([
      "$.extra: answered, not documented",
      '$.status: documented "Active", answered "Sold"',
      "$.sections: documented object, answered null",
    ]);
    expect(shapeProblems(ex!.expected, { status: "Active", sections: { floorplan: [3] } })).toEqual([
      "$.listing_number: documented, not answered",
      "$.sections.floorplan[0]: documented string, answered number",
    ]);
  });
});
