/**
 * A handler's suspension on a waitpoint (`ctx.suspend`), checked where the handler asks for it: a value the server
 * would refuse throws in the handler, which can still do something else, rather than failing the attempt later.
 */
import { SERVER_LIMITS, toJson } from './limits.js';
import type { WaitInput } from './types.js';
import { Suspend, type SuspendOptions } from './worker-events.js';

/** The `Suspend` a handler returns, its options within the server's bounds (the timeout rounded up). */
export function suspension(options: SuspendOptions): Suspend {
  const { timeoutSeconds, onTimeout, checkpoint } = options;
  if (
    typeof timeoutSeconds !== 'number' ||
    !(timeoutSeconds > 0 && timeoutSeconds <= SERVER_LIMITS.waitSeconds)
  ) {
    throw new RangeError(`timeoutSeconds: more than 0 and at most ${SERVER_LIMITS.waitSeconds} (30 days)`);
  }
  if (onTimeout !== undefined && onTimeout !== 'resume' && onTimeout !== 'fail') {
    throw new TypeError("onTimeout: 'resume' or 'fail'");
  }
  if (checkpoint !== undefined) {
    const { bytes } = toJson(checkpoint);
    if (bytes > SERVER_LIMITS.checkpointBytes) {
      throw new RangeError(
        `a checkpoint is ${bytes} bytes of JSON; the server takes at most ${SERVER_LIMITS.checkpointBytes}`,
      );
    }
  }
  return new Suspend({ ...options, timeoutSeconds: Math.ceil(timeoutSeconds) });
}

/** The suspension a handler returned or threw, if it did. */
export function suspendOf(asked: unknown): Suspend | undefined {
  return asked instanceof Suspend ? asked : undefined;
}

/**
 * The body of the wait that carries out `suspend`: its checkpoint, else the handler's latest one not yet sent (the
 * heartbeats would not carry it once the lease has ended).
 */
export function waitInputOf(
  { options }: Suspend,
  leaseEpoch: number,
  unsentCheckpoint: { readonly value: unknown } | undefined,
): WaitInput {
  const checkpoint = options.checkpoint !== undefined ? options.checkpoint : unsentCheckpoint?.value;
  return {
    leaseEpoch,
    timeoutSeconds: options.timeoutSeconds,
    ...(options.onTimeout === undefined ? {} : { onTimeout: options.onTimeout }),
    ...(checkpoint === undefined ? {} : { checkpoint }),
  };
}
