/**
 * The state item of a task in the tasks table (`part = "state"`): every transition rewrites it, each write one
 * conditional update (`update`) or, for a follow-up task fenced by its parent's lease, one transaction of two state
 * items. The table's other records have adapters of their own: `payload-table.ts`, `dependency-table.ts`,
 * `lane-table.ts`.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type {
  Ending,
  Grant,
  LadderClimb,
  ListingCursor,
  Observed,
  OwnerFence,
  ReadOptions,
  Requeue,
  SettledFinish,
  TakingBack,
  TaskStore,
  TaskWrite,
  WindowSettlement,
  WindowTake,
} from '#core/ports/task-store';
import { ValidationError } from '#domain/errors';
import type { FinishRecord, Task, TaskError } from '#domain/task';
import { isTerminal } from '#domain/task-status';
import {
  type ConditionalClauses,
  conditionalTransaction,
  conditionalUpdate,
  Expression,
  transactUpdate,
} from './expression';
import { DUE_INDEX, LISTED_INDEX, listedPayloadPartsUpTo, rateWindowKey, TASK_PART } from './tables';
import {
  ALL_DUE_SHARDS,
  barKey,
  dueShardOf,
  itemFromNewTask,
  listEntryOfPayloadPart,
  listedShardsOf,
  listShardOfPayloadList,
  payloadListOf,
  rateTakenItem,
  requestToken,
  SUSPENDED_DUE_SHARD,
  stateKey,
  taskFromItem,
} from './task-items';
import { batchGet, sleep } from './task-requests';
import {
  destinationClauses,
  dueClauses,
  endingClauses,
  epochFence,
  ownerFence,
  requeueClauses,
  statusCondition,
  stillAsObserved,
} from './task-writes';

export type ConditionalResult = TaskWrite;

/** The clauses of one conditional update of a state item, written with placeholders from `e`. */
export type StateUpdate = ConditionalClauses;

