/**
 * A turn back from a hold for its lane's quiet time: let go without a write when the slot names another turn, and
 * then not counted as its lane's turn in the claim, so the turn that replaced it, received beside it, is passed on.
 */
import { describe, expect, it } from 'vitest';
import type { SchedulerContext } from '#core/context';
import { takeTurns } from '#core/turns';
import type { ReceivedTurn } from '#domain/hint';

const turn = (token: string, held: boolean): ReceivedTurn => ({
  queue: 'q',
  priority: 'normal',
  keyHash: 'k'.repeat(22),
  token,
  waits: 0,
  ...(held ? { held } : {}),
  receiptHandle: `r-${token}`,
  messageId: `m-${token}`,
  receiveCount: 1,
});

/** A lane with one claimable task whose slot names `slotToken`; the slot reads it saw. */
function laneWith(slotToken: string) {
  const reads: { consistent?: boolean }[] = [];
  const lanes = {
    laneTasks: async () => [{ taskId: 't_task', readyAt: 0 }],
    turnSlot: async (_laneId: string, options: { consistent?: boolean } = {}) => {
      reads.push(options);
      return { token: slotToken };
    },
  };
  return { ctx: { lanes } as unknown as SchedulerContext, reads };
}

describe('a turn back from a hold for its lane’s quiet time', () => {
  it('goes when another turn replaced it, and the one that did takes the lane’s task', async () => {
    const { ctx, reads } = laneWith('live');
    const [old, live] = await takeTurns(ctx, [turn('old', true), turn('live', false)], 1, 0);
    expect(old).toMatchObject({ duplicate: true, hints: [] });
    expect(live?.duplicate).toBeFalsy();
    expect(live?.hints.map((h) => h.taskId)).toEqual(['t_task']);
    expect(reads).toEqual([{ consistent: true }]);
  });

  it('takes its lane’s task when the slot is still its own; a fresh turn reads no slot', async () => {
    const held = laneWith('old');
    const [own] = await takeTurns(held.ctx, [turn('old', true)], 1, 0);
    expect(own?.hints.map((h) => h.taskId)).toEqual(['t_task']);
    const fresh = laneWith('other');
    const [taken] = await takeTurns(fresh.ctx, [turn('fresh', false)], 1, 0);
    expect(taken?.hints.map((h) => h.taskId)).toEqual(['t_task']);
    expect(fresh.reads).toEqual([]);
  });
});

describe('two turns of one lane received by one claim', () => {
  it('the one the slot names is the lane’s turn, whatever the order; the other only goes', async () => {
    // A turn replaced by another (a lease's end brought the lane's turn forward) is still in the queue: received
    // first beside the live one, it took the lane's tasks and the live one was deleted as its duplicate, and when
    // the replaced turn could not go back in line (the slot names the live one) the lane was left without a turn.
    const { ctx, reads } = laneWith('live');
    const [stale, live] = await takeTurns(ctx, [turn('stale', false), turn('live', false)], 2, 0);
    expect(stale).toMatchObject({ duplicate: true, hints: [] });
    expect(live?.duplicate).toBeFalsy();
    expect(live?.hints.map((h) => h.taskId)).toEqual(['t_task']);
    expect(reads).toEqual([{ consistent: true }]);
  });

  it('when the slot names neither, the first is the lane’s turn', async () => {
    const { ctx } = laneWith('another');
    const [first, second] = await takeTurns(ctx, [turn('a', false), turn('b', false)], 2, 0);
    expect(first?.hints.map((h) => h.taskId)).toEqual(['t_task']);
    expect(second).toMatchObject({ duplicate: true, hints: [] });
  });
});
