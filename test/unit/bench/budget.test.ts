/**
 * The lifecycle budget `npm test` holds the bench to is the one the README states: a change that lowers or raises
 * the figures must change both.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBudget } from '../../../bench/history';

const README = readFileSync(join(import.meta.dirname, '../../../README.md'), 'utf8').replace(/\s+/g, ' ');

describe('the lifecycle budget', () => {
  it('is the figure the README documents, single calls and batches of 10', () => {
    const budget = readBudget();
    const stated = README.match(
      /allows: ([\d.]+) write and ([\d.]+) read units single, ([\d.]+) and ([\d.]+) per task in batches of 10/,
    );
    expect(stated, 'the README states the budget').not.toBeNull();
    expect(stated?.slice(1).map(Number)).toEqual([
      budget.singleCall.dynamodbWriteUnits,
      budget.singleCall.dynamodbReadUnits,
      budget.batchOf10.dynamodbWriteUnits,
      budget.batchOf10.dynamodbReadUnits,
    ]);
    // The per-step table's lifecycle row says the same.
    const row = README.match(
      /\| one lifecycle alone: write \/ read units \| ([\d.]+) \/ ([\d.]+) \| ([\d.]+) \/ ([\d.]+) \|/,
    );
    expect(row?.slice(1).map(Number)).toEqual(stated?.slice(1).map(Number));
  });
});
