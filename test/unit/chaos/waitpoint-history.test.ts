/**
 * The waitpoint checks on hand-made histories: one waitpoint suspended at 1,000 with its timeout at 61,000, ended
 * once by a callback at 1,100, its duplicate told 200, an operator's other answer told 409, and its resumed claim
 * carrying the callback's body. Each check is shown finding the one thing it is about.
 */
import { describe, expect, it } from 'vitest';
import {
  checkWaitpoints,
  type ResumedClaim,
  UNTIMED,
  type WaitpointAnswer,
  type WaitpointRecords,
  type WaitpointVersion,
  waitpointViolations,
} from '../../../chaos/waitpoint-history';

const taskId = 't_one';
const waitpointId = 'w_one';
const body = { by: 'callback' };

const opened: WaitpointVersion = {
  at: 1_000,
  waitpointId,
  taskId,
  write: 'suspension',
  leaseEpoch: 1,
  status: 'open',
  onTimeout: 'resume',
  timeoutAt: 61_000,
  taskStatus: 'suspended',
};
const completed: WaitpointVersion = {
  ...opened,
  at: 1_100,
  write: 'callback',
  status: 'completed',
  dataJson: JSON.stringify(body),
  taskStatus: 'queued',
};
const answer = (fields: Partial<WaitpointAnswer>): WaitpointAnswer => ({
  waitpointId,
  by: 'callback',
  outcome: 'completed',
  data: body,
  at: 1_050,
  result: 'accepted',
  ...fields,
});
const claim: ResumedClaim = {
  taskId,
  leaseEpoch: 2,
  waitpoint: { id: waitpointId, outcome: 'completed', data: body },
};

/** The clean history, with `changes` made to it. */
function records(changes: Partial<WaitpointRecords> = {}): WaitpointRecords {
  return {
    waitpoints: [opened, completed],
    answers: [
      answer({}),
      answer({ again: true, at: 1_200, result: 'replayed' }),
      answer({ by: 'operator', data: { by: 'operator' }, result: 'refused' }),
    ],
    resumedClaims: [claim],
    tasks: [
      { at: 500, answeredAt: 510, taskId, status: 'leased', leaseEpoch: 1, owner: 'a', leaseDeadline: 2_500 },
      { at: 1_000, answeredAt: 1_010, taskId, status: 'suspended', leaseEpoch: 1 },
      { at: 1_100, answeredAt: 1_110, taskId, status: 'queued', leaseEpoch: 1 },
      // Decided before the end, from a hint received then: it landed after it (it was answered after it was decided).
      {
        at: 1_090,
        answeredAt: 1_120,
        taskId,
        status: 'leased',
        leaseEpoch: 2,
        owner: 'b',
        leaseDeadline: 3_090,
      },
    ],
    finalStatus: new Map([[taskId, 'succeeded']]),
    ...changes,
  };
}

