/**
 * Run-time schedules in AWS: EventBridge Scheduler schedules in the stack's group, targeting the fire function
 * with the same input as the declared ones, the same retry policy and dead-letter queue. And early fires: since
 * EventBridge delivers anywhere in the scheduled minute, each occurrence is also fired a minute ahead by a
 * one-time schedule, and the task is held until its exact time (see `armEarlyFire`).
 */
import { createHash } from 'node:crypto';
import {
  ConflictException,
  CreateScheduleCommand,
  type CreateScheduleCommandInput,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  type SchedulerClient,
  UpdateScheduleCommand,
} from '@aws-sdk/client-scheduler';
import { scheduleFireInput } from '#core/fire-schedule';
import { ConflictError } from '#domain/errors';
import type { EarlyFireSpec, ScheduleBackend, ScheduleRecord } from '#domain/schedule';

export interface EventBridgeSchedulesConfig {
  readonly groupName: string;
  /** The schedule-fire function; read at each call (the fire function learns its own ARN when invoked). */
  readonly targetArn: string | (() => string);
  /** The role EventBridge Scheduler assumes to invoke it. */
  readonly roleArn: string;
  readonly deadLetterArn: string;
}

/** Same as the construct's declared schedules. */
export const FIRE_RETRY_POLICY = { MaximumRetryAttempts: 10, MaximumEventAgeInSeconds: 3_600 } as const;

/** How far ahead of its occurrence an early fire is delivered: more than EventBridge's minute of spread. */
export const EARLY_FIRE_LEAD_MS = 60_000;

/** The one-time schedule that carries a schedule's next early fire (names are limited to 64 characters). */
export const earlyFireName = (schedule: string) =>
  `early-${createHash('sha256').update(schedule).digest('hex').slice(0, 24)}`;

/** `at()` wants a wall-clock time without a zone; the schedule's zone is set to UTC. */
const atUtc = (ms: number) => `at(${new Date(ms).toISOString().slice(0, 19)})`;

export class EventBridgeScheduleBackend implements ScheduleBackend {
  constructor(
    private readonly client: SchedulerClient,
    private readonly config: EventBridgeSchedulesConfig,
  ) {}

  private targetArn(): string {
    const arn = this.config.targetArn;
    return typeof arn === 'string' ? arn : arn();
  }

  async put(record: ScheduleRecord): Promise<void> {
    try {
      await this.client.send(
        new CreateScheduleCommand({
          Name: record.name,
          GroupName: this.config.groupName,
          ScheduleExpression: record.expression,
          ScheduleExpressionTimezone: record.timeZone,
          FlexibleTimeWindow: { Mode: 'OFF' },
          State: record.enabled ? 'ENABLED' : 'DISABLED',
          ...(record.description ? { Description: record.description } : {}),
          // A one-time schedule removes itself once it has fired.
          ActionAfterCompletion: record.expression.startsWith('at(') ? 'DELETE' : 'NONE',
          Target: {
            Arn: this.targetArn(),
            RoleArn: this.config.roleArn,
            Input: JSON.stringify(scheduleFireInput(record)),
            RetryPolicy: FIRE_RETRY_POLICY,
            DeadLetterConfig: { Arn: this.config.deadLetterArn },
          },
        }),
      );
    } catch (error) {
      if (error instanceof ConflictException)
        throw new ConflictError(`a schedule named ${record.name} exists`);
      throw error;
    }
  }

  async remove(name: string): Promise<void> {
    for (const scheduleName of [name, earlyFireName(name)]) {
      try {
        await this.client.send(
          new DeleteScheduleCommand({ Name: scheduleName, GroupName: this.config.groupName }),
        );
      } catch (error) {
        if (!(error instanceof ResourceNotFoundException)) throw error;
      }
    }
  }

  /**
   * A one-time schedule a minute ahead of the occurrence at `scheduledTime`, carrying that exact time, which the
   * fire function holds the task until. Created, or updated when the previous link of the chain still exists.
   */
  async armEarlyFire(schedule: EarlyFireSpec, scheduledTime: number): Promise<void> {
    const input = {
      ...scheduleFireInput(schedule),
      scheduledTime: new Date(scheduledTime).toISOString(),
    };
    const request: CreateScheduleCommandInput = {
      Name: earlyFireName(schedule.name),
      GroupName: this.config.groupName,
      Description: `early fire of ${schedule.name} for ${input.scheduledTime}`,
      ScheduleExpression: atUtc(scheduledTime - EARLY_FIRE_LEAD_MS),
      ScheduleExpressionTimezone: 'UTC',
      FlexibleTimeWindow: { Mode: 'OFF' },
      ActionAfterCompletion: 'NONE',
      Target: {
        Arn: this.targetArn(),
        RoleArn: this.config.roleArn,
        Input: JSON.stringify(input),
        RetryPolicy: { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 60 },
        DeadLetterConfig: { Arn: this.config.deadLetterArn },
      },
    };
    try {
      await this.client.send(new CreateScheduleCommand(request));
    } catch (error) {
      if (!(error instanceof ConflictException)) throw error;
      await this.client.send(new UpdateScheduleCommand(request));
    }
  }
}
