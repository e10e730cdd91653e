/**
 * The spans of the HTTP API's operations, made at the edge from the request and the answer, so that the
 * operations themselves do not know of them and nothing is read or written for them. Loaded only when tracing is
 * on (`#wiring/tracing`).
 *
 * A task's life is one trace, each step the child of the one before:
 * - a submission's span is a child of the submitter's (the specification's `traceparent`, or the request's header),
 *   or starts a trace when there is none; the task keeps the submission span's context instead of the submitter's;
 * - a claim records one span per granted task, a child of the task's context, and hands the agent that span's
 *   context instead of the stored one, so the Worker's handler span is the claim span's child. Its id is derived
 *   from the task's context, id and lease epoch (`claimSpanId`), never stored;
 * - a call under the lease (complete, fail, release, wait) is a child of the span its request names in a
 *   `traceparent` header (the Worker's handler span), else of the claim span of the epoch it was fenced by;
 * - an operator's change to a task (cancel, redrive, clear attention) is a child of the task's context.
 * Any other operation is one span, a child of the request's `traceparent` header or the root of its own trace;
 * but a read (any GET: the console refreshes its views every few seconds) and an agent's polling (a claim that
 * grants no traced task, a heartbeat, a progress report) are recorded only under a header, as each would
 * otherwise be a trace of its own, billed as such. A caller whose
 * context is not sampled is not recorded, and nothing of its request is changed.
 */
import { isSchedulerError } from '#domain/errors';
import {
  claimSpanId,
  newSpanId,
  newTraceId,
  parentOf,
  type RecordedSpan,
  type SpanAttributes,
  type SpanExporter,
  type SpanParent,
  traceparentOf,
} from '#domain/spans';
import type { ApiRequest, ApiResponse, OperationHook } from './http-api';

type Fields = Readonly<Record<string, unknown>>;
const isRecord = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const fieldOf = (value: unknown, name: string): unknown => (isRecord(value) ? value[name] : undefined);
const listOf = (value: unknown): readonly unknown[] => (Array.isArray(value) ? value : []);

/** Where a submission's specifications are: the body itself, or its `tasks`. */
const SUBMITS: Readonly<Record<string, 'body' | 'tasks'>> = {
  submitTask: 'body',
  submitChildTask: 'body',
  submitTasks: 'tasks',
  submitChildTasks: 'tasks',
};
/** Calls under a task's lease, fenced by the `leaseEpoch` of their body. */
const UNDER_LEASE = new Set(['completeTask', 'failTask', 'releaseTask', 'waitTask']);
/** An operator's change to one task. */
const ON_TASK = new Set(['cancelTask', 'redriveTask', 'clearAttention']);
/** An agent's polling, recorded only under a request's `traceparent` header (as reads are). */
const POLLING = new Set(['claimTasks', 'heartbeat', 'reportProgress', 'reportProgressBatch']);

/** The attributes of a task, from its view in an answer (the names the SDK's handler span uses). */
function taskAttributes(task: unknown): SpanAttributes {
  const attributes: Record<string, string | number> = {};
  const set = (name: string, value: unknown) => {
    if (typeof value === 'string' || typeof value === 'number') attributes[name] = value;
  };
  set('agent_scheduler.task.id', fieldOf(task, 'taskId'));
  set('agent_scheduler.queue', fieldOf(task, 'queue'));
  set('agent_scheduler.task.attempt', fieldOf(task, 'attempt'));
  set('agent_scheduler.task.lease_epoch', fieldOf(task, 'leaseEpoch'));
  return attributes;
}

/** A submission's span planned before it runs: its context goes into the specification. */
interface Planned {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
}

/**
 * A submission with each specification's context replaced by its span's, and those spans. A specification whose
 * own context is not valid is left for the validation to refuse; one whose caller does not sample gets no span.
 */
function planSubmission(
  request: ApiRequest,
  header: SpanParent | undefined,
): { request: ApiRequest; planned: (Planned | undefined)[] } {
  const where = SUBMITS[request.route.operation];
  const planned: (Planned | undefined)[] = [];
  if (where === undefined) return { request, planned };
  const plan = (spec: unknown): unknown => {
    const own = isRecord(spec) && (Object.hasOwn(spec, 'traceparent') || Object.hasOwn(spec, 'tracestate'));
    const parent = own ? parentOf(spec.traceparent) : header;
    if (!isRecord(spec) || (own && parent === undefined) || (parent && !parent.sampled)) {
      planned.push(undefined);
      return spec;
    }
    const span = {
      traceId: parent?.traceId ?? newTraceId(),
      spanId: newSpanId(),
      ...(parent ? { parentSpanId: parent.spanId } : {}),
    };
    planned.push(span);
    const tracestate = own ? undefined : request.traceHeaders?.tracestate;
    return {
      ...spec,
      traceparent: traceparentOf(span.traceId, span.spanId),
      ...(tracestate === undefined ? {} : { tracestate }),
    };
  };
  const body =
    where === 'body'
      ? plan(request.body)
      : isRecord(request.body) && Array.isArray(request.body.tasks)
        ? { ...request.body, tasks: request.body.tasks.map(plan) }
        : request.body;
  return { request: { ...request, body }, planned };
}