describe('checkWaitpoints', () => {
  it('finds nothing in a waitpoint ended once and answered as the one outcome it holds', () => {
    const verdict = checkWaitpoints(records(), UNTIMED);
    expect(waitpointViolations(verdict)).toBe(0);
    expect(verdict).toMatchObject({
      suspended: 1,
      endedOnce: 1,
      resumed: 1,
      answeredBy: { operator: 0, callback: 1, timeout: 0 },
      duplicateCallbacksOk: 1,
      answers: { accepted: 1, replayed: 1, refused: 1 },
    });
  });

  it('finds a waitpoint ended by two writes, a transaction answered twice being one', () => {
    const again = { ...completed, at: 1_101, write: 'operator', dataJson: '{"by":"operator"}' };
    expect(checkWaitpoints(records({ waitpoints: [opened, completed, completed] }), UNTIMED)).toMatchObject({
      resolvedTwiceCount: 0,
    });
    expect(checkWaitpoints(records({ waitpoints: [opened, completed, again] }), UNTIMED)).toMatchObject({
      resolvedTwiceCount: 1,
      endedOnce: 0,
    });
  });

  it('finds answers told 200 that are not the outcome, its own outcome told 409, and two callers told they ended it', () => {
    const verdict = checkWaitpoints(
      records({
        answers: [
          answer({}),
          answer({ by: 'operator', data: { by: 'operator' }, result: 'accepted' }),
          answer({ at: 1_200, result: 'refused' }),
        ],
      }),
      UNTIMED,
    );
    expect(verdict).toMatchObject({
      answerDisagreementCount: 1,
      sameAnswerRefusedCount: 1,
      acceptedTwiceCount: 1,
    });
  });

  it('finds a replaced token told 200, and counts those told 404', () => {
    const stale = (result: WaitpointAnswer['result']) =>
      answer({ data: { stale: true }, staleToken: true, result });
    const verdict = checkWaitpoints(
      records({ answers: [answer({}), stale('notFound'), stale('accepted')] }),
      UNTIMED,
    );
    expect(verdict).toMatchObject({ staleTokenAcceptedCount: 1, staleTokensRefused: 1 });
  });

  it('finds a claim carrying another outcome than the waitpoint holds', () => {
    const other = { ...claim, waitpoint: { ...claim.waitpoint, data: { by: 'operator' } } };
    expect(
      checkWaitpoints(records({ resumedClaims: [claim, other] }), UNTIMED).resumedDataMismatchCount,
    ).toBe(1);
  });

  it('finds a suspended version that kept an owner or a deadline', () => {
    const tasks = records().tasks.map((v) => (v.status === 'suspended' ? { ...v, owner: 'a' } : v));
    expect(checkWaitpoints(records({ tasks }), UNTIMED).ownerWhileSuspendedCount).toBe(1);
  });

  it('finds a grant that landed before the waitpoint ended, and one after an end that never came', () => {
    const grant = { at: 1_050, answeredAt: 1_060, taskId, status: 'leased', leaseEpoch: 2, owner: 'c' };
    expect(
      checkWaitpoints(records({ tasks: [...records().tasks, grant] }), UNTIMED).grantedWhileSuspendedCount,
    ).toBe(1);
    expect(checkWaitpoints(records({ waitpoints: [opened] }), UNTIMED).grantedWhileSuspendedCount).toBe(1);
  });

  it('finds a waitpoint never ended whose task ended, once the final statuses are read', () => {
    const never = { waitpoints: [opened], answers: [], resumedClaims: [] };
    expect(checkWaitpoints(records({ ...never, finalStatus: new Map() }), UNTIMED).notResumedCount).toBe(0);
    expect(checkWaitpoints(records(never), UNTIMED).notResumedCount).toBe(1);
  });

  describe('timeouts', () => {
    const timedOut = (at: number, fields: Partial<WaitpointVersion> = {}): WaitpointVersion => ({
      ...opened,
      at,
      write: `timeout-${at}`,
      status: 'timedOut',
      taskStatus: 'queued',
      ...fields,
    });
    const ended = (end: WaitpointVersion, onTimeout: 'resume' | 'fail' = 'resume') =>
      checkWaitpoints(
        records({
          waitpoints: [{ ...opened, onTimeout }, end],
          answers: [],
          resumedClaims: [],
          finalStatus: new Map([[taskId, end.taskStatus === 'dead' ? 'dead' : 'succeeded']]),
        }),
        // Passes from 60,800 to 61,050, from 61,100 to 61,600, and from 61,850.
        {
          passes: [
            { start: 61_850, end: 62_100 },
            { start: 60_800, end: 61_050 },
            { start: 61_100, end: 61_600 },
          ],
          slackMs: 5_000,
        },
      );

    it('measures how late each lands, waiting for a pass and in it, and finds one early or past its pass and the slack', () => {
      expect(ended(timedOut(61_400))).toMatchObject({
        timeoutLatenessMs: { p50: 400, max: 400 },
        timeoutPassWaitMs: { p50: 100, max: 100 },
        timeoutInPassMs: { p50: 300, max: 300 },
        answeredBy: { timeout: 1 },
        timeoutEarlyCount: 0,
        timeoutLateCount: 0,
      });
      // Ended by the pass that started at 60,800, before its time: no wait for a pass.
      expect(ended(timedOut(61_020))).toMatchObject({
        timeoutPassWaitMs: { max: 0 },
        timeoutInPassMs: { max: 20 },
        timeoutLateCount: 0,
      });
      expect(ended(timedOut(60_999)).timeoutEarlyCount).toBe(1);
      // The first pass to start after 61,000 ended at 61,600: 5 s later is the latest.
      expect(ended(timedOut(66_600)).timeoutLateCount).toBe(0);
      expect(ended(timedOut(66_601)).timeoutLateCount).toBe(1);
    });

    it('finds one that did not move its task as onTimeout says', () => {
      const dead = { taskStatus: 'dead', taskError: 'WaitpointTimeout: w_one timed out' };
      expect(ended(timedOut(61_400, dead), 'fail').timeoutEndMismatchCount).toBe(0);
      expect(ended(timedOut(61_400), 'fail').timeoutEndMismatchCount).toBe(1);
      expect(ended(timedOut(61_400, { ...dead, taskError: 'other' }), 'fail').timeoutEndMismatchCount).toBe(
        1,
      );
      expect(ended(timedOut(61_400, dead), 'resume').timeoutEndMismatchCount).toBe(1);
    });
  });
});
