/**
 * Debounce windows in the tasks table, one partition per queue and key (`debounce#<queue>#<key>`; neither has a
 * `#`, and no task id begins so):
 * - `window#<specOf>`: the window of the submissions of one specification (all of it but the payload): the task they
 *   collapse into (`windowTask`), when it stops taking them at the latest (`closesBy`), purged a day after that;
 * - `submission#<idempotencyKey>`: what a submission named by that key was answered (`forTask`, its `specHash`,
 *   `opened`), purged a day after it.
 * Neither carries an attribute of an index, and nothing reads these partitions but this adapter: functions of
 * releases before debounce never meet them. The window's task is an ordinary state item with `debounceKey`,
 * `debounceSpec`, `debounceUntil` and `debounceJoins`, which those releases pass over.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type {
  DebouncedSubmission,
  DebounceJoin,
  DebounceRef,
  DebounceStore,
  DebounceWindow,
} from '#core/ports/debounce-store';
import { ServiceUnavailableError } from '#domain/errors';
import type { Task } from '#domain/task';
import { Expression } from './expression';
import { type Item, itemFromNewTask, stateKey } from './task-items';
import { batchGet, sleep } from './task-requests';
import type { TaskTable } from './task-table';

const partitionOf = (ref: Pick<DebounceRef, 'queue' | 'key'>): string => `debounce#${ref.queue}#${ref.key}`;
const windowKey = (ref: DebounceRef) => ({ taskId: partitionOf(ref), part: `window#${ref.specOf}` });
const submissionKeyOf = (ref: DebounceRef, submissionKey: string) => ({
  taskId: partitionOf(ref),
  part: `submission#${submissionKey}`,
});

/** A record's purge: a day after the time it stops mattering (epoch seconds, as DynamoDB's TTL reads it). */
const DAY_SECONDS = 24 * 60 * 60;

const windowOf = (item: Item): DebounceWindow => ({
  taskId: String(item.windowTask),
  closesBy: Number(item.closesBy),
});

const submissionOf = (item: Item): DebouncedSubmission => ({
  taskId: String(item.forTask),
  specHash: String(item.specHash),
  opened: item.opened === true,
});

