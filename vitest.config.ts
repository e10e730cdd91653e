import { defineConfig } from 'vitest/config';
import LongestFirst from './test/setup/longest-first.ts';

// Local tooling runs on Node 20; the functions themselves run on Node 22 in Lambda.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * Files whose verdict depends on how fast this machine runs them run after everything else:
 * - first the chaos runs (faults timed against lease TTLs of a few seconds, every agent in one process), two files
 *   at a time: each keeps about one core busy. The runs through HTTP and their mutants are files of their own, so
 *   the two workers can share them out (as one file, 127 s, it ran alone for its last 30 s beside the in-process
 *   file's 75 s and the fuzz run's 22 s; split, the mutants' seeds tried one after another took 78 s in one run).
 *   The fuzz run (thousands of hostile requests, nothing timed) takes its turn with them;
 * - then, one at a time, the local start's 15 s readiness bound and the held-back tasks' start within a second of
 *   their time.
 * Everything else runs two files at a time (projects that run together must have the same `maxWorkers`). Three kept
 * the cores busier while the files mostly waited on timers and leases, but the suite has long been bound by the CPU:
 * a file's agents, heartbeats and supervisor passes run for as long as the file does, so a file stretched by a third
 * neighbour makes more requests, and each worker loads the modules once more. Twelve mid-sized integration files took
 * 114, 137 and 164 CPU seconds one, two and three at a time (144, 101 and 96 s); the whole `npm test` 1,485 CPU
 * seconds with two against 1,661 with three, in the same time.
 *
 * Unit and integration files share their worker's modules (`isolate: false`): each file loaded the AWS SDK and
 * the sources again, 200 CPU seconds of the run's 1,430 and 80 s of its 810. A file that changes what is shared
 * (a client's prototype mocked, the environment stubbed) restores it in its `afterAll`; none mocks modules.
 */
const chaos = [
  'test/integration/chaos.test.ts',
  'test/integration/chaos-http.test.ts',
  'test/integration/chaos-http-mutants.test.ts',
];
const besideChaos = ['test/integration/fuzz.test.ts'];
const punctual = ['test/e2e/npm-start.test.ts', 'test/e2e/on-time.test.ts'];
const emulators = ['test/setup/emulators.ts'];

export default defineConfig({
  test: {
    reporters: ['default', './test/setup/summary-reporter.ts'],
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          setupFiles: ['test/setup/sdk-matchers.ts'],
          maxWorkers: 2,
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'infra',
          include: ['test/infra/**/*.test.ts'],
          testTimeout: 60_000,
          // The whole stack is synthesized once per file, with cdk-nag: tens of seconds on two busy cores.
          hookTimeout: 60_000,
          maxWorkers: 2,
          // aws-cdk-lib is loaded once per worker, not once per file (35 s to 25 s for the project).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // test/peers: the peers' workflow suites (BullMQ, Hatchet, Fluid) ported to our API, run as a user would.
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/peers/**/*.test.ts'],
          exclude: [...chaos, ...besideChaos, ...punctual],
          globalSetup: emulators,
          testTimeout: 120_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'chaos',
          include: [...chaos, ...besideChaos],
          globalSetup: emulators,
          testTimeout: 120_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'punctual',
          include: punctual,
          globalSetup: emulators,
          testTimeout: 120_000,
          hookTimeout: 60_000,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
