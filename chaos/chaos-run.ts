/** What the two chaos runs, in process (`run-chaos.ts`) and over HTTP (`run-http-chaos.ts`), share: options and figures. */

/** The options both runs take, with the same meaning and defaults. */
export interface ChaosRunOptions {
  readonly tasks: number;
  readonly agents: number;
  readonly seed: number;
  readonly endpoints?: { readonly dynamodb: string; readonly sqs: string };
  /** Share of supervisor ticks that run two passes at once. @default 0.1 */
  readonly supervisorDoubling?: number;
  /** Longest wait for every task to end once the faults stop. @default 60 s */
  readonly drainTimeoutMs?: number;
}

/** The figures both runs report: the run's size and seed, how long it took, and the faults injected, by kind. */
export interface ChaosRunFigures {
  readonly tasks: number;
  readonly agents: number;
  readonly seed: number;
  readonly durationMs: number;
  readonly faults: Readonly<Record<string, number>>;
}
