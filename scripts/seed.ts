// The demo sandbox that local development starts with: two agencies with hierarchies
// and a platform admin, written through the internal API like the dashboard would.
export type Api = (method: string, path: string, body?: unknown) => Promise<Record<string, any>>;

const DEMO_AGENCY = "Harbour Media";
const DEV_KEY_NAME = "local development";

interface Person {
  role: string;
  name: string;
  email: string;
  reports?: Person[];
}

const HARBOUR: Person = {
  role: "media_agency",
  name: "Dana Whitfield",
  email: "dana@harbourmedia.example",
  reports: [
    {
      role: "team_lead",
      name: "Marco Ruiz",
      email: "marco@harbourmedia.example",
      reports: [
        { role: "agent", name: "Priya Natarajan", email: "priya@harbourmedia.example" },
        {
          role: "agent",
          name: "Tom Becker",
          email: "tom@harbourmedia.example",
          reports: [{ role: "assistant", name: "Lena Ortiz", email: "lena@harbourmedia.example" }],
        },
      ],
    },
    { role: "viewer", name: "Sam Viewer", email: "sam@harbourmedia.example" },
  ],
};

const NORTHGATE: Person = {
  role: "broker",
  name: "Olivia Grant",
  email: "olivia@northgate.example",
  reports: [{ role: "agent", name: "Ken Adeyemi", email: "ken@northgate.example" }],
};

async function createTree(api: Api, agencyId: string, person: Person, managerId: string | null): Promise<string> {
  const user = await api("POST", "/internal/v1/users", {
    ...(managerId ? { manager_id: managerId } : { agency_id: agencyId }),
    role: person.role,
    name: person.name,
    email: person.email,
  });
  for (const report of person.reports ?? []) await createTree(api, agencyId, report, user.id);
  return user.id as string;
}

async function seed(api: Api, origin: string): Promise<{ agencyId: string; ownerId: string }> {
  const platform = await api("POST", "/internal/v1/agencies", { name: "Platform", kind: "platform" });
  await api("POST", "/internal/v1/users", {
    agency_id: platform.id,
    role: "super_admin",
    name: "Platform Admin",
    email: "admin@platform.example",
  });
  const harbour = await api("POST", "/internal/v1/agencies", { name: DEMO_AGENCY, kind: "media_agency" });
  const ownerId = await createTree(api, harbour.id, HARBOUR, null);
  // The owner's calendar answers availability for the whole hierarchy (resolved up the manager chain).
  await api("PUT", `/internal/v1/users/${ownerId}/calendar`, {
    provider: "ics",
    feed_url: `${origin}/dev/demo-calendar.ics`,
  });
  const northgate = await api("POST", "/internal/v1/agencies", { name: "Northgate Brokers", kind: "broker" });
  await createTree(api, northgate.id, NORTHGATE, null);
  return { agencyId: harbour.id, ownerId };
}

async function findDemo(api: Api): Promise<{ agencyId: string; ownerId: string } | undefined> {
  const agencies = await api("GET", "/internal/v1/agencies?limit=200");
  const harbour = (agencies.data as { id: string; name: string }[]).find((a) => a.name === DEMO_AGENCY);
  if (!harbour) return undefined;
  const users = await api("GET", `/internal/v1/users?agency_id=${harbour.id}&limit=200`);
  const owner = (users.data as { id: string; role: string; is_active: boolean }[]).find(
    (u) => u.role === "media_agency" && u.is_active,
  );
  return owner ? { agencyId: harbour.id, ownerId: owner.id } : undefined;
}

/** Whether `key` is a sandbox key the local Worker still accepts. */
async function keyWorks(origin: string, key: string): Promise<boolean> {
  const res = await fetch(`${origin}/api/v1/users?limit=1`, { headers: { "X-API-Key": key } });
  await res.body?.cancel();
  return res.status === 200;
}

/**
 * Seeds an empty sandbox, then answers a development key for the demo agency: `kept`, the
 * key of the previous start, while the Worker still accepts it, so scripts holding it keep
 * working; else a fresh one, minted after the previous ones are revoked.
 */
export async function seedDemo(
  api: Api,
  origin: string,
  kept?: string,
): Promise<{ key: string; agencyName: string; seeded: boolean; reused: boolean }> {
  const empty = ((await api("GET", "/internal/v1/agencies?limit=1")).data as unknown[]).length === 0;
  const demo = empty ? await seed(api, origin) : await findDemo(api);
  if (!demo)
    throw new Error(
      `The local database has data but no "${DEMO_AGENCY}" agency with an active owner; ` +
        "delete .wrangler/state to start over.",
    );
  if (!empty && kept && (await keyWorks(origin, kept)))
    return { key: kept, agencyName: DEMO_AGENCY, seeded: false, reused: true };
  const keys = await api("GET", `/internal/v1/api-keys?agency_id=${demo.agencyId}`);
  for (const k of keys.data as { id: string; name: string; state: string }[]) {
    if (k.name === DEV_KEY_NAME && k.state !== "revoked") await api("POST", `/internal/v1/api-keys/${k.id}/revoke`);
  }
  const minted = await api("POST", "/internal/v1/api-keys", {
    agency_id: demo.agencyId,
    minted_by_user_id: demo.ownerId,
    name: DEV_KEY_NAME,
  });
  const key = minted.secret as string;
  if (empty) await seedListing(api, origin, key, demo);
  return { key, agencyName: DEMO_AGENCY, seeded: empty, reused: false };
}

/** An activated listing with a shoot booked in three days, created the way an integrator would. */
async function seedListing(api: Api, origin: string, key: string, demo: { agencyId: string; ownerId: string }) {
  const users = await api("GET", `/internal/v1/users?agency_id=${demo.agencyId}&limit=200`);
  const agent = (users.data as { id: string; role: string }[]).find((u) => u.role === "agent");
  const res = await fetch(`${origin}/api/v1/listings`, {
    method: "POST",
    headers: { "X-API-Key": key, "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
    body: JSON.stringify({
      address: "12 Harbour Street, Portside",
      owner_user_id: demo.ownerId,
      agent_one_id: agent?.id ?? demo.ownerId,
      listing_number: "demo001",
    }),
  });
  if (res.status !== 201) throw new Error(`Creating the demo listing answered ${res.status}: ${await res.text()}`);
  const base = `/internal/v1/agencies/${demo.agencyId}/listings/demo001`;
  await api("POST", `${base}/activate`);
  const start = new Date(Date.now() + 3 * 24 * 3600_000);
  start.setUTCHours(15, 0, 0, 0);
  await api("POST", `${base}/appointments`, {
    starts_at: start.toISOString(),
    ends_at: new Date(start.getTime() + 2 * 3600_000).toISOString(),
    source: "order_form",
  });
}
