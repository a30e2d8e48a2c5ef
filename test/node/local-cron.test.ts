import { describe, expect, it } from "vitest";
import { configuredCrons, cronFires } from "../../scripts/local-cron";

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
