/**
 * The record of committed writes: a middleware closest to the wire of a DynamoDB client, so it sees each answer
 * before an injected fault (or a lost answer) can hide it. It keeps the versions the history checker reads: each
 * task state written, each session version, and which tasks each schedule occurrence made.
 *
 * Times are the server's own (`updatedAt`, `heartbeatAt`: the `now` each write was decided with), so answers that
 * arrive late or out of order do not reorder the history. DynamoDB returns no item from `TransactWriteItems`: of a
 * transaction, the items it puts are recorded, and the task states it updates where the update is known: a
 * waitpoint's (`waitpoint-writes.ts`), and the grant and the usage-settling finish of a task naming rate limits
 * (`rate-writes.ts`), with the windows' changes they made; other updates are not (roles are updated that way; the
 * agents' side checks role holdings). A transaction is recorded once: the AWS SDK sends it again with its
 * `ClientRequestToken` after a lost answer, and DynamoDB answers that without writing again.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { listEntryOfPayloadPart, listShardOfPayloadList, payloadJsonOf } from '#adapters/task-items';
import type { WiredContext } from '#wiring/context';
import type { History } from './history';
import { plainItem } from './plain-item';
import { taskTransactionOf } from './rate-writes';
import { type TransactItem as WaitpointTransactItem, waitpointRecorder } from './waitpoint-writes';

type Next = (args: { input: object; request?: unknown }) => Promise<{ output: object }>;
interface Stack {
  add(
    middleware: (next: Next, context: { commandName?: string }) => Next,
    options: { step: string; name: string; priority?: string },
  ): void;
}
/** The DynamoDB commands that write: the ones whose answers a chaos run loses after they committed. */
export const WRITES: ReadonlySet<string> = new Set([
  'PutItemCommand',
  'BatchWriteItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
]);

/** Tasks retry quickly and often: the chaos runs are about ownership, not about giving up. */
export const RETRYING = {
  maxAttempts: 50,
  timeoutSeconds: 20,
  backoffBaseSeconds: 1,
  backoffMaxSeconds: 1,
} as const;

export const stackOf = (client: DynamoDBClient | SQSClient) => client.middlewareStack as unknown as Stack;

/** An empty history for `recordCommittedWrites` and the run's own calls to fill. */
export const emptyHistory = (): History => ({
  tasks: [],
  sessions: [],
  calls: [],
  crashes: [],
  acknowledged: new Set(),
  finalStatus: new Map(),
  occurrenceTasks: new Map(),
  waitpoints: [],
  answers: [],
  resumedClaims: [],
  takenBackBy: new Map(),
  rateChanges: [],
  resent: {},
});

