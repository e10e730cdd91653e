/**
 * The SQS side: every task queue is four SQS queues, one per priority. A message carries only ids (the
 * task and the lease epoch it was dispatched at), never the payload; the task record in DynamoDB is the truth
 * and a message is only a hint that a task may be claimable. Duplicates and stale hints are harmless
 * because every grant is a conditional write.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  ChangeMessageVisibilityCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { PoisonMessage, ReceiveOptions, TaskQueuePort } from '#core/ports/task-queues';
import { ValidationError } from '#domain/errors';
import {
  type DispatchHint,
  HINT_PAYLOAD_BYTES,
  type HintPayload,
  type ReceivedHint,
  type ReceivedTurn,
  type TurnMessage,
} from '#domain/hint';
import { type Requirements, requirementsSchema, requiresAny } from '#domain/labels';
import { PRIORITIES, type Priority } from '#domain/priority';
import { RATE_LIMIT_BOUNDS, RATE_LIMIT_NAME_PATTERN, type TaskRateLimit } from '#domain/rate-limits';

export type PriorityQueueUrls = Readonly<Record<Priority, string>> & {
  /** The task queue's dead-letter queue: hints SQS gave up on, and a record of each task that died. */
  readonly deadLetter?: string;
};

/** Where each (task queue, priority) lives. The construct passes it to functions as JSON. */
export class QueueDirectory {
  private readonly queues: ReadonlyMap<string, PriorityQueueUrls>;

  constructor(queues: Readonly<Record<string, PriorityQueueUrls>>) {
    this.queues = new Map(Object.entries(queues));
  }

  /**
   * Parses either the full form `{ "<queue>": { "critical": url, "high": url, "normal": url, "low": url } }` or
   * the compact form the construct passes in the environment, `{ "base": url, "queues": { "<queue>": [names] } }`
   * (names in priority order, critical first).
   */
  static fromJson(json: string): QueueDirectory {
    const parsed: unknown = JSON.parse(json);
    if (typeof parsed !== 'object' || parsed === null)
      throw new Error('queue directory must be a JSON object');
    const record = parsed as Record<string, unknown>;
    if (typeof record.base === 'string' && typeof record.queues === 'object' && record.queues !== null) {
      const base = record.base;
      const queues: Record<string, PriorityQueueUrls> = {};
      for (const [name, names] of Object.entries(record.queues)) {
        if (!Array.isArray(names) || names.length !== PRIORITIES.length) {
          throw new Error(`queue directory entry ${name} must list ${PRIORITIES.length} queue names`);
        }
        queues[name] = Object.fromEntries(
          PRIORITIES.map((p, i) => [p, `${base}${String(names[i])}`]),
        ) as Record<Priority, string>;
      }
      return new QueueDirectory(queues);
    }
    const queues: Record<string, PriorityQueueUrls> = {};
    for (const [name, urls] of Object.entries(record)) {
      if (typeof urls !== 'object' || urls === null)
        throw new Error(`queue directory entry ${name} is not an object`);
      const entry = urls as Record<string, unknown>;
      queues[name] = Object.fromEntries(
        PRIORITIES.map((p) => {
          const url = entry[p];
          if (typeof url !== 'string') throw new Error(`queue directory entry ${name} lacks a ${p} url`);
          return [p, url];
        }),
      ) as Record<Priority, string>;
    }
    return new QueueDirectory(queues);
  }

  names(): string[] {
    return [...this.queues.keys()];
  }

  has(queue: string): boolean {
    return this.queues.has(queue);
  }

  /** The queue's URL for a priority; unknown queues are a caller error. */
  urlFor(queue: string, priority: Priority): string {
    const urls = this.queues.get(queue);
    if (!urls) throw new ValidationError(`queue ${queue} does not exist`, { context: { queue } });
    return urls[priority];
  }

  deadLetterUrlFor(queue: string): string | undefined {
    return this.queues.get(queue)?.deadLetter;
  }
}

/**
 * Receives after which SQS moves a hint to its queue's dead-letter queue. A hint that is handed back many times
 * for a good reason (a task not yet due, a queue at its limit) is sent anew before it gets there.
 */
export const HINT_MAX_RECEIVES = 10;

