import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const src = join(__dirname, "..", "..", "src");

/** Every directory under `dir`, itself included. */
function directories(dir: string): string[] {
  return [
    dir,
    ...readdirSync(dir)
      .map((name) => join(dir, name))
      .filter((path) => statSync(path).isDirectory())
      .flatMap(directories),
  ];
}

const filesIn = (dir: string) =>
  readdirSync(dir)
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());

/** The sizes the code keeps to: lines, files per folder (routes' folders apart), lines per file. */
const MAX_LINE = 120;
const MAX_FILES = 15;
const MAX_LINES = 300;

/** What breaks them in `files` (path → text), as "where: what". */
function oversize(files: Map<string, string>, folders: Map<string, number>): string[] {
  const problems: string[] = [];
  for (const [path, text] of files) {
    const lines = text.split("\n");
    for (const [i, line] of lines.entries())
      if (line.length > MAX_LINE) problems.push(`${path}:${i + 1}: ${line.length} characters`);
    if (lines.length > MAX_LINES && path !== "db/schema.ts") problems.push(`${path}: ${lines.length} lines`);
  }
  for (const [folder, n] of folders)
    if (n > MAX_FILES && !folder.startsWith("routes/")) problems.push(`${folder}/: ${n} files`);
  return problems;
}

describe("the rooms of src/", () => {
  it(`keeps lines within ${MAX_LINE} characters, folders within ${MAX_FILES} files, files within ${MAX_LINES} lines`, () => {
    const files = new Map<string, string>();
    const folders = new Map<string, number>();
    for (const dir of directories(src)) {
      const here = filesIn(dir);
      folders.set(relative(src, dir) || ".", here.length);
      for (const path of here) files.set(relative(src, path), readFileSync(path, "utf8"));
    }
    expect(oversize(files, folders)).toEqual([]);
  });

  it("finds a long line, a crowded folder and a long file when there are some", () => {
    const long = "x".repeat(MAX_LINE + 1);
    const planted = new Map([
      ["domain/a.ts", `ok\n${long}\n`],
      ["domain/b.ts", "\n".repeat(MAX_LINES + 1)],
    ]);
    const problems = oversize(
      planted,
      new Map([
        ["lib", MAX_FILES + 1],
        ["routes/test-helpers", 30],
      ]),
    );
    expect(problems).toEqual([
      `domain/a.ts:2: ${MAX_LINE + 1} characters`,
      `domain/b.ts: ${MAX_LINES + 2} lines`,
      `lib/: ${MAX_FILES + 1} files`,
    ]);
  });
});
