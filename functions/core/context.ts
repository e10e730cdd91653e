/**
 * What every scheduler operation needs: the tables, the queues, the settings, a clock and a source of
 * randomness. Clock and randomness are injected so tests can move time and draw deterministic jitter.
 */
import { DEFAULT_PRIORITY_WEIGHTS, type PriorityWeights } from '#domain/priority';
import type { QueueLimits } from '#domain/queue-limits';
import type { RateLimitDefinition } from '#domain/rate-limits';
import type { ScheduleBackend } from '#domain/schedule';
import { type SchedulerSettingName, SETTINGS } from '#domain/settings';
import type { AgentStore } from './ports/agent-store';
import type { CascadeStore } from './ports/cascade-store';
import type { CycleStatsStore } from './ports/cycle-stats-store';
import type { DebounceStore } from './ports/debounce-store';
import type { DependencyStore } from './ports/dependency-store';
import type { EventPublisher } from './ports/event-publisher';
import type { LaneStore } from './ports/lane-store';
import type { OccurrenceStore } from './ports/occurrence-store';
import type { PayloadStore } from './ports/payload-store';
import type { ProgressStore } from './ports/progress-store';
import type { PushChannel } from './ports/push-channel';
import type { QueueControlStore } from './ports/queue-control-store';
import type { RateLimitStore } from './ports/rate-limit-store';
import type { RoleStore } from './ports/role-store';
import type { ScheduleStore } from './ports/schedule-store';
import type { SessionStore } from './ports/session-store';
import type { TaskQueuePort } from './ports/task-queues';
import type { TaskStore } from './ports/task-store';
import type { WaitpointStore } from './ports/waitpoint-store';

export interface SchedulerSettings {
  /** A session (and every lease it holds) lives this long after its last heartbeat. */
  readonly leaseTtlSeconds: number;
  /** What agents are told to use; a third of the TTL leaves room for two lost heartbeats. */
  readonly heartbeatIntervalSeconds: number;
  /** A queued task not claimed this long after its dispatch is sent again (its message may be lost). */
  readonly reconcileAfterSeconds: number;
  /** Finished tasks are kept this long, then DynamoDB's TTL removes them. */
  readonly taskRetentionSeconds: number;
  /** Payload items expire this long after the task became claimable, plus the retention. */
  readonly maxQueueAgeSeconds: number;
  /** How long a received hint stays hidden from other claims while one claim decides on it. */
  readonly claimVisibilityTimeoutSeconds: number;
  /** SQS receive wait of a claim; 0 answers at once and keeps no function waiting. */
  readonly receiveWaitSeconds: number;
  /** A reservation younger than this may belong to a claim still in flight and is never pruned. */
  readonly reservationGraceSeconds: number;
  readonly priorityWeights: PriorityWeights;
  /** Most items one sweep looks at per shard or per kind; the rest wait for the next pass. */
  readonly sweepLimit: number;
  /**
   * Most roles one agent may register (1 to 10,000). Each registration is counted on the agent's item in the
   * write that records it, so parallel registrations cannot pass the bound.
   */
  readonly maxRolesPerAgent: number;
  /**
   * The starvation ladder: a claimable task queued this long is promoted one priority, then announced
   * (`task.starved`), then marked as needing attention (an alarm).
   */
  readonly starvation: {
    readonly promoteAfterSeconds: number;
    readonly announceAfterSeconds: number;
    readonly attentionAfterSeconds: number;
  };
  /** An occurrence not recorded this long after its time is missed, and handled by its missed-run policy. */
  readonly missedRunGraceSeconds: number;
  /** Limits of queues whose control item sets none (from the construct's props). */
  readonly queueLimits: Readonly<Record<string, QueueLimits>>;
  /** Named rate limits as the construct declares them: in force unless an operator set the name. */
  readonly rateLimits: readonly RateLimitDefinition[];
  /**
   * What a claim that found nothing tells the agent to wait: the base after the first empty claim, doubling
   * with each one in a row, up to the cap. Idle polling is most of what an idle agent costs.
   */
  readonly idleClaimRetryBaseMs: number;
  readonly idleClaimRetryMaxMs: number;
  /**
   * Whether the three events every task causes on its way (`task.submitted`, `task.claimed`, `task.completed`)
   * are published. Off, a task that succeeds costs no event at all ($1 per million events each in EventBridge);
   * everything that needs a look (failures, losses, starvation, agents, roles, schedules) is always published.
   */
  readonly routineEvents: boolean;
  /**
   * A priority tier a claim found empty is passed over by later claims (of the same function instance) for this
   * long, unless the other tiers cannot fill them. Under load each empty tier would otherwise cost an SQS
   * receive per claim; the price is that work arriving in a tier just found empty may wait this long behind
   * work of other tiers.
   */
  readonly emptyTierRecheckMs: number;
  /**
   * Payloads larger than this, once deflated, are stored as S3 objects when a payload bucket is given: past
   * about ten kilobytes a PUT ($5 per million) costs less than the write units the item would take.
   */
  readonly payloadObjectFromBytes: number;
  /** With a push channel: an agent woken is not woken again for this long (the starvation rung excepted). */
  readonly wakeCooldownMs: number;
  /** With a push channel: idle agents woken for each task made claimable (rounded up per queue and batch). */
  readonly wakesPerTask: number;
  /**
   * With a push channel: what a claim that found nothing tells an agent listening on it to wait before its next
   * look, unless woken first. Its safety poll: what a lost wake costs at most.
   */
  readonly pushSafetyPollMs: number;
  /**
   * A waiting task's dependencies are looked at again this long after the last look: what a lost resolution (an
   * end whose dependents were not told) costs at most.
   */
  readonly dependencyRecheckSeconds: number;
  /** The queues agents may submit follow-up tasks to (`POST /v1/agent/tasks`); none unless the construct names them. */
  readonly agentSubmitQueues: readonly string[];
  /**
   * How new tasks are written. 2: a task's payload item is also its entry in its queue's list, so a submission writes
   * no `listed` index entry. 1: as functions before layout 2 write them, for a deploy that may still run them (they
   * cannot read a layout 2 task's payload). Every function reads both.
   */
  readonly taskLayout: number;
  /**
   * With a push channel: how many partitions each queue's listening agents are spread over (by a hash of the agent
   * id). A wake reads one, then the others when it found too few idle agents there; an idle mark writes its agent's.
   */
  readonly listenerShards: number;
  /**
   * How a concurrency limit's slots are kept. 2: a limit above `SLOTS_PER_ITEM` spreads them over several items,
   * each with its share, so a claim and a freeing write one small item. 1: in one item, as functions before
   * layout 2 keep them (they would not see the other items). Every function reads both.
   */
  readonly queueSlotLayout: number;
}

