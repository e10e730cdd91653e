// README.md, block 1: written by `npm run docs` from the page; edit the page, not this file.
import { AgentSchedulerClient, Worker } from '../../../../sdk/index.ts';

const client = new AgentSchedulerClient({
  endpoint: process.env.AGENT_SCHEDULER_ENDPOINT ?? 'http://127.0.0.1:3000',
  token: process.env.AGENT_SCHEDULER_TOKEN ?? '', // the agent's token
});
const worker = new Worker({
  client,
  concurrency: 4,
  handler: async (task, { signal }) => ({ answer: 42, asked: task.payload, aborted: signal.aborted }),
});
worker.installSignalHandlers(); // SIGTERM drains: running tasks finish, no new ones are claimed
await worker.start();
