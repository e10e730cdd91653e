/**
 * The chaos run's network owes every route a request delivered late and one whose answer is lost: a route first
 * called once the faults have stopped (a role that began to move late) gets them all the same while the run goes
 * on, and nothing once it stops.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FaultCounts, FaultyNetwork } from '../../../chaos/http-faults';

const URL_OF_RELEASE = 'http://127.0.0.1:1/v1/agent/roles/leader/release';

const networkWith = (state: { faultsOn: boolean; running: boolean }) => {
  const faults = new FaultCounts();
  const network = new FaultyNetwork({
    random: () => 0.99,
    faultsOn: () => state.faultsOn,
    runningOn: () => state.running,
    faults,
    attemptTimeoutMs: 50,
    lateDelayMs: { min: 1, max: 1 },
  });
  return { faults, fetch: network.fetchFor({ cutOffUntil: 0 }) };
};

const release = (fetch: typeof globalThis.fetch) =>
  fetch(URL_OF_RELEASE, { method: 'POST', body: '{"leaseEpoch":3}', signal: AbortSignal.timeout(50) });

describe('the chaos network’s owed faults', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('gives a route first called after the faults one late delivery, then one lost answer, then serves it', async () => {
    const served = vi.fn(async () => new Response('{"ok":true}', { status: 200 }));
    vi.stubGlobal('fetch', served);
    const { faults, fetch } = networkWith({ faultsOn: false, running: true });

    await expect(release(fetch)).rejects.toThrow();
    expect(faults.byWhere.deliveredLate).toEqual({ releaseRole: 1 });
    await vi.waitFor(() => expect(served).toHaveBeenCalledTimes(1));

    await expect(release(fetch)).rejects.toThrow(/injected loss of the answer/);
    expect(faults.byWhere.answerLost).toEqual({ releaseRole: 1 });
    expect(served).toHaveBeenCalledTimes(2);

    const answer = await release(fetch);
    expect(answer.status).toBe(200);
    expect(faults.byKind).toEqual({ deliveredLate: 1, answerLost: 1 });
  });

  it('owes nothing once the run stops', async () => {
    vi.stubGlobal(
      'fetch',
      vi.fn(async () => new Response('{"ok":true}', { status: 200 })),
    );
    const { faults, fetch } = networkWith({ faultsOn: false, running: false });
    expect((await release(fetch)).status).toBe(200);
    expect(faults.byKind).toEqual({});
  });
});