/**
 * The settings a deployment chooses (`#domain/settings`, by their declared names) as the operations read them:
 * each named after its prop, with its unit.
 */
export function schedulerSettingsOf(chosen: Readonly<Record<SchedulerSettingName, number>>) {
  return {
    leaseTtlSeconds: chosen.leaseTtl,
    heartbeatIntervalSeconds: chosen.heartbeatInterval,
    taskRetentionSeconds: chosen.taskRetention,
    starvation: {
      promoteAfterSeconds: chosen.starvationPromoteAfter,
      announceAfterSeconds: chosen.starvationAnnounceAfter,
      attentionAfterSeconds: chosen.starvationAttentionAfter,
    },
    idleClaimRetryMaxMs: chosen.idleClaimRetryMax * 1_000,
    maxRolesPerAgent: chosen.maxRolesPerAgent,
    taskLayout: chosen.taskLayout,
    listenerShards: chosen.listenerShards,
    queueSlotLayout: chosen.queueSlotLayout,
  } satisfies Partial<SchedulerSettings>;
}

const DEFAULT_CHOSEN = Object.fromEntries(
  Object.entries(SETTINGS).map(([name, setting]) => [name, setting.default]),
) as Record<SchedulerSettingName, number>;

export const DEFAULT_SETTINGS: SchedulerSettings = {
  ...schedulerSettingsOf(DEFAULT_CHOSEN),
  reconcileAfterSeconds: 120,
  maxQueueAgeSeconds: 14 * 24 * 60 * 60,
  claimVisibilityTimeoutSeconds: 30,
  receiveWaitSeconds: 0,
  reservationGraceSeconds: 60,
  priorityWeights: DEFAULT_PRIORITY_WEIGHTS,
  sweepLimit: 200,
  missedRunGraceSeconds: 120,
  queueLimits: {},
  rateLimits: [],
  idleClaimRetryBaseMs: 500,
  routineEvents: false,
  emptyTierRecheckMs: 1_000,
  payloadObjectFromBytes: 10 * 1024,
  wakeCooldownMs: 1_000,
  wakesPerTask: 1,
  pushSafetyPollMs: 20 * 60 * 1_000,
  dependencyRecheckSeconds: 300,
  agentSubmitQueues: [],
};

