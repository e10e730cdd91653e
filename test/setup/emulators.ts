/**
 * Vitest globalSetup for the projects that need the emulators (`integration`, `chaos`, `punctual`): starts
 * DynamoDB Local and the fauxqs SQS emulator once per run, whichever projects ask, and hands their endpoints to
 * tests via `inject('dynamodbEndpoint')` / `inject('sqsEndpoint')`. Build clients with `localDynamoDbClient` /
 * `localSqsClient` from `local/emulators/clients`. The last project to finish stops them and checks IAM.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/emulators/dynamodb-local';
import { type SqsEmulator, startSqsEmulator } from '../../local/emulators/sqs';
import { compareUses, readRecords, type Use } from '../helpers/iam-usage';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    sqsEndpoint: string;
    /** Where test processes record the AWS actions each function performs (see test/helpers/iam-usage.ts). */
    iamUsageDir: string;
  }
}

interface Emulators {
  readonly dynamodb: DynamoDbLocal;
  readonly sqs: SqsEmulator;
  readonly usageDir: string;
  /** What the example stack grants, synthesized in a process of its own while the suites run. */
  readonly granted: Promise<{ readonly uses: ReadonlySet<Use> } | { readonly error: unknown }>;
}

const GRANTED_USES_SCRIPT = new URL('./granted-uses.ts', import.meta.url).pathname;

/** Runs `granted-uses.ts` beside the suites; settles once it has written what the stack grants, or failed. */
function grantedBeside(usageDir: string): Emulators['granted'] {
  const file = `${usageDir}-granted.json`;
  return promisify(execFile)(process.execPath, ['--import', 'tsx', GRANTED_USES_SCRIPT, file], {
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    () => {
      const uses = new Set(JSON.parse(readFileSync(file, 'utf8')) as Use[]);
      rmSync(file, { force: true });
      return { uses };
    },
    (error: unknown) => ({ error }),
  );
}

async function startEmulators(): Promise<Emulators> {
  const started = performance.now();
  const [dynamodb, sqs] = await Promise.allSettled([
    // Beside other CPU-bound work the JVM has taken over 30 s to answer (its own default bound), where both emulators
    // start in about 6 s on two quiet cores: the suite waits for it rather than fail on a slow start.
    startDynamoDbLocal({ inMemory: true, readyTimeoutMs: 180_000 }),
    startSqsEmulator({}),
  ]);
  if (dynamodb.status === 'rejected' || sqs.status === 'rejected') {
    await Promise.all([
      dynamodb.status === 'fulfilled' ? dynamodb.value.stop() : undefined,
      sqs.status === 'fulfilled' ? sqs.value.stop() : undefined,
    ]);
    throw dynamodb.status === 'rejected' ? dynamodb.reason : (sqs as PromiseRejectedResult).reason;
  }
  console.log(
    `[emulators] dynamodb ${dynamodb.value.endpoint}, sqs ${sqs.value.endpoint} (started in ${Math.round(performance.now() - started)} ms)`,
  );
  const usageDir = mkdtempSync(join(tmpdir(), 'agent-scheduler-iam-'));
  return { dynamodb: dynamodb.value, sqs: sqs.value, usageDir, granted: grantedBeside(usageDir) };
}

/** One set of emulators for the run, shared by the projects of this process that use them. */
const SHARED = Symbol.for('agent-scheduler.test-emulators');
type Shared = { ready: Promise<Emulators>; users: number };
const registry = globalThis as { [SHARED]?: Shared };

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  registry[SHARED] ??= { ready: startEmulators(), users: 0 };
  const shared = registry[SHARED];
  shared.users++;
  const { dynamodb, sqs, usageDir, granted } = await shared.ready;
  provide('iamUsageDir', usageDir);
  provide('dynamodbEndpoint', dynamodb.endpoint);
  provide('sqsEndpoint', sqs.endpoint);

  return async () => {
    if (--shared.users > 0) return;
    delete registry[SHARED];
    await Promise.all([dynamodb.stop(), sqs.stop()]);
    checkGrantsAgainstUse(usageDir, await granted);
  };
}

/**
 * Every AWS action the suites saw a function perform must be granted to it in the synthesized stack; when the
 * whole suite ran (`AGENT_SCHEDULER_IAM_CHECK=all`, set by `npm test`), every grant must also have been used or be
 * on the allowlist. A mismatch fails the run.
 */
function checkGrantsAgainstUse(usageDir: string, granted: Awaited<Emulators['granted']>): void {
  const used = readRecords(usageDir);
  rmSync(usageDir, { recursive: true, force: true });
  if (used.size === 0) return;
  if ('error' in granted) {
    console.error(`[iam] the example stack's grants could not be read: ${String(granted.error)}`);
    process.exitCode = 1;
    return;
  }
  // For a reader of the check: every use the run saw, one a line, function|action|resource.
  const usesFile = process.env.AGENT_SCHEDULER_IAM_USES;
  if (usesFile) writeFileSync(usesFile, `${[...used].sort().join('\n')}\n`);
  const complete = process.env.AGENT_SCHEDULER_IAM_CHECK === 'all';
  const { notGranted, unused } = compareUses(used, granted.uses, complete);
  console.log(
    `[iam] ${used.size} actions used by the functions checked against their roles${complete ? ', and every grant against use' : ''}`,
  );
  if (notGranted.length + unused.length === 0) return;
  if (notGranted.length > 0) console.error(`[iam] used but not granted:\n  ${notGranted.join('\n  ')}`);
  if (unused.length > 0)
    console.error(
      `[iam] granted but never used (remove, or allowlist with a reason):\n  ${unused.join('\n  ')}`,
    );
  process.exitCode = 1;
}