const encodeHint = (hint: DispatchHint): string =>
  JSON.stringify({
    v: 1,
    taskId: hint.taskId,
    leaseEpoch: hint.leaseEpoch,
    ...(hint.payload ? { spec: hint.payload.specHash, payload: hint.payload.json } : {}),
    ...(hint.rateLimits?.length
      ? { rl: hint.rateLimits.map((l) => [l.name, l.units, ...(l.key === undefined ? [] : [l.key])]) }
      : {}),
  });

/** A hint's rate limits as received: each `[name, units, key?]` well formed, or none at all. */
function rateLimitsIn(value: unknown): TaskRateLimit[] | undefined {
  if (!Array.isArray(value) || value.length === 0 || value.length > RATE_LIMIT_BOUNDS.perTask)
    return undefined;
  const limits: TaskRateLimit[] = [];
  for (const entry of value) {
    if (!Array.isArray(entry)) return undefined;
    const [name, units, key] = entry as unknown[];
    if (typeof name !== 'string' || !RATE_LIMIT_NAME_PATTERN.test(name)) return undefined;
    if (typeof units !== 'number' || !(units > 0)) return undefined;
    if (key !== undefined && typeof key !== 'string') return undefined;
    limits.push({ name, units, ...(key === undefined ? {} : { key }) });
  }
  return limits;
}

/** A hint's payload as received: both parts, the text within the bound (a larger one is not ours). */
function hintPayloadIn(parsed: { spec?: unknown; payload?: unknown }): HintPayload | undefined {
  const { spec, payload } = parsed;
  if (typeof spec !== 'string' || typeof payload !== 'string') return undefined;
  if (spec.length > 128 || Buffer.byteLength(payload) > HINT_PAYLOAD_BYTES) return undefined;
  return { specHash: spec, json: payload };
}

const TURN_PATTERN = /^[A-Za-z0-9_-]{22}$/;
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{8,64}$/;

const encodeTurn = (turn: TurnMessage): string =>
  JSON.stringify({
    v: 1,
    turn: turn.keyHash,
    token: turn.token,
    ...(turn.waits ? { waits: turn.waits } : {}),
    ...(turn.held ? { held: true } : {}),
    // A requirement lane's turn says what its tasks require, and their key's hash if they have a key; a key's lane
    // is named by its key's hash, as before requirements.
    ...(turn.require
      ? {
          req: turn.require,
          ...(turn.concurrencyKeyHash === undefined ? {} : { key: turn.concurrencyKeyHash }),
        }
      : {}),
  });

/** A requirement set as a turn carries it: label names and values (or `*`), within the bounds; else none. */
function requirementsIn(value: unknown): Requirements | undefined {
  const parsed = requirementsSchema.safeParse(value);
  return parsed.success && requiresAny(parsed.data) ? parsed.data : undefined;
}

function decodeTurn(body: string | undefined): (TurnMessage & { readonly waits: number }) | undefined {
  if (body === undefined) return undefined;
  try {
    const parsed = JSON.parse(body) as {
      v?: unknown;
      turn?: unknown;
      token?: unknown;
      waits?: unknown;
      held?: unknown;
      req?: unknown;
      key?: unknown;
    };
    if (parsed.v !== 1 || typeof parsed.turn !== 'string' || !TURN_PATTERN.test(parsed.turn))
      return undefined;
    if (typeof parsed.token !== 'string' || !TOKEN_PATTERN.test(parsed.token)) return undefined;
    const waits = typeof parsed.waits === 'number' && Number.isInteger(parsed.waits) ? parsed.waits : 0;
    // A turn that says it has requirements but not which is unreadable: taken as a key's, it could be granted to any.
    const require = parsed.req === undefined ? undefined : requirementsIn(parsed.req);
    if (parsed.req !== undefined && require === undefined) return undefined;
    if (parsed.key !== undefined && (typeof parsed.key !== 'string' || !TURN_PATTERN.test(parsed.key)))
      return undefined;
    const concurrencyKeyHash = require ? (parsed.key as string | undefined) : parsed.turn;
    return {
      keyHash: parsed.turn,
      ...(concurrencyKeyHash === undefined ? {} : { concurrencyKeyHash }),
      ...(require ? { require } : {}),
      token: parsed.token,
      waits: Math.max(0, Math.min(30, waits)),
      ...(parsed.held === true ? { held: true } : {}),
    };
  } catch {
    return undefined;
  }
}

