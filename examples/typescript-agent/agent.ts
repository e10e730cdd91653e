/**
 * A research agent on the TypeScript SDK: a `Worker` that runs one kind of task, `{ topic, sources? }`, as an agent
 * built on a model would. It reads its sources one by one (the "model" is a script: no network, the same answer every
 * time), saves what it has read as a checkpoint after each, so that a retry on another agent starts where this one
 * stopped, reports its progress for people watching, and returns a summary as the task's result.
 *
 *   AGENT_SCHEDULER_ENDPOINT=http://127.0.0.1:3000 AGENT_SCHEDULER_TOKEN=a_... npx tsx examples/typescript-agent/agent.ts
 *
 * The token is an agent's (`npx agent-scheduler agents create ...` prints it), as for `agent-scheduler worker`.
 * SIGTERM or Ctrl-C drains: running tasks finish, no new ones are claimed, then the process exits; a second signal
 * stops at once and gives running tasks back to their queue.
 */
import { AgentSchedulerClient, type ClaimedTask, type TaskContext, Worker } from 'agent-scheduler/sdk';

/** What a task asks: a topic, and how many sources to read about it. */
interface Research {
  readonly topic: string;
  readonly sources?: number;
}

/** What the agent has read so far: saved after each source, handed to whoever runs the task next. */
interface Notes {
  readonly read: readonly string[];
}

/** How long reading one source takes: what a call to a search API or a model would. */
const READ_MS = 200;

/** The variable, or a clear exit: a client given `undefined` would fail later and further from the cause. */
function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set: see examples/typescript-agent/README.md`);
    process.exit(2);
  }
  return value;
}

/** Waits `ms`, or rejects as soon as `signal` aborts (the lease is gone: nothing returned would be kept). */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

/** One source about `topic`, read (a real agent calls a search API or a model here). */
async function readSource(topic: string, index: number, signal: AbortSignal): Promise<string> {
  await pause(READ_MS, signal);
  return `source ${index + 1} on ${topic}: ${topic.length + index} facts`;
}

async function research(task: ClaimedTask, ctx: TaskContext): Promise<unknown> {
  const { topic, sources = 3 } = task.payload as Research;
  // A retry starts from the notes the last holder saved, not from the first source.
  const notes = [...((task.checkpoint as Notes | undefined)?.read ?? [])];
  const resumedFrom = notes.length;
  for (let i = notes.length; i < sources; i++) {
    ctx.progress({
      percent: Math.round((100 * i) / sources),
      message: `reading source ${i + 1} of ${sources}`,
    });
    notes.push(await readSource(topic, i, ctx.signal));
    ctx.checkpoint({ read: notes } satisfies Notes);
  }
  return {
    topic,
    summary: `${topic}: ${notes.length} sources read`,
    notes,
    resumedFrom,
    attempt: task.attempt,
  };
}

const client = new AgentSchedulerClient({
  endpoint: required('AGENT_SCHEDULER_ENDPOINT'),
  token: required('AGENT_SCHEDULER_TOKEN'),
});
const worker = new Worker({ client, handler: research, concurrency: 2 });
worker.on('picked', (task) => console.log(`picked ${task.taskId} (attempt ${task.attempt})`));
worker.on('completed', (task, result) => console.log(`completed ${task.taskId}: ${JSON.stringify(result)}`));
worker.on('failed', (task, error) => console.log(`failed ${task.taskId}: ${String(error)}`));
worker.on('lost', (task, reason) => console.log(`lost ${task.taskId}: ${reason}`));
worker.on('error', (error) => console.error('error:', error));
// SIGTERM and SIGINT drain; once the worker has stopped nothing keeps the process alive, and it exits with 0.
worker.installSignalHandlers();
await worker.start();
console.log('agent started: waiting for tasks (Ctrl-C drains and stops)');
