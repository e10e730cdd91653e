import { describe, expect, it } from 'vitest';
import type { TestSpecification, Vitest } from 'vitest/node';
import LongestFirst from '../../setup/longest-first';

const ROOT = '/repo';

/** A file of `project`, in the group `groupOrder`. */
const spec = (path: string, project = 'integration', groupOrder = 0) =>
  ({
    moduleId: `${ROOT}/${path}`,
    project: { name: project, config: { sequence: { groupOrder } } },
  }) as unknown as TestSpecification;

/** Vitest's context, with the durations of earlier runs and the file sizes it keeps. */
const sequencer = (durations: Record<string, number> = {}, sizes: Record<string, number> = {}) =>
  new LongestFirst({
    config: { root: ROOT },
    cache: {
      getFileTestResults: (key: string) =>
        durations[key] === undefined ? undefined : { duration: durations[key], failed: false },
      getFileStats: (key: string) => (sizes[key] === undefined ? undefined : { size: sizes[key] }),
    },
  } as unknown as Vitest);

const paths = (specs: TestSpecification[]) => specs.map((s) => s.moduleId.slice(ROOT.length + 1));

describe('longest files first', () => {
  it('runs the files known to be long first, across projects, then the rest by size', async () => {
    const sorted = await sequencer(
      {},
      { 'unit:test/unit/a.test.ts': 900, 'unit:test/unit/b.test.ts': 100 },
    ).sort([
      spec('test/unit/b.test.ts', 'unit'),
      spec('test/e2e/cli.test.ts'),
      spec('test/unit/a.test.ts', 'unit'),
      spec('test/integration/core/race.test.ts'),
      spec('test/infra/bundles.test.ts', 'infra'),
    ]);
    expect(paths(sorted)).toEqual([
      'test/integration/core/race.test.ts',
      'test/e2e/cli.test.ts',
      'test/infra/bundles.test.ts',
      'test/unit/a.test.ts',
      'test/unit/b.test.ts',
    ]);
  });

  it('prefers what an earlier run on this machine measured, and keeps a later group after an earlier one', async () => {
    const sorted = await sequencer({
      'integration:test/integration/new.test.ts': 400_000,
      'integration:test/integration/core/race.test.ts': 1_000,
    }).sort([
      spec('test/integration/chaos.test.ts', 'timed', 1),
      spec('test/integration/core/race.test.ts'),
      spec('test/e2e/packages.test.ts'),
      spec('test/integration/new.test.ts'),
    ]);
    expect(paths(sorted)).toEqual([
      'test/integration/new.test.ts',
      'test/e2e/packages.test.ts',
      'test/integration/core/race.test.ts',
      'test/integration/chaos.test.ts',
    ]);
  });
});
