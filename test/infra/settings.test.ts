/**
 * The settings contract (`functions/domain/settings.ts`) holds end to end: the tables of `docs/deploying.md` are the
 * contract's (written by `npm run docs`),
 * every default is within its own bounds, what a deployment chooses in the construct's props reaches each
 * function's environment and is read back by the function as the same value, and every environment variable a
 * function is given is declared there.
 */
import { readFileSync } from 'node:fs';
import { Duration } from 'aws-cdk-lib';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { agentRateLimitFromEnv, schedulerConfigFromEnv } from '#adapters/environment';
import { DEFAULT_SETTINGS, schedulerSettingsOf } from '#core/context';
import {
  type NumberSetting,
  outOfBounds,
  RESOURCE_ENV,
  type ReadBy,
  SETTINGS,
  type SettingName,
  TEXT_SETTINGS,
  type TextSetting,
} from '#domain/settings';
import { synthExample, synthTemplate } from '#test/synth';
import { EXAMPLE_SCHEDULER } from '../../infra/example-config';
import { settingsTable, textSettingsTable } from '../../scripts/docs/props-tables';

type FunctionName = keyof ReturnType<typeof synthTemplate>['stack']['scheduler']['functions'];

/** A function's environment as the template has it, references replaced by what the functions would read. */
function environmentOf(
  synth: ReturnType<typeof synthTemplate>,
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

/** What a function's operations read of each setting (as `schedulerFromEnvironment` gives it them), by the contract's name. */
function readBack(env: Record<string, string>): Record<SettingName, number> {
  const settings = schedulerSettingsOf(schedulerConfigFromEnv(env).settings);
  const rate = agentRateLimitFromEnv(env);
  return {
    leaseTtl: settings.leaseTtlSeconds,
    heartbeatInterval: settings.heartbeatIntervalSeconds,
    taskRetention: settings.taskRetentionSeconds,
    starvationPromoteAfter: settings.starvation.promoteAfterSeconds,
    starvationAnnounceAfter: settings.starvation.announceAfterSeconds,
    starvationAttentionAfter: settings.starvation.attentionAfterSeconds,
    idleClaimRetryMax: settings.idleClaimRetryMaxMs / 1_000,
    maxRolesPerAgent: settings.maxRolesPerAgent,
    taskLayout: settings.taskLayout,
    listenerShards: settings.listenerShards,
    queueSlotLayout: settings.queueSlotLayout,
    agentRatePerSecond: rate.ratePerSecond,
    agentBurst: rate.burst,
  };
}

const QUEUE_LIMITS = { research: { maxConcurrency: 3, ratePerSecond: 2 } };
const RATE_LIMITS = [
  { name: 'openai.tpm', limit: 90_000, per: 'minute' as const, burst: 30_000 },
  { name: 'tenant.usd', limit: 25, per: 'day' as const, perKey: true },
];

/** The example with every prop that reaches a function set, synthesized once. */
let synthesized: ReturnType<typeof synthExample> | undefined;
function everyPropSet(): ReturnType<typeof synthExample> {
  synthesized ??= synthExample({
    ...EXAMPLE_SCHEDULER,
    queues: ['research', 'emails'],
    schedules: [],
    routineEvents: true,
    queueLimits: QUEUE_LIMITS,
    rateLimits: RATE_LIMITS,
    agentSubmitQueues: ['emails'],
    metricsNamespace: 'Fleet',
  });
  return synthesized;
}

describe('the settings contract', () => {
  it('is the table the deploying page shows', () => {
    const page = readFileSync(new URL('../../docs/deploying.md', import.meta.url), 'utf8');
    expect(page).toContain(settingsTable());
    expect(page).toContain(textSettingsTable());
    // Every prop of the construct has its row, with the contract's bounds where it declares them.
    expect(page).toContain('| `leaseTtl` | `Duration` | 30 seconds | 1 to 86,400 s |');
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
      taskRetentionSeconds: SETTINGS.taskRetention.default,
      maxRolesPerAgent: SETTINGS.maxRolesPerAgent.default,
      idleClaimRetryMaxMs: SETTINGS.idleClaimRetryMax.default * 1_000,
      starvation: {
        promoteAfterSeconds: SETTINGS.starvationPromoteAfter.default,
        announceAfterSeconds: SETTINGS.starvationAnnounceAfter.default,
        attentionAfterSeconds: SETTINGS.starvationAttentionAfter.default,
      },
    });
  });

  it('carries the defaults, and what the props choose, to the functions, which read them back as given', () => {
    // Templates only: the example with every prop set above is the one checked by cdk-nag here.
    const defaults = synthTemplate({ queues: ['research'] });
    const chosen = synthTemplate({
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
      taskLayout: 1,
      listenerShards: 8,
      queueSlotLayout: 1,
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
      taskLayout: 1,
      listenerShards: 8,
      queueSlotLayout: 1,
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

  it('carries the props given as text to the functions that read them, which read them back as given', () => {
    const synth = everyPropSet();
    for (const fn of ['agentApi', 'operatorApi', 'supervisor', 'scheduleFire'] as const) {
      const env = environmentOf(synth, fn);
      const config = schedulerConfigFromEnv(env);
      expect(config.routineEvents, fn).toBe(true);
      expect(config.queueLimits, fn).toEqual(QUEUE_LIMITS);
      expect(config.rateLimits, fn).toEqual(RATE_LIMITS);
      expect(config.agentSubmitQueues, fn).toEqual(['emails']);
      expect(env[TEXT_SETTINGS.metricsNamespace.env], fn).toBe('Fleet');
    }
  });

  it('gives each prop to exactly the functions the declaration says read it', () => {
    const synth = everyPropSet();
    const all = Object.keys(synth.stack.scheduler.functions) as FunctionName[];
    const readers: Record<ReadBy, readonly FunctionName[]> = {
      'all but the authorizer': all.filter((fn) => fn !== 'authorizer'),
      'APIs, supervisor, schedule fire': ['agentApi', 'operatorApi', 'supervisor', 'scheduleFire'],
      'agent API': ['agentApi'],
      'supervisor, operator API': ['supervisor', 'operatorApi'],
      'every function': all,
    };
    for (const setting of [...Object.values(SETTINGS), ...Object.values(TEXT_SETTINGS)] as (
      | NumberSetting
      | TextSetting
    )[]) {
      const given = all.filter((fn) => setting.env in environmentOf(synth, fn));
      expect(given.sort(), setting.prop).toEqual([...readers[setting.readBy]].sort());
    }
  });

  it('declares every environment variable a function is given, each under one name', () => {
    // Set for every function by `SchedulerFunction`, read by Powertools and Node.js rather than by our readers.
    const runtime = ['POWERTOOLS_SERVICE_NAME', 'POWERTOOLS_LOG_LEVEL', 'NODE_OPTIONS'];
    const declared: string[] = [
      ...Object.values(SETTINGS).map((s) => s.env),
      ...Object.values(TEXT_SETTINGS).map((s) => s.env),
      ...Object.values(RESOURCE_ENV),
    ];
    expect(new Set(declared).size).toBe(declared.length);
    const synth = everyPropSet();
    const given = new Set<string>();
    for (const fn of Object.keys(
      synth.stack.scheduler.functions,
    ) as (keyof typeof synth.stack.scheduler.functions)[])
      for (const name of Object.keys(environmentOf(synth, fn))) given.add(name);
    expect([...given].filter((name) => !declared.includes(name) && !runtime.includes(name))).toEqual([]);
    // And every declared name reaches some function.
    expect(declared.filter((name) => !given.has(name))).toEqual([]);
  });
});
