/**
 * The chaos supervisor: one pass after another, a tick apart, as the scheduled function runs; and, at the rate
 * asked for, a tick whose pass is run twice at once, as when EventBridge Scheduler delivers an invocation twice.
 *
 * The duplicates are drawn per tick, as at-least-once delivery duplicates invocations: a tick in ten doubled is two
 * passes at once a tenth of the time, never more. Drawn on a clock of their own instead (a pair every ten ticks of
 * time, whatever the passes took), a pass that took seconds under load overlapped a pair nearly always, so three
 * passes ran at once and each queued task's next look was written three times over (a 2,000-task run: 1,807 of
 * its 1,976 tasks looked at had exactly three such writes, within a third of a second of each other).
 */
export interface SupervisorLoop {
  /** Passes run, doubled ones included, and the ticks whose pass ran twice. */
  readonly passes: number;
  readonly doubled: number;
  stop(): Promise<void>;
}

export function superviseUnderChaos(options: {
  readonly pass: () => Promise<unknown>;
  readonly tickMs: number;
  /** Share of ticks (while the faults last) whose pass runs twice at once. */
  readonly doublingShare: number;
  readonly faultsOn: () => boolean;
}): SupervisorLoop {
  let stopping = false;
  let passes = 0;
  let doubled = 0;
  /** Ticks while the faults last. */
  let ticks = 0;
  const pass = () => {
    passes++;
    return options.pass().catch(() => undefined);
  };
  const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  // Spread evenly rather than drawn, the first tick of the faults included, so a short run has one too: the tick
  // that takes the running count of doubled ticks up to its share.
  const isDoubled = (tick: number) =>
    Math.ceil(tick * options.doublingShare) > Math.ceil((tick - 1) * options.doublingShare);
  const loop = (async () => {
    while (!stopping) {
      if (options.faultsOn() && isDoubled(++ticks)) {
        doubled++;
        await Promise.all([pass(), pass()]);
      } else await pass();
      await wait(options.tickMs);
    }
  })();
  return {
    get passes() {
      return passes;
    },
    get doubled() {
      return doubled;
    },
    async stop() {
      stopping = true;
      await loop;
    },
  };
}
