import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { connectCalendar, resolveConnection, sourceFor } from "../../src/calendar/connections";
import { calendarConnections, deliveryDestinations } from "../../src/db/schema";
import { getUserById } from "../../src/domain/people/hierarchy";
import { decrypt, encrypt, rowBinding, secretsEqual } from "../../src/lib/crypto/crypto";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { openDestination, saveDestination } from "../../src/media/delivery/destinations";
import { db, makeTenant } from "../support/harness";

const KEY = keyringOf({ SECRET_KEY: "test-secret-key-0123456789abcdef0123456789abcdef" });

describe("sealed values are bound to their row", () => {
  it("a ciphertext opens only with the associated data it was sealed with", async () => {
    const a = rowBinding("webhook_endpoints", "agy_a", "we_1");
    const sealed = await encrypt(KEY, "purpose", "whsec_secret", a);
    expect(await decrypt(KEY, "purpose", sealed, a)).toBe("whsec_secret");
    for (const other of [
      rowBinding("webhook_endpoints", "agy_a", "we_2"),
      rowBinding("webhook_endpoints", "agy_b", "we_1"),
      rowBinding("delivery_destinations", "agy_a", "we_1"),
      "",
    ]) {
      await expect(decrypt(KEY, "purpose", sealed, other)).rejects.toThrow();
    }
    await expect(decrypt(KEY, "other-purpose", sealed, a)).rejects.toThrow();
  });

  it("the parts of a binding cannot be shifted into one another", () => {
    expect(rowBinding("t", "ab", "c")).not.toBe(rowBinding("t", "a", "bc"));
  });
});

describe("sealed credentials elsewhere", () => {
  it("delivery destinations: a secret copied to another agent's row does not open", async () => {
    const t = await makeTenant();
    const d = db();
    const input = {
      endpointUrl: "https://s3.example.com",
      bucket: "media",
      region: "auto",
      addressingStyle: "path" as const,
      accessKeyId: "AKIA",
      pathPrefix: "",
    };
    const agent = await getUserById(d, t.agent.id);
    const lead = await getUserById(d, t.teamLead.id);
    await saveDestination(d, keyringOf(env), agent, { ...input, secretAccessKey: "agent-secret" });
    await saveDestination(d, keyringOf(env), lead, { ...input, secretAccessKey: "lead-secret" });
    const delivery = { destinationUserId: agent.id, agencyId: t.agencyId };
    expect((await openDestination(d, keyringOf(env), delivery))?.secretAccessKey).toBe("agent-secret");
    const leadRow = await d.select().from(deliveryDestinations).where(eq(deliveryDestinations.userId, lead.id)).get();
    await d
      .update(deliveryDestinations)
      .set({ secretAccessKeySealed: leadRow!.secretAccessKeySealed })
      .where(eq(deliveryDestinations.userId, agent.id));
    await expect(openDestination(d, keyringOf(env), delivery)).rejects.toThrow();
  });

  it("calendar connections: credentials copied to another user's connection do not open", async () => {
    const t = await makeTenant();
    const d = db();
    await connectCalendar(
      d,
      keyringOf(env),
      { id: t.owner.id, agencyId: t.agencyId },
      {
        provider: "ics",
        feedUrl: "https://calendar.example.com/owner.ics",
      },
      { allowLocalHttp: false },
    );
    const lead = await connectCalendar(
      d,
      keyringOf(env),
      { id: t.teamLead.id, agencyId: t.agencyId },
      {
        provider: "ics",
        feedUrl: "https://calendar.example.com/lead.ics",
      },
      { allowLocalHttp: false },
    );
    const owner = await resolveConnection(d, t.agencyId, t.owner.id);
    await sourceFor(d, env, owner);
    await d
      .update(calendarConnections)
      .set({ credentialsSealed: lead.credentialsSealed })
      .where(eq(calendarConnections.id, owner.id));
    await expect(sourceFor(d, env, await resolveConnection(d, t.agencyId, t.owner.id))).rejects.toThrow();
  });
});

describe("secretsEqual", () => {
  it("is true only for the same secret, whatever the lengths", async () => {
    expect(await secretsEqual("operator-token", "operator-token")).toBe(true);
    for (const other of ["", "operator-toke", "operator-tokenn", "Operator-token", "x".repeat(1000)]) {
      expect(await secretsEqual(other, "operator-token"), other).toBe(false);
    }
  });
});
