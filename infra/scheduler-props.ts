/**
 * What a deployment chooses: the `AgentScheduler` props, and the checks that refuse at synth the props a
 * deployment cannot run with. The props that reach the functions are declared once in `#domain/settings`, each
 * by its path here (`leaseTtl`, `starvation.promoteAfter`): a prop renamed here and not there fails the type check.
 */
import { type Duration, type RemovalPolicy, Token } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { queueLimitsSchema } from '../functions/domain/queue-limits';
import { declaredRateLimitSchema, RATE_LIMIT_BOUNDS, termsProblem } from '../functions/domain/rate-limits';
import {
  type Bounds,
  type NumberSetting,
  OLDEST_MESSAGE_ALARM_AGE,
  outOfBounds,
  SETTINGS,
  type SettingName,
  THROTTLE_BOUNDS,
  THROTTLE_PROPS,
  TRACING_EXPORT_TIMEOUT,
} from '../functions/domain/settings';
import { QUEUE_NAME_PATTERN } from '../functions/domain/task-spec';
import type { QueueLimits, RateLimitTerms } from '../sdk/types';
import type { TaskScheduleProps } from './task-schedule';

/** A named rate limit as the construct declares it (`AgentSchedulerProps.rateLimits`). */
export interface RateLimitDeclaration extends RateLimitTerms {
  /** 1 to 64 letters, digits, `.`, `_`, `-` or `:`, starting with a letter or digit. */
  readonly name: string;
}

