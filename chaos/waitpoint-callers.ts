/**
 * The racing callers of the in-process chaos run. Each suspension an agent was told of is answered, a moment later,
 * by three to six callers at once, each drawn: an operator completing it with data of its own (30 %) or rejecting it
 * (10 %), or the webhook it was given to: its body sent by a caller (30 %), sent and then sent again once answered,
 * as a sender retries (15 %), or another body (15 %). Exactly one answer ends it; a suspension left to time out is
 * not answered. A suspension whose first answer was lost is also sent its first token, which must name no waitpoint.
 *
 * Every answer is recorded with what its caller was told; one told nothing (a 5xx, a timeout) is sent again, as a
 * caller would, up to `TRIES` times. All go through the scheduler under the run's faults.
 */
import type { Resolved } from '#core/waitpoints';
import type { AgentSuspension, InProcessRun } from './inprocess-stack';
import type { WaitpointAnswer } from './waitpoint-history';

/** Sends of one answer while its caller is told nothing. */
const TRIES = 4;
/** The longest a suspension waits for its callers (they answer a moment after the agent is told of it). */
const ANSWER_AFTER_MS = 200;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Answers each suspension as the agents are told of them, until the run stops. */
export async function answerWaitpoints(run: InProcessRun): Promise<void> {
  const races = new Set<Promise<void>>();
  let next = 0;
  while (!run.live.stopping) {
    for (; next < run.suspensions.length; next++) {
      const suspension = run.suspensions[next];
      if (!suspension) continue;
      const race: Promise<void> = raceOf(run, suspension).finally(() => races.delete(race));
      races.add(race);
    }
    await sleep(50);
  }
  await Promise.all(races);
}

type Sent = Omit<WaitpointAnswer, 'at' | 'result' | 'code'>;

/** The callers of one suspension, drawn, and started at once. */
async function raceOf(run: InProcessRun, suspension: AgentSuspension): Promise<void> {
  const { scheduler } = run;
  const { waitpointId, token } = suspension;
  await sleep(run.random() * ANSWER_AFTER_MS);
  const callers: (() => Promise<unknown>)[] = [];
  const { staleToken } = suspension;
  if (staleToken !== undefined) {
    const body = { stale: true };
    callers.push(() =>
      send(run, { waitpointId, by: 'callback', outcome: 'completed', data: body, staleToken: true }, () =>
        scheduler.answerCallback(staleToken, body),
      ),
    );
  }
  if (suspension.answered) {
    // The webhook's own body: every caller that sends it sends the same.
    const body = { by: 'callback', waitpointId };
    const callback = (data: unknown, again = false) =>
      send(
        run,
        { waitpointId, by: 'callback', outcome: 'completed', data, ...(again ? { again } : {}) },
        () => scheduler.answerCallback(token, data),
      );
    const count = 3 + Math.floor(run.random() * 4);
    for (let caller = 0; caller < count; caller++) {
      const draw = run.random();
      if (draw < 0.3) {
        const data = { by: 'operator', caller };
        callers.push(() =>
          send(run, { waitpointId, by: 'operator', outcome: 'completed', data }, () =>
            scheduler.answerWaitpoint(waitpointId, { outcome: 'completed', data }),
          ),
        );
      } else if (draw < 0.4) {
        const reason = `caller ${caller} says no`;
        callers.push(() =>
          send(run, { waitpointId, by: 'operator', outcome: 'rejected', reason }, () =>
            scheduler.answerWaitpoint(waitpointId, { outcome: 'rejected', reason }),
          ),
        );
      } else if (draw < 0.7) callers.push(() => callback(body));
      else if (draw < 0.85) callers.push(async () => (await callback(body)) && callback(body, true));
      else callers.push(() => callback({ by: 'callback', waitpointId, other: caller }));
    }
  }
  await Promise.all(callers.map((caller) => caller()));
}

/**
 * Sends one answer until its caller is told something, recording each send with what it was told; true once it
 * was told anything (200, 409, 404).
 */
async function send(run: InProcessRun, answer: Sent, call: () => Promise<Resolved>): Promise<boolean> {
  for (let attempt = 0; attempt < TRIES; attempt++) {
    const at = Date.now();
    const sent = await run.record({ op: 'answer' }, call);
    const result: WaitpointAnswer['result'] = sent.ok
      ? sent.value.replayed
        ? 'replayed'
        : 'accepted'
      : sent.code === 'WaitpointResolved'
        ? 'refused'
        : sent.code === 'WaitpointNotFound'
          ? 'notFound'
          : 'unknown';
    run.history.answers.push({ ...answer, at, result, ...(sent.ok ? {} : { code: sent.code }) });
    if (result !== 'unknown') return true;
    await sleep(100 * (attempt + 1));
  }
  return false;
}
