// Data-growth seeding: two agencies (a small and a big one) with users, listings and
// tours, written as SQL files and loaded with `wrangler d1 execute --local` into the
// bench's own state directory before the product Worker starts. The data is generated
// from a fixed seed, so every run lists the same rows.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** D1 refuses statements longer than 100,000 bytes; stay well under it. */
const MAX_STATEMENT_BYTES = 90_000;
/** Statements per SQL file, so one `wrangler d1 execute` stays modest in memory. */
const STATEMENTS_PER_FILE = 400;
/** Seeded rows cover the last three years. */
const SPAN_MS = 3 * 365 * 24 * 3600 * 1000;

export const LISTING_STATUS_FILTER = "Active";
export const TOUR_STATUS_FILTER = "active";

export interface GrowthAgency {
  label: string;
  rows: number;
  agencyId: string;
  ownerId: string;
  /** The agent used by the `agent_id` filter. */
  agentId: string;
  /** A street name found in about 1% of tour addresses. */
  streetTerm: string;
  /** One full tour address (a search with one match, or a handful). */
  oneAddress: string;
}

const STREETS = (
  "Acacia,Banksia,Wattle,Jacaranda,Harbour,Kurrajong,Bottlebrush,Grevillea,Ironbark,Lilly Pilly," +
  "Coolabah,Tallowwood,Bluegum,Casuarina,Paperbark,Waratah,Boronia,Kangaroo,Echidna,Platypus,Currawong," +
  "Kookaburra,Lorikeet,Rosella,Magpie,Galah,Cockatoo,Pelican,Albatross,Heron,Osprey,Kestrel,Falcon," +
  "Wren,Robin,Finch,Swallow,Sparrow,Oriole,Bellbird,Lyrebird,Bowerbird,Brolga,Jabiru,Emu,Cassowary," +
  "Dingo,Wombat,Numbat,Quokka,Bilby,Possum,Wallaby,Koala,Bandicoot,Quoll,Dunnart,Marlin,Barramundi," +
  "Snapper,Bream,Flathead,Whiting,Mullet,Garfish,Tailor,Trevally,Kingfish,Tuna,Coral,Reef,Lagoon," +
  "Estuary,Headland,Cliff,Dune,Bay,Inlet,Cove,Beach,Ocean,Tide,Current,Breaker,Surf,Spray,Foam,Shell," +
  "Pebble,Sandstone,Granite,Basalt,Quartz,Opal,Sapphire,Garnet,Topaz,Jasper,Agate,O'Connell"
).split(",");
const SUFFIXES = ["Street", "Road", "Avenue", "Lane", "Parade", "Crescent", "Drive", "Place", "Close", "Way"];
const CITIES: [string, string, string][] = [
  ["Sydney", "NSW", "2000"],
  ["Newcastle", "NSW", "2300"],
  ["Wollongong", "NSW", "2500"],
  ["Melbourne", "VIC", "3000"],
  ["Geelong", "VIC", "3220"],
  ["Brisbane", "QLD", "4000"],
  ["Cairns", "QLD", "4870"],
  ["Adelaide", "SA", "5000"],
  ["Perth", "WA", "6000"],
  ["Hobart", "TAS", "7000"],
  ["Darwin", "NT", "0800"],
  ["Canberra", "ACT", "2600"],
];
const LISTING_STATUSES: [string, number][] = [
  ["Active", 0.4],
  ["Sold", 0.35],
  ["Coming Soon", 0.1],
  ["Pending", 0.08],
  ["Off Market", 0.05],
  ["Cancelled", 0.02],
];
const TOUR_STATUSES: [string, number][] = [
  ["active", 0.6],
  ["inactive", 0.25],
  ["archived", 0.15],
];
const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** mulberry32: a small deterministic generator, so seeded data is the same every run. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const q = (s: string | null) => (s === null ? "NULL" : `'${s.replaceAll("'", "''")}'`);

function pick<T>(rand: () => number, weighted: [T, number][]): T {
  let r = rand();
  for (const [value, weight] of weighted) {
    r -= weight;
    if (r < 0) return value;
  }
  return weighted[weighted.length - 1]![0];
}

function alnum(rand: () => number, length: number): string {
  let s = "";
  for (let i = 0; i < length; i++) s += ALPHABET[Math.floor(rand() * 36)];
  return s;
}

/** Distinct per index (36^n is coprime with the odd multiplier), so numbers never collide. */
function numberFor(i: number, length: number): string {
  const space = 36 ** length;
  const n = (i * 2654435761 + 12345) % space;
  return n.toString(36).padStart(length, "0");
}

/** Ids like the product's: a creation-time prefix, then randomness. */
const idAt = (prefix: string, ms: number, rand: () => number) =>
  `${prefix}_${ms.toString(36).padStart(9, "0")}${alnum(rand, 12)}`;

/** Collects multi-row INSERTs under D1's statement limit and spreads them over files. */
class SqlFiles {
  files: string[] = [];
  #statements: string[] = [];
  #rows: string[] = [];
  #bytes = 0;
  #head = "";
  readonly dir: string;
  readonly name: string;
  constructor(dir: string, name: string) {
    this.dir = dir;
    this.name = name;
  }

