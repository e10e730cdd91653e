/**
 * The scale model (`npm run bench -- --scenario scale`): each DynamoDB partition a task's lifecycle writes or reads
 * that other tasks share, its units per task, and the ceiling that DynamoDB's per-partition limits put on tasks a
 * second; then the quotas of the stack that bind before them. The units are today's layout, as the per-step figures
 * of the bench measure them (`lifecycle-steps.ts`) and the adapters write them; a partition written by one task
 * only (its state, payload and dependency items) sets no ceiling and is not listed.
 *
 * A partition takes 1,000 write units and 3,000 read units a second
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html). Sharded keys
 * spread a scope's tasks over their shards by a hash of the task id; the ceiling assumes an even spread (the busiest
 * of the 16 list partitions of a queue took 650 of 10,000 tasks in `key-distribution.test.ts`, 4 % above even).
 */
import { DUE_SHARDS, LISTED_SHARDS } from '#adapters/tables';
import { WAKE_TIMER_MAX_CONCURRENCY } from '#adapters/wake-timer-queue';
import { slotSpread } from '#domain/queue-limits';

export const PARTITION_WRITE_UNITS_PER_SECOND = 1_000;
export const PARTITION_READ_UNITS_PER_SECOND = 3_000;

export type Scope = 'stack' | 'queue' | 'concurrency key' | 'agent';

export interface SharedPartition {
  /** The items or index entries, by key. */
  readonly key: string;
  /** Whose tasks share it. */
  readonly scope: Scope;
  /** How many partitions the scope's tasks are spread over. */
  readonly shards: number;
  readonly writeUnitsPerTask: number;
  readonly readUnitsPerTask: number;
  /** When a lifecycle touches it at all. */
  readonly when: string;
}

export interface Ceiling extends SharedPartition {
  /** Tasks a second the scope takes before a partition of it reaches DynamoDB's limit. */
  readonly tasksPerSecond: number;
}

/** Write units of an item of `bytes` (1 KB a unit). */
const units = (bytes: number) => Math.max(1, Math.ceil(bytes / 1024));

/** Bytes an item of slots holds per lease it counts (its map of held slots), and the item without them. */
const CONTROL_BYTES_PER_LEASE = 37;
const CONTROL_BASE_BYTES = 80;
/** Bytes of one agent's listener item in its queue's partition. */
const LISTENER_BYTES = 120;

export interface ScaleInputs {
  /** Tasks a claim or complete call carries (1 single, up to 10). */
  readonly batch: number;
  /** Leases a limited queue (or key) holds at once when it is busy: its limit, spread over items of slots. */
  readonly leasesHeld: number;
  /** Agents listening on a queue's push channel. */
  readonly listeners: number;
  /** Partitions a queue's listeners are spread over (`listenerShards`). */
  readonly listenerShards: number;
}

export function sharedPartitions(inputs: ScaleInputs): SharedPartition[] {
  // A busy limited queue holds as many leases as its limit: each item of its slots holds its share.
  const spread = slotSpread(Math.max(1, inputs.leasesHeld), 2);
  const slotItems = spread.quotas.length;
  const slotBytes = CONTROL_BASE_BYTES + CONTROL_BYTES_PER_LEASE * (spread.quotas[0] ?? 0);
  const slotUnits = units(slotBytes);
  const slotReadUnits = Math.ceil(slotBytes / 4096);
  // Each claim reads an item and reserves its tasks' slots there in one write; each lease's end frees its slot (a
  // write). An item holds its share of the limit (at most 20 slots up to a limit of 1,000).
  const slotItemsOf = (scope: Scope, key: string): SharedPartition => ({
    key,
    scope,
    shards: slotItems,
    writeUnitsPerTask: (1 / inputs.batch + 1) * slotUnits,
    readUnitsPerTask: slotReadUnits / inputs.batch,
    when: scope === 'queue' ? 'a queue with maxConcurrency' : 'a key under perKeyConcurrency',
  });
  const shardListeners = Math.ceil(inputs.listeners / inputs.listenerShards);
  const listenerReadUnits = Math.max(1, Math.ceil((LISTENER_BYTES * shardListeners) / 4096)) * 0.5;
  return [
    {
      key: `due index, due#<nn> (${DUE_SHARDS} shards)`,
      scope: 'stack',
      shards: DUE_SHARDS,
      // The entry is written (at submit, or by the list walk) and removed at the end, for a task that needs one: still
      // open when the walk passes, or delayed, with a deadline to start, or waiting on dependencies (and every task
      // of layout 1). A task of layout 2 that ends before the walk never writes it.
      writeUnitsPerTask: 2,
      readUnitsPerTask: 0,
      when: 'a task still open at the list walk, delayed, expiring or waiting',
    },
    {
      // Layout 2: the payload item, written once at submit, is the task's list entry (layout 1 wrote the `listed`
      // index's partition of the same name instead).
      key: `list partition, list#<queue>#<nn> (${LISTED_SHARDS} shards)`,
      scope: 'queue',
      shards: LISTED_SHARDS,
      writeUnitsPerTask: 1,
      // The list walk reads each item once, whole, eventually consistent: an eighth of a unit for 1 KB.
      readUnitsPerTask: 0.125,
      when: 'every task',
    },
    {
      key: 'session item, session#<agentId>',
      scope: 'agent',
      shards: 1,
      // A claim reserves its slots in one write; the claim's and the completion's reads are consistent.
      writeUnitsPerTask: 1 / inputs.batch,
      readUnitsPerTask: 3 / inputs.batch,
      when: 'every task (per agent, not per queue)',
    },
    slotItemsOf('queue', `slot items of a limit, queue#<queue>[/slots/<n>] (${slotItems} items)`),
    {
      key: 'token bucket, queue#<queue>',
      scope: 'queue',
      shards: 1,
      // Read and taken from by each claim, for all the tasks it grants.
      writeUnitsPerTask: 1 / inputs.batch,
      readUnitsPerTask: 1 / inputs.batch,
      when: 'a queue with ratePerSecond',
    },
    slotItemsOf(
      'concurrency key',
      `slot items of a key, queue#<queue>/key/<hash>[/slots/<n>] (${slotItems} items)`,
    ),
    {
      key: 'lanes index, <queue>#<priority>#<keyHash>',
      scope: 'concurrency key',
      shards: 1,
      // Entered when the task becomes claimable, left when it is granted.
      writeUnitsPerTask: 2,
      readUnitsPerTask: 0.5,
      when: 'a task with a concurrencyKey',
    },
    {
      key: 'lane turn item, lane#<laneId>',
      scope: 'concurrency key',
      shards: 1,
      // The offer of each task, and the turn passed on.
      writeUnitsPerTask: 2,
      readUnitsPerTask: 0,
      when: 'a task with a concurrencyKey',
    },
    {
      key: `listener partitions, queue#<queue>[#<n>] (${inputs.listenerShards} shards)`,
      scope: 'queue',
      shards: inputs.listenerShards,
      // A wake takes an idle agent (a write) and marks it busy in its other queues (a write, for an agent of several);
      // the claim that finds the queue empty again marks it idle (a write). An agent woken stands for the tasks its
      // claims take (`batch`). The wake reads one partition, and every other one when it found nobody idle there:
      // the worst case, a busy fleet, reads each partition once a wake.
      writeUnitsPerTask: 3 / inputs.batch,
      readUnitsPerTask: listenerReadUnits,
      when: 'push wakes (agents listening on the push channel)',
    },
  ];
}

