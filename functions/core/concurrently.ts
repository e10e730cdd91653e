/**
 * Bounded concurrency for the sweeps: a pass looks at up to `sweepLimit` items per shard, each a few requests
 * long. One at a time, a pass under load took minutes and left expired leases and lost hints waiting; all at
 * once, it would burst past what a table partition or a Lambda's sockets take.
 */
export const SWEEP_CONCURRENCY = 8;

/** Runs `work` on every item, at most `limit` at once. `work` handles its own errors. */
export async function eachConcurrently<T>(
  items: Iterable<T>,
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  const iterator = items[Symbol.iterator]();
  const worker = async () => {
    for (let next = iterator.next(); !next.done; next = iterator.next()) await work(next.value);
  };
  await Promise.all(Array.from({ length: Math.max(1, limit) }, worker));
}
