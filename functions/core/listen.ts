/**
 * Claims of agents listening on the push channel: an empty one leaves the agent idle, to be woken.
 */

import type { Labels } from '#domain/labels';
import { type ClaimedTask, type ClaimRequest, claimTasks } from './claim';
import type { SchedulerContext } from './context';
import { markIdle } from './push';

/**
 * A claim by an agent listening on the push channel. When it finds nothing, the agent is marked idle (it hears the
 * next wake) and its queues are looked at once more: a task made claimable between the first look and the mark
 * woke nobody, and would otherwise wait for the safety poll. `retryAfterMs` is set when the agent listens.
 */
export async function claimOrListen(
  ctx: SchedulerContext,
  request: ClaimRequest,
): Promise<{ readonly tasks: ClaimedTask[]; readonly retryAfterMs?: number }> {
  // The claim reads the agent's session, which names its queues: the listening mark needs no read of its own.
  const seen: { queues?: readonly string[]; capacity?: number; labels?: Labels } = {};
  const tasks = await claimTasks(ctx, request, seen);
  if (tasks.length > 0 || !ctx.push) return { tasks };
  const queues = seen.queues ?? request.queues ?? (await ctx.agents.get(request.agentId))?.queues ?? [];
  // A wake of it stands for the tasks this claim could have taken (at least one: a full agent frees a slot soon).
  const listening = await markIdle(
    ctx,
    request.agentId,
    queues,
    Math.max(1, seen.capacity ?? 1),
    seen.labels,
  );
  if (!listening) return { tasks };
  // Idle already (a safety poll): a task made claimable since its last mark found it idle and woke it, or woke
  // another idle agent; there is no gap between the look and the mark to cover.
  if (listening.wasIdle) return { tasks, retryAfterMs: listening.retryAfterMs };
  // Its own read of the session: the look before may have dropped stale entries of it since the copy was read.
  const { sessionRead: _copy, ...look } = request;
  const again = await claimTasks(ctx, look);
  return again.length > 0 ? { tasks: again } : { tasks: again, retryAfterMs: listening.retryAfterMs };
}
