/**
 * The rate-limit scenario (`npm run bench -- --scenario rate-limit [--agents N] [--tasks N] [--seconds S]`): one
 * named rate limit of 10 a second (burst 10) shared by three queues, 20 agents claiming in parallel (each claim up to
 * 5, each task completed at once), a backlog larger than the limit lets through, on the local stack. It reports the
 * most grants any one-second stretch saw (sliding, to the millisecond), against the bound of `limit + burst`, and
 * the share of the grants the limit allowed over the run that were made while work waited.
 */
import type { ClaimedTask } from '#core/claim';
import { startLocalStack } from '#local/local-stack';

export interface RateLimitBenchOptions {
  readonly agents: number;
  readonly tasks: number;
  readonly seconds: number;
}

export interface RateLimitBenchReport {
  readonly scenario: 'rate-limit';
  readonly limit: { readonly perSecond: number; readonly burst: number; readonly queues: number };
  readonly agents: number;
  readonly tasks: number;
  readonly seconds: number;
  readonly grants: number;
  /** What the limit allowed over the run: `perSecond × seconds + burst`. */
  readonly allowed: number;
  /** `grants / allowed`, in percent. */
  readonly usedPercent: number;
  /** The most grants in any one-second stretch, and the bound (`perSecond + burst`). */
  readonly mostInOneSecond: number;
  readonly bound: number;
  /** Tasks still queued at the end: work waited the whole run. */
  readonly stillQueued: number;
}

const PER_SECOND = 10;
const BURST = 10;
const QUEUES = ['rl-a', 'rl-b', 'rl-c'];

export async function runRateLimit(options: RateLimitBenchOptions): Promise<RateLimitBenchReport> {
  const stack = await startLocalStack({ name: 'bench-rate-limit', queues: QUEUES });
  try {
    const { scheduler } = stack;
    await scheduler.setRateLimit('shared.rps', { limit: PER_SECOND, per: 'second', burst: BURST });
    for (let i = 0; i < options.tasks; i += 25) {
      await scheduler.submitBatch(
        Array.from({ length: Math.min(25, options.tasks - i) }, (_, j) => ({
          queue: QUEUES[(i + j) % QUEUES.length] as string,
          payload: { n: i + j },
          rateLimits: [{ name: 'shared.rps' }],
        })),
      );
    }
    const agents = await Promise.all(
      Array.from({ length: options.agents }, async (_, i) => {
        const { agent } = await scheduler.registerAgent({
          name: `rl-${i}`,
          queues: QUEUES,
          maxConcurrency: 5,
        });
        const session = await scheduler.openSession(agent.agentId);
        return { agentId: agent.agentId, sessionId: session.sessionId };
      }),
    );
    const grants: number[] = [];
    const started = Date.now();
    const until = started + options.seconds * 1_000;
    await Promise.all(
      agents.map(async (agent) => {
        while (Date.now() < until) {
          const claimed: ClaimedTask[] = await scheduler.claim({ ...agent, max: 5 }).catch(() => []);
          for (const c of claimed) {
            const grantedAt = c.leaseDeadline - c.timeoutSeconds * 1_000;
            if (grantedAt < until) grants.push(grantedAt);
          }
          await Promise.all(
            claimed.map((c) =>
              scheduler
                .complete({ agentId: agent.agentId, taskId: c.taskId, leaseEpoch: c.leaseEpoch })
                .catch(() => undefined),
            ),
          );
          if (claimed.length === 0) await new Promise((resolve) => setTimeout(resolve, 25));
        }
      }),
    );
    grants.sort((a, b) => a - b);
    let most = 0;
    for (let i = 0, j = 0; i < grants.length; i++) {
      while ((grants[j] ?? 0) <= (grants[i] ?? 0) - 1_000) j++;
      most = Math.max(most, i - j + 1);
    }
    const allowed = PER_SECOND * options.seconds + BURST;
    const stats = await scheduler.queueStats();
    const stillQueued = stats
      .filter((q) => QUEUES.includes(q.name))
      .reduce((sum, q) => sum + Object.values(q.depth).reduce((a, b) => a + b, 0), 0);
    return {
      scenario: 'rate-limit',
      limit: { perSecond: PER_SECOND, burst: BURST, queues: QUEUES.length },
      agents: options.agents,
      tasks: options.tasks,
      seconds: options.seconds,
      grants: grants.length,
      allowed,
      usedPercent: Math.round((1_000 * grants.length) / allowed) / 10,
      mostInOneSecond: most,
      bound: PER_SECOND + BURST,
      stillQueued,
    };
  } finally {
    await stack.stop();
  }
}
