/**
 * Synthesizes the example stack in a temporary directory, without bundling (the bundles are measured by
 * `npm run size`), and with cdk-nag's AwsSolutions and Serverless packs as validation plugins.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { AgentSchedulerProps } from '../../infra/agent-scheduler';
import { AgentSchedulerStack } from '../../infra/agent-scheduler-stack';
import { EXAMPLE_SCHEDULER } from '../../infra/example-config';

/** The feature flags of `cdk.json`, so the tests synthesize what `cdk synth` does. */
export const CDK_CONTEXT = (
  JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
    context: Record<string, unknown>;
  }
).context;

export interface ValidationReport {
  readonly pluginReports: {
    readonly pluginName: string;
    readonly conclusion: string;
    readonly violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[];
    readonly suppressedViolations: {
      ruleName: string;
      acknowledgedId: string;
      reason: string;
      violatingConstructs: { constructPath: string }[];
    }[];
  }[];
}

export function synthExample(
  scheduler: AgentSchedulerProps = EXAMPLE_SCHEDULER,
  extend?: (stack: AgentSchedulerStack) => void,
) {
  const outdir = mkdtempSync(join(tmpdir(), 'agent-scheduler-cdk-'));
  const app = new App({ outdir, context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  const stack = new AgentSchedulerStack(app, 'Test', {
    scheduler,
    env: { account: '123456789012', region: 'eu-west-1' },
  });
  extend?.(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  app.synth();
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as ValidationReport;
  return { app, stack, template: Template.fromStack(stack), report };
}
