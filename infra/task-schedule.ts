/**
 * A schedule declared as infrastructure: when it fires, a task is submitted from its template. Each fire is
 * recorded once (keyed by the scheduled time, never by the delivery) even though EventBridge Scheduler delivers at
 * least once.
 */
import { SCHEDULE_NAME } from '../functions/domain/schedule';
import type { MissedRunPolicy, OverlapPolicy, ScheduleSpec, TaskTemplate } from '../sdk/types';

export type { MissedRunPolicy, OverlapPolicy, TaskTemplate };

/**
 * A schedule declared in the props (validated at synth): the same shape as one created through the API, declared
 * once, with the SDK's records (which compile-time tests hold to the server's own schema).
 */
export type TaskScheduleProps = ScheduleSpec;

/** A schedule's name: the same rule as the API's. */
export const SCHEDULE_NAME_PATTERN = SCHEDULE_NAME;
