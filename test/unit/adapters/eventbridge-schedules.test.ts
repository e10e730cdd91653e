import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  EARLY_FIRE_LEAD_MS,
  EventBridgeScheduleBackend,
  earlyFireName,
} from '#adapters/eventbridge-schedules';

const scheduler = mockClient(SchedulerClient);
// The client's prototype is shared with the files that run after this one in its worker.
afterAll(() => {
  scheduler.restore();
});
const backend = new EventBridgeScheduleBackend(new SchedulerClient({ region: 'eu-west-1' }), {
  groupName: 'group',
  targetArn: () => 'arn:aws:lambda:eu-west-1:123:function:fire',
  roleArn: 'arn:aws:iam::123:role/scheduler',
  deadLetterArn: 'arn:aws:sqs:eu-west-1:123:dlq',
});
const spec = {
  name: 'nightly',
  expression: 'cron(0 2 * * ? *)',
  timeZone: 'Europe/Paris',
  task: { queue: 'q' },
};
const occurrence = Date.UTC(2027, 5, 1, 0, 0, 0);

describe('EventBridge schedules', () => {
  afterEach(() => scheduler.reset());

  it('arms an early fire a minute ahead, in UTC, carrying the exact scheduled time', async () => {
    scheduler.on(CreateScheduleCommand).resolves({});

    await backend.armEarlyFire(spec, occurrence);

    expect(scheduler).toHaveReceivedCommandWith(CreateScheduleCommand, {
      Name: earlyFireName('nightly'),
      GroupName: 'group',
      ScheduleExpression: `at(${new Date(occurrence - EARLY_FIRE_LEAD_MS).toISOString().slice(0, 19)})`,
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
    });
    const input = JSON.parse(
      String(scheduler.commandCalls(CreateScheduleCommand)[0]?.args[0].input.Target?.Input),
    );
    expect(input).toMatchObject({
      schedule: 'nightly',
      scheduledTime: '2027-06-01T00:00:00.000Z',
      expression: 'cron(0 2 * * ? *)',
      timeZone: 'Europe/Paris',
      task: { queue: 'q' },
    });
  });

  it('moves the existing early fire when the previous link still exists', async () => {
    scheduler
      .on(CreateScheduleCommand)
      .rejects(new ConflictException({ message: 'exists', Message: 'exists', $metadata: {} }));
    scheduler.on(UpdateScheduleCommand).resolves({});

    await backend.armEarlyFire(spec, occurrence);

    expect(scheduler).toHaveReceivedCommandWith(UpdateScheduleCommand, { Name: earlyFireName('nightly') });
  });

  it('removing a schedule removes its early fire, and a missing one is fine', async () => {
    scheduler
      .on(DeleteScheduleCommand)
      .rejects(new ResourceNotFoundException({ message: 'gone', Message: 'gone', $metadata: {} }));

    await backend.remove('nightly');

    expect(scheduler.commandCalls(DeleteScheduleCommand).map((c) => c.args[0].input.Name)).toEqual([
      'nightly',
      earlyFireName('nightly'),
    ]);
  });

  it('early-fire names fit the 64-character limit and differ per schedule', () => {
    expect(earlyFireName('x'.repeat(64))).toHaveLength(30);
    expect(earlyFireName('a')).not.toBe(earlyFireName('b'));
  });
});
