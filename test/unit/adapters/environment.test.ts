import { describe, expect, it } from 'vitest';
import { agentRateLimitFromEnv, schedulerConfigFromEnv } from '#adapters/environment';
import { QueueDirectory } from '#adapters/task-queues';

const env = {
  TASKS_TABLE_NAME: 'tasks',
  AGENTS_TABLE_NAME: 'agents',
  LEASES_TABLE_NAME: 'leases',
  QUEUE_DIRECTORY: JSON.stringify({
    base: 'https://sqs.eu-west-1.amazonaws.com/123456789012/',
    queues: { work: ['w-c', 'w-h', 'w-n', 'w-l'] },
  }),
};

describe('function configuration', () => {
  it('reads tables, queues and settings, with defaults', () => {
    const config = schedulerConfigFromEnv({ ...env, LEASE_TTL_SECONDS: '45' });
    expect(config.tables).toEqual({ tasks: 'tasks', agents: 'agents', leases: 'leases' });
    expect(config.queues.urlFor('work', 'high')).toBe('https://sqs.eu-west-1.amazonaws.com/123456789012/w-h');
    expect(config.settings.leaseTtl).toBe(45);
    expect(config.settings.heartbeatInterval).toBe(10);
    expect(config.routineEvents).toBe(false);
    expect(schedulerConfigFromEnv({ ...env, ROUTINE_EVENTS: 'true' }).routineEvents).toBe(true);
  });

  it('refuses a boolean that is neither true nor false', () => {
    expect(() => schedulerConfigFromEnv({ ...env, ROUTINE_EVENTS: 'yes' })).toThrow(/ROUTINE_EVENTS/);
  });

  it.each(['TASKS_TABLE_NAME', 'AGENTS_TABLE_NAME', 'LEASES_TABLE_NAME', 'QUEUE_DIRECTORY'])(
    'fails the start-up naming a missing %s',
    (name) => {
      expect(() => schedulerConfigFromEnv({ ...env, [name]: undefined })).toThrow(
        `environment variable ${name} is required`,
      );
    },
  );

  it.each([
    ['LEASE_TTL_SECONDS', '-1', 'a whole number from 1 to 86400'],
    ['LEASE_TTL_SECONDS', '0', 'a whole number from 1 to 86400'],
    ['LEASE_TTL_SECONDS', '1.5', 'a whole number from 1 to 86400'],
    ['IDLE_RETRY_MAX_SECONDS', '3600', 'a whole number from 1 to 900'],
    ['TASK_RETENTION_SECONDS', 'soon', 'a whole number from 60 to 31536000'],
  ])('refuses %s=%s, naming the bounds and the value', (name, value, bounds) => {
    expect(() => schedulerConfigFromEnv({ ...env, [name]: value })).toThrow(
      `environment variable ${name} must be ${bounds} (got "${value}")`,
    );
  });

  it('reads the per-agent rate limit, 50 a second with bursts of 100 by default', () => {
    expect(agentRateLimitFromEnv({})).toEqual({ ratePerSecond: 50, burst: 100 });
    expect(agentRateLimitFromEnv({ AGENT_RATE_PER_SECOND: '2.5', AGENT_BURST: '5' })).toEqual({
      ratePerSecond: 2.5,
      burst: 5,
    });
    expect(() => agentRateLimitFromEnv({ AGENT_BURST: '0' })).toThrow(
      'environment variable AGENT_BURST must be a whole number from 1 to 10000 (got "0")',
    );
  });

  it('reads declared queue limits and refuses invalid ones', () => {
    const limits = { work: { maxConcurrency: 2, ratePerSecond: 5 } };
    expect(schedulerConfigFromEnv({ ...env, QUEUE_LIMITS: JSON.stringify(limits) }).queueLimits).toEqual(
      limits,
    );
    expect(() =>
      schedulerConfigFromEnv({ ...env, QUEUE_LIMITS: JSON.stringify({ work: { maxConcurrency: 0 } }) }),
    ).toThrow(/QUEUE_LIMITS: limits of "work" are invalid: maxConcurrency .*\(got \{"maxConcurrency":0\}\)/);
    expect(() => schedulerConfigFromEnv({ ...env, QUEUE_LIMITS: '{' })).toThrow(/QUEUE_LIMITS must be JSON/);
  });

  it('reads the full queue directory form too', () => {
    const directory = QueueDirectory.fromJson(
      JSON.stringify({ q: { critical: 'c', high: 'h', normal: 'n', low: 'l' } }),
    );
    expect(directory.names()).toEqual(['q']);
    expect(directory.urlFor('q', 'low')).toBe('l');
    expect(() => directory.urlFor('other', 'low')).toThrow(/queue other does not exist/);
    expect(() => QueueDirectory.fromJson(JSON.stringify({ base: 'x', queues: { q: ['a'] } }))).toThrow(
      /4 queue names/,
    );
  });
});
