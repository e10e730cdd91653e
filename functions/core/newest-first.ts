/**
 * Tasks newest first across many partitions of the `listed` index (every shard of every queue listed), as one
 * sequence a page at a time.
 *
 * The order is total: newest first, and tasks created in the same millisecond by task id, descending. A page's
 * cursor is then the place of its last task in that order, and it is the position in every partition at once:
 * each partition goes on from the first of its tasks that comes after it. So the cursor stays the same size
 * however many queues and shards there are.
 *
 * DynamoDB returns a partition's tasks newest first but promises no order among tasks of the same millisecond, so
 * a partition's tasks are only handed out once every task of their millisecond has been read: those newer than
 * the oldest read so far, or all of them once the partition is read to its end.
 */

/** A task's place in a list. */
export interface ListPosition {
  readonly createdAt: number;
  readonly taskId: string;
}

/** Whether `a` is listed before `b`: newer, or as new with a greater task id. */
export const listedBefore = (a: ListPosition, b: ListPosition): boolean =>
  a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.taskId > b.taskId);

type Key = Record<string, unknown>;

/** Reads one page of one partition, as `TaskStore.queryListed` does. */
export type ReadPartition = (
  partition: string,
  from: { atOrBefore?: number; startKey?: Key; limit: number },
) => Promise<{ entries: ListPosition[]; startKey?: Key }>;

interface Partition {
  readonly name: string;
  /** Read and not handed out yet, in list order. */
  buffer: ListPosition[];
  /** Where the next read starts; undefined before the first. */
  startKey?: Key;
  /** The oldest creation time read so far: tasks of that millisecond may have more to come. */
  oldest?: number;
  /** Read to its end. */
  ended: boolean;
}

export class NewestFirst {
  private readonly partitions: Partition[];

  constructor(
    partitions: readonly string[],
    private readonly read: ReadPartition,
    /** The place of the last task already listed: the sequence starts after it. */
    private readonly after?: ListPosition,
  ) {
    this.partitions = partitions.map((name) => ({ name, buffer: [], ended: false }));
  }

  /** The next `count` tasks at most, in list order. */
  async take(count: number): Promise<ListPosition[]> {
    const taken: ListPosition[] = [];
    while (taken.length < count) {
      const unsettled = this.partitions.filter((p) => !p.ended && !this.settled(p));
      if (unsettled.length > 0) {
        // One more than still wanted, so that the last one wanted is seen settled without another read.
        await Promise.all(unsettled.map((p) => this.readMore(p, count - taken.length + 1)));
        continue;
      }
      let next: Partition | undefined;
      for (const p of this.partitions) {
        const head = p.buffer[0];
        if (head && (!next?.buffer[0] || listedBefore(head, next.buffer[0]))) next = p;
      }
      const head = next?.buffer.shift();
      if (!head) break;
      taken.push(head);
    }
    return taken;
  }

  /** Whether anything may come after what was taken (a last read that found nothing may still say yes). */
  hasMore(): boolean {
    return this.partitions.some((p) => !p.ended || p.buffer.length > 0);
  }

  /** Whether the partition's next task is known: read, and no task of its millisecond left unread. */
  private settled(p: Partition): boolean {
    const head = p.buffer[0];
    return head !== undefined && (p.ended || p.oldest === undefined || head.createdAt > p.oldest);
  }

  private async readMore(p: Partition, limit: number): Promise<void> {
    const page = await this.read(p.name, {
      // The same key condition on every page of a partition, as DynamoDB expects with a start key.
      ...(this.after ? { atOrBefore: this.after.createdAt } : {}),
      ...(p.startKey ? { startKey: p.startKey } : {}),
      limit,
    });
    const after = this.after;
    const fresh = after ? page.entries.filter((entry) => listedBefore(after, entry)) : page.entries;
    p.buffer = [...p.buffer, ...fresh].sort((a, b) => (listedBefore(a, b) ? -1 : 1));
    const last = page.entries.at(-1);
    if (last) p.oldest = last.createdAt;
    p.startKey = page.startKey;
    p.ended = page.startKey === undefined;
  }
}
