import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { env, root, startDev, stop } from "./dev-server";

/** `npm run dev` started three times over the same local state (see dev-server.ts). */
const state = mkdtempSync(join(tmpdir(), "alms-dev-"));
let running: Awaited<ReturnType<typeof startDev>> | undefined;
/** The local Cron schedule on a clock 30 times as fast: its every-minute trigger fires every 2 s. */
const FAST_CRON = { LOCAL_CRON_MINUTE_MS: "2000" };

afterAll(async () => {
  await stop(running?.dev.child);
  rmSync(state, { recursive: true, force: true });
}, 60_000);

const users = async (origin: string, key: string) => {
  const res = await fetch(`${origin}/api/v1/users?limit=1`, { headers: { "X-API-Key": key } });
  return { status: res.status, text: await res.text() };
};

/** The local D1 databases, one per shard, each carrying the full schema. */
const SHARDS = ["DB", "SHARD_2"];

/** A stack frame line, as Node prints them: what a clean start never shows. */
const STACK_FRAME = /^\s+at \S.*(?:\(.*:\d+:\d+\)|:\d+:\d+)$/m;

describe("npm run dev", () => {
  it("keeps its key across restarts, mints a new one on --new-key, and starts without stack traces", async () => {
    running = await startDev(state, [], FAST_CRON);
    const first = running.key;
    const firstOutput = running.dev.output();
    expect(firstOutput).toContain("Seeded the demo sandbox.");
    expect(firstOutput, firstOutput).not.toMatch(STACK_FRAME);
    expect(firstOutput, firstOutput).not.toContain("ENOTFOUND");
    expect((await users(running.origin, first)).status).toBe(200);
    // On a port of its own, the sandbox names that port in public URLs and in the ops line it prints.
    const port = new URL(running.origin).port;
    const listed = await fetch(`${running.origin}/api/v1/listings?limit=1`, { headers: { "X-API-Key": first } });
    const [listing] = ((await listed.json()) as { data: { public_url: string; listing_number: string }[] }).data;
    expect(listing?.public_url).toBe(`http://localhost:${port}/property/${listing?.listing_number}`);
    expect(firstOutput).toContain(`ALMS_URL=${running.origin} npm run ops -- --help`);
    for (const binding of SHARDS) expect(firstOutput).toContain(`Applied local D1 migrations to ${binding}.`);
    await stop(running.dev.child);
    // The migrations were recorded as wrangler records them: its own command finds none left to apply.
    for (const binding of SHARDS) {
      const migrate = spawnSync(
        join(root, "node_modules", ".bin", "wrangler"),
        ["d1", "migrations", "apply", binding, "--local", "--persist-to", state],
        { cwd: root, env, encoding: "utf8" },
      );
      expect(migrate.status, migrate.stderr).toBe(0);
      expect(migrate.stdout).toContain("No migrations to apply");
    }

    running = await startDev(state, [], FAST_CRON);
    for (const binding of SHARDS) expect(running.dev.output()).toContain(`Local database ${binding} is up to date.`);
    expect(running.key, running.dev.output()).toBe(first);
    expect(running.dev.output()).toContain("the same as last start");
    expect(running.dev.output(), running.dev.output()).not.toMatch(STACK_FRAME);
    const again = await users(running.origin, first);
    expect(again.status, again.text).toBe(200);
    await stop(running.dev.child);

    running = await startDev(state, ["--new-key"], FAST_CRON);
    const fresh = running.key;
    expect(fresh).not.toBe(first);
    const revoked = await users(running.origin, first);
    expect(revoked.status, revoked.text).toBe(401);
    expect(JSON.parse(revoked.text).error.code).toBe("api_key_revoked");
    expect((await users(running.origin, fresh)).status).toBe(200);
  }, 480_000);

  it("runs the every-minute Cron trigger locally within its minute, as deployed, on the schedule's clock", async () => {
    expect(running, "the server of the test above").toBeDefined();
    const output = running!.dev.output();
    expect(output).toContain("Cron triggers:  0 3 * * *, * * * * *, */15 * * * *");
    const [line] = await running!.dev.waitFor(/Cron "\* \* \* \* \*" ran locally: .*/, 10_000);
    expect(line).toMatch(/: 200 in \d+ ms/);
    expect(running!.dev.output(), running!.dev.output()).not.toMatch(STACK_FRAME);
  }, 90_000);
});
