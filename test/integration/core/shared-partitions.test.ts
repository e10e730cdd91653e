/**
 * No partition that a queue's tasks share is written as often as the queue takes tasks: DynamoDB gives a partition
 * 1,000 write units a second, so a partition written once a task or more would cap the queue near that, however
 * many agents it has. Run on DynamoDB Local: a queue with 10 concurrency keys and 50 agents listening on the push
 * channel, each task submitted alone so that it wakes an idle agent, which claims it, completes it and goes idle
 * again. Every write request is counted against the partition of each item it writes (failed conditions too: they
 * are billed); the partitions of a task's own items (its state and payload) are left out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENTS_TABLE, CONNECTIONS_TABLE, LEASES_TABLE, TASKS_TABLE } from '#adapters/tables';
import { connectAgent, createTestStack, RecordingPushSender, type TestStack } from '#test/stack';

const TASKS = 100;
const AGENTS = 50;
const KEYS = 10;

type Next = (args: { input: object }) => Promise<{ output: object }>;
interface MiddlewareStack {
  add(middleware: (next: Next, context: { commandName?: string }) => Next, options: object): void;
}

/** A key attribute's value, whether the request carries it marshalled (`{ S: "x" }`) or plain. */
const plain = (value: unknown): string =>
  typeof value === 'object' && value !== null && 'S' in value ? String(value.S) : String(value);

/** The items a write request writes, as `[table, their attributes or key]`. */
function writtenItems(command: string, input: Record<string, unknown>): [string, Record<string, unknown>][] {
  const table = String(input.TableName);
  if (command === 'PutItemCommand') return [[table, input.Item as Record<string, unknown>]];
  if (command === 'UpdateItemCommand' || command === 'DeleteItemCommand')
    return [[table, input.Key as Record<string, unknown>]];
  if (command === 'BatchWriteItemCommand')
    return Object.entries(
      input.RequestItems as Record<string, Record<string, { Item?: object; Key?: object }>[]>,
    )
      .flatMap(([name, requests]) =>
        requests.map((r) => [name, r.PutRequest?.Item ?? r.DeleteRequest?.Key] as const),
      )
      .map(([name, item]) => [name, item as Record<string, unknown>]);
  if (command === 'TransactWriteItemsCommand')
    return (
      input.TransactItems as Record<string, { TableName: string; Item?: object; Key?: object }>[]
    ).flatMap((entry) => {
      const write = entry.Put ?? entry.Update ?? entry.Delete;
      return write ? [[write.TableName, (write.Item ?? write.Key) as Record<string, unknown>]] : [];
    });
  return [];
}

describe('partitions a queue’s tasks share', () => {
  let stack: TestStack;
  const sender = new RecordingPushSender();

  beforeAll(async () => {
    stack = await createTestStack({
      queues: ['shared'],
      push: { sender, url: 'ws://push.test/v1/push' },
      // No cooldown: every task wakes an idle agent, however fast the tasks come.
      settings: { pushSafetyPollMs: 600_000, wakeCooldownMs: 0 },
      // Wakes pick their partition and agent at random, as in AWS (the test stack's default draws are fixed).
      random: Math.random,
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  /** Writes per `table:partition key` from now on. */
  const countWrites = () => {
    const { tables } = stack.wiring;
    const partitionKeyOf = new Map([
      [tables.tasks, TASKS_TABLE.partitionKey.name],
      [tables.agents, AGENTS_TABLE.partitionKey.name],
      [tables.leases, LEASES_TABLE.partitionKey.name],
      [tables.connections, CONNECTIONS_TABLE.partitionKey.name],
    ]);
    const writes = new Map<string, number>();
    (stack.dynamodb.middlewareStack as unknown as MiddlewareStack).add(
      (next, context) => async (args) => {
        for (const [table, item] of writtenItems(
          context.commandName ?? '',
          args.input as Record<string, unknown>,
        )) {
          const partition = `${table}:${plain(item[partitionKeyOf.get(table) ?? ''])}`;
          writes.set(partition, (writes.get(partition) ?? 0) + 1);
        }
        return next(args);
      },
      { step: 'initialize', name: 'countWrites' },
    );
    return writes;
  };

  it(`a queue with ${KEYS} concurrency keys and ${AGENTS} listening agents: none is written once a task`, async () => {
    const agents = await Promise.all(
      Array.from({ length: AGENTS }, (_, i) => connectAgent(stack.scheduler, `s${i}`, ['shared'])),
    );
    for (const agent of agents) expect((await stack.scheduler.claimOrListen(agent)).tasks).toEqual([]);
    const writes = countWrites();
    const taskIds = new Set<string>();
    for (let i = 0; i < TASKS; i++) {
      const before = sender.frames.length;
      const { task } = await stack.scheduler.submit({
        queue: 'shared',
        payload: { i },
        concurrencyKey: `key-${i % KEYS}`,
      });
      taskIds.add(task.taskId);
      const woken = sender.frames.slice(before).filter((f) => f.frame.type === 'wake');
      expect(woken).toHaveLength(1);
      const agent = agents.find((a) => a.connectionId === woken[0]?.connectionId);
      if (!agent) throw new Error('an unknown connection was woken');
      // The woken agent claims as a listening Worker does, completes, and finds the queue empty: idle again.
      let claimed = await stack.scheduler.claimOrListen(agent);
      for (let look = 0; look < 50 && claimed.tasks.length === 0; look++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        claimed = await stack.scheduler.claimOrListen(agent);
      }
      const [lease] = claimed.tasks;
      expect(lease?.taskId).toBe(task.taskId);
      if (!lease) return;
      await stack.scheduler.complete({
        agentId: agent.agentId,
        taskId: lease.taskId,
        leaseEpoch: lease.leaseEpoch,
      });
      expect((await stack.scheduler.claimOrListen(agent)).tasks).toEqual([]);
    }
    const taskOwn = (partition: string) => taskIds.has(partition.slice(partition.indexOf(':') + 1));
    const shared = [...writes].filter(([partition]) => !taskOwn(partition)).sort((a, b) => b[1] - a[1]);
    // The busiest partition of each kind (a key's lane, a listener shard, an agent's session, ...).
    const busiest = new Map<string, [string, number]>();
    for (const [partition, count] of shared) {
      const key = partition.slice(partition.indexOf(':') + 1);
      const kind = key.split('#')[0] ?? key;
      if (!busiest.has(kind)) busiest.set(kind, [key, count]);
    }
    console.log(
      `[writes] ${TASKS} tasks; the busiest shared partition of each kind: ${[...busiest.values()]
        .map(([key, count]) => `${key} ${count}`)
        .join(', ')}`,
    );
    for (const [partition, count] of shared) expect(count, partition).toBeLessThan(TASKS);
  }, 120_000);
});
