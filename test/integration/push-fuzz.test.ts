/**
 * The push channel's client frames, fuzzed as the HTTP routes are: 1,000 generated frames on an operator's and on
 * an agent's connection, each with at least one defect (not JSON, not an object, an unknown or missing type, a
 * wrong version, unknown or server-owned fields, ids and task ids of the wrong shape, control characters, too many
 * tasks, `__proto__` keys, deep nesting, frames past the size bound). Each must be answered by one error frame with
 * a short message and no stack, path or ARN, and nothing may change: every table reads the same afterwards.
 * Connect tickets are fuzzed too: anything but an issued, unused, unexpired ticket names nobody.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStack, RecordingPushSender, type TestStack } from '#test/stack';

const RUNS = 1_000;
const LEAKS = /\bat \S+ \(|\.ts:\d|\.js:\d|\/work\/|node_modules|arn:aws/;
const TASK = 't_aaaaaaaaaaaaaaaaaaaaaaaaaa';

type Json = Record<string, unknown>;
const valid = (): Json => ({ type: 'subscribe', version: 1, id: 'ok', taskIds: [TASK] });

/** A frame with one or more defects, as the raw text a socket delivers. */
const defective = fc.oneof(
  fc.string({ maxLength: 200 }).filter((text) => {
    try {
      JSON.parse(text);
      return false;
    } catch {
      return true;
    }
  }),
  fc
    .oneof(
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.jsonValue(), { maxLength: 5 }),
      fc.string(),
    )
    .map((value) => JSON.stringify(value)),
  fc
    .record({
      mutate: fc.constantFrom(
        'noType',
        'unknownType',
        'wrongVersion',
        'unknownField',
        'badId',
        'badTaskId',
        'tooMany',
        'none',
        'proto',
        'deep',
        'oversize',
        'serverFrame',
        'pingExtra',
      ),
      text: fc.string({ unit: 'binary', maxLength: 80 }),
      n: fc.integer({ min: 0, max: 2_000 }),
    })
    .map(({ mutate, text, n }) => {
      const frame = valid();
      switch (mutate) {
        case 'noType':
          delete frame.type;
          return JSON.stringify(frame);
        case 'unknownType':
          return JSON.stringify({ ...frame, type: text || 'x' });
        case 'wrongVersion':
          return JSON.stringify({ ...frame, version: n === 1 ? 2 : n });
        case 'unknownField':
          return JSON.stringify({ ...frame, [`f${text}`]: n });
        case 'badId':
          return JSON.stringify({ ...frame, id: `${text}\u0000${'x'.repeat(n % 100)}` });
        case 'badTaskId':
          return JSON.stringify({ ...frame, taskIds: [`t_${text}\n`] });
        case 'tooMany':
          return JSON.stringify({ ...frame, taskIds: Array(26 + (n % 50)).fill(TASK) });
        case 'none':
          return JSON.stringify({ ...frame, taskIds: [] });
        case 'proto':
          return `{"__proto__":{"type":"ping"},"type":"subscribe","version":1,"id":"p","taskIds":["${TASK}"],"x":1}`;
        case 'deep':
          return `${'['.repeat(100 + n)}${']'.repeat(100 + n)}`;
        case 'oversize':
          return JSON.stringify({ type: 'ping', pad: 'x'.repeat(8 * 1024 + n) });
        case 'serverFrame':
          return JSON.stringify({ type: 'wake', version: 1, queue: 'work', reason: 'submitted' });
        default:
          return JSON.stringify({ type: 'ping', [text || 'x']: n });
      }
    }),
);

describe('push frames, fuzzed', () => {
  let stack: TestStack;
  const sender = new RecordingPushSender();
  const connections: string[] = [];

  const dump = async () => {
    const tables = [stack.ctx.tasks.tableName, stack.ctx.sessions.tableName, stack.ctx.agents.tableName];
    const connectionsTable = (stack.ctx.push?.connections as { tableName?: string } | undefined)?.tableName;
    if (connectionsTable) tables.push(connectionsTable);
    const all = await Promise.all(
      tables.map(async (TableName) =>
        JSON.stringify(
          ((await stack.ctx.tasks.doc.send(new ScanCommand({ TableName, ConsistentRead: true }))).Items ?? [])
            .map((item) => JSON.stringify(item))
            .sort(),
        ),
      ),
    );
    return all.join('\n');
  };

  beforeAll(async () => {
    stack = await createTestStack({ push: { sender, url: 'ws://fuzz.test/v1/push' } });
    await stack.scheduler.submit({ queue: 'work', payload: {}, idempotencyKey: 'fuzz' });
    const { agent } = await stack.scheduler.registerAgent({
      name: 'fuzz',
      queues: ['work'],
      maxConcurrency: 1,
    });
    for (const principal of [
      { kind: 'operator' as const },
      { kind: 'agent' as const, agentId: agent.agentId },
    ]) {
      const { ticket } = await stack.scheduler.pushTicket(principal);
      const redeemed = await stack.scheduler.redeemPushTicket(ticket);
      if (!redeemed) throw new Error('ticket refused');
      const connectionId = `fuzz-${principal.kind}`;
      await stack.scheduler.openPushConnection(connectionId, redeemed);
      connections.push(connectionId);
    }
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it(`answers ${RUNS} defective frames with one error frame each, and changes nothing`, async () => {
    const before = await dump();
    await fc.assert(
      fc.asyncProperty(defective, fc.constantFrom(0, 1), async (raw, which) => {
        const connectionId = connections[which] as string;
        const sent = sender.frames.length;
        await stack.scheduler.answerPushFrame(connectionId, raw);
        const replies = sender.frames.slice(sent).map((f) => f.frame);
        expect(replies, raw.slice(0, 200)).toHaveLength(1);
        const [reply] = replies;
        expect(reply).toMatchObject({ type: 'error', version: 1 });
        const message = String((reply as { message?: unknown }).message);
        expect(message.length).toBeLessThan(600);
        expect(message).not.toMatch(LEAKS);
      }),
      { numRuns: RUNS },
    );
    expect(await dump()).toBe(before);
  });

  it('names nobody for anything but an issued ticket', async () => {
    const issued = await stack.scheduler.pushTicket({ kind: 'operator' });
    const before = await dump();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 100 }),
          fc.string({ unit: 'binary', maxLength: 2_000 }),
          fc.stringMatching(/^pt_[A-Za-z0-9_-]{32}$/),
          fc.constant(issued.ticket.slice(0, -1)),
          fc.constant(`${issued.ticket}x`),
          fc.constant(issued.ticket.toUpperCase()),
        ),
        async (ticket) => {
          fc.pre(ticket !== issued.ticket);
          expect(await stack.scheduler.redeemPushTicket(ticket)).toBeUndefined();
        },
      ),
      { numRuns: 300 },
    );
    expect(await dump()).toBe(before);
    // The issued ticket still works once: the fuzzing used none of it up.
    expect(await stack.scheduler.redeemPushTicket(issued.ticket)).toEqual({ kind: 'operator' });
  });
});
