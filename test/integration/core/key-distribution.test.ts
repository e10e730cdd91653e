/**
 * Hot partitions: DynamoDB gives each partition key at most 1,000 write units a second. A real workload on
 * DynamoDB Local records the partition key of every write, on the tables and on the `due` and `listed` indexes,
 * and the rates are scaled to a fleet doing 10,000 claims a second: 200 agents at 50 claims a second each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DUE_INDEX, LISTED_INDEX } from '#adapters/tables';
import { dueShardOf, listedShardOf } from '#adapters/task-items';
import { newTaskId } from '#domain/ids';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';
import { recordItemWrites } from '#test/write-keys';

const CLAIMS_PER_SECOND = 10_000;
const FLEET = 200;
const PER_KEY_LIMIT = 1_000;

describe('write distribution over partition keys', () => {
  let stack: TestStack;
  const writes = new Map<string, number>();
  const count = (key: string) => writes.set(key, (writes.get(key) ?? 0) + 1);

  beforeAll(async () => {
    stack = await createTestStack();
    const { ctx } = stack;
    // Records each write's partition key, and the `due` index partition it touches.
    recordItemWrites(stack.dynamodb, ({ table, pk, input }) => {
      const kind = pk.includes('#') ? pk.slice(0, pk.indexOf('#') + 1) : '';
      count(`${table}:${pk}`);
      const names = Object.values(input.ExpressionAttributeNames ?? {});
      const touchesIndex =
        input.Item?.dueShard !== undefined || names.includes('dueShard') || names.includes('dueAt');
      if (table === ctx.tasks.tableName && touchesIndex && kind === '') {
        count(`${table}/${DUE_INDEX}:${dueShardOf(pk)}`);
      }
      // The `listed` index is written when a state item with its key is put (its keys never change after).
      const listShard = input.Item?.listShard;
      if (table === ctx.tasks.tableName && listShard !== undefined) {
        count(`${table}/${LISTED_INDEX}:${String((listShard as { S?: string }).S ?? listShard)}`);
      }
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  it('no partition key of any table or index takes more than 1,000 writes a second at 10,000 claims a second', async () => {
    const { scheduler } = stack;
    const agents = await Promise.all(
      Array.from({ length: 8 }, () => startAgent(scheduler, { maxConcurrency: 10 })),
    );
    const tasks = 400;
    for (let i = 0; i < tasks; i += 25) {
      await scheduler.submitBatch(
        Array.from({ length: 25 }, (_, n) => ({ queue: 'work', payload: { n: i + n } })),
      );
    }
    let claims = 0;
    while (claims < tasks) {
      const batches = await Promise.all(agents.map((agent) => claimUntil(scheduler, agent, 10, 2_000, 10)));
      for (const [i, claimed] of batches.entries()) {
        const agent = agents[i];
        if (!agent || claimed.length === 0) continue;
        claims += claimed.length;
        await scheduler.completeBatch(
          agent.agentId,
          claimed.map((t) => ({ taskId: t.taskId, leaseEpoch: t.leaseEpoch })),
        );
      }
    }
    await scheduler.supervise();

    // Rates at 10,000 claims/s: global keys take their share of all claims; an agent's session key takes its
    // share of one agent's 50 claims/s; a task's key is written a few times over its whole life. Index shards
    // take the index's writes in the proportion the hash gives them, measured on 100,000 task ids.
    const perAgentClaims = CLAIMS_PER_SECOND / FLEET;
    const sampled = 100_000;
    const busiestShare = (shardOf: (taskId: string) => string) => {
      const counts = new Map<string, number>();
      for (let i = 0; i < sampled; i++) {
        const shard = shardOf(newTaskId());
        counts.set(shard, (counts.get(shard) ?? 0) + 1);
      }
      return { shards: counts.size, share: Math.max(...counts.values()) / sampled };
    };
    // Index partitions and a queue's list partitions take writes by a hash of the task id: their busiest share is
    // sampled over 100,000 ids below, not read off this run's few hundred tasks.
    const isIndexKey = (key: string) =>
      key.includes(`/${DUE_INDEX}:`) || key.includes(`/${LISTED_INDEX}:`) || /:list#work#\d\d$/.test(key);
    const indexWritesOf = (index: string) =>
      [...writes].filter(([key]) => key.includes(`/${index}:`)).reduce((sum, [, n]) => sum + n, 0);
    const indexWrites = indexWritesOf(DUE_INDEX);
    const listedWrites = indexWritesOf(LISTED_INDEX);
    const due = busiestShare((taskId) => dueShardOf(taskId));
    // Every task of this run is in one queue: its shards take all of the index's writes.
    const listed = busiestShare((taskId) => listedShardOf('work', taskId));
    const rates = [...writes]
      .filter(([key]) => !isIndexKey(key))
      .map(([key, n]) => {
        const isSession = key.includes(':session#');
        const isTask = /:t_[a-z2-7]{26}$/.test(key);
        const rate = isSession
          ? (n / (claims / agents.length)) * perAgentClaims
          : isTask
            ? n // Written n times over a life of at least a second.
            : (n / claims) * CLAIMS_PER_SECOND;
        return { key: key.replace(/^t\w+?-/, ''), rate: Math.round(rate) };
      });
    rates.push({
      key: `tasks/${DUE_INDEX}: busiest of ${due.shards} shards`,
      rate: Math.round((indexWrites / claims) * CLAIMS_PER_SECOND * due.share),
    });
    // Layout 2 lists a task by its payload item, in a list partition of the table (counted above, as written).
    const listWrites = [...writes]
      .filter(([key]) => /:list#work#\d\d$/.test(key))
      .reduce((sum, [, n]) => sum + n, 0);
    rates.push({
      key: `tasks:list#work#nn: busiest of ${listed.shards} list partitions of one queue`,
      rate: Math.round((listWrites / claims) * CLAIMS_PER_SECOND * listed.share),
    });
    const hottest = rates.sort((a, b) => b.rate - a.rate).slice(0, 5);
    console.log(`hottest keys at ${CLAIMS_PER_SECOND} claims/s: ${JSON.stringify(hottest)}`);
    expect(claims).toBe(tasks);
    // A task that ends before the list walk reaches it is never put in the `due` index: what is counted here is
    // the completion's removal of the entry, named in every ending though these tasks have none (no index write
    // then). A list partition is written once, at submit (the payload item), and the `listed` index not at all.
    expect(indexWrites / claims).toBe(1);
    expect(listWrites).toBe(tasks);
    expect(listedWrites).toBe(0);
    expect(hottest[0]?.rate ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(PER_KEY_LIMIT);
  });
});