/** A map as stored (a task's `require`, a session's `labels`), not a list or a scalar. */
const isPlainRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Records into `history` every task and session version that `dynamodb` commits to `tables`. */
export function recordCommittedWrites(
  dynamodb: DynamoDBClient,
  tables: { readonly tasks: string; readonly leases: string },
  history: History,
): void {
  // The last state recorded of each task: a transaction's update (a waitpoint's) is applied to it.
  const states = new Map<string, Record<string, unknown>>();
  // The tokens of the transactions recorded: one answered again under its token wrote nothing more.
  const transactions = new Set<string>();
  const recordItem = (tableName: string, item: Record<string, unknown>, write?: string) => {
    const decidedAt = (field: string) =>
      typeof item[field] === 'number' ? (item[field] as number) : Date.now();
    // A payload item: keyed by its task (layout 1), or by its queue's list partition with its task in the sort key.
    const payloadOf = String(item.part).startsWith('payload')
      ? String(item.taskId)
      : listShardOfPayloadList(String(item.taskId)) !== undefined
        ? listEntryOfPayloadPart(String(item.part))?.taskId
        : undefined;
    if (tableName === tables.tasks && payloadOf !== undefined) {
      const payload = JSON.parse(payloadJsonOf(item) ?? 'null') as { tick?: number } | null;
      if (typeof payload?.tick === 'number') {
        const tasks = history.occurrenceTasks.get(payload.tick) ?? new Set<string>();
        tasks.add(payloadOf);
        history.occurrenceTasks.set(payload.tick, tasks);
      }
    }
    if (tableName === tables.tasks && item.part === 'state') {
      states.set(String(item.taskId), item);
      const finish = item.lastFinish as { kind: string; leaseEpoch: number; agentId: string } | undefined;
      const failureOf = item.failureOf as { taskId?: unknown } | undefined;
      history.tasks.push({
        at: decidedAt('updatedAt'),
        answeredAt: Date.now(),
        taskId: String(item.taskId),
        status: String(item.status),
        leaseEpoch: Number(item.leaseEpoch ?? 0),
        ...(typeof item.owner === 'string' ? { owner: item.owner } : {}),
        ...(typeof item.sessionId === 'string' ? { sessionId: item.sessionId } : {}),
        ...(typeof item.leaseDeadline === 'number' ? { leaseDeadline: item.leaseDeadline } : {}),
        ...(finish ? { lastFinish: finish } : {}),
        ...(typeof item.redrives === 'number' ? { redrives: item.redrives } : {}),
        ...(typeof failureOf?.taskId === 'string' ? { failureOf: failureOf.taskId } : {}),
        ...(write === undefined ? {} : { write }),
        ...(isPlainRecord(item.require) ? { require: item.require as Record<string, string> } : {}),
      });
    }
    if (tableName === tables.leases && item.kind === 'session') {
      const size = (field: string) => Object.keys((item[field] ?? {}) as object).length;
      history.sessions.push({
        at: decidedAt('heartbeatAt'),
        agentId: String(item.agentId),
        sessionId: String(item.sessionId),
        expiresAt: Number(item.expiresAt),
        held: size('held'),
        idle: size('held') === 0 && size('roles') === 0 && size('lost') === 0,
        ended: typeof item.endedAt === 'number',
        ...(isPlainRecord(item.labels) ? { labels: item.labels as Record<string, string[]> } : {}),
      });
    }
  };
  const recordWaitpoint = waitpointRecorder(history.waitpoints, {
    last: (taskId) => states.get(taskId),
    record: (state) => recordItem(tables.tasks, state),
  });
  stackOf(dynamodb).add(
    (next, context) => async (args) => {
      const result = await next(args);
      const input = args.input as {
        TableName?: string;
        Item?: Record<string, unknown>;
        RequestItems?: Record<string, { PutRequest?: { Item?: Record<string, unknown> } }[]>;
      };
      const output = result.output as { Attributes?: Record<string, never> };
      if (context.commandName === 'UpdateItemCommand' && output.Attributes) {
        const write = writeKind(context.commandName, input, tables);
        recordItem(input.TableName ?? '', plainItem(output.Attributes), write);
      }
      if (context.commandName === 'PutItemCommand' && input.Item) {
        recordItem(input.TableName ?? '', plainItem(input.Item));
      }
      // A transaction returns no item, but the items it puts are in its input (a session open is one), and what it
      // updates of a waitpoint and its task follows from the items last recorded.
      if (context.commandName === 'TransactWriteItemsCommand') {
        const items = (input as { TransactItems?: WaitpointTransactItem[] }).TransactItems ?? [];
        const token = transactionToken(args.request);
        const write = writeKind(context.commandName, input, tables);
        if (token !== undefined && transactions.has(token)) {
          const resent = history.resent ?? {};
          resent[write] = (resent[write] ?? 0) + 1;
          return result;
        }
        if (token !== undefined) transactions.add(token);
        for (const item of items)
          if (item.Put?.Item) recordItem(item.Put.TableName ?? '', plainItem(item.Put.Item));
        recordWaitpoint(items, () => token);
        const taskWrite = taskTransactionOf(items, (taskId) => states.get(taskId));
        if (taskWrite) {
          recordItem(tables.tasks, taskWrite.state, write);
          for (const change of taskWrite.windows)
            history.rateChanges?.push({ taskId: taskWrite.taskId, write, ...change });
        }
      }
      if (context.commandName === 'BatchWriteItemCommand') {
        for (const [table, writes] of Object.entries(input.RequestItems ?? {}))
          for (const write of writes)
            if (write.PutRequest?.Item) recordItem(table, plainItem(write.PutRequest.Item));
      }
      return result;
    },
    { step: 'finalizeRequest', name: 'chaosRecordCommitted', priority: 'low' },
  );
}

/** The `ClientRequestToken` the SDK gave a transaction (kept when it sends it again), read from the request. */
function transactionToken(request: unknown): string | undefined {
  const body = (request as { body?: unknown } | undefined)?.body;
  const text = body instanceof Uint8Array ? new TextDecoder().decode(body) : body;
  if (typeof text !== 'string') return undefined;
  const token = (JSON.parse(text) as { ClientRequestToken?: unknown }).ClientRequestToken;
  return typeof token === 'string' ? token : undefined;
}

/**
 * Which of the scheduler's functions took each lease back (the claim's own look at its session, a sweep, an open,
 * a revocation), read from the call's stack, and the reason it wrote: a few hundred take-backs a run, against tens
 * of thousands of writes.
 */
