/**
 * A scheduler context over mocked SDK clients, for error paths that the emulators cannot produce on demand.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { QueueDirectory } from '#adapters/task-queues';
import type { SchedulerLog } from '#core/context';
import { createContext, type WiredContext } from '#wiring/context';

export const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

export const directory = new QueueDirectory({
  work: {
    critical: 'https://sqs.local/000/work-critical',
    high: 'https://sqs.local/000/work-high',
    normal: 'https://sqs.local/000/work-normal',
    low: 'https://sqs.local/000/work-low',
  },
});

export function recordingLog() {
  const entries: { level: string; message: string; extra?: Record<string, unknown> }[] = [];
  const log: SchedulerLog = {
    info: (message, extra) => entries.push({ level: 'info', message, ...(extra ? { extra } : {}) }),
    warn: (message, extra) => entries.push({ level: 'warn', message, ...(extra ? { extra } : {}) }),
    error: (message, extra) => entries.push({ level: 'error', message, ...(extra ? { extra } : {}) }),
  } satisfies SchedulerLog;
  return { log, entries };
}

export function mockContext(log?: SchedulerLog): WiredContext {
  return createContext({
    dynamodb: new DynamoDBClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
    }),
    sqs: new SQSClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } }),
    tables: { tasks: 'tasks', agents: 'agents', leases: 'leases' },
    queues: directory,
    now: () => NOW,
    random: () => 0.5,
    ...(log ? { log } : {}),
  });
}

/** A stored state item as DynamoDB would return it. */
export function stateItem(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    taskId: 't_aaaaaaaaaaaaaaaaaaaaaaaaaa',
    part: 'state',
    queue: 'work',
    priority: 'normal',
    status: 'leased',
    attempt: 1,
    maxAttempts: 3,
    backoffBaseSeconds: 2,
    backoffMaxSeconds: 3600,
    timeoutMs: 900_000,
    leaseEpoch: 1,
    owner: 'a_agent',
    sessionId: 's_session',
    leasedAt: NOW - 1_000,
    leaseDeadline: NOW + 60_000,
    dispatchCount: 1,
    specHash: 'hash',
    payloadBytes: 10,
    createdAt: NOW - 5_000,
    updatedAt: NOW - 1_000,
    ...overrides,
  };
}

export function sessionItem(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    leaseId: 'session#a_agent',
    kind: 'session',
    agentId: 'a_agent',
    sessionId: 's_session',
    queues: ['work'],
    maxConcurrency: 2,
    startedAt: NOW - 10_000,
    heartbeatAt: NOW - 1_000,
    expiresAt: NOW + 29_000,
    held: {},
    cancelled: {},
    lost: {},
    roles: {},
    rolesPicked: {},
    rolesLost: {},
    ...overrides,
  };
}
