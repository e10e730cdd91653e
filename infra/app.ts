/**
 * The CDK app: `npx cdk synth` writes the example stack's template to `cdk.out/`; `npx cdk deploy` deploys it.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { AgentSchedulerStack } from './agent-scheduler-stack';
import { EXAMPLE_SCHEDULER } from './example-config';

const app = new App();
new AgentSchedulerStack(app, 'AgentScheduler', {
  scheduler: EXAMPLE_SCHEDULER,
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
app.synth();
