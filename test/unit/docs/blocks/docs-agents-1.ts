// docs/agents.md, block 1: written by `npm run docs` from the page; edit the page, not this file.
import { AgentSchedulerClient, Worker } from '../../../../sdk/index.ts';

declare const endpoint: string; // the API's URL: http://127.0.0.1:3000 locally, the stack's ApiUrl output in AWS
declare const operatorToken: string; // locally, in .agent-scheduler/local.json; in AWS, a signer instead
declare function research(payload: unknown, signal: AbortSignal): Promise<string>;

const operator = new AgentSchedulerClient({ endpoint, token: operatorToken });
await operator.submitTask({ queue: 'research', payload: { topic: 'tides' } }); // idempotency key added for you

const { token } = await operator.createAgent({ name: 'researcher-1', queues: ['research'], maxConcurrency: 4 });
const worker = new Worker({
  client: new AgentSchedulerClient({ endpoint, token }),
  concurrency: 4,
  handler: async (task, { signal, checkpoint }) => {
    // `signal` aborts when the lease is lost or the task is cancelled; `checkpoint(x)` is saved with the next
    // heartbeat and handed to whoever runs the task next.
    return { summary: await research(task.payload, signal) };
  },
});
worker.on('lost', (task, reason) => console.warn(task.taskId, reason));
worker.installSignalHandlers(); // SIGTERM drains: running tasks finish, no new ones are claimed
await worker.start();
