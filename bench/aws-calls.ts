/**
 * Times every request of an SDK client and adds it to the trace of the local invocation that made it (see
 * `traceInvocation`), so the bench can tell a handler's own time from its waits on AWS.
 */
import type { AwsMeter, MiddlewareClient } from '#adapters/aws-meter';
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

/**
 * The bench's view of a local stack's clients: each request metered as AWS bills it and timed as a wait of the
 * invocation that made it. The clients must sign as in AWS (`signRequests`), so the handlers' own time is AWS's.
 */
export function meterAndTime(
  meter: Pick<AwsMeter, 'attach'>,
  clients: {
    readonly dynamodb: MiddlewareClient;
    readonly sqs: MiddlewareClient;
    readonly s3: MiddlewareClient;
  },
): void {
  for (const [service, client] of Object.entries(clients)) {
    meter.attach(client, service);
    timeAwsCalls(client, service);
  }
}
