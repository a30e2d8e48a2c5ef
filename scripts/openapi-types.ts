// Generates the typed client's types from the public OpenAPI document the app serves: the app is
// loaded through Vite (as the node tests load it), asked for /api/v1/openapi.json with the local
// vars of wrangler.jsonc, and the answer is turned into TypeScript by openapi-typescript, for the
// tests (test/generated/) and for the official client (clients/typescript/src/openapi.ts, which
// `npm run types:client` then builds). It runs before `tsc` in `npm run typecheck`; the output is
// git-ignored and never edited by hand.
//
//   node scripts/openapi-types.ts
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import openapiTS from "openapi-typescript";
import { runnerImport } from "vite";

const root = join(import.meta.dirname, "..");
const out = join(root, "test", "generated");
/** The top-level vars of wrangler.jsonc, the ones the Workers test pool runs with. */
const env = { ENVIRONMENT: "local", API_MODE: "test", SITE_URL: "http://localhost:8787", SECRET_KEY: "x" };

const { module } = await runnerImport<typeof import("../src/app.ts")>(join(root, "src", "app.ts"), {
  configFile: false,
  root,
  logLevel: "error",
});
const res = await module.app.request("https://api.test/api/v1/openapi.json", {}, env);
if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${res.status}: ${await res.text()}`);
const source = await res.text();
const types = await openapiTS(JSON.parse(source), { alphabetize: true });

mkdirSync(out, { recursive: true });
// The document itself too, so the scenario test can prove the types match what the Worker serves.
writeFileSync(join(out, "public-openapi.json"), source);
writeFileSync(join(out, "public-openapi.d.ts"), types);
writeFileSync(join(root, "clients", "typescript", "src", "openapi.ts"), types);
