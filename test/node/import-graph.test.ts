import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const src = resolve(__dirname, "..", "..", "src");

const INFRASTRUCTURE = ["durable", "webhooks", "media", "calendar", "billing", "accounts"];
const BELOW_HTTP = ["lib", "db", "domain", ...INFRASTRUCTURE, "schemas"];

/** What each floor of src/ may import, besides itself; a file at the root of src/ may import any floor. */
const MAY_IMPORT: Record<string, string[]> = {
  lib: [],
  db: ["lib"],
  domain: ["lib", "db"],
  ...Object.fromEntries(INFRASTRUCTURE.map((floor) => [floor, ["lib", "db", "domain", ...INFRASTRUCTURE]])),
  schemas: ["lib", "db", "domain", ...INFRASTRUCTURE],
  http: BELOW_HTTP,
  routes: [...BELOW_HTTP, "http"],
  internal: [...BELOW_HTTP, "http"],
};

type Graph = Map<string, string[]>;

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

function resolveImport(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {}
  }
  return undefined;
}

/** Every relative import (types included) of every file of src/, as paths relative to src/. */
function importGraph(): { graph: Graph; unresolved: string[] } {
  const graph: Graph = new Map();
  const unresolved: string[] = [];
  for (const file of sources(src)) {
    const text = readFileSync(file, "utf8");
    const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)].map((m) => m[1]!);
    const targets: string[] = [];
    for (const spec of specs) {
      const target = resolveImport(file, spec);
      if (target) targets.push(relative(src, target));
      else unresolved.push(`${relative(src, file)} → ${spec}`);
    }
    graph.set(relative(src, file), targets);
  }
  return { graph, unresolved };
}

const floorOf = (path: string): string | undefined => (path.includes("/") ? path.split("/")[0] : undefined);

/** Imports that run up a floor (or sideways into a floor not listed as below). */
function upward(graph: Graph): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph) {
    const from = floorOf(file);
    if (!from) continue;
    for (const target of targets) {
      const to = floorOf(target);
      if (to === from) continue;
      const allowed = Object.hasOwn(MAY_IMPORT, from) ? MAY_IMPORT[from]! : [];
      if (!to || !allowed.includes(to)) found.push(`${file} → ${target}`);
    }
  }
  return found;
}

/** The strongly connected parts of more than one file, or a file that imports itself (Tarjan). */
function circles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const part: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        part.push(member);
      } while (member !== node);
      if (part.length > 1 || graph.get(node)?.includes(node)) found.push(part.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe("src/ read as an import graph", () => {
  const { graph, unresolved } = importGraph();

  it("resolves every relative import to a file", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(unresolved).toEqual([]);
  });

  it("has no import that runs up a floor", () => {
    expect(upward(graph)).toEqual([]);
  });

  it("has no circle", () => {
    expect(circles(graph)).toEqual([]);
  });

  it("finds a planted upward import and a planted circle", () => {
    const planted: Graph = new Map([
      ["domain/events/feed.ts", ["http/admission/gate.ts", "domain/rules.ts"]],
      ["domain/rules.ts", ["domain/events/feed.ts"]],
      ["http/admission/gate.ts", ["lib/ids.ts"]],
      ["lib/ids.ts", []],
    ]);
    expect(upward(planted)).toEqual(["domain/events/feed.ts → http/admission/gate.ts"]);
    expect(circles(planted)).toEqual([["domain/events/feed.ts", "domain/rules.ts"]]);
  });
});
