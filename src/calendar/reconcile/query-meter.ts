/** A D1 binding that counts the statements prepared through it: one per query run. */
export function metered(d1: D1Database): { d1: D1Database; queries: () => number } {
  let queries = 0;
  const proxy = new Proxy(d1, {
    get(target, prop) {
      if (prop === "prepare")
        return (query: string) => {
          queries++;
          return target.prepare(query);
        };
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { d1: proxy, queries: () => queries };
}
