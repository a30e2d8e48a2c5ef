// The D1 migrations of every local database (one per shard, each with the full schema),
// applied as `wrangler d1 migrations apply --local` applies them: the same files, the same
// record in the same `d1_migrations` table (so that command then finds nothing left), each
// migration with its record in one batch, so a failing one leaves nothing half-applied.
// That command starts a local runtime for each migration, about a second each; here one
// runtime serves them all. `npm run dev` and the bench's Workers use it.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Wrangler's own Miniflare (the one `wrangler dev` runs), so the databases are stored as it stores them. */
function wranglersMiniflare(): typeof import("miniflare") {
  return createRequire(import.meta.resolve("wrangler"))("miniflare");
}

/**
 * Applies the migrations not yet applied to each D1 database of wrangler.jsonc's local
 * environment, under `persistTo` (wrangler's `--persist-to`); says how many each one took.
 */
export async function applyLocalMigrations(persistTo: string): Promise<{ binding: string; applied: number }[]> {
  const { unstable_readConfig, unstable_splitSqlQuery } = await import("wrangler");
  const config = unstable_readConfig({ config: join(root, "wrangler.jsonc") });
  const databases: {
    binding: string;
    database_id?: string;
    preview_database_id?: string;
    migrations_dir?: string;
    migrations_table?: string;
  }[] = config.d1_databases;
  const { Miniflare, convertV4MiniflareOptions } = wranglersMiniflare();
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      script: "",
      cf: false,
      resourcePersistencePath: join(resolve(persistTo), "v3"),
      // wrangler's own choice of the local database's id: preview id, else id, else binding.
      d1Databases: Object.fromEntries(
        databases.map((d) => [d.binding, d.preview_database_id ?? d.database_id ?? d.binding]),
      ),
    }),
  );
  const done: { binding: string; applied: number }[] = [];
  try {
    for (const { binding, migrations_dir = "migrations", migrations_table = "d1_migrations" } of databases) {
      const dir = join(root, migrations_dir);
      const db = await mf.getD1Database(binding);
      const table = `"${migrations_table.replaceAll('"', '""')}"`;
      await db
        .prepare(
          `CREATE TABLE IF NOT EXISTS ${table}(id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL)`,
        )
        .run();
      const { results } = await db.prepare(`SELECT name FROM ${table}`).all<{ name: string }>();
      const applied = new Set(results.map((r: { name: string }) => r.name));
      const pending = readdirSync(dir)
        .filter((f) => f.endsWith(".sql") && !applied.has(f))
        .sort();
      for (const file of pending) {
        const queries = unstable_splitSqlQuery(readFileSync(join(dir, file), "utf8"));
        try {
          await db.batch([
            ...queries.map((q) => db.prepare(q)),
            db.prepare(`INSERT INTO ${table} (name) VALUES (?)`).bind(file),
          ]);
        } catch (error) {
          throw new Error(`Applying the local D1 migration ${file} to ${binding} failed: ${(error as Error).message}`);
        }
      }
      done.push({ binding, applied: pending.length });
    }
  } finally {
    await mf.dispose();
  }
  return done;
}
