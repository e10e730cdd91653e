/**
 * The four DynamoDB tables, defined once. The CDK construct, the local runner and the tests all build their
 * tables from these definitions, so what runs locally is what deploys.
 *
 * - tasks: two items per task. `part = "state"` is the small mutable record every transition rewrites;
 *   `part = "payload#<specHash>"` is written once at submit. Splitting them keeps claims, heartbeats and completions at the
 *   same write units whether the payload is 1 KB or 200 KB. The sparse `due` index lists open tasks by the time
 *   the supervisor should next look at them, spread over `dueShard` partitions so no partition holds every
 *   task of one status. Operators list a queue's tasks newest first from its list partitions: the payload items of
 *   tasks written by `taskLayout` 2, keyed `list#<queue>#<nn>` and by creation (the item written anyway at submit,
 *   so a listing costs no write), and the sparse `listed` index for state items written by layout 1.
 * - agents: one item per registered agent (identity, capabilities, token hash). Rarely written.
 * - leases: one item per agent session (its liveness and the tasks it holds); later also role leases and
 *   per-queue controls. Small items, one write per heartbeat.
 * - connections: the push channel's tickets, connections and per-queue listeners (`connection-table.ts`), all
 *   short-lived.
 */
import type { CreateTableCommandInput } from '@aws-sdk/client-dynamodb';

export type AttributeType = 'S' | 'N';

export interface KeyDefinition {
  readonly name: string;
  readonly type: AttributeType;
}

export interface IndexDefinition {
  readonly indexName: string;
  readonly partitionKey: KeyDefinition;
  readonly sortKey?: KeyDefinition;
  readonly projection: 'KEYS_ONLY' | 'ALL';
}

export interface TableDefinition {
  /** Used for CDK construct ids and environment variable names. */
  readonly id: 'Tasks' | 'Agents' | 'Leases' | 'Connections';
  readonly partitionKey: KeyDefinition;
  readonly sortKey?: KeyDefinition;
  readonly globalSecondaryIndexes: readonly IndexDefinition[];
  readonly timeToLiveAttribute?: string;
}

export const TASK_PART = { state: 'state' } as const;

/** The item that says `dependent` waits for the task of the partition: its end resolves the dependent. */
export const dependentPart = (dependentId: string): string => `dependent#${dependentId}`;
/** The item that holds, for the task of the partition, how its dependency `dependencyId` ended (its result). */
export const inputPart = (dependencyId: string): string => `input#${dependencyId}`;

/** The item that keeps a succeeded task's result once for all its dependents (their inputs name it). */
export const RESULT_PART = 'result';

/** The sort key of a task's payload item: it names the specification the payload belongs to. */
export const payloadPart = (specHash: string): string => `payload#${specHash}`;

/**
 * The sort key of a payload item that is also its task's list entry (`taskLayout` 2), in its queue's list partition
 * (`list#<queue>#<nn>`): the task's creation (milliseconds, 15 digits, so that the text sorts as the number), its id
 * and its specification. Two submissions under one idempotency key in one millisecond write distinct items unless
 * they are the same task.
 */
export const listedPayloadPart = (createdAt: number, taskId: string, specHash: string): string =>
  `${millisecondOf(createdAt)}#${taskId}#${specHash}`;

/** A sort key after every list entry created at or before `createdAt`: `~` sorts after a task id's characters. */
export const listedPayloadPartsUpTo = (createdAt: number): string => `${millisecondOf(createdAt)}#~`;

const millisecondOf = (at: number): string => String(at).padStart(15, '0');

export const DUE_INDEX = 'due';
export const LISTED_INDEX = 'listed';
export const LANE_INDEX = 'lanes';
export const CHILDREN_INDEX = 'children';

/**
 * A named rate limit's records share its partition (`rate#<name>`): one item a window and key (`w#<start>#<key>`,
 * the key empty for a limit not per key), so that one query finds every key's use of a window.
 */
export const rateWindowKey = (name: string, window: number, key = '') => ({
  taskId: `rate#${name}`,
  part: `w#${millisecondOf(window)}#${key}`,
});

/** The prefix of every key's item of one window of a limit. */
export const rateWindowPrefix = (window: number): string => `w#${millisecondOf(window)}#`;

/** The item that keeps the rate limits operators set: one, read whole by a claim of a limited task. */
export const RATE_LIMITS_KEY = { taskId: 'rate-limits', part: 'definitions' } as const;

/** The item that records whether a lane's turn is in line (`lane#<laneId>`, part `turn`). */
export const laneTurnKey = (laneId: string) => ({ taskId: `lane#${laneId}`, part: 'turn' });

