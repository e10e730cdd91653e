/**
 * A workflow on the TypeScript SDK, end to end against a running stack (`npm start`, or a deployed one):
 *
 *   review ─┬─► part-0 ─┐
 *           ├─► part-1 ─┤  fan-out: one follow-up task per part of the document
 *           ├─► part-2 ─┤
 *           └─► combine ◄┘  fan-in: dependsOn every part, queued once they all succeeded, their results in its claim;
 *                  │         then it waits on a waitpoint for a person's approval, holding no lease meanwhile
 *                  └─ approved through the waitpoint's callback URL: the review is published
 *
 * As an operator it registers an agent, runs a `Worker` as that agent in this process, submits the review, answers
 * the approval (a POST to the callback URL, as a person's click or a webhook would; `--by-hand` leaves it to you),
 * waits for the end, stops the worker (it drains) and revokes the agent. `--json` prints only a report, as JSON.
 *
 * Endpoint and operator token: AGENT_SCHEDULER_ENDPOINT and AGENT_SCHEDULER_TOKEN, else the
 * `.agent-scheduler/local.json` that `npm start` (or `agent-scheduler dev`) writes, looked for from here up.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  AgentSchedulerClient,
  type BatchItemResult,
  type ClaimedTask,
  type TaskContext,
  type WaitResult,
  Worker,
} from 'agent-scheduler/sdk';

/** A queue of the local stack. Its tasks require this example's label, so no other agent of the queue takes them. */
const QUEUE = 'research';
const LABEL = { example: 'workflow' };
const DOCUMENT = ['Tides rise twice a day.', 'The moon pulls the sea.', 'Spring tides follow a full moon.'];
/** How long the approval may wait: a person may take a day. */
const APPROVAL_SECONDS = 86_400;

const json = process.argv.includes('--json');
const byHand = process.argv.includes('--by-hand');
const say = (line: string) => {
  if (!json) console.log(line);
};

/** The endpoint and operator token: from the environment, else from the nearest `.agent-scheduler/local.json`. */
function connection(): { endpoint: string; token: string } {
  const { AGENT_SCHEDULER_ENDPOINT: endpoint, AGENT_SCHEDULER_TOKEN: token } = process.env;
  if (endpoint && token) return { endpoint, token };
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    const file = join(dir, '.agent-scheduler', 'local.json');
    if (existsSync(file)) {
      const local = JSON.parse(readFileSync(file, 'utf8')) as { endpoint: string; operatorToken: string };
      return { endpoint: local.endpoint, token: local.operatorToken };
    }
    if (dirname(dir) === dir) break;
  }
  console.error(
    'no stack found: run `npm start` in another terminal, or set AGENT_SCHEDULER_ENDPOINT and AGENT_SCHEDULER_TOKEN',
  );
  process.exit(2);
}

/** The ids of submitted follow-up tasks; throws (the attempt fails and is retried) if one was refused. */
function ids(results: readonly BatchItemResult[]): string[] {
  return results.map((result) => {
    if (!result.ok) throw new Error(`a follow-up task was refused: ${result.error.message}`);
    return result.task.taskId;
  });
}

/** Fans out: a task per part, then the fan-in that depends on them all. Keys name them, so a retry makes no more. */
async function review(task: ClaimedTask, ctx: TaskContext) {
  const { parts } = task.payload as { parts: string[] };
  const partIds = ids(
    await ctx.submit(
      parts.map((text, i) => ({
        key: `part-${i}`,
        queue: QUEUE,
        payload: { kind: 'part', text },
        require: LABEL,
      })),
    ),
  );
  const [combineId] = ids(
    await ctx.submit([
      {
        key: 'combine',
        queue: QUEUE,
        payload: { kind: 'combine', partIds },
        dependsOn: partIds,
        require: LABEL,
      },
    ]),
  );
  return { partIds, combineId };
}

