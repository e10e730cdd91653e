/**
 * Waitpoints in the tasks table, each beside the task it suspends:
 * - `(<waitpointId>, "waitpoint")`: the waitpoint (its task, status, timeout, the hash of its callback secret, its
 *   outcome);
 * - `("waitpoints#open", "<createdAt>#<waitpointId>")`: its entry in the list of open waitpoints, while open. One
 *   partition: a suspension and a resolution write it once each, so it takes some 500 of each a second.
 * A suspension and a resolution write the task with them in one transaction (twice the write units of each item).
 */
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { OwnerFence } from '#core/ports/task-store';
import type { OpenWaitpoint, Resolution, Suspension, WaitpointStore } from '#core/ports/waitpoint-store';
import { ServiceUnavailableError } from '#domain/errors';
import type { Waitpoint, WaitpointStatus } from '#domain/waitpoint';
import { Expression, updateExpression } from './expression';
import { SUSPENDED_DUE_SHARD, stateKey } from './task-items';
import { destinationClauses, dueClauses, ownerFence, statusCondition } from './task-writes';

type Item = Record<string, unknown>;

const waitpointKey = (waitpointId: string) => ({ taskId: waitpointId, part: 'waitpoint' });
const OPEN_PARTITION = 'waitpoints#open';
const openPart = (createdAt: number, waitpointId: string) =>
  `${String(createdAt).padStart(15, '0')}#${waitpointId}`;
const openKey = (w: Pick<Waitpoint, 'createdAt' | 'waitpointId'>) => ({
  taskId: OPEN_PARTITION,
  part: openPart(w.createdAt, w.waitpointId),
});

const STATUSES: readonly WaitpointStatus[] = ['open', 'completed', 'rejected', 'timedOut', 'cancelled'];

function waitpointFromItem(item: Item): Waitpoint {
  const status = STATUSES.find((s) => s === item.status) ?? 'open';
  return {
    waitpointId: String(item.waitpointId),
    taskId: String(item.forTask),
    leaseEpoch: Number(item.leaseEpoch),
    status,
    onTimeout: item.onTimeout === 'fail' ? 'fail' : 'resume',
    timeoutAt: Number(item.timeoutAt),
    createdAt: Number(item.createdAt),
    tokenHash: String(item.tokenHash),
    ...(typeof item.resolvedAt === 'number' ? { resolvedAt: item.resolvedAt } : {}),
    ...(typeof item.dataJson === 'string' ? { dataJson: item.dataJson } : {}),
    ...(typeof item.reason === 'string' ? { reason: item.reason } : {}),
    ...(typeof item.resolutionHash === 'string' ? { resolutionHash: item.resolutionHash } : {}),
  };
}

/** An update of one item as a transaction takes it. */
function update(
  tableName: string,
  key: Item,
  build: (e: Expression) => { set: string[]; remove?: string[]; condition: string },
) {
  const e = new Expression();
  const { set, remove = [], condition } = build(e);
  return {
    Update: {
      TableName: tableName,
      Key: key,
      UpdateExpression: updateExpression({ set, remove }),
      ConditionExpression: condition,
      ...e.attributes(),
    },
  };
}

/**
 * One transaction: false when a condition refused it. One cancelled only because another transaction was writing
 * the same item (racing answers, a heartbeat's checkpoint) is sent again, a few times, a moment later: it was
 * refused for no reason of its own (still so after four tries: a 503, which the caller may retry).
 */
async function transact(doc: DynamoDBDocumentClient, items: Record<string, unknown>[]): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: items as never }));
      return true;
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      const conflictOnly =
        reasons.some((r) => r.Code === 'TransactionConflict') &&
        reasons.every((r) => r.Code === 'TransactionConflict' || r.Code === 'None' || r.Code === undefined);
      if (!conflictOnly) return false;
      if (attempt >= 3) {
        throw new ServiceUnavailableError('the task is being written by another request; try again');
      }
      await new Promise((resolve) => setTimeout(resolve, 20 * 2 ** attempt + Math.random() * 20));
    }
  }
}

