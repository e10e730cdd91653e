/**
 * Every function bundles with the construct's esbuild options and its bundle loads in a fresh Node process with
 * only its environment: a missing dependency, a broken ESM/CommonJS interop or a failing start-up would show here,
 * not in Lambda.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { AgentSchedulerStack } from '../../infra/agent-scheduler-stack';
import { EXAMPLE_SCHEDULER } from '../../infra/example-config';
import { FUNCTION_ENTRIES } from '../../infra/scheduler-function';
import { measureBundles } from '../../scripts/bundles';
import { CDK_CONTEXT } from '../helpers/synth';

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

describe('function code in the synthesized stack', () => {
  it('bundles each function from source at synth, each into an asset of its own', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'agent-scheduler-bundled-'));
    const app = new App({ outdir, context: CDK_CONTEXT });
    new AgentSchedulerStack(app, 'Bundled', {
      scheduler: EXAMPLE_SCHEDULER,
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    app.synth();
    const template = JSON.parse(readFileSync(join(outdir, 'Bundled.template.json'), 'utf8')) as {
      Resources: Record<
        string,
        { Type: string; Properties: { Handler?: string; Code?: { S3Key?: string } } }
      >;
    };
    const code = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Handler === 'index.handler')
      .map((r) => r.Properties.Code?.S3Key);
    expect(code).toHaveLength(FUNCTION_ENTRIES.length);
    // CDK caches bundles by their options: the same bundle for every function would pass everything else.
    expect(new Set(code).size).toBe(FUNCTION_ENTRIES.length);
    expect(mapsIn(outdir)).toEqual([]);
  }, 120_000);

  it('with sourceMaps, each function carries its source map and Node reads it', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'agent-scheduler-mapped-'));
    const app = new App({ outdir, context: CDK_CONTEXT });
    const stack = new AgentSchedulerStack(app, 'Mapped', {
      scheduler: { ...EXAMPLE_SCHEDULER, sourceMaps: true },
      env: { account: '123456789012', region: 'eu-west-1' },
    });
    app.synth();
    expect(mapsIn(outdir)).toHaveLength(FUNCTION_ENTRIES.length);
    const fn = stack.scheduler.functions.agentApi.node.defaultChild as CfnFunction;
    const template = JSON.parse(readFileSync(join(outdir, 'Mapped.template.json'), 'utf8')) as {
      Resources: Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>;
    };
    expect(template.Resources[stack.getLogicalId(fn)]?.Properties.Environment.Variables.NODE_OPTIONS).toBe(
      '--enable-source-maps',
    );
  }, 120_000);
});

/** The source maps in the function assets of a synthesized app. */
function mapsIn(outdir: string): string[] {
  return readdirSync(outdir)
    .filter((name) => name.startsWith('asset.') && existsSync(join(outdir, name, 'index.mjs')))
    .flatMap((name) => readdirSync(join(outdir, name)).filter((file) => file.endsWith('.map')));
}