export interface AgentSchedulerProps {
  /**
   * The task queues. A queue's name is the capability an agent declares to be given its tasks; each gets four SQS
   * queues (critical, high, normal, low) and a dead-letter queue.
   */
  readonly queues: readonly string[];
  /** Cron, rate and one-time schedules that submit tasks. @default - none */
  readonly schedules?: readonly TaskScheduleProps[];
  /** How long a session, and every lease it holds, lives after the agent's last heartbeat. @default 30 seconds */
  readonly leaseTtl?: Duration;
  /** The heartbeat interval agents are told to use. @default a third of `leaseTtl` */
  readonly heartbeatInterval?: Duration;
  /** How often the supervisor sweeps; whole minutes, at least one. @default 1 minute */
  readonly supervisorPeriod?: Duration;
  /** How long finished tasks are kept before DynamoDB's TTL removes them. @default 7 days */
  readonly taskRetention?: Duration;
  /** What happens to tables and queues when the stack is deleted. @default RemovalPolicy.RETAIN */
  readonly removalPolicy?: RemovalPolicy;
  /** Where alarms notify. @default - alarms change state without notifying anyone */
  readonly alarmTopic?: ITopic;
  /** Retention of function and access logs. @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays;
  /**
   * Source maps beside the functions' code and Node's `--enable-source-maps`, so that stack traces in the logs name
   * the TypeScript sources. They add about 0.6 MB to each function's asset and cold-start time to every function;
   * the package carries them only when built with `AGENT_SCHEDULER_SOURCE_MAPS=1 npm pack`. @default false
   */
  readonly sourceMaps?: boolean;
  /** API Gateway's default throttling, for routes without limits of their own. @default 100 requests per second, bursts of 200 */
  readonly apiThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway's limit of each agent route (session, heartbeat, claim, complete, …), across all agents.
   * @default 100 requests per second, bursts of 200
   */
  readonly agentRouteThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway's limit of each operator route, apart from the agent routes' so agents cannot starve operators.
   * @default 50 requests per second, bursts of 100
   */
  readonly operatorRouteThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * The waitpoint callback route's throttle (`POST /v1/callbacks/{token}`): it is public (the token is its
   * credential) and the HTTP API has no WAF, so it has limits of its own.
   * @default { rateLimit: 20, burstLimit: 40 }
   */
  readonly callbackRouteThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * API Gateway's limit of the push channel's WebSocket stage: connects and client frames (keep-alives included,
   * about one per connection every five minutes) across all connections.
   * @default 100 requests per second, bursts of 200
   */
  readonly pushThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * Sets the account's API Gateway CloudWatch role (one per account and region), which the push channel's access
   * logs need: without it the WebSocket stage cannot be created. `false` when the account already has one.
   * @default true
   */
  readonly apiGatewayAccountLogRole?: boolean;
  /**
   * Requests a second one agent may make, enforced by each agent API instance (with N instances the bound is N
   * times this); past it the agent gets 429 with `Retry-After`. A Worker makes about one call per task.
   * @default 50 requests per second, bursts of 100
   */
  readonly agentRateLimit?: { readonly ratePerSecond: number; readonly burst: number };
  /** A hint waiting longer than this raises the queue's alarm. @default 15 minutes */
  readonly oldestMessageAlarmAge?: Duration;
  /** CloudWatch namespace of the scheduler's own metrics. @default 'AgentScheduler' */
  readonly metricsNamespace?: string;
  /**
   * The starvation ladder: a claimable task waiting this long is promoted one priority, then announced with a
   * `task.starved` event, then marked as needing attention (the StarvedTasks alarm).
   * @default 5, 15 and 60 minutes
   */
  readonly starvation?: {
    readonly promoteAfter?: Duration;
    readonly announceAfter?: Duration;
    readonly attentionAfter?: Duration;
  };
  /**
   * The longest wait an empty claim tells an idle agent to take. Idle polling is what an idle agent costs: at 90 s
   * about $0.09 a month (API call, function invocation, SQS receives); shorter picks up new work sooner.
   * @default Duration.seconds(90)
   */
  readonly idleClaimRetryMax?: Duration;
  /**
   * Publish `task.submitted`, `task.claimed` and `task.completed` for every task. EventBridge charges $1 per
   * million events, so these three alone cost $3 per million tasks, about as much as the API calls. Failures,
   * losses, dead letters, starvation, agent, role and schedule events are published either way.
   * @default false
   */
  readonly routineEvents?: boolean;
  /**
   * Most roles one agent may register, 1 to 10,000: each registered role is an entry in the role's item and a
   * line of every role listing. Counted exactly, even under parallel registrations.
   * @default 100
   */
  readonly maxRolesPerAgent?: number;
  /**
   * How the functions write new tasks, 1 or 2. Layout 2 lists a task by its payload item, written at submit
   * anyway, instead of an index entry: one write unit a task less. Every function reads both layouts, but functions
   * of releases before layout 2 read only 1 and cannot find a layout 2 task's payload. So a stack deployed before
   * layout 2 existed upgrades in two deploys: first with `taskLayout: 1` (its old functions, still running during
   * that deploy, see only tasks they can read), then without it. Roll back the same way: to 1 first. Layout 3 adds
   * the `suspended` status (waitpoints), which functions of releases before it cannot read: a stack deployed before
   * waitpoints upgrades first with `taskLayout: 2` (the wait route refuses), then without it. Layout 4 lets tasks name
   * rate limits (`rateLimits`), which claims of releases before it would not enforce: a stack deployed before rate
   * limits upgrades first with `taskLayout: 3` (a submission naming them is refused), then without it. Layout 5 lets
   * tasks require labels (`require`), which claims of releases before it would not match against agents' labels: a
   * stack deployed before labels upgrades first with `taskLayout: 4`, then without it.
   * @default 5
   */
  readonly taskLayout?: number;
  /**
   * How the slots of a concurrency limit (`maxConcurrency`, `perKeyConcurrency`) are kept. 2: a limit above 20 is
   * spread over items of at most 20 slots (50 items at most), each with its share, so a claim writes one small item
   * (one write unit) and reads one, whatever the limit; in one item a claim and a freeing cost a write unit per 27
   * slots held. Functions of releases before layout 2 see only the first item, so a stack with a limit above 20
   * deployed before layout 2 existed upgrades in two deploys: first with `queueSlotLayout: 1`, then without it.
   * Roll back the same way: to 1 first.
   * @default 2
   */
  readonly queueSlotLayout?: number;
  /**
   * How many DynamoDB partitions the agents listening to each queue on the push channel are spread over, 1 to 32.
   * Every wake and every idle mark writes one listener item, so one partition caps a queue's wakes near 333 tasks a
   * second with single calls; each partition adds as much. A wake reads a random partition first and the others
   * only when it found too few idle agents there: half a read unit per partition read, so a busy fleet (no one idle)
   * costs a wake `listenerShards` half units. Agents connected before a change of it listen again when they
   * reconnect (within two hours); until then they poll.
   * @default 4
   */
  readonly listenerShards?: number;
  /**
   * Limits per task queue across all agents: at most `maxConcurrency` tasks leased at once, at most
   * `ratePerSecond` claims a second with bursts of `burst`. Operators may change them at run time. A concurrency
   * limit (`maxConcurrency`, `perKeyConcurrency`) is at most 5,000, the slots one queue's control record holds.
   * @default - no limits
   */
  readonly queueLimits?: Readonly<Record<string, QueueLimits>>;
  /**
   * Named rate limits a fleet shares with the outside world (a provider's requests or tokens a minute, a tenant's
   * dollars a day), taken by the tasks that name them (`rateLimits` on a submission) when they are granted. A rate
   * (`per: 'second' | 'minute'`) counts in windows of `per × burst / limit` holding `burst` (by default `limit`); a
   * budget (`per: 'hour' | 'day'`) in the hours or days of UTC. `perKey`: each key a task names has windows of its
   * own. Operators may set new terms at run time (`POST /v1/rate-limits/{name}`), which then replace these.
   * @default - none
   */
  readonly rateLimits?: readonly RateLimitDeclaration[];
  /**
   * The queues agents may submit follow-up tasks to (`POST /v1/agent/tasks`), each fenced by the agent's lease on
   * the task it runs. Agents submit nothing unless named here.
   * @default - none
   */
  readonly agentSubmitQueues?: readonly string[];
  /**
   * OpenTelemetry spans of the functions' own work: a server span per API operation (named by its operationId, with
   * the task's id, queue, attempt and lease epoch), one per supervisor pass and schedule fire; a task's spans are
   * one trace with its submitter's and its Worker's handler's (submission → claim → handler → completion). Sent by
   * OTLP/HTTP (JSON) to `otlpEndpoint`, or to the collector of the ADOT Lambda layer given as `collectorLayerArn`.
   *
   * What it costs: nothing while off (no module loaded, no request made, the task records unchanged). On, each
   * API request waits for one export of its spans, bounded by `exportTimeout` and never failing the request:
   * measured locally, 0.04 ms to build a request's spans and about 1 ms to post them to a collector on localhost
   * (the ADOT layer's), more to a remote back end (a connection's first export opens TLS). A request's export of
   * one span is about 1 KB of OTLP JSON, each further span about 800 bytes. The functions' bundles grow by 8 to
   * 11 KB. A task submitted while on keeps its submission's trace context: 66 bytes more on its record when its
   * submitter sent none. The back end charges per trace or per span: X-Ray, through the ADOT layer's default
   * configuration, $5.00 per million traces recorded and $0.50 per million retrieved or scanned (beyond a free
   * 100,000 recorded and 1,000,000 retrieved a month): a task's life is one trace, a supervisor pass another
   * (43,800 a month at one a minute). An idle agent's polls and heartbeats, and reads (the console's refreshes),
   * record nothing unless their request carries a `traceparent`.
   *
   * @default - no spans
   */
  readonly tracing?: SchedulerTracing;
}