/** Structured logging, satisfied by Powertools' Logger and by `console`. */
export interface SchedulerLog {
  info(message: string, ...extra: Record<string, unknown>[]): void;
  warn(message: string, ...extra: Record<string, unknown>[]): void;
  error(message: string, ...extra: Record<string, unknown>[]): void;
}

export const silentLog: SchedulerLog = { info() {}, warn() {}, error() {} };

/**
 * What the operations count for metrics, where the count is free: the claim knows the tasks it granted and their
 * queues. The agent API publishes them as EMF (`Claims`, by queue); elsewhere nothing is counted.
 */
export interface SchedulerCounters {
  claimed(queue: string, tasks: number): void;
}

export interface SchedulerContext {
  /** A task's state item: its status, lease and what it records; every transition rewrites it. */
  readonly tasks: TaskStore;
  /** A task's payload and `onFailure`, written once at submit; the S3 object of a large one. */
  readonly payloads: PayloadStore;
  /** What links tasks: the dependents of each, the inputs its dependencies left it, its result kept for them. */
  readonly dependencies: DependencyStore;
  /** Fairness between keys: each lane's queued tasks and its turn slot. */
  readonly lanes: LaneStore;
  readonly sessions: SessionStore;
  /** Roles share the leases table with the sessions that keep them. */
  readonly roles: RoleStore;
  /** What happened at each scheduled time of each schedule. */
  readonly occurrences: OccurrenceStore;
  /** Each queue's pause and limits, with the reserved slots and token bucket that enforce the limits. */
  readonly queueControls: QueueControlStore;
  /** The supervisor's cumulative figures, beside the scheduler's control in the leases table. */
  readonly cycleStats: CycleStatsStore;
  readonly waitpoints: WaitpointStore;
  /** Each task's last progress report. */
  readonly progress: ProgressStore;
  /** Named rate limits operators set, and the units taken in each limit's windows. */
  readonly rateLimits: RateLimitStore;
  /** Cancellations that reach a task's descendants, walked a step at a time. */
  readonly cascades: CascadeStore;
  /** Debounce windows: which task each collects its submissions into, and what submissions were answered. */
  readonly debounces: DebounceStore;
  /** Schedules created at run time (declared ones are in `declaredSchedules`). */
  readonly schedules: ScheduleStore;
  readonly agents: AgentStore;
  readonly queues: TaskQueuePort;
  readonly settings: SchedulerSettings;
  /** Schedules declared in the infrastructure (their specifications, as declared). */
  readonly declaredSchedules: readonly unknown[];
  /** What makes run-time schedules fire; absent where they are not offered. */
  readonly scheduleBackend?: ScheduleBackend;
  /** Where lifecycle events go. */
  readonly events: EventPublisher;
  /** The push channel (wakes, role grants, results); absent where it is not offered, and agents poll. */
  readonly push?: PushChannel;
  /** Counts for metrics; absent: nothing counted. */
  readonly counters?: SchedulerCounters;
  now(): number;
  random(): number;
  readonly log: SchedulerLog;
}

/**
 * The `due` index as one supervisor pass read it: the reclaim sweep queries each shard, and reconcile takes the same
 * answers rather than query again (32 queries a pass, not 64), leaving out the tasks the sweep dealt with. A task
 * that falls due between the two steps, or that the sweep moved, is looked at in the next pass.
 */
export interface DueScan {
  /** The ids due in `shard` when the scan was made (at most `sweepLimit`); a failed query throws here. */
  readonly dueIn: (shard: string) => Promise<string[]>;
  /** Tasks a step of the pass looked at (leased ones, for the sweep): the later steps leave them alone. */
  readonly handled: ReadonlySet<string>;
}

/**
 * Starts the `due` query of every shard at once (a sweep would otherwise wait for them one by one); each shard's
 * answer is taken where it is used, and a failed query throws there.
 */
export function queryEveryDueShard(
  ctx: Pick<SchedulerContext, 'tasks'>,
  dueBy: number,
  limit: number,
): (shard: string) => Promise<string[]> {
  const answers = new Map(
    ctx.tasks.dueShards.map((shard) => [
      shard,
      ctx.tasks.queryDue(shard, dueBy, limit).then(
        (ids) => ({ ids }),
        (error: unknown) => ({ error }),
      ),
    ]),
  );
  return async (shard) => {
    const answer = await answers.get(shard);
    if (!answer) return [];
    if ('error' in answer) throw answer.error;
    return answer.ids;
  };
}
