import { exampleFromSchema } from "../../lib/schema-example";

type Media = { schema?: unknown; example?: unknown; examples?: unknown };
type Parameter = { $ref?: string; schema?: { example?: unknown }; example?: unknown; examples?: unknown };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, Media> };
  responses?: Record<string, { content?: Record<string, Media> }>;
};
type Document = {
  paths?: Record<string, unknown>;
  webhooks?: Record<string, unknown>;
  components?: { schemas?: Record<string, unknown>; parameters?: Record<string, unknown> };
};

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

/**
 * Gives every operation whole examples, composed from the examples its schemas' fields
 * declare: each parameter, the request body, and every success response's body. An
 * example a route states itself is kept; shared parameters get theirs once. Each event
 * under `webhooks` gets an example of its delivery body too.
 */
export function withExamples<D extends Document>(doc: D): D {
  const schemas = doc.components?.schemas ?? {};
  const fill = (content: Record<string, Media> | undefined) => {
    for (const media of Object.values(content ?? {})) {
      if (media.example !== undefined || media.examples !== undefined || !media.schema) continue;
      const example = exampleFromSchema(media.schema, schemas);
      if (example !== undefined) media.example = example;
    }
  };
  const operations = [doc.paths, doc.webhooks].flatMap((items) =>
    Object.values(items ?? {}).flatMap((item) =>
      METHODS.map((m) => (item as Record<string, Operation | undefined>)[m]).filter((op) => op !== undefined),
    ),
  );
  const shared = Object.values(doc.components?.parameters ?? {}) as Parameter[];
  for (const op of [{ parameters: shared }, ...operations]) {
    for (const parameter of op.parameters ?? []) {
      if (parameter.$ref || parameter.example !== undefined || parameter.examples !== undefined) continue;
      const example = exampleFromSchema(parameter.schema, schemas);
      if (example !== undefined) parameter.example = example;
    }
    fill(op.requestBody?.content);
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      if (status.startsWith("2")) fill(response.content);
    }
  }
  return doc;
}
