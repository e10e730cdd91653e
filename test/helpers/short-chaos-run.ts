import { type ChaosOptions, type ChaosReport, runChaos } from '../../chaos/run-chaos';

/** A short in-process chaos run: 100 tasks, 8 agents, seed 11, half the supervisor ticks doubled. */
export const shortChaosRun = (
  endpoints: ChaosOptions['endpoints'],
  options: Partial<ChaosOptions>,
): Promise<ChaosReport> =>
  runChaos({
    tasks: 100,
    agents: 8,
    seed: 11,
    endpoints,
    supervisorDoubling: 0.5,
    drainTimeoutMs: 20_000,
    ...options,
  });