export class WaitpointTable implements WaitpointStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async get(waitpointId: string): Promise<Waitpoint | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: waitpointKey(waitpointId), ConsistentRead: true }),
    );
    return output.Item ? waitpointFromItem(output.Item) : undefined;
  }

  suspend(taskId: string, lease: OwnerFence, suspension: Suspension, now: number): Promise<boolean> {
    const { waitpoint, checkpointJson, dueAt, purgeAt } = suspension;
    const record = {
      kind: 'wait',
      leaseEpoch: lease.leaseEpoch,
      agentId: lease.agentId,
      status: 'suspended',
    };
    const task = update(this.tableName, stateKey(taskId), (e) => ({
      set: [
        `${e.n('status')} = ${e.v('suspended')}`,
        `${e.n('waitpointId')} = ${e.v(waitpoint.waitpointId)}`,
        `${e.n('updatedAt')} = ${e.v(now)}`,
        `${e.n('lastFinish')} = ${e.v(record)}`,
        // A suspension uses no attempt: the resumed run is the same attempt, as after a release.
        `${e.n('attempt')} = ${e.n('attempt')} - ${e.v(1)}`,
        ...(checkpointJson === undefined ? [] : [`${e.n('checkpoint')} = ${e.v(checkpointJson)}`]),
        ...dueClauses(e, taskId, dueAt, SUSPENDED_DUE_SHARD),
      ],
      remove: [
        e.n('owner'),
        e.n('leaseDeadline'),
        e.n('readyAt'),
        e.n('starvationLevel'),
        e.n('needsAttention'),
      ],
      condition: [statusCondition(e, 'wait', 'suspended'), ...ownerFence(e, lease, now)].join(' AND '),
    }));
    return transact(this.doc, [
      task,
      {
        Put: {
          TableName: this.tableName,
          Item: {
            ...waitpointKey(waitpoint.waitpointId),
            kind: 'waitpoint',
            waitpointId: waitpoint.waitpointId,
            forTask: taskId,
            leaseEpoch: waitpoint.leaseEpoch,
            status: 'open',
            onTimeout: waitpoint.onTimeout,
            timeoutAt: waitpoint.timeoutAt,
            createdAt: waitpoint.createdAt,
            tokenHash: waitpoint.tokenHash,
            purgeAt,
          },
          ConditionExpression: 'attribute_not_exists(taskId)',
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: {
            ...openKey(waitpoint),
            kind: 'openWaitpoint',
            waitpointId: waitpoint.waitpointId,
            forTask: taskId,
            timeoutAt: waitpoint.timeoutAt,
            onTimeout: waitpoint.onTimeout,
            createdAt: waitpoint.createdAt,
            purgeAt,
          },
        },
      },
    ]);
  }

  async replaceToken(waitpoint: Waitpoint, tokenHash: string): Promise<boolean> {
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: waitpointKey(waitpoint.waitpointId),
          UpdateExpression: `SET ${e.n('tokenHash')} = ${e.v(tokenHash)}`,
          ConditionExpression: `${e.n('status')} = ${e.v('open')} AND ${e.n('tokenHash')} = ${e.v(waitpoint.tokenHash)}`,
          ...e.attributes(),
        }),
      );
      return true;
    } catch (error) {
      if ((error as { name?: string }).name === 'ConditionalCheckFailedException') return false;
      throw error;
    }
  }

  resolve(waitpoint: Waitpoint, resolution: Resolution, now: number): Promise<boolean> {
    const { waitpointId, taskId } = waitpoint;
    const status = resolution.to.status;
    const event = status === 'queued' ? 'resume' : 'timeOut';
    return transact(this.doc, [
      update(this.tableName, waitpointKey(waitpointId), (e) => ({
        set: [
          `${e.n('status')} = ${e.v(resolution.outcome)}`,
          `${e.n('resolvedAt')} = ${e.v(now)}`,
          `${e.n('resolutionHash')} = ${e.v(resolution.resolutionHash)}`,
          ...(resolution.dataJson === undefined ? [] : [`${e.n('dataJson')} = ${e.v(resolution.dataJson)}`]),
          ...(resolution.reason === undefined ? [] : [`${e.n('reason')} = ${e.v(resolution.reason)}`]),
        ],
        condition: `${e.n('status')} = ${e.v('open')}`,
      })),
      update(this.tableName, stateKey(taskId), (e) => {
        const clauses = destinationClauses(e, now, taskId, resolution.to);
        return {
          set: [...clauses.set, ...(resolution.error ? [`${e.n('error')} = ${e.v(resolution.error)}`] : [])],
          remove: clauses.remove,
          condition: `${statusCondition(e, event, status)} AND ${e.n('waitpointId')} = ${e.v(waitpointId)}`,
        };
      }),
      { Delete: { TableName: this.tableName, Key: openKey(waitpoint) } },
    ]);
  }

  async close(waitpoint: Waitpoint, now: number): Promise<void> {
    await transact(this.doc, [
      update(this.tableName, waitpointKey(waitpoint.waitpointId), (e) => ({
        set: [`${e.n('status')} = ${e.v('cancelled')}`, `${e.n('resolvedAt')} = ${e.v(now)}`],
        condition: `${e.n('status')} = ${e.v('open')}`,
      })),
      { Delete: { TableName: this.tableName, Key: openKey(waitpoint) } },
    ]);
  }

  async listOpen(limit: number, after?: string): Promise<{ waitpoints: OpenWaitpoint[]; next?: string }> {
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: after ? 'taskId = :p AND part > :after' : 'taskId = :p',
        ExpressionAttributeValues: { ':p': OPEN_PARTITION, ...(after ? { ':after': after } : {}) },
        Limit: limit,
      }),
    );
    const items = output.Items ?? [];
    const waitpoints = items.map((item) => ({
      waitpointId: String(item.waitpointId),
      taskId: String(item.forTask),
      createdAt: Number(item.createdAt),
      timeoutAt: Number(item.timeoutAt),
      onTimeout: item.onTimeout === 'fail' ? ('fail' as const) : ('resume' as const),
    }));
    const last = output.LastEvaluatedKey?.part;
    return { waitpoints, ...(typeof last === 'string' ? { next: last } : {}) };
  }
}