function decodeHint(body: string | undefined): DispatchHint | undefined {
  if (body === undefined) return undefined;
  try {
    const parsed = JSON.parse(body) as {
      v?: unknown;
      taskId?: unknown;
      leaseEpoch?: unknown;
      spec?: unknown;
      payload?: unknown;
      rl?: unknown;
    };
    if (parsed.v !== 1 || typeof parsed.taskId !== 'string' || typeof parsed.leaseEpoch !== 'number')
      return undefined;
    const payload = hintPayloadIn(parsed);
    const rateLimits = rateLimitsIn(parsed.rl);
    return {
      taskId: parsed.taskId,
      leaseEpoch: parsed.leaseEpoch,
      ...(payload ? { payload } : {}),
      ...(rateLimits ? { rateLimits } : {}),
    };
  } catch {
    return undefined;
  }
}

/** SQS takes whole seconds of delay, up to 15 minutes. */
const sqsDelaySeconds = (seconds: number): number => Math.max(0, Math.min(900, Math.ceil(seconds)));

export class TaskQueues implements TaskQueuePort {
  constructor(
    readonly sqs: SQSClient,
    readonly directory: QueueDirectory,
  ) {}

  /** Messages grouped by the SQS queue they belong to, ten at most a group: the shape of SQS's batch requests. */
  private inBatchesOfTen<T extends { queue: string; priority: Priority }>(
    messages: readonly T[],
  ): { url: string; batch: T[] }[] {
    const byUrl = new Map<string, T[]>();
    for (const m of messages) {
      const url = this.directory.urlFor(m.queue, m.priority);
      byUrl.set(url, [...(byUrl.get(url) ?? []), m]);
    }
    return [...byUrl].flatMap(([url, all]) =>
      Array.from({ length: Math.ceil(all.length / 10) }, (_, i) => ({
        url,
        batch: all.slice(i * 10, i * 10 + 10),
      })),
    );
  }

  /**
   * Sends many hints, ten per request per SQS queue (`SendMessageBatch`). Returns the hints SQS did not take,
   * whether it refused them one by one or the whole request failed.
   */
  async sendMany(
    hints: readonly { queue: string; priority: Priority; hint: DispatchHint; delaySeconds: number }[],
  ): Promise<DispatchHint[]> {
    const refused = await Promise.all(
      this.inBatchesOfTen(hints).map(({ url, batch }) =>
        this.sqs
          .send(
            new SendMessageBatchCommand({
              QueueUrl: url,
              Entries: batch.map((h, n) => ({
                Id: String(n),
                MessageBody: encodeHint(h.hint),
                DelaySeconds: sqsDelaySeconds(h.delaySeconds),
              })),
            }),
          )
          .then(
            (output) => (output.Failed ?? []).flatMap((f) => batch[Number(f.Id)]?.hint ?? []),
            () => batch.map((h) => h.hint),
          ),
      ),
    );
    return refused.flat();
  }

