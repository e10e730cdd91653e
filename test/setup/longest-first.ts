/**
 * Runs the longest files first, across projects, so that the two workers finish together. Vitest's own order runs
 * the projects one after another and, with no cache of earlier runs (a fresh clone, as in CI), each project's files
 * by size: the 220 s race file, small as it is, started after most others and ran alone for its last two minutes.
 *
 * A file's expected time is the one vitest's cache recorded for it when there is one, else the figure below, else
 * nothing (it runs after the files known to be long, larger files first). Only the order depends on these figures.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each file took on a quiet two-core machine, for the files of 10 s or more. */
const EXPECTED_SECONDS: Readonly<Record<string, number>> = {
  'test/integration/core/race.test.ts': 240,
  'test/integration/chaos-http.test.ts': 50,
  'test/integration/chaos-http-mutants.test.ts': 75,
  'test/integration/chaos.test.ts': 95,
  'test/e2e/packages.test.ts': 100,
  'test/integration/core/fairness.test.ts': 72,
  'test/integration/chaos-controls.test.ts': 48,
  'test/peers/bullmq.test.ts': 37,
  'test/e2e/cli.test.ts': 32,
  'test/integration/core/role-handover.test.ts': 27,
  'test/integration/core/payload-lifetimes.test.ts': 27,
  'test/integration/fuzz.test.ts': 26,
  'test/peers/hatchet.test.ts': 26,
  'test/infra/bundles.test.ts': 21,
  'test/integration/bench-idle.test.ts': 20,
  'test/integration/core/expiry.test.ts': 20,
  'test/e2e/sdk-roles.test.ts': 18,
  'test/e2e/console-browser.test.ts': 18,
  'test/e2e/sdk-lost-answers.test.ts': 17,
  'test/integration/core/queue-limits.test.ts': 16,
  'test/peers/fluid.test.ts': 15,
  'test/integration/core/schedules.test.ts': 13,
  'test/infra/agent-scheduler.test.ts': 13,
  'test/e2e/push.test.ts': 12,
  'test/integration/core/model.test.ts': 11,
  'test/integration/core/claiming.test.ts': 10,
  'test/integration/core/dependencies.test.ts': 10,
  'test/e2e/sdk-worker.test.ts': 10,
  'test/integration/core/key-distribution.test.ts': 10,
  'test/e2e/sdk-bodies.test.ts': 10,
  'test/infra/push-channel.test.ts': 10,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const expected = (spec: TestSpecification) => {
      const path = relative(config.root, spec.moduleId);
      const cached = cache.getFileTestResults(`${spec.project.name}:${path}`)?.duration;
      return cached === undefined ? (EXPECTED_SECONDS[path] ?? 0) * 1_000 : cached;
    };
    const size = (spec: TestSpecification) =>
      cache.getFileStats(`${spec.project.name}:${relative(config.root, spec.moduleId)}`)?.size ?? 0;
    const sorted = [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        expected(b) - expected(a) ||
        size(b) - size(a),
    );
    return sorted;
  }
}
