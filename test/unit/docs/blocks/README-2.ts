// README.md, block 2: written by `npm run docs` from the page; edit the page, not this file.
import { App, CfnOutput, Stack } from 'aws-cdk-lib';
import { AgentScheduler } from '../../../../infra/index.ts';

class SchedulerStack extends Stack {
  constructor(scope: App, id: string) {
    super(scope, id);
    const scheduler = new AgentScheduler(this, 'Scheduler', { queues: ['research'] });
    new CfnOutput(this, 'ApiUrl', { value: scheduler.api.url });
  }
}

new SchedulerStack(new App(), 'AgentScheduler');
