// Checks that src/db/schema.ts and migrations/ agree: `drizzle-kit generate`, run against
// a temporary copy of migrations/, must produce nothing, and every SQL file there must be
// one drizzle-kit wrote (listed in meta/_journal.json). The real migrations/ is never written.
//
//   npm run db:check
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "..");
const migrations = join(root, "migrations");
const hint = "schema and migrations disagree: run npm run db:generate";

/** Every file under dir, by relative path, with its contents. */
function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(relative(dir, path), readFileSync(path, "utf8"));
  }
  return out;
}

/** SQL written by hand next to the generated files is invisible to drizzle-kit. */
function checkJournal(): string | undefined {
  const journalPath = join(migrations, "meta", "_journal.json");
  if (!existsSync(journalPath)) return `migrations/meta/_journal.json is missing; ${hint}`;
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: { tag: string }[] };
  const tags = new Set(journal.entries.map((e) => e.tag));
  const sqlFiles = readdirSync(migrations).filter((f) => f.endsWith(".sql"));
  const unknown = sqlFiles.filter((f) => !tags.has(f.slice(0, -".sql".length)));
  if (unknown.length) {
    const files = unknown.map((f) => `migrations/${f}`).join(", ");
    return `not written by drizzle-kit (absent from migrations/meta/_journal.json): ${files}
Put the change in src/db/schema.ts instead, delete the file, and run npm run db:generate.`;
  }
  const missing = [...tags].filter((t) => !sqlFiles.includes(`${t}.sql`));
  if (missing.length) {
    const files = missing.map((t) => `migrations/${t}.sql`).join(", ");
    return `listed in migrations/meta/_journal.json but missing: ${files}`;
  }
  return undefined;
}

/** Runs drizzle-kit generate against a temporary copy of migrations/ and reports what it would write. */
function checkGenerate(): string | undefined {
  const work = mkdtempSync(join(tmpdir(), "drizzle-check-"));
  try {
    const out = join(work, "migrations");
    cpSync(migrations, out, { recursive: true });
    const config = join(work, "drizzle.config.ts");
    // drizzle-kit reads the snapshots at `./${out}`, so `out` must be relative to the project.
    writeFileSync(
      config,
      `import base from ${JSON.stringify(join(root, "drizzle.config.ts"))};\n` +
        `export default { ...base, out: ${JSON.stringify(relative(root, out))} };\n`,
    );

    const before = files(out);
    const bin = join(root, "node_modules", "drizzle-kit", "bin.cjs");
    // stdin closed: a rename question (a column dropped and another added) ends the run instead of waiting.
    const r = spawnSync(process.execPath, [bin, "generate", "--config", config], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      timeout: 60_000,
    });
    const output = `${r.stdout ?? ""}${r.stderr ?? ""}`.trimEnd();
    const after = files(out);

    const written = [...after.keys()].filter((f) => before.get(f) !== after.get(f));
    if (written.length) {
      const sql = written.filter((f) => f.endsWith(".sql")).map((f) => `--- ${f}\n${after.get(f)!.trimEnd()}`);
      return [
        `${hint}`,
        `drizzle-kit generate would write: ${written.map((f) => `migrations/${f}`).join(", ")}`,
        ...sql,
      ].join("\n");
    }
    if (r.error || r.status !== 0)
      return `drizzle-kit generate failed (${r.error?.message ?? `exit ${r.status ?? r.signal}`}); ${hint}\n${output}`;
    if (!/No schema changes/.test(output))
      return `drizzle-kit generate wrote nothing but did not report "No schema changes"; ${hint}\n${output}`;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const problem = checkJournal() ?? checkGenerate();
if (problem) {
  console.error(`db:check: ${problem}`);
  process.exit(1);
}
const count = readdirSync(migrations).filter((f) => f.endsWith(".sql")).length;
console.log(`db:check: schema and migrations agree (${count} migration${count === 1 ? "" : "s"})`);
