/**
 * Completions sent together, as a database commits a group: a completion that finishes while none is in flight is
 * sent at once, so nothing waits; those that finish meanwhile go together in the next call, up to the server's ten
 * and as many as its body has room for. A group the server refuses whole (over the body limit, one result nested
 * too deep) is no refusal of any of its tasks: each is then sent alone, and only one refused alone is refused.
 */

import type { AgentSchedulerClient } from './client.js';
import { errorForResponse } from './errors.js';
import { isRefusal, SERVER_LIMITS, takeWithinBudget } from './limits.js';
import type { BatchItemResult, ClaimInput, ClaimResult, CompleteItem } from './types.js';

/** A claim a completion call carries (`ClaimLoop.carry`): what to send, and where its answer goes. */
export interface CarriedClaim {
  readonly input: ClaimInput;
  answered(claimed: ClaimResult | undefined): void;
}

/** A completion waiting for the call that carries it, with its size in that call's body. */
interface PendingCompletion {
  readonly item: CompleteItem;
  readonly bytes: number;
  readonly signal: AbortSignal;
  /** The handler span's context, sent when the completion goes alone (a call of several names no one span). */
  readonly traceparent: string | undefined;
  readonly settle: { resolve(): void; reject(error: unknown): void };
}

export class CompletionSender {
  private readonly queue: PendingCompletion[] = [];
  private sending = false;

  constructor(
    private readonly client: AgentSchedulerClient,
    private readonly options: {
      /** How long one attempt of a call may take. */
      readonly attemptTimeoutMs: () => number;
      /** The claim a call may carry, for the slots its completions free (none: each call completes only). */
      readonly carryClaim?: (freed: number) => CarriedClaim | undefined;
    },
  ) {}

  /**
   * Settles once the server has recorded `item` (of `bytes` bytes of JSON), or rejects with what it answered for
   * it; `signal` abandons it, sent or not.
   */
  send(item: CompleteItem, bytes: number, signal: AbortSignal, traceparent?: string): Promise<void> {
    const settled = new Promise<void>((resolve, reject) => {
      this.queue.push({ item, bytes, signal, traceparent, settle: { resolve, reject } });
    });
    if (!this.sending) void this.flush();
    return settled;
  }

  private async flush(): Promise<void> {
    this.sending = true;
    while (this.queue.length > 0) {
      const taken = takeWithinBudget(
        this.queue,
        (waiting) => waiting.bytes,
        SERVER_LIMITS.completionsPerCall,
      );
      // A lease that ran out while its completion waited is not sent at all.
      for (const { signal, settle } of taken) if (signal.aborted) settle.reject(signal.reason);
      const group = taken.filter(({ signal }) => !signal.aborted);
      const [only] = group;
      if (group.length === 1 && only) await this.sendAlone(only);
      else if (group.length > 1) await this.sendGroup(group);
    }
    this.sending = false;
  }

  private async sendAlone({ item, signal, traceparent, settle }: PendingCompletion): Promise<void> {
    const { taskId, ...input } = item;
    const call = {
      signal,
      timeoutMs: this.options.attemptTimeoutMs(),
      ...(traceparent === undefined ? {} : { traceparent }),
    };
    const carried = this.options.carryClaim?.(1);
    try {
      if (carried) {
        const answer = await this.client.completeAndClaim(taskId, input, carried.input, call);
        carried.answered(answer.next);
      } else await this.client.complete(taskId, input, call);
    } catch (error) {
      carried?.answered(undefined);
      settle.reject(error);
      return;
    }
    settle.resolve();
  }

  private async sendGroup(group: readonly PendingCompletion[]): Promise<void> {
    let results: readonly BatchItemResult[];
    // Abandoned as soon as one of its leases runs out; the others are sent again on their own.
    const call = {
      signal: AbortSignal.any(group.map((g) => g.signal)),
      timeoutMs: this.options.attemptTimeoutMs(),
    };
    const items = group.map((g) => g.item);
    const carried = this.options.carryClaim?.(group.length);
    try {
      if (carried) {
        const answer = await this.client.completeTasksAndClaim(items, carried.input, call);
        carried.answered(answer.next);
        results = answer.results;
      } else results = await this.client.completeTasks(items, call);
    } catch (error) {
      carried?.answered(undefined);
      if (!isRefusal(error)) {
        for (const { settle } of group) settle.reject(error);
        return;
      }
      for (const waiting of group) {
        if (waiting.signal.aborted) waiting.settle.reject(waiting.signal.reason);
        else await this.sendAlone(waiting);
      }
      return;
    }
    group.forEach(({ settle }, i) => {
      const result = results[i];
      if (result?.ok) settle.resolve();
      else if (result) settle.reject(errorForResponse({ status: result.status, ...result.error }));
      else settle.reject(new Error('the server answered fewer completions than were sent'));
    });
  }
}