/** One part: its words counted (a real agent would have a model read it). */
async function part(task: ClaimedTask, ctx: TaskContext) {
  const { text } = task.payload as { text: string };
  ctx.progress({ percent: 50, message: `reading "${text}"` });
  return { text, words: text.split(/\s+/).length };
}

/** What the approver is sent when the combined review waits for them; `main` answers it, as a person would. */
let askApprover: (suspended: WaitResult) => void = () => undefined;

/** The fan-in: the parts' results from its claim, then a person's approval through a waitpoint, then the end. */
async function combine(task: ClaimedTask, ctx: TaskContext) {
  const { partIds } = task.payload as { partIds: string[] };
  const results = task.dependencies ?? {};
  const words = partIds.map((id) => (results[id]?.result as { words: number } | undefined)?.words ?? 0);
  const draft = { words: words.reduce((a, b) => a + b, 0), perPart: words };
  if (!ctx.waitpoint) {
    // The lease ends here; the task runs again once the waitpoint is answered, with `draft` as its checkpoint.
    return ctx.suspend({ timeoutSeconds: APPROVAL_SECONDS, checkpoint: draft, onSuspended: askApprover });
  }
  const { outcome, data, reason } = ctx.waitpoint;
  return {
    ...(task.checkpoint as typeof draft),
    published: outcome === 'completed',
    approval: data ?? reason ?? outcome,
  };
}

const handlers = { review, part, combine } as const;

async function main() {
  const { endpoint, token } = connection();
  const operator = new AgentSchedulerClient({ endpoint, token });
  const { agent, token: agentToken } = await operator.createAgent({
    name: 'workflow-example',
    queues: [QUEUE],
    maxConcurrency: 4,
    labels: LABEL,
  });
  const worker = new Worker({
    client: new AgentSchedulerClient({ endpoint, token: agentToken }),
    concurrency: 4,
    handler: (task, ctx) => handlers[(task.payload as { kind: keyof typeof handlers }).kind](task, ctx),
  });
  worker.on('completed', (task) =>
    say(`  ${(task.payload as { kind: string }).kind} ${task.taskId} succeeded`),
  );
  const asked = new Promise<WaitResult>((resolve) => {
    askApprover = resolve;
  });
  await worker.start();
  try {
    const started = performance.now();
    const { task } = await operator.submitTask({
      queue: QUEUE,
      payload: { kind: 'review', parts: DOCUMENT },
      require: LABEL,
    });
    say(`review ${task.taskId} submitted: ${DOCUMENT.length} parts`);
    const reviewed = await operator.waitForTask(task.taskId, { timeoutMs: 60_000 });
    const { combineId, partIds } = reviewed.result as { combineId: string; partIds: string[] };
    const { waitpoint, callbackUrl } = await asked;
    say(`approval asked (waitpoint ${waitpoint.waitpointId}): the combined review is suspended`);
    if (byHand) {
      say(
        `  approve it: curl -X POST ${callbackUrl} -H 'content-type: application/json' -d '{"approvedBy":"me"}'`,
      );
      say(
        `  or: npx agent-scheduler waitpoints complete ${waitpoint.waitpointId} --data '{"approvedBy":"me"}'`,
      );
    } else {
      // The callback URL is the credential: whoever holds it can answer, with no token.
      const answered = await fetch(callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ approvedBy: 'workflow.ts' }),
      });
      say(`  approved through the callback URL (${answered.status})`);
    }
    const combined = await operator.waitForTask(combineId, {
      timeoutMs: byHand ? APPROVAL_SECONDS * 1_000 : 60_000,
    });
    const seconds = Math.round(performance.now() - started) / 1_000;
    const report = {
      reviewId: task.taskId,
      partIds,
      combineId,
      status: combined.status,
      result: combined.result,
      seconds,
    };
    if (json) console.log(JSON.stringify(report));
    else say(`done in ${seconds} s: ${combined.status}, ${JSON.stringify(combined.result)}`);
  } finally {
    await worker.stop();
    await operator.revokeAgent(agent.agentId);
  }
}

await main();
