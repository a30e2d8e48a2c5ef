// zod's locales as the Worker bundles them: English only. `@hono/zod-openapi` hands zod's
// whole namespace to its OpenAPI extension, so the bundler cannot drop the namespace's
// `locales` member, and with it the messages of 60-odd languages nothing here uses (a fifth
// of the bundle). wrangler.jsonc's `alias` puts this module in its place. zod's own default,
// English, is imported by zod directly and is unaffected; so are the tests, which load zod
// as it ships.
export { default as en } from "zod/v4/locales/en.js";
