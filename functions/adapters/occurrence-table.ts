/**
 * Occurrence ledgers in the leases table: one item per schedule (`occurrences#<name>`), its `entries` map keyed by
 * scheduled time. Recording an occurrence is a conditional write on its scheduled time, never on the delivery's
 * execution id, which changes on every retry: a fire delivered twice is recorded once.
 */
import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Occurrence, OccurrenceEntry, OccurrenceStore } from '#core/ports/occurrence-store';
import { conditionalUpdate } from './expression';

const ledgerKey = (schedule: string) => ({ leaseId: `occurrences#${schedule}` });

export class OccurrenceTable implements OccurrenceStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async read(schedule: string): Promise<Occurrence[]> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: ledgerKey(schedule), ConsistentRead: true }),
    );
    const entries = (output.Item?.entries ?? {}) as Record<string, Omit<Occurrence, 'scheduledTime'>>;
    return Object.entries(entries).map(([scheduledTime, entry]) => ({ scheduledTime, ...entry }));
  }

  /**
   * The first write starts the ledger, refused if another write started it first; later writes set one key of
   * the `entries` map, refused if that time is already recorded.
   */
  async record(schedule: string, occurrence: Occurrence, { first, drop }: OccurrenceEntry): Promise<boolean> {
    const { scheduledTime, ...entry } = occurrence;
    const written = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: ledgerKey(schedule) },
      (e) =>
        first
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
              remove: drop.map((t) => e.n('entries', t)),
              condition: `attribute_exists(${e.n('entries')}) AND attribute_not_exists(${e.n('entries', scheduledTime)})`,
            },
      (item) => item,
    );
    return written.ok;
  }
}
