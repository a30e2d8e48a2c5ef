// The reference's single-file browser build is a static asset of the Worker (`assets` in
// wrangler.jsonc), read through its ASSETS binding and served from here, so the page loads
// nothing from another host and the Worker's bundle does not carry it.
import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import { hex } from "../../lib/crypto/encoding";
import type { AppEnv } from "../env";

export interface ApiReferenceOptions {
  /** Where the page is served. */
  pagePath: string;
  /** Where the page's script is served. */
  scriptPath: string;
  /** The OpenAPI document the page renders. */
  documentPath: string;
  pageTitle: string;
}

interface ReferenceScript {
  body: Blob;
  /** A prefix of the script's SHA-256: the page asks for `?v=<version>`, which may be cached for good. */
  version: string;
  etag: string;
}

let script: ReferenceScript | undefined;

/**
 * The library shows a demo token of its own as the placeholder of the key field; ours
 * shows the shape of a sandbox key instead, so nobody takes the demo token for a value.
 */
const DEMO_TOKEN_PLACEHOLDER = "`QUxMIFlPVVIgQkFTRSBBUkUgQkVMT05HIFRPIFVT`";
const KEY_PLACEHOLDER = "`sk_test_…`";

/**
 * Long paths wrap instead of being cut off, in the operation lists and the example
 * cards' titles alike.
 */
const CUSTOM_CSS = `
.scalar-app .endpoint, .scalar-app .endpoint-path { white-space: normal; overflow-wrap: anywhere; height: auto; }
.scalar-app .scalar-card-header-title {
  white-space: normal !important;
  overflow-wrap: anywhere;
  text-overflow: clip !important;
}
`;

/** Where the script lies among the static assets (scripts/static-assets.mjs puts it there). */
const SCRIPT_ASSET = "https://assets.example/docs/reference.js";

/**
 * Read, encoded and hashed once per isolate, on first use; a failed read is tried again next time.
 * The value is kept, never the promise: a request must not await a promise another request made,
 * which the runtime cancels as hanging once that request is gone. Requests that race at first use
 * each read the asset.
 */
async function loadScript(assets: Fetcher): Promise<ReferenceScript> {
  if (script) return script;
  const res = await assets.fetch(SCRIPT_ASSET);
  if (!res.ok) throw new Error(`the reference script is not among the static assets (${res.status})`);
  const text = (await res.text()).replaceAll(DEMO_TOKEN_PLACEHOLDER, KEY_PLACEHOLDER);
  const body = new Blob([text], { type: "text/javascript; charset=utf-8" });
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", await body.arrayBuffer()));
  const version = hex(digest.subarray(0, 8));
  script = { body, version, etag: `"${version}"` };
  return script;
}

const IMMUTABLE = "public, max-age=31536000, immutable";
const REVALIDATE = "public, no-cache";

function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim();
    return t === "*" || t.replace(/^W\//, "") === etag;
  });
}

/**
 * The interactive API reference: the page, and the script it runs, both served by the
 * Worker itself. The page also turns off what would reach the reference vendor's hosts:
 * its web fonts (the system fonts are used), telemetry, and the AI chat, MCP and
 * developer-tools buttons it shows on localhost.
 */
export function apiReference(opts: ApiReferenceOptions): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get(
      opts.pagePath,
      Scalar<AppEnv>(async (c) => ({
        url: opts.documentPath,
        pageTitle: opts.pageTitle,
        cdn: `${opts.scriptPath}?v=${(await loadScript(c.env.ASSETS)).version}`,
        withDefaultFonts: false,
        telemetry: false,
        showDeveloperTools: "never",
        agent: { disabled: true },
        customCss: CUSTOM_CSS,
        // The key field starts empty (no value is stored in the page) and is not kept across visits.
        persistAuth: false,
        authentication: { preferredSecurityScheme: "ApiKey" },
        mcp: { disabled: true },
      })),
    )
    .get(opts.scriptPath, async (c) => {
      const { body, version, etag } = await loadScript(c.env.ASSETS);
      c.header("ETag", etag);
      c.header("Cache-Control", c.req.query("v") === version ? IMMUTABLE : REVALIDATE);
      if (matchesEtag(c.req.header("if-none-match"), etag)) return c.body(null, 304);
      c.header("Content-Type", body.type);
      c.header("Content-Length", String(body.size));
      c.header("X-Content-Type-Options", "nosniff");
      return c.body(body);
    });
}