/** Where the ADOT Lambda layer's collector takes OTLP/HTTP. */
export const ADOT_COLLECTOR_ENDPOINT = 'http://localhost:4318';

/** `AgentSchedulerProps.tracing`: an endpoint, a collector layer, or both (a layer's collector on another port). */
export interface SchedulerTracing {
  /**
   * The OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`'s meaning): spans go to `<otlpEndpoint>/v1/traces`.
   * @default 'http://localhost:4318' (the collector of `collectorLayerArn`), which requires the layer
   */
  readonly otlpEndpoint?: string;
  /**
   * Headers sent with each export, a back end's API key say: they are in the functions' environment, readable by
   * whoever may read the functions' configuration. At most 1,024 characters as JSON (Lambda's whole environment
   * is 4 KB). @default - none
   */
  readonly otlpHeaders?: Readonly<Record<string, string>>;
  /**
   * The ARN of the ADOT Lambda layer (its collector extension; the functions record their spans themselves, so
   * no wrapper is set), added to the four functions that record spans. Its default configuration sends them to
   * X-Ray, so those functions may write to X-Ray (`xray:PutTraceSegments`, `xray:PutTelemetryRecords`). A layer is
   * regional: take the ARN of the functions' region and architecture (arm64). @default - no layer
   */
  readonly collectorLayerArn?: string;
  /**
   * How long a request waits for its spans' export before it goes on without it (the spans are then lost), 10 ms
   * to 5 seconds. @default Duration.millis(500)
   */
  readonly exportTimeout?: Duration;
}

