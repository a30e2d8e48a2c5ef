import { Hono } from "hono";
import type { AppEnv } from "../../http/env";
import { ERROR_DOCS_PATH } from "../../http/openapi/errors";
import { errorCatalog } from "../../lib/error-guide";

const escapeHtml = (s: string) =>
  s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;").replaceAll('"', "&quot;");

const RETRY_TEXT = {
  never: "No: change the request.",
  after_retry_after: "Yes, after Retry-After, with the same idempotency key.",
  after_change: "Yes, once something outside the request changes.",
} as const;

function page(mode: "test" | "live"): string {
  const rows = errorCatalog(mode)
    .map(
      (e) =>
        `<tr id="${escapeHtml(e.code)}">` +
        `<td><a href="#${escapeHtml(e.code)}"><code>${escapeHtml(e.code)}</code></a></td>` +
        `<td>${e.status}</td><td>${escapeHtml(e.message)}</td><td>${RETRY_TEXT[e.retry]}</td>` +
        `<td>${escapeHtml(e.action)}</td></tr>`,
    )
    .join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Error codes: Agency Listing and Media Service</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.45 system-ui,sans-serif;margin:2rem;max-width:80rem}table{border-collapse:collapse}
td,th{border-bottom:1px solid #ddd;padding:.4rem .6rem;text-align:left;vertical-align:top}tr:target{background:#fff6d5}
code{font-size:.95em}</style></head>
<body><h1>Error codes</h1>
<p>Every error answers <code>{"error": {"code", "message", "request_id", "details", "doc_url"}}</code>; branch on
<code>error.code</code>. The same catalog as JSON: <a href="/api/v1/errors"><code>GET /api/v1/errors</code></a>.
The API reference: <a href="/api/v1/docs">/api/v1/docs</a>.</p>
<table><thead>
<tr><th>Code</th><th>Status</th><th>Meaning</th><th>Does a retry help?</th><th>What to do</th></tr>
</thead>
<tbody>
${rows}
</tbody></table></body></html>`;
}

/** The human-readable error catalog; each envelope's `doc_url` points at an entry here. */
export const errorPage = new Hono<AppEnv>().get(ERROR_DOCS_PATH, (c) => {
  c.header("Cache-Control", "public, max-age=3600");
  return c.html(page(c.env.API_MODE));
});
