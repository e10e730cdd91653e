/**
 * EventBridge Scheduler: a schedule group for the stack, the supervisor's `rate(1 minute)` pass, and one
 * schedule per declared cron, each invoking the schedule-fire function with the schedule's name and the
 * scheduled time. Failed deliveries are retried, then kept in a dead-letter queue.
 */
import { Duration, RemovalPolicy, Stack, TimeZone } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import {
  ContextAttribute,
  Schedule,
  ScheduleExpression,
  ScheduleGroup,
  ScheduleTargetInput,
  TimeWindow,
} from 'aws-cdk-lib/aws-scheduler';
import { LambdaInvoke } from 'aws-cdk-lib/aws-scheduler-targets';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { FIRE_RETRY_POLICY } from '../functions/adapters/eventbridge-schedules';
import { scheduleFireInput } from '../functions/core/fire-schedule';
import { validateScheduleExpression } from '../functions/domain/schedule-expression';
import { SCHEDULE_NAME_PATTERN, type TaskScheduleProps } from './task-schedule';

export interface TaskSchedulesProps {
  readonly schedules: readonly TaskScheduleProps[];
  /** Task queues that exist, to check each template against. */
  readonly queueNames: readonly string[];
  readonly supervisor: IFunction;
  readonly supervisorPeriod: Duration;
  readonly fire: IFunction;
  /** Where fires and supervisor passes that could not be delivered are kept. */
  readonly deadLetterQueue: IQueue;
}

/** Delivery retries and age limit of a fire, the same as for run-time schedules. */
export const FIRE_RETRY_ATTEMPTS = FIRE_RETRY_POLICY.MaximumRetryAttempts;
export const FIRE_MAX_EVENT_AGE = Duration.seconds(FIRE_RETRY_POLICY.MaximumEventAgeInSeconds);

export class TaskSchedules extends Construct {
  readonly group: ScheduleGroup;
  /** The role EventBridge Scheduler assumes to invoke the supervisor and the fire function. */
  readonly role: Role;
  readonly supervisorSchedule: Schedule;
  readonly schedules: ReadonlyMap<string, Schedule>;

  constructor(scope: Construct, id: string, props: TaskSchedulesProps) {
    super(scope, id);
    validateSchedules(props.schedules, props.queueNames);

    this.group = new ScheduleGroup(this, 'Group', { removalPolicy: RemovalPolicy.DESTROY });
    this.role = new Role(this, 'InvokeRole', {
      assumedBy: new ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    });

    this.supervisorSchedule = new Schedule(this, 'Supervisor', {
      description: 'agent-scheduler supervisor pass: reclaim, retry, reconcile, escalate',
      scheduleGroup: this.group,
      schedule: ScheduleExpression.expression(`rate(${rateText(props.supervisorPeriod)})`),
      timeWindow: TimeWindow.off(),
      target: new LambdaInvoke(props.supervisor, {
        role: this.role,
        input: ScheduleTargetInput.fromObject({ scheduledTime: ContextAttribute.scheduledTime }),
        // A missed pass is made up by the next one; do not pile passes up.
        retryAttempts: 0,
        maxEventAge: Duration.minutes(1),
        deadLetterQueue: props.deadLetterQueue,
      }),
    });

    const schedules = new Map<string, Schedule>();
    for (const declared of props.schedules) {
      schedules.set(
        declared.name,
        new Schedule(this, `Schedule${declared.name}`, {
          description: declared.description ?? `agent-scheduler schedule ${declared.name}`,
          scheduleGroup: this.group,
          schedule: ScheduleExpression.expression(
            declared.expression,
            TimeZone.of(declared.timeZone ?? 'UTC'),
          ),
          timeWindow: TimeWindow.off(),
          enabled: declared.enabled ?? true,
          target: new LambdaInvoke(props.fire, {
            role: this.role,
            input: ScheduleTargetInput.fromObject(
              scheduleFireInput({ ...declared, timeZone: declared.timeZone ?? 'UTC' }),
            ),
            retryAttempts: FIRE_RETRY_ATTEMPTS,
            maxEventAge: FIRE_MAX_EVENT_AGE,
            deadLetterQueue: props.deadLetterQueue,
          }),
        }),
      );
    }
    this.schedules = schedules;
  }
}

function rateText(period: Duration): string {
  const minutes = period.toMinutes();
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

/** Eager validation, as CDK constructs do: a bad schedule fails the synth with its name and expression. */
export function validateSchedules(
  schedules: readonly TaskScheduleProps[],
  queueNames: readonly string[],
): void {
  const seen = new Set<string>();
  for (const schedule of schedules) {
    if (!SCHEDULE_NAME_PATTERN.test(schedule.name)) {
      throw new Error(`schedule name "${schedule.name}" must be 1 to 64 letters, digits, "-" or "_"`);
    }
    if (seen.has(schedule.name)) throw new Error(`schedule name "${schedule.name}" is declared twice`);
    seen.add(schedule.name);
    validateScheduleExpression(schedule.expression, schedule.timeZone, schedule.name);
    if (!queueNames.includes(schedule.task.queue)) {
      throw new Error(
        `schedule "${schedule.name}" targets queue "${schedule.task.queue}", which is not declared`,
      );
    }
  }
}
