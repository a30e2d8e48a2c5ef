import { describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { exampleFromSchema } from "../../src/lib/schema-example";
import { validate } from "../support/json-schema";

const env = { ENVIRONMENT: "local", API_MODE: "test", SECRET_KEY: "x", OPERATOR_TOKEN: "op" };
const live = { ENVIRONMENT: "live", API_MODE: "live", SECRET_KEY: "x" };
const METHODS = ["get", "put", "post", "delete", "patch"];

type Doc = Record<string, any>;

async function document(environment: Record<string, string>): Promise<Doc> {
  const res = await app.request("https://api.test/api/v1/openapi.json", {}, environment);
  expect(res.status, await res.clone().text()).toBe(200);
  return res.json();
}

/** Every operation's missing or invalid example, as "METHOD path: what". */
function exampleProblems(doc: Doc): string[] {
  const problems: string[] = [];
  const check = (where: string, schema: unknown, example: unknown) => {
    if (example === undefined) problems.push(`${where}: no example`);
    else for (const p of validate(doc, schema as Doc, example)) problems.push(`${where}: ${p}`);
  };
  for (const [path, item] of Object.entries<Doc>(doc.paths)) {
    for (const method of METHODS.filter((m) => item[m])) {
      const op = item[method];
      const at = `${method.toUpperCase()} ${path}`;
      for (const ref of op.parameters ?? []) {
        const parameter = ref.$ref ? doc.components.parameters[ref.$ref.split("/").pop()] : ref;
        check(`${at} ${parameter.in} ${parameter.name}`, parameter.schema, parameter.example);
      }
      for (const [type, media] of Object.entries<Doc>(op.requestBody?.content ?? {})) {
        check(`${at} request ${type}`, media.schema, media.example);
      }
      const success = Object.keys(op.responses).filter((status) => status.startsWith("2"));
      if (!success.length) problems.push(`${at}: no success response`);
      for (const status of success) {
        for (const [type, media] of Object.entries<Doc>(op.responses[status].content ?? {})) {
          check(`${at} ${status} ${type}`, media.schema, media.example);
        }
      }
    }
  }
  return problems;
}

describe("examples in the public OpenAPI description", () => {
  it("every operation has a valid example for each parameter, its body and its success responses", async () => {
    const doc = await document(env);
    const operations = Object.values<Doc>(doc.paths).flatMap((item) => METHODS.filter((m) => item[m]));
    expect(operations.length).toBeGreaterThan(40);
    expect(exampleProblems(doc)).toEqual([]);
    const status = doc.paths["/api/v1/listings/{listing_number}/status"].patch;
    expect(status.requestBody.content["application/json"].example).toHaveProperty("new_status");
    const busy = doc.paths["/api/v1/test_helpers/users/{user_id}/calendar/busy_blocks"].post;
    expect(Object.keys(busy.requestBody.content["application/json"].example)).toEqual(
      expect.arrayContaining(["starts_at", "ends_at"]),
    );
  });

  it("the live description's operations have them too", async () => {
    expect(exampleProblems(await document(live))).toEqual([]);
  });

  it("every webhook event's delivery body has a valid example", async () => {
    const doc = await document(env);
    const problems = Object.entries<Doc>(doc.webhooks).flatMap(([type, item]) => {
      const media = item.post.requestBody.content["application/json"];
      if (media.example === undefined) return [`${type}: no example`];
      const wrongType = media.example.event_type === type ? [] : [`${type}: event_type ${media.example.event_type}`];
      return [...wrongType, ...validate(doc, media.schema, media.example).map((p) => `${type}: ${p}`)];
    });
    expect(Object.keys(doc.webhooks).length).toBe(17);
    expect(problems).toEqual([]);
  });

  it("the check reports a missing example and one that its schema refuses", async () => {
    const doc = await document(env);
    const create = doc.paths["/api/v1/listings"].post;
    delete create.requestBody.content["application/json"].example;
    doc.paths["/api/v1/listings"].get.responses["200"].content["application/json"].example = { data: "none" };
    const found = exampleProblems(doc);
    expect(found).toContain("POST /api/v1/listings request application/json: no example");
    expect(found.some((p) => p.startsWith("GET /api/v1/listings 200 application/json: $.data: expected array"))).toBe(
      true,
    );
  });
});

describe("composing an example from a schema", () => {
  const schemas = {
    Money: { type: "object", properties: { amount: { type: "integer", example: 5 } }, required: ["amount"] },
  };

  it("takes the fields' examples, first choices, merged parts and one array item", () => {
    const schema = {
      type: "object",
      required: ["price", "tags", "kind"],
      properties: {
        price: { allOf: [{ $ref: "#/components/schemas/Money" }, { description: "What it costs." }] },
        tags: { type: "array", items: { type: "string", example: "new" } },
        kind: { type: "string", enum: ["a", "b"] },
        note: { anyOf: [{ type: "null" }, { type: "string", example: "hi" }] },
        opaque: { description: "Anything." },
      },
    };
    expect(exampleFromSchema(schema, schemas)).toEqual({ price: { amount: 5 }, tags: ["new"], kind: "a", note: "hi" });
  });

  it("gives nothing when a required field has no example, and a schema's own example wins", () => {
    const schema = { type: "object", required: ["id"], properties: { id: { type: "string" } } };
    expect(exampleFromSchema(schema, schemas)).toBeUndefined();
    expect(exampleFromSchema({ ...schema, example: { id: "x" } }, schemas)).toEqual({ id: "x" });
    expect(exampleFromSchema({ $ref: "#/components/schemas/Missing" }, schemas)).toBeUndefined();
  });
});
