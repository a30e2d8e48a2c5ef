// Loopback ports for the local servers the bench and the tests start (wrangler's dev server
// and its inspector), picked together so that no two of them are the same.
import { createServer } from "node:net";

/** `n` distinct loopback ports that were free a moment ago (all held open at once, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers = Array.from({ length: n }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.on("error", reject);
            server.listen(0, "127.0.0.1", () => {
              const address = server.address();
              if (typeof address === "object" && address) resolve(address.port);
              else reject(new Error("no port"));
            });
          }),
      ),
    );
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}
