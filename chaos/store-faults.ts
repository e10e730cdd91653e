/**
 * Faults of the server's own DynamoDB client in the HTTP chaos run, as the in-process run has them: a write
 * throttled before it is sent, or committed and its answer lost to a timeout, then retried by the AWS SDK, so each
 * kind of committed write (a grant, a session open, a role's hand-over, a child's or a hook's submission, a
 * finish) is sent again after it landed and must recognise itself.
 *
 * Each fault is counted by the kind of write it fell on: the adapter call it was made in, named by wrapping the
 * context's adapters (an `AsyncLocalStorage` carries the name down to the client's middleware).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { WiredContext } from '#wiring/context';
import { stackOf, WRITES } from './committed-writes';
import type { FaultCounts } from './http-faults';

/** The kind of write under way, innermost first. */
const writing = new AsyncLocalStorage<string>();

/** The kinds of write a fault is aimed at: they happen a few hundred times a run, against tens of thousands. */
const RARE = new Set(['open', 'transfer', 'childSubmit', 'hookSubmit']);

type Method = (...args: never[]) => Promise<unknown>;

/** Calls of `target[method]` are writes of the kind `name` returns for their arguments. */
function label<T extends object>(
  target: T,
  method: keyof T & string,
  name: (...args: never[]) => string,
): void {
  const original = (target[method] as unknown as Method).bind(target);
  (target as Record<string, unknown>)[method] = (...args: never[]) =>
    writing.run(name(...args), () => original(...args));
}

/**
 * Names the committed writes of the scheduler's adapters by kind. A hook is a task created for another's death
 * (`failureOf`); a task created at the top by anything else is a submission. The supervisor's writes to queued
 * tasks (`look`: when to look at one again; `redispatch`: its hint sent again) and a session's notices and endings
 * are named too: unnamed, they were more than half the writes of a 2,000-task run, `look` alone 17,838 of them.
 */
export function labelWrites(ctx: WiredContext): void {
  label(ctx.tasks, 'grant', () => 'grant');
  label(ctx.tasks, 'finish', () => 'finish');
  label(ctx.tasks, 'checkpoint', () => 'checkpoint');
  label(ctx.tasks, 'takeBack', () => 'takeBack');
  label(ctx.tasks, 'createUnder', () => 'childSubmit');
  label(ctx.tasks, 'create', (task: { failureOf?: unknown }) =>
    task.failureOf === undefined ? 'submit' : 'hookSubmit',
  );
  label(ctx.tasks, 'lookAgainAt', () => 'look');
  label(ctx.tasks, 'recordDispatch', () => 'redispatch');
  label(ctx.sessions, 'open', () => 'open');
  label(ctx.sessions, 'heartbeat', () => 'heartbeat');
  label(ctx.sessions, 'reserve', () => 'reserve');
  label(ctx.sessions, 'release', () => 'slotRelease');
  label(ctx.sessions, 'notify', () => 'notice');
  for (const method of ['end', 'endNow', 'retire'] as const) label(ctx.sessions, method, () => 'sessionEnd');
  label(ctx.roles, 'transfer', () => 'transfer');
}

/**
 * Throttles `throttleShare` of the writes before they are sent and loses the answer of `lostShare` after they
 * commit (`rareBoost` times as many on the rare kinds), and of the first write of each kind to commit; the AWS SDK
 * retries both. Add before the recorder of committed writes, so that the recorder runs inside the faults, closest
 * to the wire.
 */
export function injectStoreFaults(
  dynamodb: DynamoDBClient,
  options: {
    readonly random: () => number;
    readonly faultsOn: () => boolean;
    /** Whether the run goes on: until it stops, a kind of write that has not lost an answer yet loses one. */
    readonly runningOn?: () => boolean;
    readonly faults: FaultCounts;
    readonly throttleShare?: number;
    readonly lostShare?: number;
    readonly rareBoost?: number;
  },
): void {
  stackOf(dynamodb).add(
    (next, context) => async (args) => {
      if (!WRITES.has(context.commandName ?? '')) return next(args);
      const faultsOn = options.faultsOn();
      if (!faultsOn && !(options.runningOn?.() ?? false)) return next(args);
      const kind = writing.getStore() ?? 'other';
      const owed = !options.faults.byWhere.dynamodbTimeoutAfterCommit?.[kind];
      if (!faultsOn && !owed) return next(args);
      const boost = RARE.has(kind) ? (options.rareBoost ?? 5) : 1;
      const throttled = (options.throttleShare ?? 0.01) * boost;
      const lost = throttled + (options.lostShare ?? 0.02) * boost;
      // Whatever the draws, writes of each kind lose their answer until one that commits has, after the faults too
      // while the run goes on (a kind first written once they stopped).
      const draw = owed ? throttled : options.random();
      if (draw < throttled) {
        options.faults.count('dynamodbThrottledBeforeSend', kind);
        throw Object.assign(new Error('injected throttle'), { name: 'ThrottlingException', $metadata: {} });
      }
      const result = await next(args);
      if (draw < lost) {
        options.faults.count('dynamodbTimeoutAfterCommit', kind);
        throw Object.assign(new Error('injected timeout after commit'), {
          name: 'TimeoutError',
          $metadata: {},
        });
      }
      return result;
    },
    { step: 'finalizeRequest', name: 'chaosHttpStoreFaults', priority: 'low' },
  );
}