/** The tasks a claim granted with their claim spans' context, and those spans. */
function claimed(
  tasks: readonly unknown[],
  span: (fields: Omit<RecordedSpan, 'kind' | 'startMs' | 'endMs' | 'name'>, name?: string) => RecordedSpan,
): { tasks: unknown[]; spans: RecordedSpan[] } {
  const spans: RecordedSpan[] = [];
  const handed = tasks.map((task) => {
    const traceparent = fieldOf(task, 'traceparent');
    const parent = parentOf(traceparent);
    const taskId = fieldOf(task, 'taskId');
    const leaseEpoch = fieldOf(task, 'leaseEpoch');
    if (!parent?.sampled || typeof taskId !== 'string' || typeof leaseEpoch !== 'number') return task;
    const spanId = claimSpanId(traceparent as string, taskId, leaseEpoch);
    spans.push(
      span(
        { traceId: parent.traceId, spanId, parentSpanId: parent.spanId, attributes: taskAttributes(task) },
        'claimTasks',
      ),
    );
    return { ...(task as Fields), traceparent: traceparentOf(parent.traceId, spanId) };
  });
  return { tasks: handed, spans };
}

/** The claim span of the lease a call was fenced by, from the task it wrote; undefined for an untraced task. */
function leaseParent(task: unknown, leaseEpoch: unknown): SpanParent | undefined {
  const traceparent = fieldOf(task, 'traceparent');
  const parent = parentOf(traceparent);
  const taskId = fieldOf(task, 'taskId');
  if (!parent?.sampled || typeof taskId !== 'string' || typeof leaseEpoch !== 'number') return undefined;
  return { ...parent, spanId: claimSpanId(traceparent as string, taskId, leaseEpoch) };
}

/** The HTTP status an operation answered, or the one its error maps to. */
const statusOf = (response: ApiResponse | undefined, error: unknown): number =>
  response?.status ?? (isSchedulerError(error) ? error.statusCode : 500);

/** Wraps each operation: its spans are recorded and exported once it has answered (or failed). */
export function operationSpans(exporter: SpanExporter, now: () => number = Date.now): OperationHook {
  return async (operation, original) => {
    const startMs = now();
    const header = parentOf(original.traceHeaders?.traceparent);
    if (header && !header.sampled) return operation(original);
    const { request, planned } = planSubmission(original, header);
    let response: ApiResponse | undefined;
    let error: unknown;
    try {
      response = await operation(request);
    } catch (thrown) {
      error = thrown ?? new Error('the operation failed');
    }
    const endMs = now();
    const name = request.route.operation;
    const status = statusOf(response, error);
    const common: SpanAttributes = {
      'http.request.method': request.route.method,
      'http.route': request.route.path,
      'http.response.status_code': status,
      'agent_scheduler.request_id': request.requestId,
      ...(request.agentId === undefined ? {} : { 'agent_scheduler.agent.id': request.agentId }),
    };
    const failed = error !== undefined || status >= 500;
    const span = (
      fields: Omit<RecordedSpan, 'kind' | 'startMs' | 'endMs' | 'name'>,
      spanName = name,
    ): RecordedSpan => ({
      ...fields,
      name: spanName,
      kind: 'server',
      startMs,
      endMs,
      attributes: { ...common, ...fields.attributes },
      ...(failed ? { error: error instanceof Error ? error.message : `status ${status}` } : {}),
    });
    const under = (parent: SpanParent | undefined, attributes: SpanAttributes): RecordedSpan =>
      span({
        traceId: parent?.traceId ?? newTraceId(),
        spanId: newSpanId(),
        ...(parent ? { parentSpanId: parent.spanId } : {}),
        attributes,
      });

    const spans: RecordedSpan[] = [];
    let body = response?.body;
    if (SUBMITS[name] !== undefined) {
      const tasks = SUBMITS[name] === 'body' ? [fieldOf(body, 'task')] : listOf(fieldOf(body, 'results'));
      planned.forEach((plan, i) => {
        const answered = SUBMITS[name] === 'body' ? tasks[0] : fieldOf(tasks[i], 'task');
        if (plan) spans.push(span({ ...plan, attributes: taskAttributes(answered) }));
      });
    } else if (UNDER_LEASE.has(name) || ON_TASK.has(name)) {
      const task = fieldOf(body, 'task');
      const parent = UNDER_LEASE.has(name)
        ? leaseParent(task, fieldOf(request.body, 'leaseEpoch'))
        : parentOf(fieldOf(task, 'traceparent'));
      spans.push(
        under(header ?? (parent?.sampled ? parent : undefined), {
          ...taskAttributes(task),
          ...(request.params.taskId === undefined
            ? {}
            : { 'agent_scheduler.task.id': request.params.taskId }),
        }),
      );
    } else if (name === 'completeTasks') {
      const items = listOf(fieldOf(request.body, 'tasks'));
      listOf(fieldOf(body, 'results')).forEach((result, i) => {
        const task = fieldOf(result, 'task');
        spans.push(under(header ?? leaseParent(task, fieldOf(items[i], 'leaseEpoch')), taskAttributes(task)));
      });
    }
    // The tasks a claim granted, or the claim a completion carried (`next`).
    const claim = name === 'claimTasks' ? body : fieldOf(body, 'next');
    if (isRecord(claim) && Array.isArray(claim.tasks)) {
      const granted = claimed(claim.tasks, span);
      spans.push(...granted.spans);
      if (granted.spans.length > 0) {
        const handed = { ...claim, tasks: granted.tasks };
        body = name === 'claimTasks' ? handed : { ...(body as Fields), next: handed };
      }
    }
    const quiet = request.route.method === 'GET' || POLLING.has(name);
    if (spans.length === 0 && (header !== undefined || !quiet)) spans.push(under(header, {}));
    await exporter.export(spans);
    if (response === undefined) throw error;
    return body === response.body ? response : { ...response, body };
  };
}
