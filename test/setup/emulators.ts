/**
 * Vitest globalSetup for the projects that need the emulators (`integration`, `chaos`, `punctual`): starts
 * DynamoDB Local and the fauxqs SQS emulator once per run, whichever projects ask, and hands their endpoints to
 * tests via `inject('dynamodbEndpoint')` / `inject('sqsEndpoint')`. Build clients with `localDynamoDbClient` /
 * `localSqsClient` from `local/emulators/clients`. The last project to finish stops them and checks IAM.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type DynamoDbLocal, startDynamoDbLocal } from '../../local/emulators/dynamodb-local';
import { type SqsEmulator, startSqsEmulator } from '../../local/emulators/sqs';
import { type CloudFormation, compareUses, grantedUses, readRecords } from '../helpers/iam-usage';
import { synthTemplate } from '../helpers/synth';

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
  return {
    dynamodb: dynamodb.value,
    sqs: sqs.value,
    usageDir: mkdtempSync(join(tmpdir(), 'agent-scheduler-iam-')),
  };
}

/** One set of emulators for the run, shared by the projects of this process that use them. */
const SHARED = Symbol.for('agent-scheduler.test-emulators');
type Shared = { ready: Promise<Emulators>; users: number };
const registry = globalThis as { [SHARED]?: Shared };

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  registry[SHARED] ??= { ready: startEmulators(), users: 0 };
  const shared = registry[SHARED];
  shared.users++;
  const { dynamodb, sqs, usageDir } = await shared.ready;
  provide('iamUsageDir', usageDir);
  provide('dynamodbEndpoint', dynamodb.endpoint);
  provide('sqsEndpoint', sqs.endpoint);

  return async () => {
    if (--shared.users > 0) return;
    delete registry[SHARED];
    await Promise.all([dynamodb.stop(), sqs.stop()]);
    checkGrantsAgainstUse(usageDir);
  };
}

/**
 * Every AWS action the suites saw a function perform must be granted to it in the synthesized stack; when the
 * whole suite ran (`AGENT_SCHEDULER_IAM_CHECK=all`, set by `npm test`), every grant must also have been used or be
 * on the allowlist. A mismatch fails the run.
 */
function checkGrantsAgainstUse(usageDir: string): void {
  const used = readRecords(usageDir);
  rmSync(usageDir, { recursive: true, force: true });
  if (used.size === 0) return;
  // For a reader of the check: every use the run saw, one a line, function|action|resource.
  const usesFile = process.env.AGENT_SCHEDULER_IAM_USES;
  if (usesFile) writeFileSync(usesFile, `${[...used].sort().join('\n')}\n`);
  const { stack, template } = synthTemplate();
  const complete = process.env.AGENT_SCHEDULER_IAM_CHECK === 'all';
  const { notGranted, unused } = compareUses(
    used,
    grantedUses(stack, template.toJSON() as CloudFormation),
    complete,
  );
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
