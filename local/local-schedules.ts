/**
 * Schedules on this machine: each one armed with a timer for its next fire time, computed by the same expression
 * module the construct validates with, and fired through the same path as the schedule-fire function (one task
 * per occurrence). Plays EventBridge Scheduler's part for declared and run-time schedules alike.
 */
import type { SchedulerLog } from '#core/context';
import type { ScheduleBackend, ScheduleRecord } from '#domain/schedule';
import { nextFireTime, parseScheduleExpression } from '#domain/schedule-expression';

/** setTimeout's limit; longer waits are taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export type FireHandler = (record: ScheduleRecord, scheduledTime: number) => Promise<unknown>;

export class LocalScheduleBackend implements ScheduleBackend {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private fire: FireHandler | undefined;
  private stopped = false;

  constructor(
    private readonly log: SchedulerLog,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts firing; schedules put before this are armed now. */
  start(fire: FireHandler, records: readonly ScheduleRecord[]): void {
    this.fire = fire;
    for (const record of records) this.arm(record, this.now());
  }

  async put(record: ScheduleRecord): Promise<void> {
    if (this.fire) this.arm(record, this.now());
  }

  async remove(name: string): Promise<void> {
    const timer = this.timers.get(name);
    if (timer) clearTimeout(timer);
    this.timers.delete(name);
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
    const wait = () => {
      const timer = setTimeout(
        () => {
          if (next - this.now() > 0) return wait();
          this.timers.delete(record.name);
          this.fire?.(record, next).catch((error: unknown) =>
            this.log.error('schedule fire failed', {
              schedule: record.name,
              error: error instanceof Error ? error.message : String(error),
            }),
          );
          this.arm(record, next);
        },
        Math.max(0, Math.min(next - this.now(), MAX_TIMER_MS)),
      );
      this.timers.set(record.name, timer);
    };
    wait();
  }
}
