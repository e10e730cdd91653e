/**
 * The lifecycle budget `npm test` holds the bench to is the one the docs state (`docs/guarantees.md`, and the
 * README's cost row): a change that lowers or raises the figures must change them all.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBudget } from '../../../bench/history';

const ROOT = join(import.meta.dirname, '../../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8').replace(/\s+/g, ' ');
const GUARANTEES = read('docs/guarantees.md');
const README = read('README.md');

describe('the lifecycle budget', () => {
  it('is the figure the docs state, single calls and batches of 10', () => {
    const budget = readBudget();
    const stated = GUARANTEES.match(
      /allows: ([\d.]+) write and ([\d.]+) read units single, ([\d.]+) and ([\d.]+) per task in batches of 10/,
    );
    expect(stated, 'docs/guarantees.md states the budget').not.toBeNull();
    expect(stated?.slice(1).map(Number)).toEqual([
      budget.singleCall.dynamodbWriteUnits,
      budget.singleCall.dynamodbReadUnits,
      budget.batchOf10.dynamodbWriteUnits,
      budget.batchOf10.dynamodbReadUnits,
    ]);
    // The per-step table's lifecycle row says the same.
    const row = GUARANTEES.match(
      /\| one lifecycle alone: write \/ read units \| ([\d.]+) \/ ([\d.]+) \| ([\d.]+) \/ ([\d.]+) \|/,
    );
    expect(row?.slice(1).map(Number)).toEqual(stated?.slice(1).map(Number));
    // And so does the README's cost row, for single calls.
    const readme = README.match(/\| submit, claim, complete \| ([\d.]+) write \/ ([\d.]+) read units \|/);
    expect(readme?.slice(1).map(Number)).toEqual(stated?.slice(1, 3).map(Number));
  });
});
