import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { app } from "../../src/app";

const live = { ENVIRONMENT: "live", API_MODE: "live", SECRET_KEY: "x" };

describe("the live OpenAPI document (the sandbox's test helpers left out)", () => {
  it("is valid OpenAPI 3.1 with no Redocly error or warning, and names no test helper", async () => {
    const res = await app.request("https://api.test/api/v1/openapi.json", {}, live);
    expect(res.status).toBe(200);
    const source = await res.text();
    const doc = JSON.parse(source);
    const result = await new Validator().validate(doc);
    expect(result.valid, JSON.stringify(result.errors, null, 2)).toBe(true);
    const config = await createConfig({ extends: ["recommended"] });
    const found = await lintFromString({ source, absoluteRef: "openapi.json", config });
    expect(found.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? "?"}`)).toEqual([]);
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/api/v1/test_helpers/"))).toEqual([]);
    expect(doc.paths["/api/v1/listings"]).toBeDefined();
  });
});
