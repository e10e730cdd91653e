/**
 * What every lane store promises (the port `LaneStore`), as one suite over the DynamoDB adapter and the fake: a
 * lane lists its queued tasks oldest first, and a lane's turn slot holds one turn at a time.
 */
import { describe, expect, it, vi } from 'vitest';
import type { LaneStore } from '#core/ports/lane-store';
import type { TaskStore } from '#core/ports/task-store';
import { laneOf } from '#domain/lanes';
import type { Task } from '#domain/task';
import { newTask, QUEUE } from './task-store-contract';

export interface LanesUnderTest {
  readonly lanes: LaneStore;
  readonly tasks: TaskStore;
  now(): number;
}

let keys = 0;
const newKey = () => `contract-${process.pid}-${Date.now()}-${keys++}`;

export function laneStoreContract(name: string, subject: () => LanesUnderTest): void {
  describe(`the lane store contract: ${name}`, () => {
    it('lists a lane’s queued tasks by the time each becomes claimable, up to a time if given; a grant takes one out', async () => {
      const { lanes, tasks, now } = subject();
      const key = newKey();
      const at = now();
      const later: Task = { ...newTask(at), concurrencyKey: key, notBefore: at + 60_000 };
      const first: Task = { ...newTask(at), concurrencyKey: key };
      const second: Task = { ...newTask(at + 1), concurrencyKey: key, createdAt: at + 1 };
      const other: Task = { ...newTask(at), concurrencyKey: newKey() };
      for (const task of [later, first, second, other]) await tasks.create(task, at);
      const laneId = laneOf(first)?.laneId ?? '';
      // An index read, a moment behind the writes.
      await vi.waitFor(async () =>
        expect(await lanes.laneTasks(laneId, undefined, 10)).toEqual([
          { taskId: first.taskId, readyAt: at },
          { taskId: second.taskId, readyAt: at + 1 },
          { taskId: later.taskId, readyAt: at + 60_000 },
        ]),
      );
      expect(await lanes.laneTasks(laneId, at + 1, 1)).toEqual([{ taskId: first.taskId, readyAt: at }]);
      await tasks.grant(
        first.taskId,
        { queue: QUEUE, agentId: 'a_contract', sessionId: 's_contract' },
        now(),
      );
      await vi.waitFor(async () =>
        expect((await lanes.laneTasks(laneId, at + 1, 10)).map((entry) => entry.taskId)).toEqual([
          second.taskId,
        ]),
      );
    });

    it('holds one turn at a time: taken only over the turn it replaces, held and freed only by its own', async () => {
      const { lanes, now } = subject();
      const laneId = `${QUEUE}#normal#${newKey()}`;
      const at = now();
      expect(await lanes.takeTurnSlot(laneId, { token: 'one', visibleAt: at + 5, now: at }, undefined)).toBe(
        true,
      );
      expect(await lanes.takeTurnSlot(laneId, { token: 'two', visibleAt: at, now: at }, undefined)).toBe(
        false,
      );
      expect(await lanes.holdTurnSlot(laneId, 'two', at + 9, at)).toBe(false);
      // Held only if a task was offered since a time: none was yet.
      expect(await lanes.holdTurnSlot(laneId, 'one', at + 9, at + 1, at)).toBe(false);
      expect(await lanes.holdTurnSlot(laneId, 'one', at + 9, at + 1)).toBe(true);
      expect(await lanes.turnSlot(laneId)).toEqual({ token: 'one', visibleAt: at + 9, heldAt: at + 1 });
      expect(await lanes.noteOffer(laneId, at + 2)).toEqual({
        token: 'one',
        visibleAt: at + 9,
        heldAt: at + 1,
        lastOfferAt: at + 2,
      });
      expect(await lanes.freeTurnSlot(laneId, 'two', at + 3)).toBe('superseded');
      expect(await lanes.freeTurnSlot(laneId, 'one', at + 2)).toBe('offered');
      expect(await lanes.freeTurnSlot(laneId, 'one', at + 3)).toBe('freed');
      expect(await lanes.noteOffer(laneId, at + 4)).toEqual({ lastOfferAt: at + 4 });
      expect(await lanes.turnSlot(`${laneId}-none`)).toEqual({});
      expect(await lanes.takeTurnSlot(laneId, { token: 'two', visibleAt: at, now: at }, 'one')).toBe(false);
      expect(await lanes.takeTurnSlot(laneId, { token: 'two', visibleAt: at, now: at }, undefined)).toBe(
        true,
      );
    });

    it('an offer takes an empty slot for its own turn in the same write, and leaves a held one as it is', async () => {
      const { lanes, now } = subject();
      const laneId = `${QUEUE}#normal#${newKey()}`;
      const at = now();
      const taken = { token: 'mine', visibleAt: at + 7, heldAt: at, lastOfferAt: at };
      expect(await lanes.noteOffer(laneId, at, { token: 'mine', visibleAt: at + 7 })).toEqual(taken);
      expect(await lanes.turnSlot(laneId)).toEqual(taken);
      // Held: the next offer records itself only.
      expect(await lanes.noteOffer(laneId, at + 1, { token: 'yours', visibleAt: at + 1 })).toEqual({
        ...taken,
        lastOfferAt: at + 1,
      });
      expect(await lanes.takeTurnSlot(laneId, { token: 'yours', visibleAt: at, now: at }, undefined)).toBe(
        false,
      );
      expect(await lanes.freeTurnSlot(laneId, 'mine', at + 2)).toBe('freed');
      expect(await lanes.noteOffer(laneId, at + 3, { token: 'yours', visibleAt: at + 3 })).toMatchObject({
        token: 'yours',
        heldAt: at + 3,
      });
    });
  });
}