export function ceilings(inputs: ScaleInputs): Ceiling[] {
  return sharedPartitions(inputs).map((partition) => {
    const byWrites =
      partition.writeUnitsPerTask > 0
        ? PARTITION_WRITE_UNITS_PER_SECOND / partition.writeUnitsPerTask
        : Infinity;
    const byReads =
      partition.readUnitsPerTask > 0
        ? PARTITION_READ_UNITS_PER_SECOND / partition.readUnitsPerTask
        : Infinity;
    return { ...partition, tasksPerSecond: Math.floor(partition.shards * Math.min(byWrites, byReads)) };
  });
}

/** The lowest partition ceiling of a scope, for the lifecycles that touch `when`. */
export const lowestCeiling = (
  all: readonly Ceiling[],
  scope: Scope,
  applies: (c: Ceiling) => boolean = () => true,
) => Math.min(...all.filter((c) => c.scope === scope && applies(c)).map((c) => c.tasksPerSecond));

/** The stack's quotas at the construct's defaults and AWS's, and the tasks a second each allows. */
export function quotas(batch: number) {
  return [
    {
      quota: 'agentRouteThrottle (each agent route, all agents together)',
      limit: '100 requests/s',
      tasksPerSecond: 100 * batch,
      note: 'claim and complete each carry `batch` tasks; raise it in the construct',
    },
    {
      quota: 'operatorRouteThrottle (each operator route)',
      limit: '50 requests/s',
      tasksPerSecond: 50 * (batch === 1 ? 1 : 25),
      note: 'a batch submit carries up to 25 tasks',
    },
    {
      quota: 'apiThrottle (stage default)',
      limit: '100 requests/s, bursts of 200',
      tasksPerSecond: undefined,
      note: 'routes without their own limit',
    },
    {
      quota: 'agentRateLimit (per agent, per function instance)',
      limit: '50 requests/s, bursts of 100',
      tasksPerSecond: undefined,
      note: 'about one call per task for a Worker: 50 tasks/s per agent and instance',
    },
    {
      quota: 'API Gateway account quota (HTTP APIs, per Region)',
      limit: '10,000 requests/s, bursts of 5,000 (adjustable)',
      tasksPerSecond: Math.floor(10_000 / (3 / batch)),
      note: 'three calls a task single, fewer in batches',
    },
    {
      quota: 'Lambda concurrency (per account and Region)',
      limit: '1,000 at once (adjustable)',
      tasksPerSecond: undefined,
      note: 'at 30 ms a call, about 33,000 calls/s',
    },
    {
      quota: 'the wake timer function (held-back tasks only)',
      limit: `${WAKE_TIMER_MAX_CONCURRENCY} invocations at once, ten wakes each`,
      // At about 50 ms an invocation; a batch submit's held-back tasks share one wake per queue and second.
      tasksPerSecond: WAKE_TIMER_MAX_CONCURRENCY * 10 * 20 * (batch === 1 ? 1 : 10),
      note: 'past it, wakes wait in the timer queue (late, not lost); tasks claimable at once arm none',
    },
    {
      quota: 'EventBridge Scheduler invocations',
      limit: '1,000 a second per account (adjustable)',
      tasksPerSecond: undefined,
      note: 'schedule fires only',
    },
  ];
}
