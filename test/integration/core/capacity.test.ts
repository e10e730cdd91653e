/**
 * (f) A task costs the same write units for a 1 KB and a 200 KB payload: the payload is written once, in an item
 * of its own, deflated, and a large one in S3. Units as DynamoDB reports them (`ReturnConsumedCapacity: INDEXES`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomTextPayload, seededRandom } from '#local/seeded-random';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

type Step = 'submit' | 'claim' | 'heartbeat' | 'complete';

describe('capacity per step', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await createTestStack({ queues: ['small', 'large'], payloadBucket: true });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  async function measure(queue: string, payloadBytes: number) {
    const { scheduler, meter } = stack;
    const agent = await startAgent(scheduler, { queues: [queue] });
    const units: Record<Step, { write: number; read: number; indexWrite: number; requests: string }> =
      {} as never;
    const step = async (name: Step, work: () => Promise<unknown>) => {
      meter.reset();
      await work();
      const totals = meter.totals((r) => r.service === 'dynamodb');
      const sqs = meter.totals((r) => r.service === 'sqs').requests;
      const s3 = meter.totals((r) => r.service === 's3').requests;
      units[name] = {
        write: totals.writeUnits,
        read: totals.readUnits,
        indexWrite: totals.indexWriteUnits,
        requests: `${totals.requests} dynamodb + ${sqs} sqs + ${s3} s3`,
      };
    };
    const payload = randomTextPayload(payloadBytes, seededRandom(payloadBytes));
    let claimedPayload: unknown;
    let taskId = '';
    let leaseEpoch = 0;
    await step('submit', async () => {
      taskId = (await scheduler.submit({ queue, payload })).task.taskId;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // A process keeps the scheduler's control 2 s (`scheduler-control.ts`): a read per process and interval, not per
    // claim. Read just before, so that each claim measured finds a copy, as a busy process's claims do.
    await scheduler.getSchedulerControl();
    await step('claim', async () => {
      const [claimed] = await claimUntil(scheduler, agent, 1);
      if (claimed?.taskId !== taskId) throw new Error('the task was not claimed');
      leaseEpoch = claimed.leaseEpoch;
      claimedPayload = claimed.payload;
    });
    await step('heartbeat', () => scheduler.heartbeat(agent.agentId, agent.sessionId));
    await step('complete', () =>
      scheduler.complete({ agentId: agent.agentId, taskId, leaseEpoch }, { ok: true }),
    );
    expect(claimedPayload).toEqual(payload);
    return units;
  }

  it('(f) write units of claim, heartbeat and complete do not depend on the payload size', async () => {
    const small = await measure('small', 1_024);
    const large = await measure('large', 200_000);

    console.log('[capacity] per step, 1 KB vs 200 KB payload:');
    console.table(
      Object.fromEntries(
        (['submit', 'claim', 'heartbeat', 'complete'] as const).map((s) => [
          s,
          {
            'WCU 1KB': small[s].write,
            'WCU 200KB': large[s].write,
            'of which index': small[s].indexWrite,
            'RCU 1KB': small[s].read,
            'RCU 200KB': large[s].read,
            requests: small[s].requests,
          },
        ]),
      ),
    );
    for (const s of ['claim', 'heartbeat', 'complete'] as const) expect(large[s].write).toBe(small[s].write);
    expect(small.heartbeat.write).toBe(1);
    // The payload is paid for once, at submit, deflated: random base64 text deflates to about 3/4 of its size,
    // so 1 KB fits one write unit with the keys (payload 1, which is also the task's list entry, and state 1);
    // 200 KB (about 150 KB deflated) goes to S3 and its item only names the object. The whole lifecycle costs the
    // same write units. A task that ends before the list walk reaches it is never in an index: no index write at
    // submit, none at its end.
    expect(small.submit.write).toBe(2);
    expect(large.submit.write).toBe(2);
    expect(small.complete.write).toBe(1);
    for (const s of ['submit', 'claim', 'heartbeat', 'complete'] as const)
      expect(small[s].indexWrite).toBe(0);
    expect(large.submit.requests).toBe('2 dynamodb + 1 sqs + 1 s3');
    expect(large.claim.requests).toMatch(/\+ 1 s3$/);
    // A claim reads the 1 KB payload nowhere: its hint carried it. The 200 KB one's item names its object.
    expect(large.claim.read - small.claim.read).toBe(0.5);
    expect(small.submit.requests).toBe('2 dynamodb + 1 sqs + 0 s3');
    // Sanity: the meter saw real units.
    expect(small.claim.write).toBeGreaterThan(0);
  });
});