  insert(head: string, row: string) {
    if (head !== this.#head || this.#bytes + row.length + 2 > MAX_STATEMENT_BYTES) this.#flushStatement();
    this.#head = head;
    if (!this.#rows.length) this.#bytes = head.length;
    this.#rows.push(row);
    this.#bytes += row.length + 2;
  }

  #flushStatement() {
    if (this.#rows.length) this.#statements.push(`${this.#head}\n${this.#rows.join(",\n")};`);
    this.#rows = [];
    if (this.#statements.length >= STATEMENTS_PER_FILE) this.#flushFile();
  }

  #flushFile() {
    if (!this.#statements.length) return;
    const file = join(this.dir, `${this.name}-${String(this.files.length).padStart(3, "0")}.sql`);
    writeFileSync(file, `${this.#statements.join("\n")}\n`);
    this.files.push(file);
    this.#statements = [];
  }

  close(): string[] {
    this.#flushStatement();
    this.#flushFile();
    return this.files;
  }
}

/**
 * An agency with `rows` listings and `rows` tours, an owner and agents (one per 500
 * listings, at least five: a bigger agency has more agents, so one agent's share
 * shrinks as the agency grows).
 */
export function generateAgency(dir: string, label: string, rows: number, runId: string, seed: number) {
  const rand = prng(seed);
  const now = Date.now();
  const start = now - SPAN_MS;
  const files = new SqlFiles(dir, `seed-${label}`);
  const agencyId = idAt("agy", start - 86_400_000, rand);
  files.insert(
    "INSERT INTO agencies (id, name, kind, created_at) VALUES",
    `(${q(agencyId)}, ${q(`Bench Growth ${label}`)}, 'media_agency', ${q(new Date(start - 86_400_000).toISOString())})`,
  );
  // Its place in the control database's map of shards: the first shard, which this database is.
  files.insert("INSERT INTO agency_shards (agency_id, shard) VALUES", `(${q(agencyId)}, 'shard-1')`);
  const userHead = "INSERT INTO users (id, agency_id, role, manager_id, name, email, created_at, updated_at) VALUES";
  const userAt = new Date(start - 3_600_000).toISOString();
  const ownerId = idAt("usr", start - 3_600_000, rand);
  files.insert(
    userHead,
    `(${q(ownerId)}, ${q(agencyId)}, 'media_agency', NULL, 'Growth Owner', ` +
      `${q(`owner-${label}-${runId}@bench.test`)}, ${q(userAt)}, ${q(userAt)})`,
  );
  const agentIds: string[] = [];
  for (let i = 0; i < Math.max(5, Math.round(rows / 500)); i++) {
    const id = idAt("usr", start - 3_600_000 + i + 1, rand);
    agentIds.push(id);
    files.insert(
      userHead,
      `(${q(id)}, ${q(agencyId)}, 'agent', ${q(ownerId)}, ${q(`Agent ${i}`)}, ` +
        `${q(`agent-${label}-${i}-${runId}@bench.test`)}, ${q(userAt)}, ${q(userAt)})`,
    );
  }
  const step = SPAN_MS / rows;
  const address = () =>
    `${1 + Math.floor(rand() * 9999)} ${STREETS[Math.floor(rand() * STREETS.length)]} ` +
    `${SUFFIXES[Math.floor(rand() * SUFFIXES.length)]}`;
  const listingHead =
    "INSERT INTO listings (id, agency_id, listing_number, address, status, is_activated, activated_at, " +
    "owner_user_id, agent_one_id, agent_two_id, created_at, updated_at) VALUES";
  for (let i = 0; i < rows; i++) {
    const ms = Math.floor(start + i * step + rand() * step * 0.9);
    const at = new Date(ms).toISOString();
    const status = pick(rand, LISTING_STATUSES);
    const activated = status !== "Coming Soon";
    const agentOne = agentIds[Math.floor(rand() * agentIds.length)]!;
    const agentTwo = rand() < 0.3 ? agentIds[Math.floor(rand() * agentIds.length)]! : null;
    files.insert(
      listingHead,
      `(${q(idAt("lst", ms, rand))}, ${q(agencyId)}, ${q(numberFor(i, 7))}, ${q(address())}, ${q(status)}, ` +
        `${activated ? 1 : 0}, ${activated ? q(at) : "NULL"}, ${q(ownerId)}, ${q(agentOne)}, ${q(agentTwo)}, ` +
        `${q(at)}, ${q(at)})`,
    );
  }
  const tourHead =
    "INSERT INTO tours (id, agency_id, tour_number, address, city, state, zipcode, status, mls_number, price, " +
    "bedrooms, bathrooms, sqft, description, created_at, updated_at) VALUES";
  let oneAddress = "";
  for (let i = 0; i < rows; i++) {
    const ms = Math.floor(start + i * step + rand() * step * 0.9);
    const at = new Date(ms).toISOString();
    const [city, state, zipcode] = CITIES[Math.floor(rand() * CITIES.length)]!;
    const street = address();
    if (i === Math.floor(rows / 3)) oneAddress = street;
    const bedrooms = 1 + Math.floor(rand() * 5);
    files.insert(
      tourHead,
      `(${q(idAt("tour", ms, rand))}, ${q(agencyId)}, ${q(numberFor(i, 8))}, ${q(street)}, ${q(city)}, ${q(state)}, ` +
        `${q(zipcode)}, ${q(pick(rand, TOUR_STATUSES))}, ${q(`MLS${alnum(rand, 8).toUpperCase()}`)}, ` +
        `${250_000 + Math.floor(rand() * 3_000_000)}, ${bedrooms}, ${1 + Math.floor(rand() * bedrooms)}, ` +
        `${60 + Math.floor(rand() * 400)}, ${q(`A ${bedrooms}-bedroom home in ${city}.`)}, ${q(at)}, ${q(at)})`,
    );
  }
  const agency: GrowthAgency = {
    label,
    rows,
    agencyId,
    ownerId,
    agentId: agentIds[3]!,
    streetTerm: "wattle",
    oneAddress,
  };
  return { agency, files: files.close() };
}
