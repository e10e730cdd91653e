/**
 * The composition root of what runs the scheduler on this machine: the local stack (`npm start`, `agent-scheduler
 * dev`) and the benchmarks build theirs here, and its hooks are the ones the chaos runs need (faults and recorders on
 * the clients, wrapped adapters, mutants of the scheduler). From options it starts (or reaches) the emulators,
 * provisions the tables and queues (`scratch-stack.ts`), builds the context and the scheduler on them
 * (`functions/wiring/context.ts`), and serves the scheduler over the local HTTP server (`server.ts`). Hooks between
 * the steps let a caller meter or fault the clients, wrap the context's adapters or the scheduler's operations, all
 * before anything is served. `stop()` leaves nothing behind but a store on disk.
 */
import type { AgentTable } from '#adapters/agent-table';
import { Scheduler } from '#core/scheduler';
import { createContext, type SchedulerDependencies, type WiredContext } from '#wiring/context';
import { LOCAL_PUSH_PATH, type LocalPushSender } from './push-server';
import { type ScratchStack, type ScratchStackOptions, scratchStack } from './scratch-stack';
import { type LocalServer, type LocalServerOptions, startLocalServer } from './server';
import { pollWakeTimer } from './wake-timer-poller';

/** The server's options the stack does not decide itself. */
export interface ServeOptions
  extends Omit<LocalServerOptions, 'scheduler' | 'agents' | 'push' | 'port' | 'log'> {
  /** @default 0: a free port */
  readonly port?: number;
  /** @default the context's log */
  readonly log?: LocalServerOptions['log'];
  /** How the agent authorizer reads an agent. @default the context's agents */
  readonly agents?: Pick<AgentTable, 'get'>;
}

export interface LocalStackOptions extends ScratchStackOptions {
  /** A bucket of the stack's own for large payloads, given to the context. @default false: every payload in DynamoDB */
  readonly payloadBucket?: boolean;
  /** The rest of the context: settings, events, log, clock, randomness, schedules. */
  readonly context?: Omit<
    SchedulerDependencies,
    'dynamodb' | 'sqs' | 'tables' | 'queues' | 'payloadBucket' | 'push'
  >;
  /** The push channel: the context sends frames through it, the server serves its sockets at `/v1/push`. */
  readonly push?: LocalPushSender;
  /**
   * Called once the tables and queues are provisioned, before anything is built on the clients: meters, injected
   * faults, recorders, which so see none of the provisioning.
   */
  readonly onClients?: (stack: ScratchStack) => void;
  /** Called with the context before the scheduler is built on it: its adapters wrapped or rewritten. */
  readonly onContext?: (ctx: WiredContext) => void;
  /** Called with the scheduler before it is served: its operations wrapped. */
  readonly onScheduler?: (scheduler: Scheduler) => void;
  /**
   * Serves the scheduler over HTTP. A function is given the context, and is awaited just before the server starts:
   * for options made from the context, or ready only later.
   */
  readonly serve?: ServeOptions | ((ctx: WiredContext) => ServeOptions | Promise<ServeOptions>);
}

export interface LocalStack {
  /** The emulators' part: the clients, the tables, queues and bucket, the endpoints. */
  readonly scratch: ScratchStack;
  readonly ctx: WiredContext;
  readonly scheduler: Scheduler;
  /** Closes the server, then deletes the tables or stops the emulators (`scratch.dispose()`). Idempotent. */
  stop(): Promise<void>;
}

export interface ServedLocalStack extends LocalStack {
  readonly server: LocalServer;
}

export async function startLocalStack(
  options: LocalStackOptions & { readonly serve: LocalStackOptions['serve'] & {} },
): Promise<ServedLocalStack>;
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack>;
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  // With a push channel comes its wake timer, read by a poller as the timer function's event source reads it.
  const scratch = await scratchStack({
    ...options,
    payloadBucket: options.payloadBucket === true,
    wakeTimer: options.push !== undefined,
  });
  options.onClients?.(scratch);
  // Known once the server listens; frames are pushed only to sockets that reached it.
  let pushUrl = '';
  const ctx = createContext({
    ...options.context,
    dynamodb: scratch.dynamodb,
    sqs: scratch.sqs,
    tables: scratch.tables,
    queues: scratch.queues,
    ...(scratch.payloadBucket
      ? { payloadBucket: { s3: scratch.s3, bucketName: scratch.payloadBucket } }
      : {}),
    ...(options.push
      ? {
          push: {
            sender: options.push,
            url: () => pushUrl,
            ...(scratch.wakeTimerQueue ? { timerQueueUrl: scratch.wakeTimerQueue } : {}),
          },
        }
      : {}),
  });
  options.onContext?.(ctx);
  const scheduler = new Scheduler(ctx);
  options.onScheduler?.(scheduler);
  const server = options.serve && (await serve(ctx, scheduler, options.serve, options.push));
  if (server) pushUrl = `${server.url.replace(/^http/, 'ws')}${LOCAL_PUSH_PATH}`;
  const timer = scratch.wakeTimerQueue ? pollWakeTimer(scratch.sqs, scratch.wakeTimerQueue, ctx) : undefined;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await timer?.stop();
      await server?.close();
      await scratch.dispose();
    })();
    return stopping;
  };
  return { scratch, ctx, scheduler, ...(server ? { server } : {}), stop };
}

async function serve(
  ctx: WiredContext,
  scheduler: Scheduler,
  given: NonNullable<LocalStackOptions['serve']>,
  push: LocalPushSender | undefined,
): Promise<LocalServer> {
  const { agents, log, port, ...options } = typeof given === 'function' ? await given(ctx) : given;
  return startLocalServer({
    ...options,
    scheduler,
    agents: agents ?? ctx.agents,
    port: port ?? 0,
    log: log ?? ctx.log,
    ...(push ? { push } : {}),
  });
}