export class TaskTable implements TaskStore {
  readonly dueShards = ALL_DUE_SHARDS;

  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  /** Creates the state item unless one exists; then returns the existing task instead. */
  async create(
    task: Task,
    dueAt: number | undefined,
  ): Promise<{ created: true } | { created: false; existing: Task }> {
    const item = itemFromNewTask(task, dueAt);
    const e = new Expression();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: `attribute_not_exists(${e.n('taskId')})`,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...e.attributes(),
        }),
      );
      return { created: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException && error.Item) {
        return { created: false, existing: taskFromItem(unmarshall(error.Item)) };
      }
      throw error;
    }
  }

  async createUnder(
    task: Task,
    dueAt: number | undefined,
    parent: OwnerFence & { readonly taskId: string },
    now: number,
  ): Promise<{ created: true } | { created: false; existing: Task } | { parentLost: true }> {
    // A transaction that overlaps another on the parent's item (the agent's heartbeat, a sibling's submit) is
    // refused whole, and nothing was written: it is tried again.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.createUnderOnce(task, dueAt, parent, now);
      } catch (error) {
        const conflict =
          error instanceof TransactionCanceledException &&
          (error.CancellationReasons ?? []).some((r) => r.Code === 'TransactionConflict');
        if (!conflict || attempt >= 4) throw error;
        await sleep(20 * 2 ** attempt);
      }
    }
  }

  private async createUnderOnce(
    task: Task,
    dueAt: number | undefined,
    parent: OwnerFence & { readonly taskId: string },
    now: number,
  ): Promise<{ created: true } | { created: false; existing: Task } | { parentLost: true }> {
    const p = new Expression();
    const c = new Expression();
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: stateKey(parent.taskId),
                ConditionExpression: [
                  `${p.n('status')} = ${p.v('leased')}`,
                  ...ownerFence(p, parent, now),
                ].join(' AND '),
                ...p.attributes(),
              },
            },
            {
              Put: {
                TableName: this.tableName,
                Item: itemFromNewTask(task, dueAt),
                ConditionExpression: `attribute_not_exists(${c.n('taskId')})`,
                ...c.attributes(),
              },
            },
          ],
        }),
      );
      return { created: true };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed') return { parentLost: true };
      if (reasons[1]?.Code === 'ConditionalCheckFailed') {
        const existing = await this.get(task.taskId);
        if (existing) return { created: false, existing };
      }
      throw error;
    }
  }

  async get(taskId: string, { consistent = true }: ReadOptions = {}): Promise<Task | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: stateKey(taskId), ConsistentRead: consistent }),
    );
    return output.Item ? taskFromItem(output.Item) : undefined;
  }

  /** Reads many state items, 100 keys per request, retrying unprocessed keys. */
  async getMany(
    taskIds: readonly string[],
    { consistent = true }: ReadOptions = {},
  ): Promise<Map<string, Task>> {
    const items = await batchGet(this, taskIds.map(stateKey), consistent);
    return new Map(items.map((item) => [String(item.taskId), taskFromItem(item)]));
  }

  /**
   * One conditional update of a state item; on a failed condition, the task as it is now. Every write below goes
   * through here (the chaos run's deliberate bugs rewrite it).
   */
  async update(taskId: string, build: (e: Expression) => StateUpdate): Promise<ConditionalResult> {
    const outcome = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: stateKey(taskId) },
      build,
      taskFromItem,
    );
    return outcome.ok ? { ok: true, task: outcome.value } : outcome;
  }

  grant(taskId: string, grant: Grant, now: number): Promise<TaskWrite> {
    const takes = grant.rateTakes ?? [];
    const build = (e: Expression): ConditionalClauses => ({
      set: [
        ...(grant.claimId === undefined ? [] : [`${e.n('claimId')} = ${e.v(grant.claimId)}`]),
        ...(grant.queueSlots?.length ? [`${e.n('queueSlots')} = ${e.v(grant.queueSlots)}`] : []),
        ...(takes.length > 0
          ? [`${e.n('rateTaken')} = ${e.v(rateTakenItem(takes.map((t) => t.taken)))}`]
          : []),
        `${e.n('status')} = ${e.v('leased')}`,
        `${e.n('leaseEpoch')} = ${e.n('leaseEpoch')} + ${e.v(1)}`,
        `${e.n('attempt')} = ${e.n('attempt')} + ${e.v(1)}`,
        `${e.n('owner')} = ${e.v(grant.agentId)}`,
        `${e.n('sessionId')} = ${e.v(grant.sessionId)}`,
        `${e.n('leasedAt')} = ${e.v(now)}`,
        `${e.n('leaseDeadline')} = ${e.n('timeoutMs')} + ${e.v(now)}`,
        `${e.n('updatedAt')} = ${e.v(now)}`,
      ],
      // A grant of another claim must not be taken for this one's by a retry. The task leaves its lane.
      remove: [
        ...(grant.claimId === undefined ? [e.n('claimId')] : []),
        ...(grant.queueSlots?.length ? [] : [e.n('queueSlots')]),
        ...(takes.length > 0 ? [] : [e.n('rateTaken')]),
        e.n('readyAt'),
      ],
      condition: [
        statusCondition(e, 'claim', 'leased'),
        `${e.n('queue')} = ${e.v(grant.queue)}`,
        `NOT contains(${e.n('barredGrants')}, ${e.v(barKey(grant.sessionId, now))})`,
        `(attribute_not_exists(${e.n('notBefore')}) OR ${e.n('notBefore')} <= ${e.v(now)})`,
        `(attribute_not_exists(${e.n('expiresAt')}) OR ${e.n('expiresAt')} > ${e.v(now)})`,
        // A claim that did not know the task takes units must not grant it without them.
        ...(grant.rateTakes === undefined ? [`attribute_not_exists(${e.n('rateLimits')})`] : []),
        // An agent is never given a task whose requirements its claim did not match against its labels.
        grant.requireKey === undefined
          ? `attribute_not_exists(${e.n('require')})`
          : `(attribute_not_exists(${e.n('require')}) OR ${e.n('requireKey')} = ${e.v(grant.requireKey)})`,
      ].join(' AND '),
    });
    if (takes.length === 0) return this.update(taskId, build);
    return this.grantTaking(taskId, grant, now, build, takes);
  }

  /**
   * A grant and the units it takes, in one transaction: each window's count grows by the units on condition that
   * it stays within the window's capacity (a take larger than the window lands only in an empty one). Sent again
   * after a lost answer, with the same token, it is not made twice.
   */
  private async grantTaking(
    taskId: string,
    grant: Grant,
    now: number,
    build: (e: Expression) => ConditionalClauses,
    takes: readonly WindowTake[],
  ): Promise<TaskWrite> {
    const items = [
      transactUpdate({ TableName: this.tableName, Key: stateKey(taskId) }, build),
      ...takes.map(({ taken, capacity, end, purgeAt }) =>
        transactUpdate(
          { TableName: this.tableName, Key: rateWindowKey(taken.name, taken.window, taken.key) },
          (e) => ({
            set: [
              `${e.n('windowEnd')} = ${e.v(end)}`,
              `${e.n('capacity')} = ${e.v(capacity)}`,
              `${e.n('purgeAt')} = ${e.v(purgeAt)}`,
              ...(taken.key === undefined ? [] : [`${e.n('key')} = ${e.v(taken.key)}`]),
            ],
            add: [`${e.n('used')} ${e.v(taken.units)}`],
            condition: `attribute_not_exists(${e.n('used')}) OR ${e.n('used')} <= ${e.v(Math.max(0, capacity - taken.units))}`,
          }),
        ),
      ),
    ];
    const token = requestToken('grant', taskId, grant.sessionId, String(now));
    const outcome = await conditionalTransaction(this.doc, items, token);
    if (outcome.ok) {
      const task = await this.get(taskId);
      if (!task) throw new Error(`task ${taskId} granted but not found`);
      return { ok: true, task };
    }
    const [own, ...windows] = outcome.reasons;
    const current = own?.item ? taskFromItem(own.item) : undefined;
    if (own?.code === 'ConditionalCheckFailed') return current ? { ok: false, current } : { ok: false };
    const index = windows.findIndex((r) => r.code === 'ConditionalCheckFailed');
    if (index >= 0) {
      const used = windows[index]?.item?.used;
      return {
        ok: false,
        ...(current ? { current } : {}),
        short: { index, ...(typeof used === 'number' ? { used } : {}) },
      };
    }
    // Another transaction held an item (a conflict): nothing was written, and a claim may try again at once.
    return { ok: false, ...(current ? { current } : {}), conflict: true };
  }

  barGrant(taskId: string, reservation: { sessionId: string; reservedAt: number }): Promise<TaskWrite> {
    const { sessionId, reservedAt } = reservation;
    return this.update(taskId, (e) => ({
      // A string set: made by the first bar, and no bar's key can clash with another's.
      add: [`${e.n('barredGrants')} ${e.v(new Set([barKey(sessionId, reservedAt)]))}`],
      condition: [
        `attribute_exists(${e.n('status')})`,
        `NOT (${e.n('status')} = ${e.v('leased')} AND ${e.n('sessionId')} = ${e.v(sessionId)} AND ${e.n('leasedAt')} = ${e.v(reservedAt)})`,
      ].join(' AND '),
    }));
  }

  finish(taskId: string, lease: OwnerFence, finish: SettledFinish, now: number): Promise<TaskWrite> {
    const record: FinishRecord = {
      kind: finish.event,
      leaseEpoch: lease.leaseEpoch,
      agentId: lease.agentId,
      status: finish.to.status,
    };
    const build = (e: Expression): ConditionalClauses => {
      const clauses = destinationClauses(e, now, taskId, finish.to);
      const set = [...clauses.set];
      if (finish.event === 'complete' && finish.result !== undefined)
        set.push(`${e.n('result')} = ${e.v(finish.result)}`);
      if (finish.event === 'fail') set.push(`${e.n('error')} = ${e.v(finish.error)}`);
      if (finish.event === 'release') set.push(`${e.n('attempt')} = ${e.n('attempt')} - ${e.v(1)}`);
      set.push(`${e.n('lastFinish')} = ${e.v(record)}`);
      const snoozed = finish.event === 'release' && finish.snooze === true;
      return {
        set,
        remove: clauses.remove,
        ...(snoozed ? { add: [`${e.n('snoozes')} ${e.v(1)}`] } : {}),
        condition: [statusCondition(e, finish.event, finish.to.status), ...ownerFence(e, lease, now)].join(
          ' AND ',
        ),
      };
    };
    if (!finish.settle?.length) return this.update(taskId, build);
    return this.finishSettling(taskId, lease, finish.event, build, finish.settle);
  }

  /**
   * An owner's write and the usage it settles, in one transaction: the write lands with every window's change or
   * not at all, and the same call sent again (the same token) changes nothing more.
   */
  private async finishSettling(
    taskId: string,
    lease: OwnerFence,
    event: string,
    build: (e: Expression) => ConditionalClauses,
    settle: readonly WindowSettlement[],
  ): Promise<TaskWrite> {
    const items = [
      transactUpdate({ TableName: this.tableName, Key: stateKey(taskId) }, build),
      ...settle.map((s) => settleUpdate(this.tableName, s)),
    ];
    for (let round = 0; ; round++) {
      // A round met by another transaction wrote nothing: the next is a request of its own.
      const token = requestToken(event, taskId, String(lease.leaseEpoch), lease.sessionId, String(round));
      const outcome = await conditionalTransaction(this.doc, items, token);
      if (outcome.ok) break;
      const own = outcome.reasons[0];
      if (own?.code === 'ConditionalCheckFailed')
        return own.item ? { ok: false, current: taskFromItem(own.item) } : { ok: false };
      if (round >= 3) throw new Error(`finishing task ${taskId} met other transactions ${round + 1} times`);
      await sleep(25 * 2 ** round);
    }
    const task = await this.get(taskId);
    if (!task) throw new Error(`task ${taskId} finished but not found`);
    return { ok: true, task };
  }

  takeBack(observed: Observed, { event, to, error }: TakingBack, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = destinationClauses(e, now, observed.taskId, to);
      return {
        set: [...clauses.set, `${e.n('error')} = ${e.v(error)}`],
        remove: clauses.remove,
        condition: `${statusCondition(e, event, to.status, observed)} AND ${epochFence(e, observed)}`,
      };
    });
  }

  cancel(
    observed: Observed,
    to: Ending & { status: 'cancelled' },
    now: number,
    because?: { readonly failedDependency: string; readonly error: TaskError },
  ): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = endingClauses(e, now, observed.taskId, to);
      return {
        set: [
          ...clauses.set,
          ...(because
            ? [
                `${e.n('failedDependency')} = ${e.v(because.failedDependency)}`,
                `${e.n('error')} = ${e.v(because.error)}`,
              ]
            : []),
        ],
        remove: clauses.remove,
        condition: `${statusCondition(e, 'cancel', to.status, observed)} AND ${epochFence(e, observed)}`,
      };
    });
  }

  unblock(observed: Observed, to: Requeue, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = requeueClauses(e, now, observed.taskId, to);
      return {
        set: clauses.set,
        remove: [...clauses.remove, e.n('waitingOn')],
        condition: [
          statusCondition(e, 'unblock', to.status, observed),
          epochFence(e, observed),
          `(attribute_not_exists(${e.n('waitingOn')}) OR size(${e.n('waitingOn')}) = ${e.v(0)})`,
        ].join(' AND '),
      };
    });
  }

  strikeDependency(taskId: string, dependencyId: string): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      set: [],
      remove: [e.n('waitingOn', dependencyId)],
      condition: `${e.n('status')} = ${e.v('waiting')} AND attribute_exists(${e.n('waitingOn', dependencyId)})`,
    }));
  }

  expire(observed: Observed, to: Ending & { status: 'expired' }, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      ...endingClauses(e, now, observed.taskId, to),
      condition: [
        statusCondition(e, 'expire', to.status, observed),
        epochFence(e, observed),
        `${e.n('expiresAt')} <= ${e.v(now)}`,
      ].join(' AND '),
    }));
  }

  settleEnd(observed: Observed): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [],
      remove: [e.n('followUp'), ...(isTerminal(observed.status) ? [e.n('dueShard'), e.n('dueAt')] : [])],
      condition: stillAsObserved(e, observed),
    }));
  }

  redrive(observed: Observed, to: Requeue, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => {
      const clauses = requeueClauses(e, now, observed.taskId, to);
      return {
        set: [
          ...clauses.set,
          `${e.n('attempt')} = ${e.v(0)}`,
          // Counted, so that its next death has an onFailure of its own.
          `${e.n('redrives')} = if_not_exists(${e.n('redrives')}, ${e.v(0)}) + ${e.v(1)}`,
        ],
        // An operator's redrive runs the task: a deadline to start that passed is lifted with it, and what was to
        // follow from its death was made before (`redriveTask`), never from a task running again.
        remove: [...clauses.remove, e.n('finishedAt'), e.n('purgeAt'), e.n('expiresAt'), e.n('followUp')],
        condition: `${statusCondition(e, 'redrive', to.status, observed)} AND ${epochFence(e, observed)}`,
      };
    });
  }

  checkpoint(taskId: string, lease: OwnerFence, checkpointJson: string, now: number): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      set: [`${e.n('checkpoint')} = ${e.v(checkpointJson)}`],
      condition: [`${e.n('status')} = ${e.v('leased')}`, ...ownerFence(e, lease, now)].join(' AND '),
    }));
  }

  extendDeadline(
    taskId: string,
    lease: OwnerFence,
    leasedAt: number,
    deadline: number,
    now: number,
  ): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      set: [`${e.n('leaseDeadline')} = ${e.v(deadline)}`],
      condition: [
        `${e.n('status')} = ${e.v('leased')}`,
        ...ownerFence(e, lease, now),
        `${e.n('leasedAt')} = ${e.v(leasedAt)}`,
        `${e.n('leaseDeadline')} < ${e.v(deadline)}`,
      ].join(' AND '),
    }));
  }

  lookAgainAt(observed: Observed, dueAt: number): Promise<TaskWrite> {
    // A suspended task keeps its looks in the partition of suspended tasks.
    const shard = observed.status === 'suspended' ? SUSPENDED_DUE_SHARD : dueShardOf(observed.taskId);
    return this.update(observed.taskId, (e) => ({
      set: dueClauses(e, observed.taskId, dueAt, shard),
      condition: stillAsObserved(e, observed),
    }));
  }

  armLook(observed: Observed, dueAt: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: dueClauses(e, observed.taskId, dueAt),
      condition: `${stillAsObserved(e, observed)} AND attribute_not_exists(${e.n('dueShard')})`,
    }));
  }

  async watch(taskId: string): Promise<Task | undefined> {
    const written = await this.update(taskId, (e) => ({
      set: [`${e.n('watched')} = ${e.v(true)}`],
      condition: `attribute_exists(${e.n('taskId')})`,
    }));
    return written.ok ? written.task : undefined;
  }

  recordDispatch(observed: Observed, dispatch: { dispatchedAt: number; dueAt: number }): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [
        `${e.n('dispatchedAt')} = ${e.v(dispatch.dispatchedAt)}`,
        `${e.n('dispatchCount')} = ${e.n('dispatchCount')} + ${e.v(1)}`,
        ...dueClauses(e, observed.taskId, dispatch.dueAt),
      ],
      condition: stillAsObserved(e, observed),
    }));
  }

  markUnsent(observed: Observed, now: number): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: dueClauses(e, observed.taskId, now),
      remove: [e.n('dispatchedAt')],
      condition: stillAsObserved(e, observed),
    }));
  }

  climbLadder(observed: Observed, climb: LadderClimb): Promise<TaskWrite> {
    return this.update(observed.taskId, (e) => ({
      set: [
        `${e.n('starvationLevel')} = ${e.v(climb.toLevel)}`,
        ...(climb.priority ? [`${e.n('priority')} = ${e.v(climb.priority)}`] : []),
        ...(climb.needsAttention ? [`${e.n('needsAttention')} = ${e.v(true)}`] : []),
      ],
      condition: [
        stillAsObserved(e, observed),
        climb.fromLevel === 0
          ? `attribute_not_exists(${e.n('starvationLevel')})`
          : `${e.n('starvationLevel')} = ${e.v(climb.fromLevel)}`,
      ].join(' AND '),
    }));
  }

  clearAttention(taskId: string): Promise<TaskWrite> {
    return this.update(taskId, (e) => ({
      remove: [e.n('needsAttention')],
      // Marked, so the task exists: one write that refuses (changing nothing) a task not marked or not there.
      condition: `${e.n('needsAttention')} = ${e.v(true)}`,
    }));
  }

  /** Each shard of the queue twice: its list partition of the table (layout 2) and its `listed` index partition (1). */
  listedShards(queue: string): readonly string[] {
    return listedShardsOf(queue).flatMap((shard) => [payloadListOf(shard), shard]);
  }

  /** Task ids in one shard of the `due` index whose time to be looked at has come. */
  async queryDue(dueShard: string, now: number, limit: number): Promise<string[]> {
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: DUE_INDEX,
        KeyConditionExpression: `${e.n('dueShard')} = ${e.v(dueShard)} AND ${e.n('dueAt')} <= ${e.v(now)}`,
        Limit: limit,
        ...e.attributes(),
      }),
    );
    return (output.Items ?? []).map((item) => String(item.taskId));
  }

  /**
   * One page of a shard of the `due` index in due order, whatever the due time: the open tasks it lists. The key a page
   * answers is the index's own (`dueShard`, `dueAt`) and the table's (`taskId`, `part`); one handed back is checked
   * to be that shape, of this shard, before it reaches DynamoDB, whose refusal of a bad key would be a 500.
   */
  async pageDue(
    dueShard: string,
    from: { startKey?: ListingCursor; limit: number },
  ): Promise<{ taskIds: string[]; startKey?: ListingCursor }> {
    if (from.startKey !== undefined && !isDueKey(from.startKey, dueShard))
      throw new ValidationError('cursor: not a cursor this API returned');
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: DUE_INDEX,
        KeyConditionExpression: `${e.n('dueShard')} = ${e.v(dueShard)}`,
        Limit: from.limit,
        ...(from.startKey ? { ExclusiveStartKey: from.startKey } : {}),
        ...e.attributes(),
      }),
    );
    return {
      taskIds: (output.Items ?? []).map((item) => String(item.taskId)),
      ...(output.LastEvaluatedKey ? { startKey: output.LastEvaluatedKey } : {}),
    };
  }

  /**
   * One page of a shard of the `listed` index, newest first: task ids with their creation times, from `startKey`
   * (the `startKey` of the page before) or else from the newest task created at or before `atOrBefore`. Tasks
   * created in the same millisecond come in no promised order.
   */
  async queryListed(
    listShard: string,
    from: { atOrBefore?: number; startKey?: ListingCursor; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number }[]; startKey?: ListingCursor }> {
    if (listShardOfPayloadList(listShard) !== undefined) return this.queryPayloadList(listShard, from);
    const e = new Expression();
    const key = [`${e.n('listShard')} = ${e.v(listShard)}`];
    if (from.atOrBefore !== undefined) key.push(`${e.n('createdAt')} <= ${e.v(from.atOrBefore)}`);
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LISTED_INDEX,
        KeyConditionExpression: key.join(' AND '),
        ScanIndexForward: false,
        Limit: from.limit,
        ExclusiveStartKey: from.startKey,
        ...e.attributes(),
      }),
    );
    return {
      entries: (output.Items ?? []).map((item) => ({
        taskId: String(item.taskId),
        createdAt: Number(item.createdAt),
      })),
      ...(output.LastEvaluatedKey ? { startKey: output.LastEvaluatedKey } : {}),
    };
  }

  walkPartitions(queue: string): readonly string[] {
    return listedShardsOf(queue).map(payloadListOf);
  }

  /**
   * Oldest first from a place, up to a creation time. The place is the sort key of the last entry taken, so the
   * next page starts after it whatever the millisecond.
   */
  async queryWalk(
    partition: string,
    from: { after?: string; upTo?: number; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number; place: string }[] }> {
    const { entries } = await this.queryListPartition(partition, {
      forward: true,
      limit: from.limit,
      ...(from.upTo === undefined ? {} : { upTo: from.upTo }),
      ...(from.after === undefined ? {} : { startKey: { taskId: partition, part: from.after } }),
    });
    return { entries };
  }

  /**
   * One page of a list partition of the table: the payload items of layout 2 tasks, newest first by their sort key
   * (creation, then task id). A query bills the whole items it reads, payloads included (at most about 10 KB each;
   * a larger payload is an S3 object): a page of 50 tasks with 1 KB payloads is about 6 read units, against half a
   * unit from the keys-only index. Operators list rarely; every task saves its index write.
   */
  private async queryPayloadList(
    partition: string,
    from: { atOrBefore?: number; startKey?: ListingCursor; limit: number },
  ): Promise<{ entries: { taskId: string; createdAt: number }[]; startKey?: ListingCursor }> {
    const { entries, startKey } = await this.queryListPartition(partition, {
      forward: false,
      limit: from.limit,
      ...(from.atOrBefore === undefined ? {} : { upTo: from.atOrBefore }),
      ...(from.startKey === undefined ? {} : { startKey: from.startKey }),
    });
    return {
      entries: entries.map(({ taskId, createdAt }) => ({ taskId, createdAt })),
      ...(startKey ? { startKey } : {}),
    };
  }

  /**
   * A page of a list partition of the table, in either order, created at or before `upTo`: each entry's task, its
   * creation and its place (its sort key). Only the keys are projected, though a query bills the items whole.
   */
  private async queryListPartition(
    partition: string,
    from: { forward: boolean; limit: number; upTo?: number; startKey?: ListingCursor },
  ): Promise<{ entries: { taskId: string; createdAt: number; place: string }[]; startKey?: ListingCursor }> {
    const e = new Expression();
    const key = [`${e.n('taskId')} = ${e.v(partition)}`];
    // The bound takes the whole millisecond.
    if (from.upTo !== undefined) key.push(`${e.n('part')} <= ${e.v(listedPayloadPartsUpTo(from.upTo))}`);
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: key.join(' AND '),
        ProjectionExpression: `${e.n('taskId')}, ${e.n('part')}`,
        ScanIndexForward: from.forward,
        Limit: from.limit,
        ExclusiveStartKey: from.startKey,
        ...e.attributes(),
      }),
    );
    return {
      entries: (output.Items ?? []).flatMap((item) => {
        const place = String(item.part);
        const entry = listEntryOfPayloadPart(place);
        return entry ? [{ ...entry, place }] : [];
      }),
      ...(output.LastEvaluatedKey ? { startKey: output.LastEvaluatedKey } : {}),
    };
  }
}

