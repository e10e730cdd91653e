/**
 * Debounce: submissions of one key collapse into one task per window, claimable once the window has been quiet (or
 * at its longest wait), carrying the latest payload; exact under parallel submitters and races with windows that
 * close. Times are the test clock's, held still and moved by hand; only the hints' SQS delays run in real time.
 */
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payloadKey } from '#adapters/task-items';
import type { SubmitResult } from '#core/submit';
import { IdempotencyConflictError } from '#domain/errors';
import type { Task } from '#domain/task';
import { runApart } from '#local/function-scope';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';

const QUEUES = [
  'burst',
  'quiet',
  'capped',
  'large',
  'race',
  'stale',
  'granted',
  'idem',
  'batch',
  'ttl',
  'costs',
  'layout',
];

describe('debounce', () => {
  let stack: TestStack;
  let doc: DynamoDBDocumentClient;

  beforeAll(async () => {
    stack = await createTestStack({ queues: QUEUES, payloadBucket: true });
    doc = DynamoDBDocumentClient.from(stack.dynamodb);
    // Held still: a window closes only when a test moves the clock past it, however slow the machine.
    stack.clock.stop();
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** The state items of a queue's tasks: what exists, whatever any answer said. */
  const tasksOf = async (queue: string): Promise<Record<string, unknown>[]> => {
    const output = await doc.send(
      new ScanCommand({
        TableName: stack.ctx.tasks.tableName,
        FilterExpression: '#p = :state AND #q = :queue',
        ExpressionAttributeNames: { '#p': 'part', '#q': 'queue' },
        ExpressionAttributeValues: { ':state': 'state', ':queue': queue },
        ConsistentRead: true,
      }),
    );
    return output.Items ?? [];
  };

  const payloadOf = async (taskId: string): Promise<unknown> => {
    const read = await stack.scheduler.taskPayload(await stack.scheduler.getTask(taskId));
    return 'payload' in read ? read.payload : 'gone';
  };

  const debounced = (
    queue: string,
    payload: unknown,
    debounce: { key?: string; windowSeconds?: number; maxWaitSeconds?: number } = {},
    extra: Record<string, unknown> = {},
    scheduler = stack.scheduler,
  ): Promise<SubmitResult> =>
    scheduler.submit({
      queue,
      payload,
      debounce: { key: 'doc-1', windowSeconds: 1, ...debounce },
      ...extra,
    });

  it('10 parallel submitters, 4 bursts of 50 of one key, 2 windows apart: 4 tasks, each with its burst’s last payload', async () => {
    const submitters = Array.from({ length: 10 }, () => stack.sibling());
    const bursts: { answers: SubmitResult[]; last: SubmitResult }[] = [];
    for (let burst = 0; burst < 4; burst++) {
      // 49 at once from 10 submitters, then the burst's last once they were all answered.
      const answers = (
        await Promise.all(
          submitters.map(async (submitter, s) => {
            const mine: SubmitResult[] = [];
            for (let n = s; n < 49; n += submitters.length) {
              mine.push(await debounced('burst', { burst, n }, {}, {}, submitter));
            }
            return mine;
          }),
        )
      ).flat();
      const last = await debounced(
        'burst',
        { burst, last: true },
        {},
        {},
        submitters[burst] ?? stack.scheduler,
      );
      bursts.push({ answers, last });
      stack.clock.advance(2_000);
    }

    const stored = await tasksOf('burst');
    expect(stored).toHaveLength(4);
    for (const [burst, { answers, last }] of bursts.entries()) {
      // Every answer of the burst names its one task: the concurrent ones never made a second.
      const named = new Set([...answers, last].map((a) => a.task.taskId));
      expect(named).toEqual(new Set([last.task.taskId]));
      expect([...answers, last].filter((a) => a.created)).toHaveLength(1);
      expect(last.debounced).toBe(true);
      const task = await stack.scheduler.getTask(last.task.taskId);
      expect(task.debounceJoins).toBe(49);
      expect(await payloadOf(task.taskId)).toEqual({ burst, last: true });
    }
    expect(new Set(bursts.map((b) => b.last.task.taskId)).size).toBe(4);

    // Claimed once quiet: each carries its burst's last payload.
    const agent = await startAgent(stack.scheduler, { queues: ['burst'], maxConcurrency: 4 });
    const claimed = await claimUntil(stack.scheduler, agent, 4, 6_000, 4);
    expect(claimed.map((c) => c.payload)).toEqual(
      expect.arrayContaining([0, 1, 2, 3].map((burst) => ({ burst, last: true }))),
    );
    expect(claimed).toHaveLength(4);
  });

  it('is not claimable while the window is open, and is once it has been quiet for the window', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler, { queues: ['quiet'], maxConcurrency: 2 });
    const first = await debounced('quiet', { v: 1 });
    expect(first).toMatchObject({ created: true, debounced: false });
    expect(first.task.notBefore).toBe(clock.now() + 1_000);
    clock.advance(600);
    const second = await debounced('quiet', { v: 2 });
    expect(second).toMatchObject({ created: false, debounced: true });
    expect(second.task.taskId).toBe(first.task.taskId);
    expect(second.task.notBefore).toBe(clock.now() + 1_000);
    // Past the first window's end, before the second's: the hint, sent with the first, comes and is hidden again.
    clock.advance(700);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await scheduler.claim({ ...agent, max: 2 })).toEqual([]);
    expect((await scheduler.getTask(first.task.taskId)).status).toBe('queued');
    // Quiet for the window: claimable, with the latest payload.
    clock.advance(400);
    const [claimed, ...more] = await claimUntil(scheduler, agent, 1, 4_000, 2);
    expect(more).toEqual([]);
    expect(claimed).toMatchObject({ taskId: first.task.taskId, payload: { v: 2 } });

    // Granted, it takes no more submissions: the next one opens a new window.
    const third = await debounced('quiet', { v: 3 });
    expect(third).toMatchObject({ created: true, debounced: false });
    expect(third.task.taskId).not.toBe(first.task.taskId);
  });

  it('maxWaitSeconds caps a stream that is never quiet', async () => {
    const { clock } = stack;
    const opened = clock.now();
    const window = { windowSeconds: 2, maxWaitSeconds: 5 };
    const first = await debounced('capped', { n: 0 }, window);
    const times: number[] = [];
    for (let n = 1; n <= 4; n++) {
      clock.advance(1_000);
      const joined = await debounced('capped', { n }, window);
      expect(joined.task.taskId).toBe(first.task.taskId);
      times.push(joined.task.notBefore ?? 0);
    }
    // Now plus the window, until the longest wait caps it.
    expect(times).toEqual([opened + 3_000, opened + 4_000, opened + 5_000, opened + 5_000]);
    clock.advance(1_000);
    const next = await debounced('capped', { n: 5 }, window);
    expect(next).toMatchObject({ created: true, debounced: false });
    expect(next.task.taskId).not.toBe(first.task.taskId);
    expect(await payloadOf(first.task.taskId)).toEqual({ n: 4 });
    expect(await tasksOf('capped')).toHaveLength(2);
  });

  it('replaces a payload kept in S3 with one in its item and back, and claims the latest', async () => {
    const { scheduler, clock } = stack;
    // Random base64 does not deflate below the 10 KB from which a payload is an object.
    const large = (tag: string) => ({
      tag,
      blob: Buffer.from(crypto.getRandomValues(new Uint8Array(30_000))).toString('base64'),
    });
    const a = large('a');
    const first = await debounced('large', a);
    expect(first.task.payloadInObject).toBe(true);
    const second = await debounced('large', { tag: 'b' });
    expect(second.task.payloadInObject).toBeUndefined();
    expect(await payloadOf(first.task.taskId)).toEqual({ tag: 'b' });
    const c = large('c');
    const third = await debounced('large', c);
    expect(third.task.payloadInObject).toBe(true);
    expect(await payloadOf(first.task.taskId)).toEqual(c);

    clock.advance(1_100);
    const agent = await startAgent(scheduler, { queues: ['large'] });
    const [claimed] = await claimUntil(scheduler, agent, 1, 4_000);
    expect(claimed?.payload).toEqual(c);
  });

  it('two submitters that both find no window open one task: the slower one’s transaction is refused and it joins', async () => {
    const other = stack.sibling();
    let second: SubmitResult | undefined;
    // Just before this stack's submission opens its window, the other opens one and lands first.
    stack.interleave(
      (operation) => operation === 'TransactWriteItemsCommand',
      async () => {
        second = await debounced('race', { from: 'other' }, {}, {}, other);
      },
    );
    const first = await debounced('race', { from: 'this' });
    expect(second).toMatchObject({ created: true, debounced: false });
    expect(first).toMatchObject({ created: false, debounced: true });
    expect(first.task.taskId).toBe(second?.task.taskId);
    expect(await tasksOf('race')).toHaveLength(1);
    expect(await payloadOf(first.task.taskId)).toEqual({ from: 'this' });
  });

  it('a submission that read the window before another closed it and opened the next joins the next', async () => {
    const { clock } = stack;
    const old = await debounced('stale', { n: 1 });
    const other = stack.sibling();
    let opener: SubmitResult | undefined;
    // After this submission read the record naming the old task, and before its join: the old window ends and
    // another submission opens the next.
    stack.interleave(
      (operation) => operation === 'UpdateItemCommand',
      async () => {
        clock.advance(1_500);
        opener = await debounced('stale', { n: 2 }, {}, {}, other);
      },
    );
    const late = await debounced('stale', { n: 3 });
    expect(opener).toMatchObject({ created: true });
    expect(opener?.task.taskId).not.toBe(old.task.taskId);
    expect(late).toMatchObject({ created: false, debounced: true, task: { taskId: opener?.task.taskId } });
    expect(await payloadOf(old.task.taskId)).toEqual({ n: 1 });
    expect(await payloadOf(late.task.taskId)).toEqual({ n: 3 });
    expect(await tasksOf('stale')).toHaveLength(2);
  });

  it('a submission whose join meets the task granted opens the next window; the grant kept the payload it read', async () => {
    const { scheduler, clock } = stack;
    const agent = await startAgent(scheduler, { queues: ['granted'] });
    const first = await debounced('granted', { n: 1 });
    clock.advance(1_100);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    let claimed: Awaited<ReturnType<typeof scheduler.claim>> = [];
    // The grant lands between this submission's read of the record and its join.
    stack.interleave(
      (operation) => operation === 'UpdateItemCommand',
      async () => {
        // An agent's claim, as the agent function makes it, inside the operator function's submission.
        claimed = await runApart('agentApi', () => claimUntil(stack.sibling(), agent, 1, 4_000));
      },
    );
    const late = await debounced('granted', { n: 2 });
    expect(claimed).toMatchObject([{ taskId: first.task.taskId, payload: { n: 1 } }]);
    expect(late).toMatchObject({ created: true, debounced: false });
    expect(late.task.taskId).not.toBe(first.task.taskId);
    expect(await payloadOf(late.task.taskId)).toEqual({ n: 2 });
  });

  it('an idempotency key names the submission: sent again it changes nothing, in the window or after it', async () => {
    const { scheduler, clock } = stack;
    const first = await debounced('idem', { n: 1 }, {}, { idempotencyKey: 'event-1' });
    const joined = await debounced('idem', { n: 2 }, {}, { idempotencyKey: 'event-2' });
    const before = await scheduler.getTask(first.task.taskId);
    // A retry of the first after the second landed: it does not put its older payload back.
    const retried = await debounced('idem', { n: 1 }, {}, { idempotencyKey: 'event-1' });
    expect(retried).toMatchObject({ created: false, debounced: false, task: { taskId: first.task.taskId } });
    const after = await scheduler.getTask(first.task.taskId);
    expect(after).toEqual(before);
    expect(await payloadOf(first.task.taskId)).toEqual({ n: 2 });
    // After the window: a retry of the second still names its task, and opens no window.
    clock.advance(1_500);
    const late = await debounced('idem', { n: 2 }, {}, { idempotencyKey: 'event-2' });
    expect(late).toMatchObject({ created: false, debounced: true, task: { taskId: joined.task.taskId } });
    expect(await tasksOf('idem')).toHaveLength(1);
    // The same key for another submission is a conflict, and writes nothing.
    await expect(debounced('idem', { n: 9 }, {}, { idempotencyKey: 'event-1' })).rejects.toBeInstanceOf(
      IdempotencyConflictError,
    );
    expect(await tasksOf('idem')).toHaveLength(1);
  });

  it('in a batch, one after the other in its order; other items as before', async () => {
    const results = await stack.scheduler.submitBatch([
      { queue: 'batch', payload: { n: 1 }, debounce: { key: 'b', windowSeconds: 5 } },
      { queue: 'batch', payload: { plain: true } },
      { queue: 'batch', payload: { n: 2 }, debounce: { key: 'b', windowSeconds: 5 } },
      { queue: 'batch', payload: {}, debounce: { key: 'b', windowSeconds: 0 } },
    ]);
    expect(
      results.map((r) => (r.ok ? { created: r.created, debounced: r.debounced } : r.error.status)),
    ).toEqual([
      { created: true, debounced: false },
      { created: true, debounced: undefined },
      { created: false, debounced: true },
      400,
    ]);
    const [first, , third] = results;
    expect(first?.ok && third?.ok && first.task.taskId === third.task.taskId).toBe(true);
    expect(await payloadOf(first?.ok ? first.task.taskId : '')).toEqual({ n: 2 });
    expect(await tasksOf('batch')).toHaveLength(2);
  });

  it('ttlSeconds counts from the end of the window as it moves', async () => {
    const { clock } = stack;
    const first = await debounced('ttl', { n: 1 }, { windowSeconds: 2 }, { ttlSeconds: 60 });
    expect(first.task.expiresAt).toBe(clock.now() + 62_000);
    clock.advance(1_000);
    const joined = await debounced('ttl', { n: 2 }, { windowSeconds: 2 }, { ttlSeconds: 60 });
    expect(joined.task.expiresAt).toBe(clock.now() + 62_000);
  });

  it('is a task of layout 1 to every function: its payloads keyed by the task, listed once by the index', async () => {
    const first = await debounced('layout', { n: 1 }, { windowSeconds: 30 });
    const joined = await debounced('layout', { n: 2 }, { windowSeconds: 30 });
    const task = await stack.scheduler.getTask(first.task.taskId);
    expect(task.payloadListed).toBeUndefined();
    expect(task.specHash).not.toBe(first.task.specHash);
    for (const specHash of [first.task.specHash, joined.task.specHash]) {
      const item = await doc.send(
        new GetCommand({ TableName: stack.ctx.tasks.tableName, Key: payloadKey(task.taskId, specHash) }),
      );
      expect(item.Item?.specHash).toBe(specHash);
    }
    const page = await stack.scheduler.listTasks({ queue: 'layout' });
    expect(page.tasks.map((t: Task) => t.taskId)).toEqual([task.taskId]);
  });

  it('costs, as AWS bills them: a submission that opens a window, one that joins it, one that opens the next', async () => {
    const { meter, clock } = stack;
    const dynamodb = (r: { service: string }) => r.service === 'dynamodb';
    const payload = { text: 'x'.repeat(900) };
    const measure = async (keyed: boolean) => {
      const key = `k${keyed}`;
      let n = 0;
      const submit = async () => {
        meter.reset();
        await debounced('costs', payload, { key }, keyed ? { idempotencyKey: `cost-${key}-${n++}` } : {});
        return { ...meter.totals(dynamodb), sqs: meter.totals((r) => r.service === 'sqs').requests };
      };
      const opening = await submit();
      const joining = await submit();
      // The window ended unclaimed: the next submission finds it so, then opens the next and closes it.
      clock.advance(1_100);
      const next = await submit();
      return { opening, joining, next };
    };
    const plain = await measure(false);
    const keyed = await measure(true);
    const line = (m: { requests: number; writeUnits: number; readUnits: number; sqs: number }) =>
      `${m.requests} requests (+${m.sqs} SQS), ${m.writeUnits} W, ${m.readUnits} R`;
    console.log(
      `[debounce] opening: ${line(plain.opening)}; joining: ${line(plain.joining)}; opening the next: ${line(plain.next)}; with an idempotency key: ${line(keyed.opening)}, ${line(keyed.joining)}, ${line(keyed.next)}`,
    );
    // Joining: the record read, the payload put, the task's update; no SQS.
    expect(plain.joining).toMatchObject({ requests: 3, sqs: 0 });
    expect(plain.joining.writeUnits).toBeLessThanOrEqual(3);
    expect(plain.joining.readUnits).toBeLessThanOrEqual(0.5);
    // Opening: the record read, the payload put, a transaction of the task and the record (each billed twice); a hint.
    expect(plain.opening).toMatchObject({ requests: 3, sqs: 1 });
    expect(plain.opening.writeUnits).toBeGreaterThanOrEqual(5);
    expect(plain.opening.writeUnits).toBeLessThanOrEqual(8);
    // The next window: the join refused (its payload put and its update), then a payload and a transaction of three:
    // the new task, the record, the old task closed.
    expect(plain.next).toMatchObject({ requests: 5, sqs: 1 });
    expect(plain.next.writeUnits).toBeLessThanOrEqual(plain.opening.writeUnits + 5);
    // The idempotency key: its record read with the window's (one request) and written (one more).
    expect(keyed.joining.requests).toBe(plain.joining.requests + 1);
    expect(keyed.joining.writeUnits - plain.joining.writeUnits).toBeLessThanOrEqual(1);
  });
});