export function recordTakeBacks(ctx: Pick<WiredContext, 'tasks'>, history: History): void {
  const takeBack = ctx.tasks.takeBack.bind(ctx.tasks);
  ctx.tasks.takeBack = async (observed, taking, now) => {
    const callers = [
      ...(new Error().stack ?? '').matchAll(/at (?:async )?([\w.]+) \([^)]*functions\/core\//g),
    ]
      .map((frame) => frame[1])
      .join(' < ');
    const result = await takeBack(observed, taking, now);
    if (result.ok)
      history.takenBackBy?.set(
        `${observed.taskId}#${observed.leaseEpoch}`,
        `${callers}: ${taking.error.message}`,
      );
    return result;
  };
}

type Marshalled = Record<string, unknown>;
interface TransactItem {
  readonly Put?: { readonly TableName?: string; readonly Item?: Marshalled };
  readonly Update?: {
    readonly Key?: Marshalled;
    readonly TableName?: string;
    readonly UpdateExpression?: string;
    readonly ExpressionAttributeNames?: Record<string, string>;
  };
  readonly ConditionCheck?: { readonly Key?: Marshalled };
}

/** The attributes an update's expression writes (its condition's are left out). */
function writtenNames(update: {
  readonly UpdateExpression?: string;
  readonly ExpressionAttributeNames?: Record<string, string>;
}): Set<string> {
  const names = update.ExpressionAttributeNames ?? {};
  return new Set((update.UpdateExpression ?? '').match(/#\w+/g)?.flatMap((p) => names[p] ?? []));
}

/** The key of a rate limit's window item (`rate#<name>`, `w#<start>#<key>`). */
function isWindowKey(key: Marshalled | undefined): boolean {
  const plain = plainItem(key ?? {});
  return String(plain.taskId ?? '').startsWith('rate#') && String(plain.part ?? '').startsWith('w#');
}

/** What a new state item is: a child's (an agent's submit under its task), an `onFailure` hook's, or a submit. */
function submitKind(item: Marshalled): string {
  const plain = plainItem(item);
  if (plain.part !== 'state') return 'payload';
  if (plain.failureOf !== undefined) return 'hookSubmit';
  return plain.parentTaskId !== undefined ? 'childSubmit' : 'submit';
}

/**
 * The kind of one DynamoDB write, read from its request, so the faults injected into writes can be counted by
 * what they hit: a task's grant or finish, a session open, a role transfer, a submit of each origin.
 */
export function writeKind(
  commandName: string,
  input: object,
  tables: { readonly tasks: string; readonly leases: string },
): string {
  const request = input as {
    TableName?: string;
    Item?: Marshalled;
    Key?: Marshalled;
    UpdateExpression?: string;
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
    TransactItems?: TransactItem[];
    RequestItems?: Record<string, unknown[]>;
  };
  const leaseIdOf = (key: Marshalled | undefined) => String(plainItem(key ?? {}).leaseId ?? '');
  if (commandName === 'TransactWriteItemsCommand') {
    const items = request.TransactItems ?? [];
    // A waitpoint's: the suspension puts it, its end (an answer, a timeout) updates it.
    if (items.some((item) => item.Put?.Item && plainItem(item.Put.Item).kind === 'waitpoint'))
      return 'suspension';
    if (items.some((item) => item.Update?.Key && plainItem(item.Update.Key).part === 'waitpoint'))
      return 'waitpointEnd';
    // A task naming rate limits: its grant takes units from windows, a finish reporting usage settles it there.
    const state = items[0]?.Update;
    if (
      state?.Key &&
      plainItem(state.Key).part === 'state' &&
      items.some((item) => isWindowKey(item.Update?.Key))
    )
      return Object.values(state.ExpressionAttributeNames ?? {}).includes('lastFinish')
        ? 'rateSettle'
        : 'rateGrant';
    const put = items.find((item) => item.Put?.Item)?.Put;
    if (put?.Item && put.TableName === tables.tasks) return submitKind(put.Item);
    if (put?.Item && plainItem(put.Item).kind === 'session') return 'open';
    // A transfer's first write is the role's own; a declaration's is the agent's count.
    if (leaseIdOf(items[0]?.Update?.Key).startsWith('role#')) return 'roleTransfer';
    return 'transaction';
  }
  if (commandName === 'PutItemCommand' && request.Item) {
    return request.TableName === tables.tasks ? submitKind(request.Item) : 'put';
  }
  // A window's count changed alone, outside the transaction of its task's write: no write of the scheduler's does.
  if (commandName === 'UpdateItemCommand' && isWindowKey(request.Key)) return 'rateWindow';
  if (commandName === 'UpdateItemCommand' && request.TableName === tables.tasks) {
    // What the update writes, not what its condition reads: a bar on a grant names `leasedAt` and `leased` too.
    const names = writtenNames(request);
    if (names.has('lastFinish')) return 'finish';
    const values = Object.values(plainItem((request.ExpressionAttributeValues ?? {}) as Marshalled));
    if (names.has('leasedAt') && values.includes('leased')) return 'grant';
    return 'taskUpdate';
  }
  if (commandName === 'UpdateItemCommand' && leaseIdOf(request.Key).startsWith('session#'))
    return 'sessionUpdate';
  return commandName.replace(/Command$/, '');
}
