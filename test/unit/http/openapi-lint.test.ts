/**
 * The document through Redocly's linter, the real CLI from node_modules, with its `recommended` rules, offline.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../functions/http/openapi';

const run = promisify(execFile);

interface LintReport {
  readonly totals: { readonly errors: number; readonly warnings: number };
  readonly problems: readonly { ruleId: string; severity: string; message: string }[];
}

describe('redocly lint', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-scheduler-openapi-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('finds no error with the recommended rules', { timeout: 60_000 }, async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(openApiDocument(), null, 2));
    // Only the built-in ruleset: nothing to fetch.
    writeFileSync(join(dir, 'redocly.yaml'), 'extends:\n  - recommended\n');
    const bin = join(process.cwd(), 'node_modules', '.bin', 'redocly');
    const env = {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      NO_COLOR: '1',
    };
    // The CLI exits non-zero when it finds errors; its report is on stdout either way.
    const output = await run(bin, ['lint', file, '--config', join(dir, 'redocly.yaml'), '--format=json'], {
      cwd: dir,
      env,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string }) => {
      if (!error.stdout) throw error;
      return { stdout: error.stdout, stderr: error.stderr ?? '' };
    });
    const report = JSON.parse(output.stdout) as LintReport;
    if (report.totals.warnings > 0) {
      console.warn(
        `[redocly] ${report.totals.warnings} warnings:\n  ${report.problems
          .filter((p) => p.severity === 'warn')
          .map((p) => `${p.ruleId}: ${p.message}`)
          .join('\n  ')}`,
      );
    }
    expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
  });
});