export const TASKS_TABLE: TableDefinition = {
  id: 'Tasks',
  partitionKey: { name: 'taskId', type: 'S' },
  sortKey: { name: 'part', type: 'S' },
  globalSecondaryIndexes: [
    {
      indexName: DUE_INDEX,
      partitionKey: { name: 'dueShard', type: 'S' },
      sortKey: { name: 'dueAt', type: 'N' },
      // Keys only: updating a task's other attributes never writes to the index.
      projection: 'KEYS_ONLY',
    },
    {
      indexName: LISTED_INDEX,
      // `<queue>#<nn>`, written once with the state item (payload items carry neither key: the index holds state
      // items only). One partition per queue would take every submission of the queue: DynamoDB gives a partition
      // 1,000 writes a second, and an index that cannot keep up throttles the table's writes too. Over
      // `LISTED_SHARDS` partitions a queue takes 10,000 submissions a second, the busiest partition about 650
      // of them (`key-distribution.test.ts`).
      partitionKey: { name: 'listShard', type: 'S' },
      sortKey: { name: 'createdAt', type: 'N' },
      // Keys only. `listShard` and `createdAt` never change, so the index is written once when a task is created
      // and once when it expires, whatever happens in between; projecting what a list shows (status, attempt,
      // owner, updatedAt) would add an index write to every transition, three or more per task. A page reads its
      // tasks from the table instead: one consistent read unit per task of the page (state items stay under
      // 4 KB), plus one query per shard of each queue listed, of about 80 bytes a key: half a read unit for up to
      // 50 keys. A page of 25 over 2 queues: 32 queries and one BatchGetItem, about 41 read units. Operators list
      // rarely; tasks change all the time. (State items written before this index have no `listShard`: they are
      // not listed.) Written by `taskLayout` 1 only: layout 2 lists a task by its payload item, one write unit a
      // task less; the index stays for the tasks layout 1 wrote until they expire.
      projection: 'KEYS_ONLY',
    },
    {
      indexName: LANE_INDEX,
      // A keyed task's lane (`<queue>#<priority>#<keyHash>`, written once) and, while it is queued, the time it
      // becomes claimable: the lane's tasks oldest first. Sparse: a task leaves the index when it is granted (its
      // `readyAt` goes) and only keyed tasks have a lane. Keys only, for the reasons of `listed`.
      partitionKey: { name: 'laneId', type: 'S' },
      sortKey: { name: 'readyAt', type: 'N' },
      projection: 'KEYS_ONLY',
    },
    {
      indexName: CHILDREN_INDEX,
      // A follow-up task's parent, and its creation: the children of a task, for a cancellation that reaches them.
      // Sparse (only children's state items carry `parentTaskId`), and both keys are written once, so the index is
      // written when a child is created and when it is purged, never in between. Added to a deployed table, it is
      // filled from the items already there: children submitted before it are found too.
      partitionKey: { name: 'parentTaskId', type: 'S' },
      sortKey: { name: 'createdAt', type: 'N' },
      projection: 'KEYS_ONLY',
    },
  ],
  timeToLiveAttribute: 'purgeAt',
};

export const AGENTS_TABLE: TableDefinition = {
  id: 'Agents',
  partitionKey: { name: 'agentId', type: 'S' },
  globalSecondaryIndexes: [],
};

export const LEASES_TABLE: TableDefinition = {
  id: 'Leases',
  partitionKey: { name: 'leaseId', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'purgeAt',
};

export const CONNECTIONS_TABLE: TableDefinition = {
  id: 'Connections',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [],
  timeToLiveAttribute: 'purgeAt',
};

export const TABLE_DEFINITIONS = [TASKS_TABLE, AGENTS_TABLE, LEASES_TABLE, CONNECTIONS_TABLE] as const;

export interface TableNames {
  readonly tasks: string;
  readonly agents: string;
  readonly leases: string;
  /** The push channel's table; without it the deployment offers no push channel. */
  readonly connections?: string;
}

/** A `CreateTable` request for a definition, on-demand billing, as the local runner and the tests use it. */
export function createTableInput(definition: TableDefinition, tableName: string): CreateTableCommandInput {
  const keys = [definition.partitionKey, definition.sortKey].filter(
    (k): k is KeyDefinition => k !== undefined,
  );
  const indexKeys = definition.globalSecondaryIndexes.flatMap((index) =>
    [index.partitionKey, index.sortKey].filter((k): k is KeyDefinition => k !== undefined),
  );
  const attributes = new Map<string, AttributeType>();
  for (const key of [...keys, ...indexKeys]) attributes.set(key.name, key.type);
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType,
    })),
    KeySchema: [
      { AttributeName: definition.partitionKey.name, KeyType: 'HASH' },
      ...(definition.sortKey ? [{ AttributeName: definition.sortKey.name, KeyType: 'RANGE' as const }] : []),
    ],
    ...(definition.globalSecondaryIndexes.length > 0
      ? {
          GlobalSecondaryIndexes: definition.globalSecondaryIndexes.map((index) => ({
            IndexName: index.indexName,
            KeySchema: [
              { AttributeName: index.partitionKey.name, KeyType: 'HASH' as const },
              ...(index.sortKey ? [{ AttributeName: index.sortKey.name, KeyType: 'RANGE' as const }] : []),
            ],
            Projection: { ProjectionType: index.projection },
          })),
        }
      : {}),
  };
}

/** Partitions of the `due` index. Fixed: sweeps query every shard, so changing it strands entries. */
export const DUE_SHARDS = 32;

/** Partitions of the `listed` index per queue. Fixed: lists query every shard, so changing it strands entries. */
export const LISTED_SHARDS = 16;
