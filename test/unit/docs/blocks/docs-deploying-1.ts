// docs/deploying.md, block 1: written by `npm run docs` from the page; edit the page, not this file.
import { Stack } from 'aws-cdk-lib';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { AgentScheduler } from '../../../../infra/index.ts';   // in this repository: './infra'

declare const stack: Stack;
declare const alarmTopic: ITopic;

new AgentScheduler(stack, 'Scheduler', {
  queues: ['research', 'emails'],                 // a queue name is the capability an agent serves
  schedules: [
    {
      name: 'nightly-digest',
      expression: 'cron(0 2 * * ? *)',            // EventBridge syntax, validated at synth
      timeZone: 'Europe/Paris',
      task: { queue: 'research', priority: 'low', payload: { kind: 'digest' } },
    },
  ],
  queueLimits: { research: { perKeyConcurrency: 2 } }, // optional: per queue, across all agents
  agentSubmitQueues: ['research'],                // optional: where agents may submit follow-up tasks
  alarmTopic,                                     // optional: where alarms notify
});
