import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { freePorts } from "../../scripts/free-ports.ts";

/**
 * `npm run dev` for the CLI tests: on a port of its own and with local state of its own
 * (--persist-to a temporary directory), so a developer's running sandbox and its printed key
 * are left alone.
 */
export const root = join(__dirname, "..", "..");
export const env: NodeJS.ProcessEnv = {
  ...process.env,
  PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}`,
  WRANGLER_SEND_METRICS: "false",
  DO_NOT_TRACK: "1",
};
// The key and secret come from each test alone.
delete env.ALMS_API_KEY;
delete env.ALMS_WEBHOOK_SECRET;
export const READY_MS = 150_000;
/**
 * The sandbox key in what `npm run dev` prints. A key may end in `-`, after which `\b` finds
 * no boundary, so the key is bounded by characters that cannot be part of it.
 */
export const PRINTED_KEY = /(?<![A-Za-z0-9_-])(sk_test_[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])/;

/** A child process with everything it printed so far; `waitFor` resolves on a match, bounded. */
export function started(command: string, args: string[], extraEnv: Record<string, string> = {}) {
  const child = spawn(command, args, { cwd: root, env: { ...env, ...extraEnv }, detached: true });
  let output = "";
  child.stdout!.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr!.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const waitFor = async (pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const match = output.match(pattern);
      if (match) return match;
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(
      `No ${pattern} from ${command} ${args.join(" ")} (exit ${child.exitCode}):\n${output.slice(-4000)}`,
    );
  };
  return { child, exited, waitFor, output: () => output };
}

/** Stops a process group started above: SIGINT, then SIGKILL if it is still there after 10 s. */
export async function stop(child: ChildProcess | undefined) {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    process.kill(-child.pid, "SIGINT");
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  }, 10_000);
  await exited;
  clearTimeout(timer);
}

/** `npm run dev` on free ports over `state`, once it has printed its key. */
export async function startDev(state: string, extraArgs: string[] = [], extraEnv: Record<string, string> = {}) {
  const [port, inspector] = (await freePorts(2)).map(String) as [string, string];
  const origin = `http://127.0.0.1:${port}`;
  const dev = started(
    "npm",
    ["run", "dev", "--", "--port", port, "--persist-to", state, "--inspector-port", inspector, ...extraArgs],
    extraEnv,
  );
  await dev.waitFor(new RegExp(`local sandbox on ${origin.replaceAll(".", "\\.")}`), READY_MS);
  const key = (await dev.waitFor(PRINTED_KEY, 5_000))[1]!;
  return { dev, origin, key };
}
