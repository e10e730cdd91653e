/**
 * The on-time scenario (`npm run bench -- --scenario on-time [--fires N] [--tasks N] [--agents N]`): how late a
 * held-back task starts on an idle fleet listening on the push channel, in AWS's settings: no supervisor pass in the
 * run (in AWS it passes once a minute), a 60 s safety poll, and a Scheduler that delivers each fire at a random
 * moment of its minute, as EventBridge Scheduler may. On the local stack (the same handlers, DynamoDB Local, the SQS
 * emulator, the wake timer read by its poller) with SDK Workers over HTTP and `ws` sockets.
 *
 * Delayed tasks: `--tasks` submitted one at a time, delays of 2 to 9 s. Schedule fires: one `cron(* * * * ? *)`
 * schedule created through the API; its first occurrence has no early fire yet (reported apart), each later one
 * is submitted by an early fire and held until its time. Lateness: handler start minus the task's time.
 */
import { WebSocket } from 'ws';
import { fireSchedule } from '#core/fire-schedule';
import { runAs } from '#local/function-scope';
import { LocalScheduleBackend } from '#local/local-schedules';
import { startLocalStack } from '#local/local-stack';
import { percentile } from '#local/percentile';
import { LocalPushSender } from '#local/push-server';
import { AgentSchedulerClient } from '#sdk/client';
import type { WebSocketConstructor } from '#sdk/push-channel';
import { Worker } from '#sdk/worker';

export interface OnTimeOptions {
  readonly agents: number;
  readonly tasks: number;
  /** Schedule fires measured after the first (which has no early fire). */
  readonly fires: number;
}

export interface OnTimeReport {
  readonly scenario: 'on-time';
  readonly agents: number;
  readonly delayedMs: readonly number[];
  readonly firesMs: readonly number[];
  readonly firstFireMs: number | undefined;
  /** Over the delayed tasks and the early-fired occurrences together. */
  readonly p50: number;
  readonly p90: number;
  readonly max: number;
}

const OPERATOR_TOKEN = 'op_bench_on_time';
const QUEUE = 'ontime';
const MINUTE = 60_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function runOnTime(options: OnTimeOptions): Promise<OnTimeReport> {
  const silent = { info() {}, warn() {}, error() {} };
  const schedules = new LocalScheduleBackend(silent, Date.now, { spreadMs: MINUTE });
  const stack = await startLocalStack({
    name: 'bench-on-time',
    queues: [QUEUE],
    push: new LocalPushSender(),
    context: {
      scheduleBackend: schedules,
      settings: { pushSafetyPollMs: 60_000, missedRunGraceSeconds: 120 },
    },
    serve: { operatorToken: OPERATOR_TOKEN, log: silent },
  });
  const started = new Map<string, number>();
  const workers: Worker[] = [];
  try {
    const endpoint = stack.server.url;
    const operator = new AgentSchedulerClient({ endpoint, token: OPERATOR_TOKEN });
    for (let i = 0; i < options.agents; i++) {
      const { token } = await operator.createAgent({
        name: `on-time-${i}`,
        queues: [QUEUE],
        maxConcurrency: 4,
      });
      const worker = new Worker({
        client: new AgentSchedulerClient({ endpoint, token }),
        push: { WebSocket: WebSocket as unknown as WebSocketConstructor },
        handler: async (task) => {
          if (!started.has(task.taskId)) started.set(task.taskId, Date.now());
          return 'ok';
        },
      });
      workers.push(worker);
      await worker.start();
    }
    while (!workers.every((w) => w.listening)) await sleep(50);
    await sleep(500);

    // Fires as the schedule-fire function takes them, carrying the expression so each arms the next early fire.
    const occurrences = new Map<number, string>();
    schedules.start(async (record, scheduledTime) => {
      const fired = await runAs('scheduleFire', () =>
        fireSchedule(stack.ctx, {
          schedule: record.name,
          scheduledTime: new Date(scheduledTime).toISOString(),
          task: record.task,
          overlap: 'allowAll',
          expression: record.expression,
          timeZone: record.timeZone,
        }),
      );
      if (fired.taskId) occurrences.set(scheduledTime, fired.taskId);
    }, []);
    await operator.createSchedule({
      name: 'every-minute',
      expression: 'cron(* * * * ? *)',
      task: { queue: QUEUE, payload: {} },
      overlap: 'allowAll',
    });

    const delayed: { taskId: string; at: number }[] = [];
    for (let i = 0; i < options.tasks; i++) {
      const { task } = await operator.submitTask({ queue: QUEUE, payload: {}, delaySeconds: 2 + (i % 8) });
      delayed.push({ taskId: task.taskId, at: Date.parse(task.notBefore ?? '') });
      await sleep(150 + ((i * 37) % 300));
    }
    // The first occurrence, then `fires` more, each with its task started.
    const deadline = Date.now() + (options.fires + 2) * MINUTE + 30_000;
    const startedOccurrences = () =>
      [...occurrences].filter(([, taskId]) => started.has(taskId)).sort(([a], [b]) => a - b);
    while (startedOccurrences().length < options.fires + 1 && Date.now() < deadline) await sleep(500);
    while (!delayed.every((d) => started.has(d.taskId)) && Date.now() < deadline) await sleep(200);

    const lateOf = (taskId: string, at: number) => (started.get(taskId) ?? Number.NaN) - at;
    const delayedMs = delayed.map((d) => lateOf(d.taskId, d.at));
    const [first, ...later] = startedOccurrences().map(([at, taskId]) => lateOf(taskId, at));
    const firesMs = later.slice(0, options.fires);
    const all = [...delayedMs, ...firesMs].sort((a, b) => a - b);
    return {
      scenario: 'on-time',
      agents: options.agents,
      delayedMs,
      firesMs,
      firstFireMs: first,
      p50: percentile(all, 0.5),
      p90: percentile(all, 0.9),
      max: all.at(-1) ?? Number.NaN,
    };
  } finally {
    schedules.stop();
    await Promise.allSettled(workers.map((w) => w.stop({ drain: false })));
    await stack.stop();
  }
}
