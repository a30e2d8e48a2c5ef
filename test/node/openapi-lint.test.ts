import { createConfig, lintFromString } from "@redocly/openapi-core";
import { describe, expect, it } from "vitest";
import { app } from "../../src/app";

const env = { ENVIRONMENT: "local", API_MODE: "test", SECRET_KEY: "x", OPERATOR_TOKEN: "op" };

async function problems(source: string) {
  const config = await createConfig({ extends: ["recommended"] });
  const found = await lintFromString({ source, absoluteRef: "openapi.json", config });
  return found.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? "?"}`);
}

async function document(path: string, headers: Record<string, string> = {}) {
  const res = await app.request(`https://api.test${path}`, { headers }, env);
  expect(res.status).toBe(200);
  return res.text();
}

describe("OpenAPI lint (Redocly, recommended rules)", () => {
  it("the public document has no error and no warning", async () => {
    expect(await problems(await document("/api/v1/openapi.json"))).toEqual([]);
  });

  it("the internal document has no error and no warning", async () => {
    const source = await document("/internal/v1/openapi.json", { Authorization: "Bearer op" });
    expect(await problems(source)).toEqual([]);
  });

  it("the linter reports what the recommended rules refuse", async () => {
    const doc = JSON.parse(await document("/api/v1/openapi.json"));
    delete doc.info.license;
    doc.paths["/api/v1/users"].get.responses = { "404": doc.paths["/api/v1/users"].get.responses["404"] };
    const found = await problems(JSON.stringify(doc));
    expect(found.some((p) => p.includes("info-license"))).toBe(true);
    expect(found.some((p) => p.includes("operation-2xx-response"))).toBe(true);
  });
});
