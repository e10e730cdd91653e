/**
 * The example scheduler: what `infra/app.ts` deploys and what `npm start` runs locally, so both have the same
 * queues and schedules. Type-only imports keep this module free of the CDK for the local runner.
 */
import type { AgentSchedulerProps } from './agent-scheduler';

export const EXAMPLE_SCHEDULER: AgentSchedulerProps = {
  queues: ['research', 'summaries', 'emails'],
  schedules: [
    {
      name: 'nightly-digest',
      expression: 'cron(0 2 * * ? *)',
      timeZone: 'Europe/Paris',
      task: { queue: 'summaries', priority: 'low', payload: { kind: 'digest' } },
      overlap: 'skip',
      missedRuns: 'runOnce',
    },
  ],
};
