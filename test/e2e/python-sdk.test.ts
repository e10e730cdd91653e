/**
 * The Python SDK (`python/`) end to end: its unittest suite runs as a child process against the local server on the
 * emulators, with short leases and a supervisor sweeping every quarter second, so lease losses are seen quickly, and
 * its whole pass (which hands over the roles of a session gone silent) every second. The server offers the push
 * channel, with a safety poll of a minute: a listening worker that was not woken would sit idle that long.
 * Skipped, saying so, only when no Python 3.10 or later is on PATH (`.ci/run` makes sure there is one).
 */
import { spawn, spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalPushSender } from '#local/push-server';
import type { LocalServer } from '#local/server';
import { createTestStack, everyUnlessRunning, serveStack, type TestStack } from '#test/stack';

const OPERATOR = 'op_python-sdk-operator';
/** As in `sdk-lost-answers.test.ts`: six beats to a lease, so a loaded machine's late beats cost none. */
const LEASE_TTL_SECONDS = 6;
/**
 * The suite's bound: 55 tests, about 50 s on two cores beside the rest of `npm test`, 110 s on a machine three
 * times as loaded. Past `AGENT_SCHEDULER_HANG_DUMP_S` the tests print every thread's stack; past this the child is
 * killed.
 */
const SUITE_BOUND_MS = 240_000;
const HANG_DUMP_SECONDS = 200;
/** What an empty claim tells a listening agent to wait: a wake comes first, or a test would see the minute. */
const PUSH_SAFETY_POLL_MS = 60_000;
const QUEUES = [
  'py-lifecycle',
  'py-lease',
  'py-complete',
  'py-outage',
  'py-group',
  'py-drain',
  'py-wheel',
  'py-types',
  'py-waitpoint',
  'py-progress',
  'py-traced',
  'py-extend',
  'py-roles',
  'py-usage',
  'py-carry',
  'py-old',
  'py-lost',
  'py-push',
  'py-cancel',
  'py-wait',
  'py-parked',
  'py-waitpoints',
  'py-readme',
  // The Python agent example's queues, as `npm start` has them (`examples/python-agent`).
  'research',
  'summaries',
];

/** The first of these on PATH that is Python 3.10 or later. */
function findPython(): string | undefined {
  for (const name of ['python3', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python']) {
    const probe = spawnSync(name, ['-c', 'import sys; print(sys.version_info >= (3, 10))'], {
      encoding: 'utf8',
    });
    if (probe.status === 0 && probe.stdout.trim() === 'True') return name;
  }
  return undefined;
}

const python = findPython();
if (!python) console.warn('python-sdk: no Python 3.10 or later on PATH; the Python SDK tests are skipped');

describe.skipIf(!python)('the Python SDK against the local stack', () => {
  const sender = new LocalPushSender();
  let stack: TestStack;
  let server: LocalServer;
  let supervisor: NodeJS.Timeout;

  beforeAll(async () => {
    let serverUrl = '';
    stack = await createTestStack({
      random: () => 0,
      queues: QUEUES,
      // With its wake timer, as `npm start` has it: a task held back (a rate limit's window, a retry's backoff) wakes
      // a listening worker when it is due, not at the safety poll.
      push: { sender, url: () => `${serverUrl.replace(/^http/, 'ws')}/v1/push`, timer: true },
      settings: {
        leaseTtlSeconds: LEASE_TTL_SECONDS,
        heartbeatIntervalSeconds: 1,
        pushSafetyPollMs: PUSH_SAFETY_POLL_MS,
      },
    });
    server = await serveStack(stack, OPERATOR, { push: sender });
    serverUrl = server.url;
    // The supervisor's pass reclaims expired leases too: a reclaim of its own every 250 ms beside it walked the 23
    // queues' new-task partitions (some 400 queries a pass, back to back on a loaded machine) and took half the
    // suite's CPU (100 CPU-seconds with it, 51 without), for a lease of 6 s.
    supervisor = everyUnlessRunning(() => stack.scheduler.supervise(), 1_000);
  });
  afterAll(async () => {
    clearInterval(supervisor);
    sender.dropAll();
    await server.close();
    await stack.destroy();
  });

  it(
    'passes its unittest suite',
    async () => {
      const { status, output } = await new Promise<{ status: number | null; output: string }>((resolve) => {
        // PYTHON_SDK_TESTS="tests.test_drain …" runs only those.
        const only = process.env.PYTHON_SDK_TESTS?.split(/\s+/).filter(Boolean) ?? [];
        const args = only.length > 0 ? ['-v', ...only] : ['discover', '-v', '-s', 'tests', '-t', '.'];
        // -v names each test as it ends; a hang prints every thread's stack (`tests/__init__.py`).
        const child = spawn(python ?? 'python3', ['-m', 'unittest', ...args], {
          cwd: 'python',
          env: {
            ...process.env,
            AGENT_SCHEDULER_ENDPOINT: server.url,
            AGENT_SCHEDULER_OPERATOR_TOKEN: OPERATOR,
            PYTHONPATH: 'src',
            PYTHONDONTWRITEBYTECODE: '1',
            AGENT_SCHEDULER_HANG_DUMP_S: String(HANG_DUMP_SECONDS),
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const chunks: Buffer[] = [];
        child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
        child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
        // A suite that hangs is ended, and what it printed (the stacks included) is the failure's message.
        const bound = setTimeout(() => child.kill('SIGKILL'), SUITE_BOUND_MS);
        child.once('close', (code) => {
          clearTimeout(bound);
          resolve({ status: code, output: Buffer.concat(chunks).toString('utf8') });
        });
      });
      // The whole unittest report on failure.
      expect(status, output).toBe(0);
    },
    SUITE_BOUND_MS + 30_000,
  );
});
