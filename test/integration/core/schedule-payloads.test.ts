/**
 * A schedule whose task carries a large payload: whoever submits its occurrences (the schedule-fire function for
 * a fire, the supervisor for a missed run) writes the payload to the payload bucket, as a submit does.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seededRandom } from '#local/seeded-random';
import { createTestStack, fireAsFunction, type TestStack } from '#test/stack';

const START = Date.UTC(2027, 5, 1, 9, 0, 0);

/** Random base64 text: deflate cannot bring it under the 10 KB past which payloads go to S3. */
function randomText(bytes: number): string {
  const random = seededRandom(3);
  return Buffer.from(Array.from({ length: bytes }, () => Math.floor(random() * 256)))
    .toString('base64')
    .slice(0, bytes);
}

describe('schedules with large payloads', () => {
  let stack: TestStack;
  const schedule = {
    name: 'large-hourly',
    expression: 'rate(1 hour)',
    task: { queue: 'work', payload: { text: randomText(20_000) } },
    overlap: 'allowAll',
    missedRuns: 'runOnce',
  };

  beforeAll(async () => {
    stack = await createTestStack({
      payloadBucket: true,
      declaredSchedules: [schedule],
      settings: { missedRunGraceSeconds: 60 },
    });
    stack.clock.offsetMs = START - Date.now();
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('a fire and a missed run each store the payload as an object, and a claim reads it back whole', async () => {
    const { scheduler, clock } = stack;
    const fired = await fireAsFunction(stack.ctx, {
      ...schedule,
      schedule: schedule.name,
      scheduledTime: new Date(START).toISOString(),
    });
    clock.advance(2 * 3_600_000 + 120_000);
    const cycle = await scheduler.supervise();

    expect(cycle).toMatchObject({ missedRunsFired: 1 });
    const firstTask = await scheduler.getTask(fired.taskId ?? '');
    expect(firstTask).toMatchObject({ payloadInObject: true });
    const { tasks } = await scheduler.listTasks({ queue: 'work' });
    expect(tasks).toHaveLength(2);
    for (const task of tasks) expect(task.payloadInObject).toBe(true);
    const [payload] = (await stack.ctx.payloads.getPayloads([firstTask])).values();
    expect(JSON.parse(payload ?? '{}')).toEqual(schedule.task.payload);
  });
});
