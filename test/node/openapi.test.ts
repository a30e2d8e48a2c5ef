import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { app } from "../../src/app";

const env = { ENVIRONMENT: "local", API_MODE: "test", SECRET_KEY: "x", OPERATOR_TOKEN: "op" };

async function document(path: string, headers: Record<string, string> = {}) {
  const res = await app.request(path, { headers }, env);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Record<string, any>;
}

describe("OpenAPI documents", () => {
  it("the public description is valid OpenAPI 3.1", async () => {
    const doc = await document("https://api.test/api/v1/openapi.json");
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc);
    expect(result.valid, JSON.stringify(result.errors, null, 2)).toBe(true);
  });

  it("the validator refuses a broken description", async () => {
    const doc = await document("https://api.test/api/v1/openapi.json");
    delete doc.info;
    doc.paths["/api/v1/users"].get.responses = "none";
    expect((await new Validator().validate(doc)).valid).toBe(false);
  });

  it("the internal description is valid OpenAPI 3.1", async () => {
    const doc = await document("https://api.test/internal/v1/openapi.json", { Authorization: "Bearer op" });
    const result = await new Validator().validate(doc);
    expect(result.valid, JSON.stringify(result.errors, null, 2)).toBe(true);
  });
});
