/**
 * Times every request of an SDK client and adds it to the trace of the local invocation that made it (see
 * `traceInvocation`), so the bench can tell a handler's own time from its waits on AWS.
 */
import type { MiddlewareClient } from '#adapters/aws-meter';
import { noteAwsCall } from '#local/function-scope';

export function timeAwsCalls(client: MiddlewareClient, service: string): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const startedMs = performance.now();
      try {
        return await next(args);
      } finally {
        noteAwsCall({
          service,
          operation: context.commandName ?? 'unknown',
          startedMs,
          endedMs: performance.now(),
        });
      }
    },
    { step: 'initialize', name: 'agentSchedulerAwsCallTimer', override: true },
  );
}
