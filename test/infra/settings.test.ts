/**
 * The settings contract (`functions/domain/settings.ts`) holds end to end: the README's table is the contract's,
 * every default is within its own bounds, and what a deployment chooses in the construct's props reaches each
 * function's environment and is read back by the function as the same value.
 */
import { readFileSync } from 'node:fs';
import { Duration } from 'aws-cdk-lib';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { agentRateLimitFromEnv, schedulerConfigFromEnv } from '#adapters/environment';
import { DEFAULT_SETTINGS } from '#core/context';
import { type NumberSetting, outOfBounds, SETTINGS, type SettingName } from '#domain/settings';
import { synthExample } from '#test/synth';

/** The README's table of these settings, one row each. */
function settingsTable(): string {
  const number = (n: number) => n.toLocaleString('en-US');
  const rows = Object.values(SETTINGS).map((s: NumberSetting) => {
    const unit = s.unit === 'count' ? '' : ` ${s.unit === 'seconds' ? 's' : '/s'}`;
    return `| \`${s.prop}\` | \`${s.env}\` | ${number(s.default)}${unit} | ${number(s.min)} to ${number(s.max)}${unit} | ${s.meaning} |`;
  });
  return [
    '| prop | environment variable | default | bounds | what it does |',
    '|------|----------------------|---------|--------|--------------|',
    ...rows,
  ].join('\n');
}

/** A function's environment as the template has it, references replaced by what the functions would read. */
function environmentOf(
  synth: ReturnType<typeof synthExample>,
  fn: keyof typeof synth.stack.scheduler.functions,
) {
  const { stack, template } = synth;
  const cfn = stack.scheduler.functions[fn].node.defaultChild as CfnFunction;
  const variables = template.toJSON().Resources[stack.getLogicalId(cfn)].Properties.Environment
    .Variables as Record<string, unknown>;
  const urls = { critical: 'https://q/c', high: 'https://q/h', normal: 'https://q/n', low: 'https://q/l' };
  return Object.fromEntries(
    Object.entries(variables).map(([name, value]) => [
      name,
      name === 'QUEUE_DIRECTORY'
        ? JSON.stringify({ research: urls })
        : typeof value === 'string'
          ? value
          : 'ref',
    ]),
  ) as Record<string, string>;
}

/** What a function read of each setting, by the contract's name. */
function readBack(env: Record<string, string>): Record<SettingName, number> {
  const config = schedulerConfigFromEnv(env);
  const rate = agentRateLimitFromEnv(env);
  return {
    leaseTtl: config.leaseTtlSeconds,
    heartbeatInterval: config.heartbeatIntervalSeconds,
    taskRetention: config.retentionSeconds,
    starvationPromoteAfter: config.starvation.promoteAfterSeconds,
    starvationAnnounceAfter: config.starvation.announceAfterSeconds,
    starvationAttentionAfter: config.starvation.attentionAfterSeconds,
    idleClaimRetryMax: config.idleRetryMaxSeconds,
    maxRolesPerAgent: config.maxRolesPerAgent,
    agentRatePerSecond: rate.ratePerSecond,
    agentBurst: rate.burst,
  };
}

describe('the settings contract', () => {
  it('is the table the README shows', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(settingsTable());
  });

  it.each(Object.entries(SETTINGS) as [SettingName, NumberSetting][])(
    '%s: its default is within its bounds',
    (_, s) => {
      expect(outOfBounds(s, s.default)).toBeUndefined();
      expect(s.env).toMatch(/^[A-Z][A-Z_]+$/);
    },
  );

  it('gives the core its defaults', () => {
    expect(DEFAULT_SETTINGS).toMatchObject({
      leaseTtlSeconds: SETTINGS.leaseTtl.default,
      heartbeatIntervalSeconds: SETTINGS.heartbeatInterval.default,
      retentionSeconds: SETTINGS.taskRetention.default,
      maxRolesPerAgent: SETTINGS.maxRolesPerAgent.default,
      idleRetryMaxMs: SETTINGS.idleClaimRetryMax.default * 1_000,
      starvation: {
        promoteAfterSeconds: SETTINGS.starvationPromoteAfter.default,
        announceAfterSeconds: SETTINGS.starvationAnnounceAfter.default,
        attentionAfterSeconds: SETTINGS.starvationAttentionAfter.default,
      },
    });
  });

  it('carries the defaults, and what the props choose, to the functions, which read them back as given', () => {
    const defaults = synthExample({ queues: ['research'] });
    const chosen = synthExample({
      queues: ['research'],
      leaseTtl: Duration.seconds(60),
      taskRetention: Duration.days(2),
      starvation: {
        promoteAfter: Duration.minutes(2),
        announceAfter: Duration.minutes(3),
        attentionAfter: Duration.minutes(4),
      },
      idleClaimRetryMax: Duration.seconds(30),
      maxRolesPerAgent: 7,
      agentRateLimit: { ratePerSecond: 2.5, burst: 9 },
    });
    const expectedDefaults = Object.fromEntries(
      Object.entries(SETTINGS).map(([name, s]) => [name, s.default]),
    ) as Record<SettingName, number>;
    const expectedChosen: Record<SettingName, number> = {
      leaseTtl: 60,
      heartbeatInterval: 20,
      taskRetention: 2 * 86_400,
      starvationPromoteAfter: 120,
      starvationAnnounceAfter: 180,
      starvationAttentionAfter: 240,
      idleClaimRetryMax: 30,
      maxRolesPerAgent: 7,
      agentRatePerSecond: 2.5,
      agentBurst: 9,
    };

    expect(readBack(environmentOf(defaults, 'agentApi'))).toEqual(expectedDefaults);
    expect(readBack(environmentOf(chosen, 'agentApi'))).toEqual(expectedChosen);
    const { agentRatePerSecond: _rate, agentBurst: _burst, ...shared } = expectedChosen;
    for (const fn of ['operatorApi', 'supervisor', 'scheduleFire'] as const) {
      const env = environmentOf(chosen, fn);
      expect(readBack(env), fn).toMatchObject(shared);
      expect(env, fn).not.toHaveProperty(SETTINGS.agentRatePerSecond.env);
    }
  });
});
