/**
 * Run-time schedules in AWS: EventBridge Scheduler schedules in the stack's group, targeting the fire function
 * with the same input as the declared ones, the same retry policy and dead-letter queue.
 */
import {
  ConflictException,
  CreateScheduleCommand,
  DeleteScheduleCommand,
  ResourceNotFoundException,
  type SchedulerClient,
} from '@aws-sdk/client-scheduler';
import { scheduleFireInput } from '#core/fire-schedule';
import type { ScheduleBackend, ScheduleRecord } from '#core/schedules';
import { ConflictError } from '#domain/errors';

export interface EventBridgeSchedulesConfig {
  readonly groupName: string;
  /** The schedule-fire function. */
  readonly targetArn: string;
  /** The role EventBridge Scheduler assumes to invoke it. */
  readonly roleArn: string;
  readonly deadLetterArn: string;
}

/** Same as the construct's declared schedules. */
export const FIRE_RETRY_POLICY = { MaximumRetryAttempts: 10, MaximumEventAgeInSeconds: 3_600 } as const;

export class EventBridgeScheduleBackend implements ScheduleBackend {
  constructor(
    private readonly client: SchedulerClient,
    private readonly config: EventBridgeSchedulesConfig,
  ) {}

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
            Arn: this.config.targetArn,
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
    try {
      await this.client.send(new DeleteScheduleCommand({ Name: name, GroupName: this.config.groupName }));
    } catch (error) {
      if (!(error instanceof ResourceNotFoundException)) throw error;
    }
  }
}
