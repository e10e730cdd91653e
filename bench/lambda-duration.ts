/**
 * A handler's billed Lambda duration as it would be in AWS, from what it did here: its own time (the wall time of
 * the handler less the time it spent waiting on AWS requests) plus, for each wait, the in-Region round trip of
 * the requests it waited on. Locally those round trips go to emulators on the same two cores as everything else,
 * and take from a few to hundreds of milliseconds; in AWS a DynamoDB request takes single-digit milliseconds.
 *
 * The handler's own time is still measured on this machine, beside the emulators and the agents: an upper bound.
 */
import { type AwsCall, type InvocationTrace, withTrace } from '#local/function-scope';

/**
 * Round trips assumed for a request from a Lambda function in the same Region, in ms. DynamoDB: "single-digit
 * millisecond performance at any scale" (https://aws.amazon.com/dynamodb/), taken as 5 for an item request and
 * 10 for a transaction (it prepares and commits: two round trips inside DynamoDB). SQS, S3 and EventBridge state
 * no figure; 10, 20 and 10 are assumptions, set apart here so that other figures are one edit.
 */
export const AWS_ROUND_TRIP_MS: Readonly<Record<string, number>> = {
  dynamodb: 5,
  'dynamodb:TransactWriteItemsCommand': 10,
  'dynamodb:TransactGetItemsCommand': 10,
  sqs: 10,
  s3: 20,
  eventbridge: 10,
};

export const roundTripOf = (call: Pick<AwsCall, 'service' | 'operation'>, table = AWS_ROUND_TRIP_MS) =>
  table[`${call.service}:${call.operation}`] ?? table[call.service] ?? 10;

export interface ModelledDuration {
  /** The handler's own time: its wall time less the time some AWS request of it was outstanding. */
  readonly ownMs: number;
  /** The waits on AWS as they would be in AWS: each run of overlapping requests costs its slowest round trip. */
  readonly awsMs: number;
  /** What Lambda would bill (rounded up to the millisecond). */
  readonly billedMs: number;
}

/**
 * The modelled duration of one invocation that took `wallMs` here and made `calls`. Requests that overlap in time
 * were sent together (a `Promise.all`) and wait as one; requests one after another wait one after another.
 */
export function modelledDuration(
  wallMs: number,
  calls: readonly AwsCall[],
  table: Readonly<Record<string, number>> = AWS_ROUND_TRIP_MS,
): ModelledDuration {
  const sorted = [...calls].sort((a, b) => a.startedMs - b.startedMs);
  let waitedMs = 0;
  let awsMs = 0;
  let runEnd = Number.NEGATIVE_INFINITY;
  let runStart = 0;
  let runRoundTrip = 0;
  const closeRun = () => {
    if (runEnd === Number.NEGATIVE_INFINITY) return;
    waitedMs += runEnd - runStart;
    awsMs += runRoundTrip;
  };
  for (const call of sorted) {
    if (call.startedMs >= runEnd) {
      closeRun();
      runStart = call.startedMs;
      runEnd = call.endedMs;
      runRoundTrip = roundTripOf(call, table);
    } else {
      runEnd = Math.max(runEnd, call.endedMs);
      runRoundTrip = Math.max(runRoundTrip, roundTripOf(call, table));
    }
  }
  closeRun();
  const ownMs = Math.max(0, wallMs - waitedMs);
  return { ownMs, awsMs, billedMs: Math.ceil(ownMs + awsMs) };
}

/**
 * Runs `work` as one invocation of a function and adds its modelled billed duration to `into`, whether it
 * succeeds or throws. The AWS clients must be timed (`timeAwsCalls`) for its waits to be seen.
 */
export async function billed<T>(into: number[] | undefined, work: () => Promise<T>): Promise<T> {
  const trace: InvocationTrace = { awsCalls: [] };
  const started = performance.now();
  try {
    return await withTrace(trace, work);
  } finally {
    into?.push(modelledDuration(performance.now() - started, trace.awsCalls).billedMs);
  }
}
