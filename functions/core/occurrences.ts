/**
 * The occurrence ledger of a schedule: one item per schedule in the leases table (`occurrences#<name>`), a map
 * from scheduled time to what happened (fired with a task, or skipped and why). Recording an occurrence is a
 * conditional write on its scheduled time, never on the delivery's execution id, which changes on every retry:
 * a fire delivered twice is recorded once.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { conditionalUpdate } from '#adapters/expression';
import type { SchedulerContext } from './context';

export type OccurrenceStatus = 'fired' | 'skipped';

export interface Occurrence {
  readonly scheduledTime: string;
  readonly status: OccurrenceStatus;
  readonly taskId?: string;
  /** Why it was skipped: `overlap` (a previous run was still going). */
  readonly reason?: string;
  /** When it was recorded (ms). */
  readonly recordedAt: number;
}

/** Entries kept per schedule; older ones are dropped as new ones come. */
export const OCCURRENCES_KEPT = 100;

const ledgerKey = (schedule: string) => ({ leaseId: `occurrences#${schedule}` });

export async function readOccurrences(ctx: SchedulerContext, schedule: string): Promise<Occurrence[]> {
  const output = await ctx.sessions.doc.send(
    new GetCommand({ TableName: ctx.sessions.tableName, Key: ledgerKey(schedule), ConsistentRead: true }),
  );
  const entries = (output.Item?.entries ?? {}) as Record<string, Omit<Occurrence, 'scheduledTime'>>;
  return Object.entries(entries)
    .map(([scheduledTime, entry]) => ({ scheduledTime, ...entry }))
    .sort((a, b) => b.scheduledTime.localeCompare(a.scheduledTime));
}

/**
 * Records an occurrence unless its scheduled time is already recorded; then returns the recorded one instead.
 * Drops the oldest entries past `OCCURRENCES_KEPT` in the same write.
 */
export async function recordOccurrence(
  ctx: SchedulerContext,
  schedule: string,
  occurrence: Occurrence,
  known: readonly Occurrence[],
): Promise<{ recorded: true } | { recorded: false; existing: Occurrence }> {
  const { scheduledTime, ...entry } = occurrence;
  const dropped = known.slice(OCCURRENCES_KEPT - 1).map((o) => o.scheduledTime);
  const written = await conditionalUpdate(
    ctx.sessions.doc,
    { TableName: ctx.sessions.tableName, Key: ledgerKey(schedule) },
    (e) =>
      known.length === 0
        ? {
            set: [
              `${e.n('kind')} = ${e.v('occurrences')}`,
              `${e.n('schedule')} = ${e.v(schedule)}`,
              `${e.n('entries')} = if_not_exists(${e.n('entries')}, ${e.v({ [scheduledTime]: entry })})`,
            ],
            condition: `attribute_not_exists(${e.n('entries')})`,
          }
        : {
            set: [`${e.n('entries', scheduledTime)} = ${e.v(entry)}`],
            remove: dropped.filter((t) => t !== scheduledTime).map((t) => e.n('entries', t)),
            condition: `attribute_exists(${e.n('entries')}) AND attribute_not_exists(${e.n('entries', scheduledTime)})`,
          },
    (item) => item,
  );
  if (written.ok) return { recorded: true };
  const existing = (await readOccurrences(ctx, schedule)).find((o) => o.scheduledTime === scheduledTime);
  if (existing) return { recorded: false, existing };
  // The ledger changed shape under us (created by a concurrent first fire): try once more against it.
  return recordOccurrence(ctx, schedule, occurrence, await readOccurrences(ctx, schedule));
}
