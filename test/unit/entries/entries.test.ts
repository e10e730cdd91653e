/**
 * The Lambda entry points wired as deployed: environment read at start-up, middy with Powertools, the handler
 * answering. AWS calls are mocked; what they would do is proven on the emulators elsewhere.
 */
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DUE_SHARDS, LISTED_SHARDS } from '#adapters/tables';

const ddb = mockClient(DynamoDBDocumentClient);

/** The metadata of an EMF document: its one metric directive. */
interface EmfMetadata {
  readonly CloudWatchMetrics: readonly {
    readonly Namespace: string;
    readonly Dimensions: readonly (readonly string[])[];
    readonly Metrics: readonly { readonly Name: string; readonly Unit: string }[];
  }[];
}
// The clients' prototypes and the environment are shared with the files that run after this one in its worker.
afterAll(() => {
  ddb.restore();
  vi.unstubAllEnvs();
});
const context = {
  functionName: 'fn',
  awsRequestId: 'req-1',
  invokedFunctionArn: 'arn:aws:lambda:eu-west-1:123456789012:function:fn',
  getRemainingTimeInMillis: () => 5_000,
} as never;

beforeAll(() => {
  vi.stubEnv('TASKS_TABLE_NAME', 'tasks');
  vi.stubEnv('AGENTS_TABLE_NAME', 'agents');
  vi.stubEnv('LEASES_TABLE_NAME', 'leases');
  vi.stubEnv(
    'QUEUE_DIRECTORY',
    JSON.stringify({ base: 'https://sqs.eu-west-1.amazonaws.com/123/', queues: { q: ['c', 'h', 'n', 'l'] } }),
  );
  vi.stubEnv('SCHEDULE_GROUP_NAME', 'group');
  vi.stubEnv('SCHEDULE_TARGET_ARN', 'arn:aws:lambda:eu-west-1:123:function:fire');
  vi.stubEnv('SCHEDULE_ROLE_ARN', 'arn:aws:iam::123:role/r');
  vi.stubEnv('SCHEDULE_DEAD_LETTER_ARN', 'arn:aws:sqs:eu-west-1:123:dlq');
  vi.stubEnv('POWERTOOLS_METRICS_NAMESPACE', 'AgentScheduler');
  vi.stubEnv('AWS_REGION', 'eu-west-1');
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'x');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'y');
});
afterEach(() => ddb.reset());

