/**
 * A wait that ends early, without error, when `signal` aborts: loops check their own state after it.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    // setTimeout overflows past 2^31 - 1 ms and would fire at once.
    const timer = setTimeout(done, Math.min(ms, 2_147_483_647));
    signal?.addEventListener('abort', done, { once: true });
  });
}
