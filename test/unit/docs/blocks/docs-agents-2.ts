// docs/agents.md, block 2: written by `npm run docs` from the page; edit the page, not this file.
import { type AgentSchedulerClient, RoleSubscription, Worker } from '../../../../sdk/index.ts';

declare const client: AgentSchedulerClient; // with the agent's token
declare const stream: URL;
declare function listen(stream: URL, options: { fence: number; signal: AbortSignal }): Promise<void>;
declare function startReporting(fence: number): void;
declare function stopReporting(reason: string): void;

const worker = new Worker({
  client,
  roles: {
    'stream-listener': async ({ leaseEpoch, signal }) => {
      // Runs while this agent holds the role; `signal` aborts the moment it is lost or given up.
      await listen(stream, { fence: leaseEpoch, signal });
    },
  },
});

// Or follow one role yourself:
const leader = new RoleSubscription(client, 'nightly-report');
leader.on('gotRole', ({ leaseEpoch }) => startReporting(leaseEpoch));
leader.on('lostRole', (_, reason) => stopReporting(reason)); // 'released' | 'lost' | 'session'
await leader.volunteer(); // true if granted now
leader.haveRole();
await leader.release();   // the next live volunteer gets it in the same write