// Each test imports its entry, and the entry the whole function (the AWS SDK's clients, every operation): 4 to 5 s of
// a loaded machine's CPU for the first, past the default bound of 5 s.
describe('Lambda entries', { timeout: 30_000 }, () => {
  it('supervisor: one pass over nothing reports a zero cycle and emits metrics', async () => {
    ddb.on(ScanCommand).resolves({ Items: [] });
    ddb.on(QueryCommand).resolves({ Items: [] });
    // Where the list walk of the queue stands: never walked.
    ddb.on(GetCommand).resolves({});
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const { handler } = await import('../../../functions/supervisor');

    const cycle = await handler({ scheduledTime: '2027-01-01T00:00:00Z' }, context);

    expect(cycle).toMatchObject({
      scheduledTime: '2027-01-01T00:00:00Z',
      recoveredLeases: 0,
      requeued: 0,
      deadLettered: 0,
      agentsOffline: 0,
      reconciled: 0,
      promoted: 0,
      starved: 0,
      escalated: 0,
      noCapableAgent: [],
      spawnRequested: [],
      pausedQueuesSkipped: 0,
      missedRunsFired: 0,
      missedRunsSkipped: 0,
      cascadesAdvanced: 0,
      cascadesFinished: 0,
      pendingRuns: 0,
      activeRuns: 0,
      sessionsScanned: 0,
      leasesRecovered: 0,
      wakeAttempts: 0,
      wakesSucceeded: 0,
      wakesFailed: 0,
      noMatchingSession: 0,
      recentlyNotified: 0,
      unclaimable: 0,
      needsAttention: 0,
      ids: { leasesRecovered: [], starved: [], needsAttention: [] },
      errors: 0,
      failures: [],
    });
    // Each shard of the `due` index once, the suspended tasks' partition with them (reconcile takes the reclaim
    // sweep's answers), each of the queue's list partitions once (the list walk, which finds nothing new: no place
    // to save), and the open cascades' list.
    // Then the queue's depth, counted as GET /v1/queues counts it: the queue controls, each shard of the `due` index
    // again (all of it), and the queue's list partitions past where the walk stands.
    expect(ddb).toHaveReceivedCommandTimes(
      QueryCommand,
      DUE_SHARDS + 1 + LISTED_SHARDS + 1 + (1 + DUE_SHARDS + LISTED_SHARDS),
    );
    // One write: the pass added to the cumulative figures, beside the scheduler's control.
    expect(ddb).toHaveReceivedCommandTimes(UpdateCommand, 1);
    expect(ddb).toHaveReceivedCommandWith(UpdateCommand, {
      TableName: 'leases',
      Key: { leaseId: 'stats#supervisor' },
      UpdateExpression: expect.stringMatching(/ADD .*#n\d+ :v\d+/),
    });
    const emitted = stdout.mock.calls.map(([line]) => String(line)).join('');
    stdout.mockRestore();
    // One EMF document for the pass (the cold start has its own), every figure in it, with the service dimension.
    const documents = emitted
      .split('\n')
      .filter((line) => line.includes('"_aws"'))
      .map((line) => JSON.parse(line) as Record<string, unknown> & { _aws: EmfMetadata });
    const passes = documents.filter((d) => 'PendingRuns' in d);
    expect(passes).toHaveLength(1);
    const [pass] = passes as [(typeof documents)[number]];
    const [directive] = pass._aws.CloudWatchMetrics;
    expect(directive?.Namespace).toBe('AgentScheduler');
    expect(directive?.Dimensions).toEqual([['service']]);
    const names = directive?.Metrics.map((m) => m.Name);
    expect(names).toEqual(
      expect.arrayContaining([
        'PendingRuns',
        'ActiveRuns',
        'SessionsScanned',
        'RecoveredLeases',
        'WakeAttempts',
        'WakesSucceeded',
        'WakesFailed',
        'NoMatchingSession',
        'RecentlyNotified',
        'Unclaimable',
        'Starved',
        'SpawnRequested',
        'NeedsAttention',
        'SweepErrors',
        'Requeued',
        'PassDuration',
      ]),
    );
    expect(new Set(names).size).toBe(names?.length);
    expect(pass).toMatchObject({ PendingRuns: 0, WakeAttempts: 0, Requeued: 0, SweepErrors: 0 });
    // Each queue's depth in a document of its own, by queue: the console's chart of a deployed stack.
    const depths = documents.filter((d) => 'QueueDepth' in d);
    expect(depths).toHaveLength(1);
    expect(depths[0]).toMatchObject({ QueueDepth: 0, queue: 'q', service: expect.any(String) });
    expect(depths[0]?._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([['service', 'queue']]);
  });

  it('operator API: health answers without touching AWS, and sends no span with tracing off', async () => {
    const fetch = vi.spyOn(globalThis, 'fetch');
    const { handler } = await import('../../../functions/operator-api');
    const result = await handler(
      {
        rawPath: '/v1/health',
        headers: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` },
        requestContext: { requestId: 'r', http: { method: 'GET' } },
      },
      context,
    );
    expect(result).toMatchObject({ statusCode: 200, body: '{"status":"ok"}' });
    expect(ddb).not.toHaveReceivedAnyCommand();
    expect(fetch).not.toHaveBeenCalled();
    fetch.mockRestore();
  });

  it('authorizer: refuses a malformed token without a lookup, admits a valid one', async () => {
    const { issueAgentToken } = await import('#domain/agent-token');
    const { handler } = await import('../../../functions/authorizer');
    const agentId = `a_${'b'.repeat(26)}`;
    const { token, tokenHash } = issueAgentToken(agentId);
    ddb.on(GetCommand).resolves({
      Item: {
        agentId,
        name: 'n',
        queues: ['q'],
        maxConcurrency: 1,
        interactive: true,
        createdAt: 1,
        tokenHash,
      },
    });

    expect(await handler({ headers: { authorization: 'Bearer nonsense' } }, context)).toEqual({
      isAuthorized: false,
    });
    expect(ddb).not.toHaveReceivedAnyCommand();
    expect(await handler({ headers: { authorization: `Bearer ${token}` } }, context)).toEqual({
      isAuthorized: true,
      context: { agentId },
    });
  });
});