export class DebounceTable implements DebounceStore {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    /** The state items' adapter: a join is a write of the task's state item, made through it. */
    private readonly tasks: TaskTable,
  ) {}

  async read(
    ref: DebounceRef,
    submissionKey: string | undefined,
    consistent: boolean,
  ): Promise<{ window?: DebounceWindow; submission?: DebouncedSubmission }> {
    if (submissionKey === undefined) {
      const output = await this.doc.send(
        new GetCommand({ TableName: this.tableName, Key: windowKey(ref), ConsistentRead: consistent }),
      );
      return output.Item ? { window: windowOf(output.Item) } : {};
    }
    const items = await batchGet(this, [windowKey(ref), submissionKeyOf(ref, submissionKey)], consistent);
    const window = items.find((item) => String(item.part).startsWith('window#'));
    const submission = items.find((item) => String(item.part).startsWith('submission#'));
    return {
      ...(window ? { window: windowOf(window) } : {}),
      ...(submission ? { submission: submissionOf(submission) } : {}),
    };
  }

  /**
   * One transaction: the task's state item (only if absent), the window's record (conditioned on the task it named)
   * and, when the window it replaces ended unclaimed, the mark that closes that task. A transaction bills each item
   * twice, but only a submission that opens a window makes one.
   */
  async open(
    ref: DebounceRef,
    task: Task,
    dueAt: number | undefined,
    replacing: { readonly taskId: string; readonly close: boolean } | undefined,
    now: number,
  ): Promise<boolean> {
    const closesBy = task.debounceUntil ?? task.notBefore ?? task.createdAt;
    const s = new Expression();
    const w = new Expression();
    const c = new Expression();
    const items: Record<string, unknown>[] = [
      {
        Put: {
          TableName: this.tableName,
          Item: itemFromNewTask(task, dueAt),
          ConditionExpression: `attribute_not_exists(${s.n('taskId')})`,
          ...s.attributes(),
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: {
            ...windowKey(ref),
            windowTask: task.taskId,
            openedAt: task.createdAt,
            closesBy,
            purgeAt: Math.ceil(closesBy / 1_000) + DAY_SECONDS,
          },
          ConditionExpression:
            replacing === undefined
              ? `attribute_not_exists(${w.n('taskId')})`
              : `${w.n('windowTask')} = ${w.v(replacing.taskId)}`,
          ...w.attributes(),
        },
      },
    ];
    if (replacing?.close) {
      items.push({
        Update: {
          TableName: this.tableName,
          Key: stateKey(replacing.taskId),
          UpdateExpression: `SET ${c.n('debounceClosed')} = ${c.v(true)}`,
          ConditionExpression: [
            `${c.n('status')} = ${c.v('queued')}`,
            `${c.n('leaseEpoch')} = ${c.v(0)}`,
            `${c.n('debounceKey')} = ${c.v(ref.key)}`,
            `${c.n('notBefore')} <= ${c.v(now)}`,
          ].join(' AND '),
          ...c.attributes(),
        },
      });
    }
    // A transaction refused only because another was writing the record at that moment (a parallel opener) is
    // tried again: the record's condition then decides.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.doc.send(new TransactWriteCommand({ TransactItems: items as never }));
        return true;
      } catch (error) {
        if (!(error instanceof TransactionCanceledException)) throw error;
        const reasons = error.CancellationReasons ?? [];
        if (reasons.slice(1).some((r) => r.Code === 'ConditionalCheckFailed')) return false;
        const conflict = reasons.some((r) => r.Code === 'TransactionConflict');
        if (!conflict) throw error;
        if (attempt >= 4) throw new ServiceUnavailableError('the debounce window is busy; try again');
        await sleep(20 * 2 ** attempt + Math.random() * 20);
      }
    }
  }

  /**
   * The payload and its time move only while the task is its window's: queued and never granted (a task given
   * back is queued again at a later epoch, and a window never reopens), of this key and specification, and not yet
   * claimable at `now`. The grant's condition (`notBefore <= now`) and this one are on the same item, so a
   * submission either joins before the task is granted, and the grant carries its payload, or finds it granted.
   */
  join(
    ref: DebounceRef,
    taskId: string,
    join: DebounceJoin,
    now: number,
  ): Promise<{ ok: true; task: Task } | { ok: false; current?: Task }> {
    return this.tasks.update(taskId, (e) => ({
      set: [
        `${e.n('specHash')} = ${e.v(join.specHash)}`,
        `${e.n('payloadBytes')} = ${e.v(join.payloadBytes)}`,
        `${e.n('payloadPurgeAt')} = ${e.v(join.payloadPurgeAt)}`,
        `${e.n('notBefore')} = ${e.v(join.notBefore)}`,
        // The starvation ladder counts from when it becomes claimable; a keyed task's lane orders it by it too.
        `${e.n('readyAt')} = ${e.v(join.notBefore)}`,
        `${e.n('updatedAt')} = ${e.v(now)}`,
        ...(join.payloadInObject ? [`${e.n('payloadInObject')} = ${e.v(true)}`] : []),
        ...(join.expiresAt === undefined ? [] : [`${e.n('expiresAt')} = ${e.v(join.expiresAt)}`]),
      ],
      remove: join.payloadInObject ? [] : [e.n('payloadInObject')],
      add: [`${e.n('debounceJoins')} ${e.v(1)}`],
      condition: [
        `${e.n('status')} = ${e.v('queued')}`,
        `${e.n('leaseEpoch')} = ${e.v(0)}`,
        `${e.n('debounceKey')} = ${e.v(ref.key)}`,
        `${e.n('debounceSpec')} = ${e.v(ref.specOf)}`,
        `${e.n('queue')} = ${e.v(ref.queue)}`,
        `${e.n('notBefore')} > ${e.v(now)}`,
        `${e.n('debounceUntil')} >= ${e.v(join.notBefore)}`,
        `attribute_not_exists(${e.n('debounceClosed')})`,
      ].join(' AND '),
    }));
  }

  async remember(
    ref: DebounceRef,
    submissionKey: string,
    submission: DebouncedSubmission,
    purgeAt: number,
  ): Promise<DebouncedSubmission | undefined> {
    const e = new Expression();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            ...submissionKeyOf(ref, submissionKey),
            forTask: submission.taskId,
            specHash: submission.specHash,
            opened: submission.opened,
            purgeAt,
          },
          ConditionExpression: `attribute_not_exists(${e.n('taskId')})`,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...e.attributes(),
        }),
      );
      return undefined;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        return submissionOf(unmarshall(error.Item));
      }
      throw error;
    }
  }
}
