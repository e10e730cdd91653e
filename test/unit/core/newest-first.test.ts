/**
 * The merge behind `GET /v1/tasks`: many partitions, each read newest first a page at a time with ties in any
 * order, listed as one sequence, newest first, a page at a time, with nothing listed twice and nothing left out.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ListPosition, listedBefore, NewestFirst, type ReadPartition } from '#core/newest-first';

/**
 * Partitions as DynamoDB reads them: newest first, tasks of one millisecond in the order given (not by id),
 * `Limit` items a request, and a start key whenever a request stopped at its limit, even with nothing left.
 */
function partitions(contents: Record<string, ListPosition[]>) {
  let requests = 0;
  const read: ReadPartition = async (name, from) => {
    requests++;
    const ordered = [...(contents[name] ?? [])]
      .map((entry, i) => ({ entry, i }))
      .sort((a, b) => b.entry.createdAt - a.entry.createdAt || a.i - b.i)
      .map(({ entry }) => entry)
      .filter((entry) => from.atOrBefore === undefined || entry.createdAt <= from.atOrBefore);
    // A start key names the last item read; the next page starts right after it.
    const start = from.startKey ? ordered.findIndex((e) => e.taskId === from.startKey?.taskId) + 1 : 0;
    const entries = ordered.slice(start, start + from.limit);
    const last = entries.at(-1);
    return {
      entries,
      ...(last && entries.length === from.limit ? { startKey: { taskId: last.taskId } } : {}),
    };
  };
  return { read, requests: () => requests };
}

/** Every page, as `listTasks` asks for them: each page starts after the last task of the one before. */
async function everyPage(names: string[], read: ReadPartition, size: number) {
  const pages: ListPosition[][] = [];
  let after: ListPosition | undefined;
  for (;;) {
    const merged = new NewestFirst(names, read, after);
    const page = await merged.take(size);
    if (page.length > 0) pages.push(page);
    after = page.at(-1) ?? after;
    if (page.length === 0 || !merged.hasMore()) return pages;
  }
}

const sorted = (entries: ListPosition[]) => [...entries].sort((a, b) => (listedBefore(a, b) ? -1 : 1));
const id = (n: number) => `t_${n.toString(32).padStart(26, 'a')}`;

describe('newest first across partitions', () => {
  it('lists every task once, newest first, whatever the partitions, ties and page sizes', async () => {
    await fc.assert(
      fc.asyncProperty(
        // Few distinct milliseconds, so that tasks of one millisecond often span a partition's pages.
        fc.array(
          fc.record({ partition: fc.integer({ min: 0, max: 4 }), createdAt: fc.integer({ min: 0, max: 6 }) }),
          {
            maxLength: 60,
          },
        ),
        fc.integer({ min: 1, max: 7 }),
        async (tasks, size) => {
          const entries = tasks.map((t, n) => ({
            createdAt: t.createdAt,
            taskId: id(n),
            partition: `p${t.partition}`,
          }));
          const names = ['p0', 'p1', 'p2', 'p3', 'p4'];
          const contents = Object.fromEntries(
            names.map((name) => [
              name,
              entries.filter((e) => e.partition === name).map(({ partition: _, ...entry }) => entry),
            ]),
          );

          const pages = await everyPage(names, partitions(contents).read, size);

          const listed = pages.flat();
          expect(listed).toEqual(sorted(entries.map(({ partition: _, ...entry }) => entry)));
          expect(pages.slice(0, -1).every((page) => page.length === size)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('starts after the cursor, in every partition, with tasks of the same millisecond on both sides of it', async () => {
    // Prepare: three tasks of millisecond 5 in two partitions, read in an order that is not the list order
    const contents = {
      a: [
        { createdAt: 5, taskId: id(1) },
        { createdAt: 5, taskId: id(3) },
        { createdAt: 2, taskId: id(4) },
      ],
      b: [
        { createdAt: 5, taskId: id(2) },
        { createdAt: 7, taskId: id(5) },
      ],
    };
    const { read } = partitions(contents);

    // Act
    const first = await new NewestFirst(['a', 'b'], read).take(2);
    const rest = await new NewestFirst(['a', 'b'], read, first.at(-1)).take(10);

    // Assess
    expect(first.map((p) => p.taskId)).toEqual([id(5), id(3)]);
    expect(rest.map((p) => p.taskId)).toEqual([id(2), id(1), id(4)]);
  });

  it('reads each partition once for a page when every partition can fill it', async () => {
    const contents = Object.fromEntries(
      ['a', 'b', 'c'].map((name, p) => [
        name,
        Array.from({ length: 40 }, (_, n) => ({ createdAt: 1_000 - n * 3 - p, taskId: id(p * 100 + n) })),
      ]),
    );
    const { read, requests } = partitions(contents);
    const merged = new NewestFirst(['a', 'b', 'c'], read);
    expect(await merged.take(25)).toHaveLength(25);
    expect(requests()).toBe(3);
    expect(merged.hasMore()).toBe(true);
  });
});