  async send(queue: string, priority: Priority, hint: DispatchHint, delaySeconds = 0): Promise<void> {
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.directory.urlFor(queue, priority),
        MessageBody: encodeHint(hint),
        DelaySeconds: sqsDelaySeconds(delaySeconds),
      }),
    );
  }

  async sendTurn(queue: string, priority: Priority, turn: TurnMessage, delaySeconds = 0): Promise<void> {
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.directory.urlFor(queue, priority),
        MessageBody: encodeTurn(turn),
        DelaySeconds: sqsDelaySeconds(delaySeconds),
        // On an SQS fair queue, a key with a backlog in flight does not delay the others' turns.
        MessageGroupId: turn.keyHash,
      }),
    );
  }

  async receive(
    queue: string,
    priority: Priority,
    options: ReceiveOptions,
  ): Promise<{ hints: ReceivedHint[]; turns: ReceivedTurn[]; poison: PoisonMessage[] }> {
    const output = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.directory.urlFor(queue, priority),
        MaxNumberOfMessages: Math.max(1, Math.min(10, options.max)),
        VisibilityTimeout: options.visibilityTimeoutSeconds,
        WaitTimeSeconds: options.waitTimeSeconds,
        MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
      }),
    );
    const hints: ReceivedHint[] = [];
    const turns: ReceivedTurn[] = [];
    const poison: PoisonMessage[] = [];
    for (const message of output.Messages ?? []) {
      if (!message.ReceiptHandle || !message.MessageId) continue;
      const base = { queue, priority, receiptHandle: message.ReceiptHandle, messageId: message.MessageId };
      const receiveCount = Number(message.Attributes?.ApproximateReceiveCount ?? 1);
      const turn = decodeTurn(message.Body);
      if (turn) {
        turns.push({ ...base, ...turn, receiveCount });
        continue;
      }
      const hint = decodeHint(message.Body);
      if (!hint) {
        poison.push(base);
        continue;
      }
      const sentAt = Number(message.Attributes?.SentTimestamp ?? Date.now());
      hints.push({ ...hint, ...base, sentAt, receiveCount });
    }
    return { hints, turns, poison };
  }

  /** How many hints one SQS queue holds ready to be received (SQS's approximate count). */
  async readyCount(queue: string, priority: Priority): Promise<number> {
    const output = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.directory.urlFor(queue, priority),
        AttributeNames: ['ApproximateNumberOfMessages'],
      }),
    );
    return Number(output.Attributes?.ApproximateNumberOfMessages ?? 0);
  }

  /** Deletes handled messages, at most ten per request, grouped by queue. */
  async delete(
    messages: readonly Pick<ReceivedHint, 'queue' | 'priority' | 'receiptHandle'>[],
  ): Promise<void> {
    await Promise.all(
      this.inBatchesOfTen(messages).map(({ url, batch }) =>
        this.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: url,
            Entries: batch.map((m, n) => ({ Id: String(n), ReceiptHandle: m.receiptHandle })),
          }),
        ),
      ),
    );
  }

  /** Leaves a record of a task that died in its queue's dead-letter queue, for people and tools to act on. */
  async sendDeadLetter(queue: string, record: Record<string, unknown>): Promise<void> {
    const url = this.directory.deadLetterUrlFor(queue);
    if (!url) return;
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: JSON.stringify({ v: 1, kind: 'dead-task', ...record }),
      }),
    );
  }

  /**
   * Makes a hint visible again after `seconds` (0: at once) instead of deleting it. A hint SQS would move to the
   * dead-letter queue at its next receive is sent anew and the old message deleted: the task it stands for is
   * still waiting, and a dead-lettered hint would leave it to `reconcile`.
   */
  async handBack(
    messages: readonly Pick<ReceivedHint, 'queue' | 'priority' | 'receiptHandle'>[],
    seconds: number,
  ): Promise<void> {
    await Promise.all(
      this.inBatchesOfTen(messages).map(({ url, batch }) =>
        this.sqs.send(
          new ChangeMessageVisibilityBatchCommand({
            QueueUrl: url,
            Entries: batch.map((m, n) => ({
              Id: String(n),
              ReceiptHandle: m.receiptHandle,
              VisibilityTimeout: Math.max(0, Math.min(43_200, Math.ceil(seconds))),
            })),
          }),
        ),
      ),
    );
  }

  async returnLater(hint: ReceivedHint, seconds: number): Promise<void> {
    if (hint.receiveCount >= HINT_MAX_RECEIVES - 1 && seconds <= 900) {
      await this.send(hint.queue, hint.priority, hint, seconds);
      await this.delete([hint]);
      return;
    }
    await this.returnMessage(hint, seconds);
  }

  /** Makes a message visible again after `seconds` (0: at once). */
  private async returnMessage(
    message: Pick<ReceivedHint, 'queue' | 'priority' | 'receiptHandle'>,
    seconds: number,
  ): Promise<void> {
    await this.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.directory.urlFor(message.queue, message.priority),
        ReceiptHandle: message.receiptHandle,
        VisibilityTimeout: Math.max(0, Math.min(43_200, Math.ceil(seconds))),
      }),
    );
  }
}
