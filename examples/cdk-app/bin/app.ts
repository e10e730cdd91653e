/**
 * A CDK app of your own with the scheduler in it. `npx cdk synth` writes its template to `cdk.out/`, offline;
 * `npx cdk deploy` deploys the stack `AgentScheduler` to the account and region of your AWS credentials.
 */
import { AgentScheduler } from 'agent-scheduler';
import { App, CfnOutput, Stack } from 'aws-cdk-lib';

const app = new App();
const stack = new Stack(app, 'AgentScheduler', {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
const scheduler = new AgentScheduler(stack, 'Scheduler', {
  queues: ['research', 'emails'], // a queue name is the capability an agent serves
  agentSubmitQueues: ['research'], // where agents may submit follow-up tasks
});
// What the CLI and your agents are pointed at after `cdk deploy` (AGENT_SCHEDULER_ENDPOINT).
new CfnOutput(stack, 'ApiUrl', { value: scheduler.api.url, description: 'Base URL of the HTTP API' });
new CfnOutput(stack, 'PushUrl', {
  value: scheduler.pushUrl,
  description: 'WebSocket URL of the push channel',
});
app.synth();
