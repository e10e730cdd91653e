/**
 * An example stack: the scheduler with a few task queues and one nightly schedule, and the outputs a team needs
 * to point agents and operators at it.
 */
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { AgentScheduler, type AgentSchedulerProps } from './agent-scheduler';

export interface AgentSchedulerStackProps extends StackProps {
  readonly scheduler: AgentSchedulerProps;
}

export class AgentSchedulerStack extends Stack {
  readonly scheduler: AgentScheduler;

  constructor(scope: Construct, id: string, props: AgentSchedulerStackProps) {
    super(scope, id, props);
    this.scheduler = new AgentScheduler(this, 'AgentScheduler', props.scheduler);

    new CfnOutput(this, 'ApiUrl', { value: this.scheduler.api.url, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'PushUrl', {
      value: this.scheduler.pushUrl,
      description: 'WebSocket URL of the push channel; connect with a ticket from POST /v1/push-ticket',
    });
    new CfnOutput(this, 'TasksTableName', { value: this.scheduler.tables.tasks.tableName });
    new CfnOutput(this, 'AgentsTableName', { value: this.scheduler.tables.agents.tableName });
    new CfnOutput(this, 'LeasesTableName', { value: this.scheduler.tables.leases.tableName });
    new CfnOutput(this, 'ConnectionsTableName', { value: this.scheduler.tables.connections.tableName });
    new CfnOutput(this, 'ScheduleGroupName', { value: this.scheduler.scheduleGroup.scheduleGroupName });
    new CfnOutput(this, 'EventBusName', { value: this.scheduler.eventBus.eventBusName });
    for (const [name, queues] of this.scheduler.queues) {
      new CfnOutput(this, `Queue${name.replace(/[^A-Za-z0-9]/g, '')}Names`, {
        description: `SQS queues of task queue ${name}: critical, high, normal, low, dead letters`,
        value: [...queues.queues.map((q) => q.queueName), queues.deadLetterQueue.queueName].join(','),
      });
    }
  }
}
