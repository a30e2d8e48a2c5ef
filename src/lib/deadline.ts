/**
 * `work`'s answer, or `onTimeout()`'s error once `ms` have passed, whichever comes first:
 * a call that ignores its abort signal still cannot hold its caller past the deadline.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
