import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { configuredCrons, cronFires, runLocalCron } from "../../scripts/local-cron";

const at = (iso: string) => new Date(iso);

describe("the local Cron schedule", () => {
  it("reads the triggers of wrangler.jsonc", () => {
    expect(configuredCrons()).toEqual(["0 3 * * *", "* * * * *", "*/15 * * * *"]);
  });

  it("fires each expression at the minutes it names, in UTC", () => {
    expect(cronFires("* * * * *", at("2026-11-25T10:07:00Z"))).toBe(true);
    expect(cronFires("*/15 * * * *", at("2026-11-25T10:45:00Z"))).toBe(true);
    expect(cronFires("*/15 * * * *", at("2026-11-25T10:46:00Z"))).toBe(false);
    expect(cronFires("0 3 * * *", at("2026-11-25T03:00:00Z"))).toBe(true);
    expect(cronFires("0 3 * * *", at("2026-11-25T04:00:00Z"))).toBe(false);
    expect(cronFires("0 3 * * *", at("2026-11-25T03:01:00Z"))).toBe(false);
    expect(cronFires("5,20-22 * * * 1-5", at("2026-11-25T10:21:00Z"))).toBe(true);
    expect(cronFires("5,20-22 * * * 1-5", at("2026-11-29T10:21:00Z")), "a Sunday").toBe(false);
    expect(cronFires("not a cron", at("2026-11-25T10:00:00Z"))).toBe(false);
  });
});

describe("the local Cron runner", () => {
  it("fires each cron at most once a minute of its clock, with that minute as the scheduled time", async () => {
    const seen: { cron: string; time: number }[] = [];
    const server = createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://local");
      seen.push({ cron: url.searchParams.get("cron") ?? "", time: Number(url.searchParams.get("time")) });
      res.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const lines: string[] = [];
    // A minute of 100 ms: the every-minute cron fires about every 100 ms; one for February 31st never does.
    const stop = runLocalCron(`http://127.0.0.1:${port}`, ["* * * * *", "0 * 31 2 *"], (l) => lines.push(l), 100);
    try {
      await vi.waitFor(() => expect(seen.length).toBeGreaterThanOrEqual(3), { timeout: 2_000, interval: 20 });
    } finally {
      stop();
      await new Promise((resolve) => server.close(resolve));
    }
    expect(seen.every((s) => s.cron === "* * * * *")).toBe(true);
    const times = seen.map((s) => s.time);
    expect(times.every((t) => t % 60_000 === 0)).toBe(true);
    // A tick late on a busy machine skips to the minute it wakes in, never back nor twice.
    for (let i = 1; i < times.length; i++) {
      const step = times[i]! - times[i - 1]!;
      expect(step > 0 && step % 60_000 === 0, `${times[i - 1]} then ${times[i]}`).toBe(true);
    }
    expect(lines[0]).toMatch(/^Cron "\* \* \* \* \*" ran locally: 200 in \d+ ms\.$/);
  });
});
