/** A read, HEAD or delete on the uploads bucket not answered within this long fails the run (retried later). */
const R2_TIMEOUT_MS = 30_000;

/** An R2 binding call bounded in time: a bucket that does not answer fails this run instead of holding it. */
export async function r2Call<T>(what: string, call: Promise<T>, timeoutMs = R2_TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`R2 ${what} did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
