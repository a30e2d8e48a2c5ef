// Copies the files the Worker serves as static assets into `assets/` (never committed): the
// reference page's single-file browser build, from the installed package. Run after every
// install (`postinstall`), so `npm run dev`, the tests and both deploys find it there; the
// Worker reads it through its ASSETS binding instead of carrying it in its bundle.
//
// Plain JavaScript, like setup.mjs: npm runs it under whatever Node runs the install.
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const files = [["node_modules/@scalar/api-reference/dist/browser/standalone.js", "assets/docs/reference.js"]];
for (const [from, to] of files) {
  mkdirSync(dirname(join(root, to)), { recursive: true });
  copyFileSync(join(root, from), join(root, to));
}
