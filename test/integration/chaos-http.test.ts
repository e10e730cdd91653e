/**
 * The chaos run through the HTTP edge and SDK Workers: no violation on either side, and every route and every kind
 * of write hit by each fault. Its negative controls, the mutants, are in chaos-http-mutants.test.ts: a file of their
 * own, so the two halves run side by side with the other chaos files rather than one after the other.
 */
import { describe, expect, inject, it } from 'vitest';
import { VIOLATION_COUNTS } from '../../chaos/http-report';
import { type HttpChaosReport, runHttpChaos } from '../../chaos/run-http-chaos';

const endpoints = { dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') };

/** Every count that is a violation is 0. */
const NO_VIOLATION = Object.fromEntries([...VIOLATION_COUNTS.map((name) => [name, 0]), ['violations', 0]]);

/**
 * Where each fault must have fallen: the agent routes the Worker calls (a heartbeat carrying checkpoints apart),
 * and the committed writes of every kind whose answer the server's store loses. Until a route has had a request
 * delivered late and one whose answer was lost, its next request is, and writes of each kind lose their answer
 * until one has, whatever the seed draws, and after the faults stop too while the run goes on (for the routes, until
 * the fleet has stopped): a role that began to move only late in the faults (its volunteers' first sessions lost),
 * or whose first release is its holder's stop, is still released under them. What the runs leave to chance is only
 * whether a route or a write is used at all (roles move and hooks are made in both runs).
 */
const LATE_ROUTES = [
  'openSession',
  'heartbeat',
  'heartbeatWithCheckpoints',
  'claimTasks',
  'completeTask',
  'failTask',
  'releaseTask',
  'submitChildTasks',
  'volunteerForRole',
  'releaseRole',
];
const STORE_WRITES = ['grant', 'open', 'transfer', 'childSubmit', 'hookSubmit', 'finish', 'checkpoint'];

/** Each kind of fault fell in the run, and the run made children and hooks. */
const expectEveryKind = (report: HttpChaosReport) => {
  for (const kind of [
    'unavailableBeforeDelivery',
    'answerLost',
    'requestHung',
    'deliveredLate',
    'supervisorDoubled',
  ])
    expect(report.faults[kind], kind).toBeGreaterThan(0);
  expect(report.children).toBeGreaterThan(0);
  expect(report.hooks).toBeGreaterThan(0);
};

/**
 * A run's drain ends when every task has (45 s for the whole 200-task run on two quiet cores); its bound only ends a
 * hung run. Beside another CPU-bound process the run went three times slower, and a drain of 90 s left 18 tasks of
 * a run that was still ending them.
 */
const DRAIN_MS = 300_000;
/** The drain, with the submissions and faults before it and the teardown after it. */
const RUN_TIMEOUT_MS = 420_000;

describe('chaos through HTTP and the SDK', () => {
  const reports: HttpChaosReport[] = [];

  it(
    '200 tasks, 10 agents under faults: no violation on either side',
    async () => {
      const report = await runHttpChaos({
        tasks: 200,
        agents: 10,
        seed: 7,
        endpoints,
        drainTimeoutMs: DRAIN_MS,
      });
      console.log(`chaos http: ${JSON.stringify(report)}`);
      reports.push(report);
      expect(report).toMatchObject(NO_VIOLATION);
      expectEveryKind(report);
    },
    RUN_TIMEOUT_MS,
  );

  it(
    'at agent sizes (results of 50 to 250 KB, checkpoints of 15 KB, 25 at once): no violation, no result lost',
    async () => {
      const report = await runHttpChaos({
        tasks: 60,
        agents: 4,
        seed: 3,
        sizes: 'agent',
        endpoints,
        drainTimeoutMs: DRAIN_MS,
      });
      console.log(`chaos http, agent sizes: ${JSON.stringify(report)}`);
      reports.push(report);
      expect(report).toMatchObject(NO_VIOLATION);
      expectEveryKind(report);
      // Each kept result was checked against the digest of what its handler returned.
      expect(report.executions).toBeGreaterThanOrEqual(60);
    },
    RUN_TIMEOUT_MS,
  );

  it('across the two runs, every route was delivered late and lost an answer, every kind of write lost one', () => {
    expect(reports).toHaveLength(2);
    const sum = (kind: string, where: string) =>
      reports.reduce((total, report) => total + (report.faultsWhere[kind]?.[where] ?? 0), 0);
    for (const route of LATE_ROUTES) {
      expect(sum('deliveredLate', route), `late ${route}`).toBeGreaterThan(0);
      expect(sum('answerLost', route), `answer lost ${route}`).toBeGreaterThan(0);
    }
    for (const write of STORE_WRITES)
      expect(sum('dynamodbTimeoutAfterCommit', write), `store answer lost ${write}`).toBeGreaterThan(0);
  });
});
