/**
 * Emitting lifecycle events from the operations. Best effort: a failure is logged and the operation goes on.
 */
import { errorName } from '#domain/errors';
import type { EventType, SchedulerEvent } from '#domain/events';
import { ROUTINE_EVENT_TYPES, schedulerEvent } from '#domain/events';
import type { SchedulerContext } from './context';

/** What an event says beyond its type and time. */
export type EventFields = Omit<SchedulerEvent, 'version' | 'type' | 'time'>;

export async function emit(
  ctx: SchedulerContext,
  all: readonly { type: EventType; fields?: EventFields }[],
): Promise<void> {
  const events = ctx.settings.routineEvents ? all : all.filter((e) => !ROUTINE_EVENT_TYPES.has(e.type));
  if (events.length === 0) return;
  const now = ctx.now();
  try {
    await ctx.events.publish(events.map((e) => schedulerEvent(e.type, now, e.fields)));
  } catch (error) {
    ctx.log.warn('could not publish lifecycle events', {
      types: events.map((e) => e.type),
      error: errorName(error),
    });
  }
}
