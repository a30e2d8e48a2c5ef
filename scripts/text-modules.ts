import { fileURLToPath } from "node:url";

// The Worker imports the API reference's browser script as a Text module (`rules` in
// wrangler.jsonc); its package does not export the file, so Vite (tests, type generation)
// names it by path and reads it as a string through `?raw`.
const REFERENCE_SCRIPT = "@scalar/api-reference/dist/browser/standalone.js";

export const textModules = {
  alias: {
    [REFERENCE_SCRIPT]: `${fileURLToPath(new URL(`../node_modules/${REFERENCE_SCRIPT}`, import.meta.url))}?raw`,
  },
};
