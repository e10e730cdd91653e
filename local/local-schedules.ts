/**
 * Schedules on this machine: each one armed with a timer for its next fire time, computed by the same expression
 * module the construct validates with, and fired through the same path as the schedule-fire function (one task
 * per occurrence). Plays EventBridge Scheduler's part for declared and run-time schedules alike.
 *
 * With `spreadMs` (the local stack sets a minute) a fire is delivered at a random moment of the `spreadMs` after its
 * time, as EventBridge Scheduler may deliver anywhere in the scheduled minute; then, as in AWS, each fire arms an
 * early fire of the next occurrence a minute ahead (`armEarlyFire`), itself delivered anywhere in its minute, and
 * the task waits for its exact time. Nothing local can then be on time by the emulator's punctuality.
 */
import { EARLY_FIRE_LEAD_MS } from '#adapters/eventbridge-schedules';
import type { SchedulerLog } from '#core/context';
import type { EarlyFireSpec, ScheduleBackend, ScheduleRecord } from '#domain/schedule';
import { nextFireTime, parseScheduleExpression } from '#domain/schedule-expression';

/** setTimeout's limit; longer waits are taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** `early`: the fire is an early fire, a minute ahead of `scheduledTime`, carrying that time. */
export type FireHandler = (
  record: ScheduleRecord,
  scheduledTime: number,
  delivery?: { readonly early: boolean },
) => Promise<unknown>;

export interface LocalScheduleOptions {
  /** A fire is delivered at a random moment this long after its time. @default 0: on time */
  readonly spreadMs?: number;
  /** @default Math.random */
  readonly random?: () => number;
}

/** The early fires' timers are kept under names of their own. */
const earlyName = (schedule: string) => `early:${schedule}`;

export class LocalScheduleBackend implements ScheduleBackend {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private fire: FireHandler | undefined;
  private stopped = false;
  private readonly spreadMs: number;
  private readonly random: () => number;
  /** Early fires, armed only where deliveries are spread: on time, a schedule needs none. */
  readonly armEarlyFire?: (schedule: EarlyFireSpec, scheduledTime: number) => Promise<void>;

  constructor(
    private readonly log: SchedulerLog,
    private readonly now: () => number = Date.now,
    options: LocalScheduleOptions = {},
  ) {
    this.spreadMs = options.spreadMs ?? 0;
    this.random = options.random ?? Math.random;
    if (this.spreadMs > 0)
      this.armEarlyFire = (schedule, scheduledTime) => this.armEarly(schedule, scheduledTime);
  }

  /** Starts firing; schedules put before this are armed now. */
  start(fire: FireHandler, records: readonly ScheduleRecord[]): void {
    this.fire = fire;
    for (const record of records) this.arm(record, this.now());
  }

  async put(record: ScheduleRecord): Promise<void> {
    if (this.fire) this.arm(record, this.now());
  }

  async remove(name: string): Promise<void> {
    for (const key of [name, earlyName(name)]) {
      const timer = this.timers.get(key);
      if (timer) clearTimeout(timer);
      this.timers.delete(key);
    }
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** Names of the schedules with a fire pending. */
  armed(): string[] {
    return [...this.timers.keys()];
  }

  private arm(record: ScheduleRecord, after: number): void {
    if (this.stopped || !record.enabled) return;
    // A rate() created through the API counts from its creation, as EventBridge Scheduler counts it (and as its
    // view's next fires say), across restarts of the stack; a declared one from the stack's start.
    const next = nextFireTime(parseScheduleExpression(record.expression), {
      after,
      timeZone: record.timeZone,
      ...(record.source === 'api' ? { startAt: Math.min(record.createdAt, after) } : {}),
    });
    if (next === undefined) {
      this.timers.delete(record.name);
      return;
    }
    this.deliverAt(record.name, next + this.spread(), () => {
      this.deliver(record, next, false);
      this.arm(record, next);
    });
  }

  /** A one-time fire a minute ahead of `scheduledTime`, replacing the schedule's early fire armed before. */
  private async armEarly(schedule: EarlyFireSpec, scheduledTime: number): Promise<void> {
    if (this.stopped || !this.fire) return;
    const name = earlyName(schedule.name);
    const armed = this.timers.get(name);
    if (armed) clearTimeout(armed);
    const record: ScheduleRecord = {
      name: schedule.name,
      expression: schedule.expression,
      timeZone: schedule.timeZone,
      task: schedule.task as ScheduleRecord['task'],
      overlap: (schedule.overlap ?? 'allowAll') as ScheduleRecord['overlap'],
      missedRuns: (schedule.missedRuns ?? 'skip') as ScheduleRecord['missedRuns'],
      enabled: true,
      createdAt: this.now(),
      source: 'api',
    };
    this.deliverAt(name, scheduledTime - EARLY_FIRE_LEAD_MS + this.spread(), () =>
      this.deliver(record, scheduledTime, true),
    );
  }

  /** When in its spread a delivery comes: any moment, to the millisecond. */
  private spread(): number {
    return Math.floor(this.random() * this.spreadMs);
  }

  private deliver(record: ScheduleRecord, scheduledTime: number, early: boolean): void {
    this.fire?.(record, scheduledTime, { early }).catch((error: unknown) =>
      this.log.error('schedule fire failed', {
        schedule: record.name,
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }

  /** Runs `deliver` at `at` (in steps, past setTimeout's limit), under the timer name `name`. */
  private deliverAt(name: string, at: number, deliver: () => void): void {
    const wait = () => {
      const timer = setTimeout(
        () => {
          if (at - this.now() > 0) return wait();
          this.timers.delete(name);
          deliver();
        },
        Math.max(0, Math.min(at - this.now(), MAX_TIMER_MS)),
      );
      this.timers.set(name, timer);
    };
    wait();
  }
}
