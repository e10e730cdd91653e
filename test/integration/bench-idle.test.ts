/**
 * A short run of `npm run bench -- --scenario idle` on the test emulators, with an idle fleet of 50 Workers: tasks
 * are picked up by wakes (one per task, none twice within the cooldown, no claims while the fleet is idle), and the
 * steps the cost model prices are the requests the push channel's code implies.
 */
import { describe, expect, inject, it } from 'vitest';
import { runIdle } from '../../bench/run-idle';

describe('the idle benchmark', () => {
  const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

  it('reports pickups by wake, wakes and claims per task, and an idle agent-month for push and polling', async () => {
    const report = await runIdle({
      agents: 50,
      tasks: 5,
      spacingMs: { min: 200, max: 400 },
      probeClaims: 1,
      endpoints,
    });
    expect(report).toMatchObject({ scenario: 'idle', agents: 50, tasks: 5 });
    expect(report.settings.pushSafetyPollMs).toBe(20 * 60 * 1_000);
    expect(report.idle.claimsInQuietWindow).toBe(0);
    // Every task was picked up, and by a wake: the safety poll is 20 minutes.
    expect(report.pickupMs.missed).toBe(0);
    expect(report.pickupMs.max).toBeLessThan(5_000);
    expect(report.perTask.wakes).toBe(1);
    expect(report.wokenTwiceWithinCooldown).toBe(0);
    expect(report.perTask.claims).toBeGreaterThanOrEqual(1);

    const m = report.measured;
    expect(m.listeningEmptyClaim.retryAfterMs).toBe(20 * 60 * 1_000);
    expect(m.pollingEmptyClaim.retryAfterMs).toBe(90_000);
    expect(m.listeningEmptyClaim.requests['dynamodb:UpdateItem']).toBe(1);
    // A safety poll of an agent idle already looks once; the first listening claim of a socket looks twice.
    expect(m.listeningEmptyClaim.requests['sqs:ReceiveMessage'] ?? 0).toBeLessThan(
      m.listeningFirstClaim.requests['sqs:ReceiveMessage'] ?? 0,
    );
    expect(m.keepAliveRequests).toBe(0);
    expect(JSON.parse(m.keepAliveAnswer)).toEqual({ type: 'pong', version: 1 });
    expect(m.ticket.requests).toEqual({ 'dynamodb:PutItem': 1 });
    expect(m.connectAuthorizer.requests).toEqual({ 'dynamodb:DeleteItem': 1, 'dynamodb:GetItem': 1 });
    expect(m.connect.requests['dynamodb:BatchWriteItem']).toBe(1);
    expect(m.httpAuthorizer.requests).toEqual({ 'dynamodb:GetItem': 1 });

    const { push, polling } = report.idleAgentMonth;
    expect(push.items.find((i) => i.item === 'connection minutes')?.perMonth).toBe(43_200);
    expect(push.usd).toBeGreaterThan(0);
    expect(push.usd).toBeLessThan(polling.usd);
    expect(polling.items[0]?.perMonth).toBe(28_800);
  }, 60_000);
});
