/**
 * The construct validates eagerly, as CDK constructs do: a bad prop fails the synth with a lowercase message that
 * names the bad value.
 */
import { App, Duration, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { AgentScheduler, type AgentSchedulerProps } from '../../infra/agent-scheduler';

function build(props: AgentSchedulerProps): void {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
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
      /queueLimits of "a" are invalid/,
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
  ])('refuses %s', (_, props, message) => {
    expect(() => build(props)).toThrow(message);
  });
});
