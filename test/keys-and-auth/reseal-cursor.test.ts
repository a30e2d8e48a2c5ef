import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { webhookEndpoints } from "../../src/db/schema";
import { reseal } from "../../src/domain/reseal";
import { encrypt, rowBinding, sealPrefix } from "../../src/lib/crypto/crypto";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { call, db, makeTenant } from "../support/harness";

const NEW = "new-master-key-fedcba9876543210fedcba9876543210";
const OTHER = "unrelated-key-00000000000000000000000000000000";

describe("the re-seal job", () => {
  it("goes on from where its last run stopped, so values it cannot open never hold back the rest", async () => {
    const t = await makeTenant();
    const registered = await call("/api/v1/webhooks/endpoints", {
      key: t.key,
      body: { url: "https://hooks.example.com/reseal", event_types: ["listing.created"] },
    });
    expect(registered.status, registered.text).toBe(201);
    // 500 values sealed under a key outside the ring, whose ids sort before the real endpoint's: a whole
    // run's pages (10 of 50) of values that open under no key.
    const other = keyringOf({ SECRET_KEY: OTHER });
    const rows = await Promise.all(
      Array.from({ length: 500 }, async (_, i) => {
        const id = `we_0000_${String(i).padStart(4, "0")}`;
        const sealed = await encrypt(
          other,
          "webhook-signing-secret",
          "whsec_lost",
          rowBinding("webhook_endpoints", t.agencyId, id),
        );
        return {
          id,
          agencyId: t.agencyId,
          url: "https://hooks.example.com/lost",
          secretSealed: sealed,
          isActive: false,
        };
      }),
    );
    for (let i = 0; i < rows.length; i += 50) {
      const [first, ...rest] = rows.slice(i, i + 50).map((row) => db().insert(webhookEndpoints).values(row));
      await db().batch([first!, ...rest]);
    }
    expect(registered.json.id > rows.at(-1)!.id).toBe(true);

    // The ring rotates: the real endpoint's secret (sealed under SECRET_KEY) opens and is sealed again under NEW.
    const ring = keyringOf({ SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: env.SECRET_KEY });
    const first = await reseal(db(), ring);
    expect(first).toMatchObject({ resealed: 0, unopenable: 500 });
    const second = await reseal(db(), ring);
    expect(second.resealed).toBe(1);
    const [row] = await db()
      .select({ sealed: webhookEndpoints.secretSealed })
      .from(webhookEndpoints)
      .where(eq(webhookEndpoints.id, registered.json.id));
    expect(row!.sealed.startsWith(await sealPrefix(ring))).toBe(true);
    // Having reached the end, the next run starts over, and meets the unopenable values again.
    expect((await reseal(db(), ring)).unopenable).toBe(500);
  });
});
