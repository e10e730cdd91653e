/**
 * A small run of `npm run bench` on the test emulators: the report has every figure the JSON promises, the
 * counts are what the routes imply (two calls a task alone, the claim riding on the completion; fewer in batches), and one lifecycle costs no more
 * units than `bench/budget.json` (the figures `docs/guarantees.md` documents) allows.
 */
import { describe, expect, inject, it } from 'vitest';
import { readBudget } from '../../bench/history';
import { runBench } from '../../bench/run-bench';

describe('the benchmark', () => {
  const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

  it('reports per-task requests, capacity and dollars, single and batched', async () => {
    const single = await runBench({ tasks: 40, agents: 2, batch: 1, payloadBytes: 1_024, endpoints });
    // With a warm-up of 20 tasks, whose calls must not count.
    const batched = await runBench({
      tasks: 40,
      agents: 2,
      batch: 10,
      payloadBytes: 1_024,
      warmupTasks: 20,
      endpoints,
    });
    for (const report of [single, batched]) {
      expect(report).toMatchObject({ tasks: 40, agents: 2, payloadBytes: 1_024 });
      expect(report.tasksPerSecond).toBeGreaterThan(0);
      expect(report.dispatchLatencyMs.p99).toBeGreaterThanOrEqual(report.dispatchLatencyMs.p50);
      expect(report.perTask.dynamodbWriteUnits).toBeGreaterThan(0);
      expect(report.heartbeat).toMatchObject({ dynamodbWriteUnits: 1, requests: 1 });
      expect(report.idleAgentUsdPerMonth).toBeGreaterThan(0);
    }
    // Submit, and a completion that carries the next claim: two calls a task, plus each agent's first claim and the
    // claims that found nothing yet.
    expect(single.perTask.apiCalls).toBeGreaterThanOrEqual(2);
    // A task's state item, and its payload item (written without a condition, so by BatchWriteItem).
    expect(single.perTask.requests['dynamodb:PutItem']).toBe(1);
    expect(single.perTask.requests['dynamodb:BatchWriteItem']).toBe(1);
    // In tens: a submit, a claim and a complete call serve ten tasks; the ten payloads share one write.
    expect(batched.perTask.apiCalls).toBeLessThan(1.5);
    expect(batched.perTask.requests['dynamodb:BatchWriteItem']).toBe(0.1);
    expect(batched.warmupTasks).toBe(20);
    expect(batched.usdPerMillionTasks).toBeLessThan(single.usdPerMillionTasks);

    // Lambda is priced at the modelled duration; the time measured here is reported beside it.
    for (const report of [single, batched]) {
      expect(report.perTask.lambdaMs).toBeGreaterThan(0);
      expect(report.perTask.localLambdaMs).toBeGreaterThan(0);
      const { submit, claim, complete, lifecycle } = report.steps;
      expect(lifecycle.writeUnits).toBeCloseTo(submit.writeUnits + claim.writeUnits + complete.writeUnits, 2);
      expect(submit.writeUnits).toBeGreaterThan(0);
      expect(claim.writeUnits).toBeGreaterThan(0);
      expect(complete.writeUnits).toBeGreaterThan(0);
    }

    // The budget: a change that makes a lifecycle cost more units fails here, until the docs and the budget
    // say so.
    const budget = readBudget();
    console.log(
      `[bench] one lifecycle, step by step: single ${JSON.stringify(single.steps)}, batched ${JSON.stringify(batched.steps)}`,
    );
    expect(single.steps.lifecycle.writeUnits).toBeLessThanOrEqual(budget.singleCall.dynamodbWriteUnits);
    expect(single.steps.lifecycle.readUnits).toBeLessThanOrEqual(budget.singleCall.dynamodbReadUnits);
    expect(batched.steps.lifecycle.writeUnits).toBeLessThanOrEqual(budget.batchOf10.dynamodbWriteUnits);
    expect(batched.steps.lifecycle.readUnits).toBeLessThanOrEqual(budget.batchOf10.dynamodbReadUnits);
  }, 60_000);
});
