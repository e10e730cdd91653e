import { defineConfig } from 'vitest/config';
import LongestFirst from './test/setup/longest-first.ts';

// Local tooling runs on Node 20; the functions themselves run on Node 22 in Lambda.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * Files whose verdict depends on how fast this machine runs them: the chaos runs (faults timed against lease TTLs
 * of a few seconds, every agent in one process), the local start's 15 s readiness bound and the held-back tasks'
 * start within a second of their time. They run last, one at
 * a time, with both cores to themselves; everything else runs two files at a time.
 */
const timed = [
  'test/integration/chaos.test.ts',
  'test/integration/chaos-http.test.ts',
  'test/e2e/npm-start.test.ts',
  'test/e2e/on-time.test.ts',
];
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
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // test/peers: the peers' workflow suites (BullMQ, Hatchet, Fluid) ported to our API, run as a user would.
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts', 'test/peers/**/*.test.ts'],
          exclude: timed,
          globalSetup: emulators,
          testTimeout: 120_000,
          hookTimeout: 60_000,
          maxWorkers: 2,
        },
      },
      {
        extends: true,
        test: {
          name: 'timed',
          include: timed,
          globalSetup: emulators,
          testTimeout: 120_000,
          hookTimeout: 60_000,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
