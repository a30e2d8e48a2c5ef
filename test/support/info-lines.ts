// The Worker writes an info line (its wide event) for every request and run it serves. vitest's
// console hands each line to the Node side as a call whose answer the file's end waits for, and a
// line written for another request's context (the Worker's handler, a Durable Object, a queue
// consumer) is held back until the runner next sends something from its own. When nothing more
// comes before the file's end (a background drain logging while the runner waits for its last
// results to be acknowledged), the run waits for ever, with every result printed. The run drops
// these lines anyway (`onConsoleLog` in vitest.config.ts), so they are dropped where they are
// written; a test that reads them spies on `console.log`, and the spy still sees every call.
const DROPS_INFO = Symbol.for("alms.test.info-lines-dropped");

const current = console.log as typeof console.log & { [DROPS_INFO]?: true };
if (!current[DROPS_INFO]) {
  const dropping = ((...args: unknown[]) => {
    if (args.length === 1 && typeof args[0] === "string" && args[0].startsWith('{"level":"info"')) return;
    current(...args);
  }) as typeof console.log & { [DROPS_INFO]?: true };
  dropping[DROPS_INFO] = true;
  console.log = dropping;
}
