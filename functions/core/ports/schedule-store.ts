/** Where schedules created at run time are recorded (schedules declared in the infrastructure are not). */
import type { ScheduleRecord } from '#domain/schedule';

export interface ScheduleStore {
  /** Records a new schedule; false, and nothing written, when one of that name is recorded already. */
  create(record: ScheduleRecord): Promise<boolean>;
  /** The schedule of that name, read after every write that committed; absent if none, or unreadable. */
  get(name: string): Promise<ScheduleRecord | undefined>;
  delete(name: string): Promise<void>;
  /** Every recorded schedule that can be read, in no particular order. */
  list(): Promise<ScheduleRecord[]>;
}
