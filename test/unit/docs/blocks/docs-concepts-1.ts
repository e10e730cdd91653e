// docs/concepts.md, block 1: written by `npm run docs` from the page; edit the page, not this file.
import { SubnetType } from 'aws-cdk-lib/aws-ec2';
import { EventField, Rule } from 'aws-cdk-lib/aws-events';
import { EcsTask } from 'aws-cdk-lib/aws-events-targets';
import type { Stack } from 'aws-cdk-lib';
import type { ICluster, TaskDefinition } from 'aws-cdk-lib/aws-ecs';
import type { AgentScheduler } from '../../../../infra/index.ts';

declare const stack: Stack;
declare const scheduler: AgentScheduler;
declare const cluster: ICluster;
declare const workerTaskDefinition: TaskDefinition;

new Rule(stack, 'SpawnWorker', {
  eventBus: scheduler.eventBus,
  // JSON: {"source": ["agent-scheduler"], "detail-type": ["agent.spawnRequested"], "detail": {"queue": ["render"]}}
  eventPattern: {
    source: ['agent-scheduler'],
    detailType: ['agent.spawnRequested'],
    detail: { queue: ['render'] },
  },
  targets: [
    new EcsTask({
      cluster,
      taskDefinition: workerTaskDefinition,
      taskCount: 1,
      subnetSelection: { subnetType: SubnetType.PRIVATE_WITH_EGRESS },
      containerOverrides: [
        {
          containerName: 'worker',
          // Your worker's own setting: the queue it is to serve, from the event.
          environment: [{ name: 'AGENT_QUEUES', value: EventField.fromPath('$.detail.queue') }],
        },
      ],
    }),
  ],
});
