/**
 * A queue limit declared in the construct holds from the first claim: the synthesized environment of the agent
 * API carries it, the function's configuration reads it, and a scheduler built with it on the emulators refuses
 * a claim past it.
 */
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { schedulerConfigFromEnv } from '#adapters/environment';
import { claimUntil, createTestStack, startAgent, type TestStack } from '#test/stack';
import { EXAMPLE_SCHEDULER } from '../../infra/example-config';
import { synthTemplate } from '../helpers/synth';

describe('queue limits declared in the construct', () => {
  let stack: TestStack | undefined;
  afterAll(async () => {
    await stack?.destroy();
  });

  it('reach the agent API and hold on the emulators', async () => {
    // GIVEN the example stack with at most one research task leased at once
    const { template, stack: cdkStack } = synthTemplate({
      ...EXAMPLE_SCHEDULER,
      queueLimits: { research: { maxConcurrency: 1 } },
    });
    const fn = cdkStack.scheduler.functions.agentApi;
    const variables = template.toJSON().Resources[cdkStack.getLogicalId(fn.node.defaultChild as CfnFunction)]
      .Properties.Environment.Variables as Record<string, unknown>;
    // Names resolved at deployment stand in as placeholders; every setting is a literal.
    const env = Object.fromEntries(
      Object.entries(variables).map(([name, value]) => [name, typeof value === 'string' ? value : 'x']),
    );
    env.QUEUE_DIRECTORY = JSON.stringify({
      base: 'https://q/',
      queues: { research: ['a', 'b', 'c', 'd'] },
    });
    const config = schedulerConfigFromEnv(env);
    expect(config.queueLimits).toEqual({ research: { maxConcurrency: 1 } });

    // WHEN an agent that may hold two asks for two research tasks
    stack = await createTestStack({ queues: ['research'], settings: { queueLimits: config.queueLimits } });
    await stack.scheduler.submit({ queue: 'research', payload: { n: 1 } });
    await stack.scheduler.submit({ queue: 'research', payload: { n: 2 } });
    const agent = await startAgent(stack.scheduler, { queues: ['research'], maxConcurrency: 2 });
    const claimed = await claimUntil(stack.scheduler, agent, 2, 2_000, 2);

    // THEN it gets one: the declared limit held before any operator set one
    expect(claimed).toHaveLength(1);
  });

  it('named rate limits reach the functions and hold on the emulators until an operator sets new terms', async () => {
    const { template, stack: cdkStack } = synthTemplate({
      ...EXAMPLE_SCHEDULER,
      rateLimits: [{ name: 'provider.rph', limit: 2, per: 'hour' }],
    });
    const fn = cdkStack.scheduler.functions.agentApi;
    const variables = template.toJSON().Resources[cdkStack.getLogicalId(fn.node.defaultChild as CfnFunction)]
      .Properties.Environment.Variables as Record<string, unknown>;
    const env = Object.fromEntries(
      Object.entries(variables).map(([name, value]) => [name, typeof value === 'string' ? value : 'x']),
    );
    env.QUEUE_DIRECTORY = JSON.stringify({ base: 'https://q/', queues: { research: ['a', 'b', 'c', 'd'] } });
    const config = schedulerConfigFromEnv(env);
    expect(config.rateLimits).toEqual([{ name: 'provider.rph', limit: 2, per: 'hour' }]);

    await stack?.destroy();
    stack = await createTestStack({ queues: ['research'], settings: { rateLimits: config.rateLimits } });
    // Half an hour into an hour, whenever the test runs: the tasks left over wait the rest of it.
    const hour = 3_600_000;
    stack.clock.advance((hour * 1.5 - (stack.clock.now() % hour)) % hour);
    for (let n = 0; n < 4; n++) {
      await stack.scheduler.submit({
        queue: 'research',
        payload: { n },
        rateLimits: [{ name: 'provider.rph' }],
      });
    }
    const agent = await startAgent(stack.scheduler, { queues: ['research'], maxConcurrency: 4 });
    expect(await claimUntil(stack.scheduler, agent, 4, 2_000, 4)).toHaveLength(2);
    // An operator's terms replace the declared ones: two more fit the hour's window.
    await stack.scheduler.setRateLimit('provider.rph', { limit: 4, per: 'hour' });
    expect(await claimUntil(stack.scheduler, agent, 2, 3_000, 2)).toHaveLength(2);
    expect((await stack.scheduler.getRateLimit('provider.rph'))?.limit.source).toBe('set');
  });
});
