/**
 * Every function bundles with the construct's esbuild options and its bundle loads in a fresh Node process with
 * only its environment: a missing dependency, a broken ESM/CommonJS interop or a failing start-up would show here,
 * not in Lambda.
 */
import { describe, expect, it } from 'vitest';
import { FUNCTION_ENTRIES } from '../../infra/scheduler-function';
import { measureBundles } from '../../scripts/bundles';

describe('function bundles', () => {
  it('each function bundles and imports', async () => {
    const reports = await measureBundles(1);
    expect(reports.map((r) => r.function)).toEqual([...FUNCTION_ENTRIES]);
    for (const report of reports) {
      expect(report.bytes, report.function).toBeGreaterThan(10_000);
      expect(report.bytes, report.function).toBeLessThan(2_000_000);
      expect(report.coldImportMs, report.function).toBeGreaterThan(0);
    }
  });
});
