/**
 * Missed schedule occurrences (the scheduler was down for three hours) handled by each missed-run policy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readOccurrences } from '#core/occurrences';
import { createTestStack, fireAsFunction, type TestStack } from '#test/stack';

const START = Date.UTC(2027, 3, 1, 9, 0, 0);

describe('missed runs', () => {
  let stack: TestStack;
  const declared = ['skip', 'runOnce', 'runAll'].map((policy) => ({
    name: `hourly-${policy}`,
    expression: 'rate(1 hour)',
    task: { queue: 'work' },
    overlap: 'allowAll',
    missedRuns: policy,
  }));

  beforeAll(async () => {
    stack = await createTestStack({ declaredSchedules: declared, settings: { missedRunGraceSeconds: 60 } });
    // The test clock starts at the first occurrence.
    stack.clock.offsetMs = START - Date.now();
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('skip records them, runOnce runs the latest, runAll runs each', async () => {
    const { scheduler, clock, ctx } = stack;
    for (const schedule of declared) {
      await fireAsFunction(ctx, {
        ...schedule,
        schedule: schedule.name,
        scheduledTime: new Date(START).toISOString(),
      });
    }
    // Down for three hours and a bit: 10:00, 11:00 and 12:00 were never fired.
    clock.advance(3 * 3_600_000 + 120_000);

    const cycle = await scheduler.supervise();
    const again = await scheduler.supervise();

    const statuses = async (name: string) =>
      (await readOccurrences(ctx, name)).map(
        (o) => `${o.scheduledTime.slice(11, 16)} ${o.status}${o.reason ? ` ${o.reason}` : ''}`,
      );
    expect(await statuses('hourly-skip')).toEqual([
      '12:00 skipped missed',
      '11:00 skipped missed',
      '10:00 skipped missed',
      '09:00 fired',
    ]);
    expect(await statuses('hourly-runOnce')).toEqual([
      '12:00 fired',
      '11:00 skipped missed',
      '10:00 skipped missed',
      '09:00 fired',
    ]);
    expect(await statuses('hourly-runAll')).toEqual([
      '12:00 fired',
      '11:00 fired',
      '10:00 fired',
      '09:00 fired',
    ]);
    expect(cycle).toMatchObject({ missedRunsFired: 4, missedRunsSkipped: 5 });
    // A second pass finds nothing more to do.
    expect(again).toMatchObject({ missedRunsFired: 0, missedRunsSkipped: 0 });
  });
});