/** Refuses props a deployment cannot run with; answers the settings of the contract as they are chosen. */
export function validateProps(props: AgentSchedulerProps): Record<SettingName, number> {
  if (props.queues.length === 0) throw new Error('queues must name at least one task queue');
  const seen = new Set<string>();
  for (const name of props.queues) {
    if (!QUEUE_NAME_PATTERN.test(name))
      throw new Error(`queue name "${name}" must be 1 to 48 letters, digits, "-" or "_"`);
    if (seen.has(name)) throw new Error(`queue name "${name}" is declared twice`);
    seen.add(name);
  }
  const period = props.supervisorPeriod;
  if (period && !Token.isUnresolved(period) && (period.toSeconds() < 60 || period.toSeconds() % 60 !== 0)) {
    throw new Error(`supervisorPeriod must be whole minutes, at least one (got ${period.toHumanString()})`);
  }
  for (const queue of props.agentSubmitQueues ?? []) {
    if (!props.queues.includes(queue))
      throw new Error(`agentSubmitQueues names queue "${queue}", which is not declared`);
  }
  for (const [queue, limits] of Object.entries(props.queueLimits ?? {})) {
    if (!props.queues.includes(queue))
      throw new Error(`queueLimits names queue "${queue}", which is not declared`);
    const parsed = queueLimitsSchema.safeParse(limits);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = String(issue?.path[0] ?? '');
      const got = field ? (limits as Record<string, unknown>)[field] : limits;
      throw new Error(
        `queueLimits of "${queue}" are invalid: ${field} ${issue?.message ?? ''} (got ${JSON.stringify(got)})`,
      );
    }
  }
  const limitNames = new Set<string>();
  for (const limit of props.rateLimits ?? []) {
    const parsed = declaredRateLimitSchema.safeParse(limit);
    const problem = parsed.success
      ? termsProblem(parsed.data)
      : `${String(parsed.error.issues[0]?.path.join('.') ?? '')} ${parsed.error.issues[0]?.message ?? ''}`;
    if (problem) throw new Error(`rateLimits: "${String(limit.name)}" is invalid: ${problem}`);
    if (limitNames.has(limit.name)) throw new Error(`rateLimits: "${limit.name}" is declared twice`);
    limitNames.add(limit.name);
  }
  if (limitNames.size > RATE_LIMIT_BOUNDS.definitions)
    throw new Error(`rateLimits: at most ${RATE_LIMIT_BOUNDS.definitions} may be declared`);
  for (const [name, given] of Object.entries(settingsInProps(props)) as [SettingName, Given][]) {
    const setting: NumberSetting = SETTINGS[name];
    const problem = outOfBounds(setting, given.value);
    if (problem) {
      const unit = setting.unit === 'seconds' ? ' seconds' : '';
      throw new Error(`${setting.prop} must be ${problem}${unit} (got ${given.shown})`);
    }
  }
  const alarmAge = props.oldestMessageAlarmAge;
  if (alarmAge !== undefined && !alarmAge.isUnresolved()) {
    const problem = outOfBounds(OLDEST_MESSAGE_ALARM_AGE, alarmAge.toSeconds({ integral: false }));
    if (problem)
      throw new Error(`oldestMessageAlarmAge must be ${problem} seconds (got ${alarmAge.toHumanString()})`);
  }
  const throttles: [string, number | undefined, Bounds][] = THROTTLE_PROPS.flatMap(
    (name): [string, number | undefined, Bounds][] => [
      [`${name}.rateLimit`, props[name]?.rateLimit, THROTTLE_BOUNDS.rateLimit],
      [`${name}.burstLimit`, props[name]?.burstLimit, THROTTLE_BOUNDS.burstLimit],
    ],
  );
  for (const [name, value, bounds] of throttles) {
    if (value === undefined || Token.isUnresolved(value)) continue;
    const problem = outOfBounds(bounds, value);
    if (problem) throw new Error(`${name} must be ${problem} (got ${value})`);
  }
  if (props.tracing) validateTracing(props.tracing);
  const chosen = chosenSettings(props);
  const promote = chosen.starvationPromoteAfter;
  const announce = chosen.starvationAnnounceAfter;
  const attention = chosen.starvationAttentionAfter;
  if (!(promote < announce && announce < attention)) {
    throw new Error(
      `starvation thresholds must grow: promoteAfter < announceAfter < attentionAfter (got ${promote}, ${announce}, ${attention} s)`,
    );
  }
  if (props.heartbeatInterval !== undefined && chosen.heartbeatInterval >= chosen.leaseTtl) {
    throw new Error(
      `heartbeatInterval (${chosen.heartbeatInterval} s) must be shorter than leaseTtl (${chosen.leaseTtl} s)`,
    );
  }
  return chosen;
}

