/**
 * The construct validates eagerly, as CDK constructs do: a bad prop fails the synth with a lowercase message that
 * names the bad value.
 */
import { App, CfnParameter, Duration, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { AgentScheduler, type AgentSchedulerProps } from '../../infra/agent-scheduler';
import { CDK_CONTEXT } from '../helpers/synth';

function build(props: AgentSchedulerProps): void {
  const app = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  new AgentScheduler(new Stack(app, 'S'), 'Scheduler', props);
}

const withSchedule = (expression: string, timeZone?: string): AgentSchedulerProps => ({
  queues: ['work'],
  schedules: [{ name: 'job', expression, ...(timeZone ? { timeZone } : {}), task: { queue: 'work' } }],
});

describe('schedule expressions at synth', () => {
  it.each([
    'cron(0 12 * * ? *)',
    'cron(0/15 * ? * MON-FRI *)',
    'cron(0 10 L * ? *)',
    'cron(0 10 LW * ? *)',
    'cron(0 10 15W * ? *)',
    'cron(0 10 ? * 6#3 *)',
    'cron(0 10 ? * 5L *)',
    'cron(30 2 * JAN,JUL ? 2027-2030)',
    'rate(1 minute)',
    'rate(5 minutes)',
    'rate(12 hours)',
    'at(2027-03-14T02:30:00)',
  ])('accepts %s', (expression) => {
    expect(() => build(withSchedule(expression, 'America/New_York'))).not.toThrow();
  });

  it.each([
    ['both day fields set', 'cron(0 12 * * * *)'],
    ['both day fields "?"', 'cron(0 12 ? * ? *)'],
    ['five fields', 'cron(0 12 * * ?)'],
    ['minute 60', 'cron(60 12 * * ? *)'],
    ['hour 24', 'cron(0 24 * * ? *)'],
    ['month 13', 'cron(0 12 * 13 ? *)'],
    ['day of week 8', 'cron(0 12 ? * 8 *)'],
    ['W in day of week', 'cron(0 12 ? * 2W *)'],
    ['# in day of month', 'cron(0 12 1#2 * ? *)'],
    ['sixth weekday', 'cron(0 12 ? * 6#6 *)'],
    ['year 2200', 'cron(0 12 * * ? 2200)'],
    ['rate of zero', 'rate(0 minutes)'],
    ['plural for one', 'rate(1 minutes)'],
    ['seconds', 'rate(30 seconds)'],
    ['malformed at', 'at(2027-03-14 02:30)'],
    ['not an expression', 'every day at noon'],
  ])('refuses %s, naming the schedule and the expression', (_, expression) => {
    expect(() => build(withSchedule(expression))).toThrow(
      new RegExp(`schedule job: invalid schedule expression "${expression.replace(/[()*?#]/g, '\\$&')}"`),
    );
  });

  it('refuses an unknown time zone', () => {
    expect(() => build(withSchedule('cron(0 12 * * ? *)', 'Mars/Olympus'))).toThrow(/Mars\/Olympus/);
  });
});

describe('props', () => {
  it.each<[string, AgentSchedulerProps, RegExp]>([
    ['no queues', { queues: [] }, /at least one task queue/],
    ['a queue name with a space', { queues: ['bad name'] }, /queue name "bad name"/],
    ['a queue declared twice', { queues: ['a', 'a'] }, /queue name "a" is declared twice/],
    [
      'a supervisor period under a minute',
      { queues: ['a'], supervisorPeriod: Duration.seconds(30) },
      /whole minutes/,
    ],
    [
      'a heartbeat as long as the lease',
      { queues: ['a'], leaseTtl: Duration.seconds(20), heartbeatInterval: Duration.seconds(20) },
      /heartbeatInterval \(20 s\) must be shorter than leaseTtl \(20 s\)/,
    ],
    [
      'limits for an undeclared queue',
      { queues: ['a'], queueLimits: { b: { maxConcurrency: 2 } } },
      /queueLimits names queue "b"/,
    ],
    [
      'a zero concurrency limit',
      { queues: ['a'], queueLimits: { a: { maxConcurrency: 0 } } },
      /queueLimits of "a" are invalid: maxConcurrency .*\(got 0\)/,
    ],
    [
      'a concurrency limit above what a queue control holds',
      { queues: ['a'], queueLimits: { a: { perKeyConcurrency: 20_000 } } },
      /queueLimits of "a" are invalid: perKeyConcurrency at most 5,000 .*\(got 20000\)/,
    ],
    [
      'a negative rate limit',
      { queues: ['a'], queueLimits: { a: { ratePerSecond: -1 } } },
      /queueLimits of "a" are invalid: ratePerSecond .*\(got -1\)/,
    ],
    [
      'a rate limit with a name that cannot be a path segment',
      { queues: ['a'], rateLimits: [{ name: 'open ai', limit: 1, per: 'minute' }] },
      /rateLimits: "open ai" is invalid: name a rate limit name/,
    ],
    [
      'a budget with a burst',
      { queues: ['a'], rateLimits: [{ name: 'usd', limit: 5, per: 'day', burst: 2 }] },
      /rateLimits: "usd" is invalid: burst: only a rate/,
    ],
    [
      'a rate whose windows would be shorter than a tenth of a second',
      { queues: ['a'], rateLimits: [{ name: 'rps', limit: 1_000, per: 'second', burst: 10 }] },
      /rateLimits: "rps" is invalid: burst: at least 100/,
    ],
    [
      'a rate limit declared twice',
      {
        queues: ['a'],
        rateLimits: [
          { name: 'rpm', limit: 5, per: 'minute' },
          { name: 'rpm', limit: 6, per: 'minute' },
        ],
      },
      /rateLimits: "rpm" is declared twice/,
    ],
    [
      'a lease TTL of zero',
      { queues: ['a'], leaseTtl: Duration.seconds(0) },
      /leaseTtl must be a whole number from 1 to 86400 seconds \(got 0 seconds\)/,
    ],
    [
      'a lease TTL of a fraction of a second',
      { queues: ['a'], leaseTtl: Duration.millis(1500) },
      /leaseTtl must be a whole number from 1 to 86400 seconds \(got 1 second 500 millis\)/,
    ],
    [
      'a heartbeat of zero',
      { queues: ['a'], heartbeatInterval: Duration.seconds(0) },
      /heartbeatInterval must be a whole number from 1 to 86400 seconds \(got 0 seconds\)/,
    ],
    [
      'a heartbeat longer than the default lease',
      { queues: ['a'], heartbeatInterval: Duration.seconds(40) },
      /heartbeatInterval \(40 s\) must be shorter than leaseTtl \(30 s\)/,
    ],
    [
      'a task retention of zero',
      { queues: ['a'], taskRetention: Duration.seconds(0) },
      /taskRetention must be a whole number from 60 to 31536000 seconds \(got 0 seconds\)/,
    ],
    [
      'an idle claim wait of an hour',
      { queues: ['a'], idleClaimRetryMax: Duration.hours(1) },
      /idleClaimRetryMax must be a whole number from 1 to 900 seconds \(got 1 hour\)/,
    ],
    [
      'an alarm age of zero',
      { queues: ['a'], oldestMessageAlarmAge: Duration.seconds(0) },
      /oldestMessageAlarmAge must be .* \(got 0 seconds\)/,
    ],
    [
      'a starvation step of zero',
      { queues: ['a'], starvation: { promoteAfter: Duration.seconds(0) } },
      /starvation.promoteAfter must be .* \(got 0 seconds\)/,
    ],
    [
      'a throttle rate of zero',
      { queues: ['a'], apiThrottle: { rateLimit: 0, burstLimit: 10 } },
      /apiThrottle.rateLimit must be a number from 1 to 10000 \(got 0\)/,
    ],
    [
      'an agent route limit of zero',
      { queues: ['a'], agentRouteThrottle: { rateLimit: 0, burstLimit: 10 } },
      /agentRouteThrottle.rateLimit must be a number from 1 to 10000 \(got 0\)/,
    ],
    [
      'an operator route burst of zero',
      { queues: ['a'], operatorRouteThrottle: { rateLimit: 10, burstLimit: 0 } },
      /operatorRouteThrottle.burstLimit must be a whole number from 1 to 5000 \(got 0\)/,
    ],
    [
      'a push channel burst over the account limit',
      { queues: ['a'], pushThrottle: { rateLimit: 10, burstLimit: 5_001 } },
      /pushThrottle.burstLimit must be a whole number from 1 to 5000 \(got 5001\)/,
    ],
    [
      'a per-agent rate of zero',
      { queues: ['a'], agentRateLimit: { ratePerSecond: 0, burst: 10 } },
      /agentRateLimit.ratePerSecond must be a number from 0.1 to 10000 \(got 0\)/,
    ],
    [
      'a fractional burst',
      { queues: ['a'], apiThrottle: { rateLimit: 10, burstLimit: 2.5 } },
      /apiThrottle.burstLimit must be a whole number from 1 to 5000 \(got 2.5\)/,
    ],
    [
      'starvation thresholds out of order',
      {
        queues: ['a'],
        starvation: { promoteAfter: Duration.minutes(20), announceAfter: Duration.minutes(10) },
      },
      /starvation thresholds must grow: promoteAfter < announceAfter < attentionAfter \(got 1200, 600, 3600 s\)/,
    ],
    [
      'a schedule on an unknown queue',
      { queues: ['a'], schedules: [{ name: 'n', expression: 'rate(1 hour)', task: { queue: 'b' } }] },
      /targets queue "b", which is not declared/,
    ],
    [
      'two schedules with one name',
      {
        queues: ['a'],
        schedules: [
          { name: 'n', expression: 'rate(1 hour)', task: { queue: 'a' } },
          { name: 'n', expression: 'rate(2 hours)', task: { queue: 'a' } },
        ],
      },
      /schedule name "n" is declared twice/,
    ],
    ['no roles per agent', { queues: ['a'], maxRolesPerAgent: 0 }, /maxRolesPerAgent .* \(got 0\)/],
    ['a fraction of a role', { queues: ['a'], maxRolesPerAgent: 1.5 }, /maxRolesPerAgent .* \(got 1.5\)/],
    ['over 10,000 roles per agent', { queues: ['a'], maxRolesPerAgent: 10_001 }, /\(got 10001\)/],
    [
      'tracing to nowhere',
      { queues: ['a'], tracing: {} },
      /tracing needs an otlpEndpoint, a collectorLayerArn or both/,
    ],
    [
      'a tracing endpoint that is not a URL',
      { queues: ['a'], tracing: { otlpEndpoint: 'collector:4318' } },
      /tracing.otlpEndpoint must be an http\(s\) URL \(got "collector:4318"\)/,
    ],
    [
      'a collector layer that is not a layer version',
      { queues: ['a'], tracing: { collectorLayerArn: 'arn:aws:lambda:eu-west-1:123456789012:layer:otel' } },
      /tracing.collectorLayerArn must be a layer version's ARN/,
    ],
    [
      'a header with a line break',
      { queues: ['a'], tracing: { otlpEndpoint: 'https://o', otlpHeaders: { key: 'a\r\nb' } } },
      /tracing.otlpHeaders: "key" is not a header name with a one-line value/,
    ],
    [
      'an export timeout past 5 seconds',
      { queues: ['a'], tracing: { otlpEndpoint: 'https://o', exportTimeout: Duration.seconds(6) } },
      /tracing.exportTimeout must be a whole number from 10 to 5000 milliseconds \(got 6 seconds\)/,
    ],
  ])('refuses %s', (_, props, message) => {
    expect(() => build(props)).toThrow(message);
  });

  it('skips values that are only known at deploy time', () => {
    const app = new App({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'S');
    const rate = new CfnParameter(stack, 'Rate', { type: 'Number' }).valueAsNumber;
    expect(
      () =>
        new AgentScheduler(stack, 'Scheduler', {
          queues: ['a'],
          apiThrottle: { rateLimit: rate, burstLimit: rate },
        }),
    ).not.toThrow();
  });
});
