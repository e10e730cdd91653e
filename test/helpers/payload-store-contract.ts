/**
 * What every payload store promises (the port `PayloadStore`), as one suite over the DynamoDB adapter and the
 * fake: a payload and its `onFailure` are found by the task and its specification, taken back whole, and kept
 * longer (never shorter) with the time recorded on the task.
 */
import { describe, expect, it } from 'vitest';
import type { PayloadStore } from '#core/ports/payload-store';
import type { TaskStore } from '#core/ports/task-store';
import { TASK_STATUSES } from '#domain/task-status';
import { newTask, taskInStatus } from './task-store-contract';

export interface PayloadsUnderTest {
  readonly payloads: PayloadStore;
  readonly tasks: TaskStore;
  now(): number;
}

export function payloadStoreContract(name: string, subject: () => PayloadsUnderTest): void {
  describe(`the payload store contract: ${name}`, () => {
    it.each([
      ['1', {}],
      ['2 (the payload item is the list entry)', { payloadListed: true }],
    ])(
      'layout %s: finds a payload and its onFailure by the task and its specification, until taken back',
      async (_, layout) => {
        const { payloads, now } = subject();
        const purgeAt = Math.ceil(now() / 1_000) + 3_600;
        const task = { ...newTask(now()), ...layout };
        const plain = { ...newTask(now()), ...layout };
        const onFailureJson = JSON.stringify({ queue: 'contract', payload: { why: 'died' } });
        const owner = (t: typeof task) => ({
          taskId: t.taskId,
          specHash: t.specHash,
          queue: t.queue,
          createdAt: t.createdAt,
          ...layout,
        });
        await payloads.putPayloads([
          { ...owner(task), payloadJson: '{"n":1}', onFailureJson, purgeAt },
          { ...owner(plain), payloadJson: '[]', purgeAt },
        ]);
        const found = await payloads.getPayloads([
          task,
          plain,
          { ...task, specHash: 'other' },
          // The same task written by the other layout: not this item.
          { ...task, payloadListed: !task.payloadListed },
        ]);
        expect(Object.fromEntries(found)).toEqual({ [task.taskId]: '{"n":1}', [plain.taskId]: '[]' });
        expect(await payloads.getOnFailure(task)).toBe(onFailureJson);
        expect(await payloads.getOnFailure(plain)).toBeUndefined();
        await payloads.deletePayload(task);
        expect(await payloads.getPayloads([task])).toEqual(new Map());
        expect(await payloads.getOnFailure(task)).toBeUndefined();
      },
    );

    it('keeps a payload longer, never shorter, in every status, and records the time on the task; a missing task stays missing', async () => {
      const { payloads, tasks, now } = subject();
      const purgeAt = Math.ceil(now() / 1_000) + 86_400;
      // A task is suspended by the waitpoint store (`waitpoints.test.ts`).
      for (const status of TASK_STATUSES.filter((s) => s !== 'suspended')) {
        const task = await taskInStatus(tasks, now, status);
        await payloads.keepPayload(task, purgeAt);
        expect(await tasks.get(task.taskId)).toMatchObject({ status, payloadPurgeAt: purgeAt });
        await payloads.keepPayload(task, purgeAt - 60);
        expect((await tasks.get(task.taskId))?.payloadPurgeAt).toBe(purgeAt);
      }
      const missing = newTask(now());
      await payloads.keepPayload(missing, purgeAt);
      expect(await tasks.get(missing.taskId)).toBeUndefined();
    });
  });
}
