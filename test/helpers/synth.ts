/**
 * Synthesizes the example stack in a temporary directory, without bundling (the bundles are measured by
 * `npm run size`): `synthExample` with cdk-nag's AwsSolutions and Serverless packs as validation plugins and
 * CloudFormation's default rules, `synthTemplate` without them.
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
  const { app, stack, outdir } = synthesize(scheduler, extend, true);
  const report = JSON.parse(readFileSync(join(outdir, 'validation-report.json'), 'utf8')) as ValidationReport;
  return { app, stack, template: Template.fromStack(stack), report };
}

/**
 * The same stack without the checks (cdk-nag's packs and CloudFormation's default rules, a third of the synth's
 * time), for suites that read the template only: the infrastructure suite runs the checks.
 */
export function synthTemplate(
  scheduler: AgentSchedulerProps = EXAMPLE_SCHEDULER,
  extend?: (stack: AgentSchedulerStack) => void,
) {
  const { stack } = synthesize(scheduler, extend, false);
  return { stack, template: Template.fromStack(stack) };
}

function synthesize(
  scheduler: AgentSchedulerProps,
  extend: ((stack: AgentSchedulerStack) => void) | undefined,
  checks: boolean,
) {
  const outdir = mkdtempSync(join(tmpdir(), 'agent-scheduler-cdk-'));
  const context = { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [] };
  const app = new App({
    outdir,
    context: checks ? context : { ...context, '@aws-cdk/core:validateAgainstDefaultRules': false },
  });
  const stack = new AgentSchedulerStack(app, 'Test', {
    scheduler,
    env: { account: '123456789012', region: 'eu-west-1' },
  });
  extend?.(stack);
  if (checks) Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  app.synth();
  return { app, stack, outdir };
}