/** A settlement's change of a window: its count moves by the difference, unconditionally (usage is a fact). */
function settleUpdate(tableName: string, s: WindowSettlement) {
  return transactUpdate({ TableName: tableName, Key: rateWindowKey(s.name, s.window, s.key) }, (e) => ({
    set: [
      `${e.n('windowEnd')} = if_not_exists(${e.n('windowEnd')}, ${e.v(s.end)})`,
      `${e.n('purgeAt')} = if_not_exists(${e.n('purgeAt')}, ${e.v(s.purgeAt)})`,
      ...(s.key === undefined ? [] : [`${e.n('key')} = ${e.v(s.key)}`]),
    ],
    add: [`${e.n('used')} ${e.v(s.delta)}`],
    condition: '',
  }));
}

/** A key of the `due` index in partition `dueShard`, as a page of it answers: those four attributes, no other. */
function isDueKey(key: ListingCursor, dueShard: string): boolean {
  const names = Object.keys(key).sort();
  return (
    names.join() === 'dueAt,dueShard,part,taskId' &&
    key.dueShard === dueShard &&
    Number.isSafeInteger(key.dueAt) &&
    typeof key.taskId === 'string' &&
    /^[\x21-\x7e]{1,256}$/.test(key.taskId) &&
    key.part === TASK_PART.state
  );
}
