/**
 * A flag that code running for another request (a Durable Object, the Worker's handler) raises
 * and a test waits for, or the other way round, with no promise between the two.
 *
 * Why not a promise: in the Workers runtime, a promise that one context settles for another can
 * carry the waiting code into the settling context. A test whose code goes on inside a Durable
 * Object's request does its next I/O there, and once that object has nothing left to do, the
 * test pool's message that the file has ended waits for an event that never comes: the run
 * stalls with every result printed. Each side here only reads a flag and waits on its own
 * timers, so each goes on in its own context.
 */
export interface Signal {
  /** Raises the flag; any context may call it. */
  raise(): void;
  /** Answers once the flag is up, polling on the caller's own timers; throws after `ms`. */
  wait(ms?: number): Promise<void>;
}

const POLL_MS = 5;

export function signal(label: string): Signal {
  let up = false;
  return {
    raise() {
      up = true;
    },
    async wait(ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!up) {
        if (Date.now() > deadline) throw new Error(`${label}: not raised within ${ms} ms`);
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    },
  };
}

/**
 * Answers whether the calling code runs in the context (the request) that called this, by
 * writing to a socket made there: the runtime refuses I/O on behalf of another context.
 */
export function contextCheck(): () => boolean {
  const pair = new WebSocketPair();
  pair[0].accept();
  pair[1].accept();
  return () => {
    try {
      pair[0].send("");
      return true;
    } catch {
      return false;
    }
  };
}
