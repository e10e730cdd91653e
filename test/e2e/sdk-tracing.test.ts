/**
 * One trace for a task's life: a span submits a task through the client against the local server, a Worker runs
 * it in a span of that trace, and the follow-up its handler submits runs in the same trace. The spans are kept by
 * an in-memory exporter, with the async-hooks context manager carrying the active span through awaits. Then the
 * same with the server recording its operations' spans (as the functions do with `tracing` on), kept in memory
 * too: submitter, submission, claim, handler and completion are one chain of one trace.
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fireSchedule, withFireTrace } from '#core/fire-schedule';
import type { RecordedSpan } from '#domain/spans';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { Worker } from '#sdk/worker';
import { createTestStack, serveStack, type TestStack, waitFor } from '#test/stack';

const OPERATOR = 'op_e2e-tracing-token';
const QUEUE = 'traced';
const SERVER_TRACED = 'server-traced';

describe('tracing a task’s life', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  const exporter = new InMemorySpanExporter();
  let tracedServer: LocalServer;
  const serverSpans: RecordedSpan[] = [];

  beforeAll(async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    stack = await createTestStack({ queues: [QUEUE, SERVER_TRACED] });
    server = await serveStack(stack, OPERATOR);
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    // A second server of the same stack, recording its spans.
    tracedServer = await serveStack(stack, OPERATOR, {
      spans: { export: async (spans) => void serverSpans.push(...spans) },
    });
  });
  afterAll(async () => {
    await tracedServer.close();
    trace.disable();
    context.disable();
    await server.close();
    await stack.destroy();
  });

  const handlerSpan = (taskId: string): ReadableSpan | undefined =>
    exporter.getFinishedSpans().find((span) => span.attributes['agent_scheduler.task.id'] === taskId);

  it('the handler runs in the submitter’s trace, and so does the follow-up it submits; a failure marks its span', async () => {
    const submitter = trace.getTracer('test').startSpan('submitter');
    const { task } = await context.with(trace.setSpan(context.active(), submitter), () =>
      operator.submitTask({ queue: QUEUE, payload: { step: 'first' } }),
    );
    submitter.end();
    const failing = await context.with(trace.setSpan(context.active(), submitter), () =>
      operator.submitTask({ queue: QUEUE, payload: { step: 'fail' }, maxAttempts: 1 }),
    );
    // Outside any span the client adds nothing.
    const untraced = await operator.submitTask({ queue: QUEUE, payload: { step: 'plain' } });
    const { traceId, spanId } = submitter.spanContext();
    expect(task.traceparent).toBe(`00-${traceId}-${spanId}-01`);
    expect(untraced.task).not.toHaveProperty('traceparent');

    const followUps: string[] = [];
    const { token } = await operator.createAgent({ name: 'tracing', queues: [QUEUE], maxConcurrency: 3 });
    const worker = new Worker({
      client: new AgentSchedulerClient({ endpoint: server.url, token }),
      handler: async (claimed, ctx) => {
        const { step } = claimed.payload as { step: string };
        if (step === 'fail') throw new Error('refused on purpose');
        if (step === 'first') {
          const [child] = await ctx.submit([{ key: 'next', queue: QUEUE, payload: { step: 'next' } }]);
          if (child?.ok) followUps.push(child.task.taskId);
        }
        return { step };
      },
      pollIntervalMs: { min: 20, max: 200 },
    });
    await worker.start();
    try {
      await waitFor(
        () =>
          followUps.length === 1 &&
          [task.taskId, failing.task.taskId, untraced.task.taskId, ...followUps].every(handlerSpan),
        10_000,
      );
    } finally {
      await worker.stop();
    }

    const first = handlerSpan(task.taskId);
    expect(first).toMatchObject({
      name: `agent-scheduler.task ${QUEUE}`,
      kind: SpanKind.CONSUMER,
      attributes: {
        'agent_scheduler.task.id': task.taskId,
        'agent_scheduler.queue': QUEUE,
        'agent_scheduler.task.attempt': 1,
        'agent_scheduler.task.lease_epoch': 1,
      },
      status: { code: SpanStatusCode.UNSET },
    });
    // Its parent is the submitter's span: the same trace, one step down.
    expect(first?.spanContext().traceId).toBe(traceId);
    expect(first?.parentSpanContext).toMatchObject({ spanId, isRemote: true });
    // The follow-up was submitted from the handler's span, and runs under it.
    const next = handlerSpan(followUps[0] ?? '');
    expect(next?.spanContext().traceId).toBe(traceId);
    expect(next?.parentSpanContext?.spanId).toBe(first?.spanContext().spanId);
    expect((await operator.getTask(followUps[0] ?? '')).traceparent).toBe(
      `00-${traceId}-${first?.spanContext().spanId}-01`,
    );
    const failed = handlerSpan(failing.task.taskId);
    expect(failed?.spanContext().traceId).toBe(traceId);
    expect(failed?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'refused on purpose' });
    // A task submitted outside any trace starts one of its own.
    const plain = handlerSpan(untraced.task.taskId);
    expect(plain?.spanContext().traceId).not.toBe(traceId);
    expect(plain?.parentSpanContext).toBeUndefined();
  });

  it('with the server’s spans: submitter → submission → claim → handler → completion, one trace', async () => {
    const client = new AgentSchedulerClient({ endpoint: tracedServer.url, token: OPERATOR });
    const submitter = trace.getTracer('test').startSpan('submitter');
    const { task } = await context.with(trace.setSpan(context.active(), submitter), () =>
      client.submitTask({ queue: SERVER_TRACED, payload: { step: 'traced' } }),
    );
    submitter.end();
    // Outside any span the server starts the task's trace.
    const untraced = await client.submitTask({ queue: SERVER_TRACED, payload: { step: 'untraced' } });
    // A schedule's fire, as the function runs it in its span: the task joins the fire's trace.
    const fireSpan = `00-${'f'.repeat(32)}-${'e'.repeat(16)}-01`;
    const fired = await fireSchedule(
      stack.scheduler.ctx,
      withFireTrace(
        {
          schedule: 'traced-nightly',
          scheduledTime: new Date(Date.now() - 2_000).toISOString(),
          task: { queue: SERVER_TRACED, payload: { step: 'fired' } },
        },
        fireSpan,
      ),
    );
    const { token } = await client.createAgent({ name: 'server-traced', queues: [SERVER_TRACED] });
    const serverSpan = (name: string, taskId: string) =>
      serverSpans.find((span) => span.name === name && span.attributes['agent_scheduler.task.id'] === taskId);
    const worker = new Worker({
      client: new AgentSchedulerClient({ endpoint: tracedServer.url, token }),
      handler: async (claimed) => claimed.payload,
      pollIntervalMs: { min: 20, max: 200 },
    });
    await worker.start();
    try {
      await waitFor(
        () =>
          [task.taskId, untraced.task.taskId, fired.taskId ?? ''].every((id) =>
            serverSpan('completeTask', id),
          ),
        10_000,
      );
    } finally {
      await worker.stop();
    }

    const { traceId, spanId } = submitter.spanContext();
    const submit = serverSpan('submitTask', task.taskId);
    const claim = serverSpan('claimTasks', task.taskId);
    const handler = handlerSpan(task.taskId);
    const complete = serverSpan('completeTask', task.taskId);
    // Each step the child of the one before, all in the submitter's trace.
    expect(submit).toMatchObject({ traceId, parentSpanId: spanId, kind: 'server' });
    expect(task.traceparent).toBe(`00-${traceId}-${submit?.spanId}-01`);
    expect(claim).toMatchObject({
      traceId,
      parentSpanId: submit?.spanId,
      attributes: { 'agent_scheduler.queue': SERVER_TRACED, 'agent_scheduler.task.lease_epoch': 1 },
    });
    expect(handler?.spanContext().traceId).toBe(traceId);
    expect(handler?.parentSpanContext?.spanId).toBe(claim?.spanId);
    expect(complete).toMatchObject({
      traceId,
      parentSpanId: handler?.spanContext().spanId,
      attributes: {
        'http.response.status_code': 200,
        'agent_scheduler.task.attempt': 1,
        'agent_scheduler.task.lease_epoch': 1,
      },
    });
    expect(complete?.error).toBeUndefined();
    // The untraced task's trace starts at its submission, and its handler is in it under its claim.
    const rootSubmit = serverSpan('submitTask', untraced.task.taskId);
    expect(rootSubmit?.parentSpanId).toBeUndefined();
    expect(rootSubmit?.traceId).not.toBe(traceId);
    const rootClaim = serverSpan('claimTasks', untraced.task.taskId);
    expect(rootClaim?.parentSpanId).toBe(rootSubmit?.spanId);
    expect(handlerSpan(untraced.task.taskId)?.parentSpanContext?.spanId).toBe(rootClaim?.spanId);
    // The fired task's claim is the fire span's child, and its handler the claim's.
    const firedClaim = serverSpan('claimTasks', fired.taskId ?? '');
    expect(firedClaim).toMatchObject({ traceId: 'f'.repeat(32), parentSpanId: 'e'.repeat(16) });
    expect(handlerSpan(fired.taskId ?? '')?.parentSpanContext?.spanId).toBe(firedClaim?.spanId);
    // An idle Worker's polls and heartbeats, under no trace, are not recorded.
    expect(serverSpans.filter((span) => span.name === 'heartbeat')).toEqual([]);
    expect(
      serverSpans
        .filter((span) => span.name === 'claimTasks')
        .map((s) => s.attributes['agent_scheduler.task.id'])
        .sort(),
    ).toEqual([task.taskId, untraced.task.taskId, fired.taskId].sort());
  });
});
