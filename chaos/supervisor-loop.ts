/**
 * The chaos supervisor: one pass after another, a tick apart, as the scheduled function runs; and, at the rate
 * asked for, two passes started at the same instant, as when a scheduled invocation is delivered twice.
 *
 * The doubled passes keep a clock of their own: counting them per pass made the rate depend on how long a pass
 * takes, and a pass under load takes seconds (one run doubled once in 80 s where one tick in ten was meant).
 */
export interface SupervisorLoop {
  /** Passes run, doubled ones included, and the times two were started together. */
  readonly passes: number;
  readonly doubled: number;
  stop(): Promise<void>;
}

export function superviseUnderChaos(options: {
  readonly pass: () => Promise<unknown>;
  readonly tickMs: number;
  /** Doubled starts per tick of time. */
  readonly doublingShare: number;
  readonly faultsOn: () => boolean;
}): SupervisorLoop {
  let stopping = false;
  let passes = 0;
  let doubled = 0;
  const pass = () => {
    passes++;
    return options.pass().catch(() => undefined);
  };
  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const single = (async () => {
    while (!stopping) {
      await pass();
      await wait(options.tickMs);
    }
  })();
  const inFlight = new Set<Promise<unknown>>();
  const doubling =
    options.doublingShare > 0
      ? setInterval(() => {
          // At most one doubled pair at a time: a pass slower than the doubling period would otherwise pile
          // passes up without bound, where a deployed supervisor's passes are bounded by its function's timeout.
          if (stopping || !options.faultsOn() || inFlight.size > 0) return;
          doubled++;
          const both = Promise.all([pass(), pass()]);
          inFlight.add(both);
          void both.finally(() => inFlight.delete(both));
        }, options.tickMs / options.doublingShare)
      : undefined;
  return {
    get passes() {
      return passes;
    },
    get doubled() {
      return doubled;
    },
    async stop() {
      stopping = true;
      clearInterval(doubling);
      await Promise.all([single, ...inFlight]);
    },
  };
}