/** A setting of the contract as the props give it: its value in the contract's unit, and as the caller wrote it. */
interface Given {
  readonly value: number;
  readonly shown: string;
}

/** The paths of the props that set a number: `leaseTtl`, and one level down, `starvation.promoteAfter`. */
type NumberProp = {
  [Prop in keyof AgentSchedulerProps & string]-?: NonNullable<AgentSchedulerProps[Prop]> extends
    | Duration
    | number
    ? Prop
    : NonNullable<AgentSchedulerProps[Prop]> extends Readonly<Record<string, Duration | number | undefined>>
      ? `${Prop}.${keyof NonNullable<AgentSchedulerProps[Prop]> & string}`
      : never;
}[keyof AgentSchedulerProps & string];

/** The prop at `path`, as the caller gave it. */
function propAt(props: AgentSchedulerProps, path: NumberProp): Duration | number | undefined {
  let value: unknown = props;
  for (const key of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[key];
  return value as Duration | number | undefined;
}

/** The settings of the contract (`#domain/settings`) the props set; unresolved tokens are left to CloudFormation. */
function settingsInProps(props: AgentSchedulerProps): Partial<Record<SettingName, Given>> {
  const given: Partial<Record<SettingName, Given>> = {};
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const setting = SETTINGS[name];
    const value = propAt(props, setting.prop);
    if (value === undefined) continue;
    if (typeof value === 'number') {
      if (!Token.isUnresolved(value)) given[name] = { value, shown: String(value) };
    } else if (!value.isUnresolved()) {
      given[name] = { value: value.toSeconds({ integral: false }), shown: value.toHumanString() };
    }
  }
  return given;
}

/** Every setting of the contract as this deployment has it: given, or its default. */
function chosenSettings(props: AgentSchedulerProps): Record<SettingName, number> {
  const given = settingsInProps(props);
  const chosen = Object.fromEntries(
    (Object.keys(SETTINGS) as SettingName[]).map((name) => [
      name,
      given[name]?.value ?? SETTINGS[name].default,
    ]),
  ) as Record<SettingName, number>;
  // Unless given, agents beat three times per lease.
  if (given.heartbeatInterval === undefined)
    chosen.heartbeatInterval = Math.max(1, Math.floor(chosen.leaseTtl / 3));
  return chosen;
}

/** A layer version's ARN: `arn:aws:lambda:<region>:<account>:layer:<name>:<version>`. */
const LAYER_VERSION_ARN = /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]+:\d+$/;

function validateTracing(tracing: SchedulerTracing): void {
  const { otlpEndpoint, otlpHeaders, collectorLayerArn, exportTimeout } = tracing;
  if (otlpEndpoint === undefined && collectorLayerArn === undefined)
    throw new Error('tracing needs an otlpEndpoint, a collectorLayerArn or both');
  if (
    otlpEndpoint !== undefined &&
    !Token.isUnresolved(otlpEndpoint) &&
    !/^https?:\/\/[^\s/]+\S*$/.test(otlpEndpoint)
  )
    throw new Error(`tracing.otlpEndpoint must be an http(s) URL (got ${JSON.stringify(otlpEndpoint)})`);
  if (
    collectorLayerArn !== undefined &&
    !Token.isUnresolved(collectorLayerArn) &&
    !LAYER_VERSION_ARN.test(collectorLayerArn)
  )
    throw new Error(
      `tracing.collectorLayerArn must be a layer version's ARN (got ${JSON.stringify(collectorLayerArn)})`,
    );
  if (otlpHeaders !== undefined) {
    for (const [name, value] of Object.entries(otlpHeaders)) {
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(name) || typeof value !== 'string' || /[\r\n]/.test(value))
        throw new Error(`tracing.otlpHeaders: "${name}" is not a header name with a one-line value`);
    }
    const length = JSON.stringify(otlpHeaders).length;
    if (length > 1_024)
      throw new Error(`tracing.otlpHeaders must be at most 1,024 characters as JSON (got ${length})`);
  }
  if (exportTimeout !== undefined && !exportTimeout.isUnresolved()) {
    const problem = outOfBounds(TRACING_EXPORT_TIMEOUT, exportTimeout.toMilliseconds({ integral: false }));
    if (problem)
      throw new Error(
        `tracing.exportTimeout must be ${problem} milliseconds (got ${exportTimeout.toHumanString()})`,
      );
  }
}
