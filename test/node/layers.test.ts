import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(__dirname, "..", "..");
const biome = join(root, "node_modules", ".bin", "biome");
const scratch = mkdtempSync(join(tmpdir(), "layers-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Lints a small tree of files with the project's own biome.json; answers the exit status and the report. */
function lint(name: string, files: Record<string, string>): { status: number; report: string } {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, "biome.json"), join(dir, "biome.json"));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  try {
    const out = execFileSync(biome, ["lint", "--vcs-enabled=false", "--max-diagnostics=50", "src"], {
      cwd: dir,
      encoding: "utf8",
      stdio: "pipe",
    });
    return { status: 0, report: out };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { status: e.status, report: `${e.stdout}\n${e.stderr}` };
  }
}

const exporting = (name: string) => `export const ${name} = 1;\n`;

describe("the floors of src/, as the lint enforces them", () => {
  it("accepts imports that run downwards", () => {
    const { status, report } = lint("down", {
      "src/lib/ids.ts": exporting("id"),
      "src/db/client.ts": `import { id } from "../lib/ids";\nexport const db = id;\n`,
      "src/domain/rules.ts": `import { db } from "../db/client";\nexport const rule = db;\n`,
      "src/http/guard.ts": `import { rule } from "../domain/rules";\nexport const guard = rule;\n`,
      "src/routes/things/get.ts": `import { guard } from "../../http/guard";\nexport const get = guard;\n`,
    });
    expect(status, report).toBe(0);
  });

  it("refuses an import that runs back up", () => {
    const { status, report } = lint("up", {
      "src/http/guard.ts": exporting("guard"),
      "src/domain/rules.ts": `import { guard } from "../http/guard";\nexport const rule = guard;\n`,
    });
    expect(status, report).not.toBe(0);
    expect(report).toContain("domain/ may import only from lib, db");
  });

  it("refuses an import that runs up a floor into or out of a sub-folder", () => {
    const { status, report } = lint("up-deep", {
      "src/http/admission/gate.ts": exporting("gate"),
      "src/routes/things/get.ts": exporting("get"),
      "src/http/guard.ts": exporting("guard"),
      "src/domain/rules.ts": `import { gate } from "../http/admission/gate";\nexport const rule = gate;\n`,
      "src/domain/more.ts": `import { get } from "../routes/things/get";\nexport const more = get;\n`,
      "src/domain/events/feed.ts": `import { guard } from "../../http/guard";\nexport const feed = guard;\n`,
    });
    expect(status, report).not.toBe(0);
    for (const file of ["rules.ts", "more.ts", "feed.ts"]) expect(report).toContain(file);
    expect(report.match(/domain\/ may import only from lib, db/g)?.length, report).toBe(3);
  });

  it("refuses an import of the app from lib/", () => {
    const { status, report } = lint("lib", {
      "src/db/client.ts": exporting("db"),
      "src/lib/ids.ts": `import { db } from "../db/client";\nexport const id = db;\n`,
    });
    expect(status, report).not.toBe(0);
    expect(report).toContain("lib/ imports nothing of the app");
  });

  it("refuses Hono below the HTTP layer and queries in routes", () => {
    const { status, report } = lint("hono", {
      "src/webhooks/send.ts": `import type { Context } from "hono";\nexport type C = Context;\n`,
      "src/routes/things/list.ts": `import { eq } from "drizzle-orm";\nexport const list = eq;\n`,
    });
    expect(status, report).not.toBe(0);
    expect(report).toContain("no Hono objects here");
    expect(report).toContain("Routes hold no queries");
  });

  it("holds the domain to plain zod", () => {
    const { status, report } = lint("plain-zod", {
      "src/domain/events/catalog.ts": `import { z } from "@hono/zod-openapi";\nexport const id = z.string();\n`,
    });
    expect(status, report).not.toBe(0);
    expect(report).toContain("plain zod for schemas");
  });

  it("refuses a circle", () => {
    const { status, report } = lint("circle", {
      "src/domain/a.ts": `import { b } from "./b";\nexport const a = () => b;\n`,
      "src/domain/b.ts": `import { a } from "./a";\nexport const b = () => a;\n`,
    });
    expect(status, report).not.toBe(0);
    expect(report).toContain("noImportCycles");
  });

  it("refuses a circle made only of type imports", () => {
    const { status, report } = lint("type-circle", {
      "src/http/env.ts": `import type { Claim } from "./claim";\nexport interface Env { claim?: Claim }\n`,
      "src/http/claim.ts": `import type { Env } from "./env";\nexport interface Claim { env: Env }\n`,
    });
    expect(status, report).not.toBe(0);
    expect(report).toContain("noImportCycles");
  });

  it("holds for the real tree", () => {
    const out = execFileSync(biome, ["lint", "--max-diagnostics=20", "src"], {
      cwd: root,
      encoding: "utf8",
      stdio: "pipe",
    });
    expect(out).not.toContain("noRestrictedImports");
  });
});
