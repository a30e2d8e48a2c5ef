/**
 * A batch's file copies at once, shared fairly between agencies: while several
 * agencies have deliveries running, each holds at most its share of the slots, and a
 * freed slot goes to the longest-waiting copy whose agency is under its share. So one
 * agency's multi-gigabyte files never hold every slot while another agency waits.
 */
export interface CopySlots {
  /** A delivery of `agency` is in the batch: the shares are recounted. */
  join(agency: string): void;
  /** That delivery ended: the shares are recounted, and waiting copies may start. */
  leave(agency: string): void;
  acquire(agency: string): Promise<void>;
  release(agency: string): void;
}

export function copySlots(total: number): CopySlots {
  let free = total;
  const held = new Map<string, number>();
  const running = new Map<string, number>();
  const waiting: { agency: string; start: () => void }[] = [];
  const add = (map: Map<string, number>, key: string, n: number) => {
    const next = (map.get(key) ?? 0) + n;
    if (next > 0) map.set(key, next);
    else map.delete(key);
  };
  const share = () => Math.max(1, Math.floor(total / Math.max(1, running.size)));
  const grant = () => {
    for (let i = 0; i < waiting.length && free > 0; ) {
      const w = waiting[i]!;
      if ((held.get(w.agency) ?? 0) >= share()) {
        i++;
        continue;
      }
      waiting.splice(i, 1);
      free--;
      add(held, w.agency, 1);
      w.start();
    }
  };
  return {
    join: (agency) => add(running, agency, 1),
    leave: (agency) => {
      add(running, agency, -1);
      grant();
    },
    acquire: (agency) =>
      new Promise<void>((start) => {
        waiting.push({ agency, start });
        grant();
      }),
    release: (agency) => {
      free++;
      add(held, agency, -1);
      grant();
    },
  };
}
