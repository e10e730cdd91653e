/**
 * Operating a deployed stack, whose operator routes take IAM: the SDK (with AWS's own signer) and the CLI (the real
 * binary, credentials from the standard chain) sign with AWS Signature Version 4. The local server checks each
 * signature by computing it again from the raw request it received (`local/sigv4-verifier.ts`, written from the
 * published algorithm), and no request carries a bearer token.
 */
import { execFile, spawn } from 'node:child_process';
import type { IncomingMessage } from 'node:http';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { awsSigV4 } from '#sdk/sigv4';
import { createTestStack, serveStack, type TestStack } from '#test/stack';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const OPERATOR = 'op_sigv4-operator-token';
const REGION = 'eu-west-1';
const KEY = {
  accessKeyId: 'AKIDAGENTSCHEDULER1',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
};

/** The CLI's surroundings: the key in the environment, and no other source of credentials to fall back on. */
const CLI_ENV = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  AWS_ACCESS_KEY_ID: KEY.accessKeyId,
  AWS_SECRET_ACCESS_KEY: KEY.secretAccessKey,
  AWS_REGION: REGION,
  AWS_CONFIG_FILE: '/nonexistent/config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
  AWS_EC2_METADATA_DISABLED: 'true',
};

const signerFor = (credentials: typeof KEY, region = REGION) =>
  awsSigV4(new SignatureV4({ service: 'execute-api', region, credentials, sha256: Sha256 }));

describe('operator requests signed with SigV4', () => {
  let stack: TestStack;
  let server: LocalServer;
  let received: { method: string; url: string; authorization: string | undefined }[] = [];
  const client = (credentials = KEY, region = REGION) =>
    new AgentSchedulerClient({
      endpoint: server.url,
      signer: signerFor(credentials, region),
      retries: { maxAttempts: 1 },
    });

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work', 'other'] });
    server = await serveStack(stack, OPERATOR, {
      operatorSigV4: { region: REGION, credentials: [KEY] },
    });
    server.server.on('request', (request: IncomingMessage) =>
      received.push({
        method: request.method ?? '',
        url: request.url ?? '',
        authorization: request.headers.authorization,
      }),
    );
  });
  afterAll(async () => {
    await server?.close();
    await stack?.destroy();
  });
  beforeEach(() => {
    received = [];
  });

  const expectSignedOnly = () => {
    expect(received.length).toBeGreaterThan(0);
    for (const request of received) {
      expect(request.authorization).toMatch(
        new RegExp(
          `^AWS4-HMAC-SHA256 Credential=${KEY.accessKeyId}/\\d{8}/${REGION}/execute-api/aws4_request, `,
        ),
      );
      expect(request.authorization).not.toMatch(/bearer/i);
    }
  };

  it('the SDK signs bodies, path parameters and query strings, and the server takes them', async () => {
    const operator = client();
    const submitted = await operator.submitTask({
      queue: 'work',
      payload: { text: 'ünïcode & spaces / slashes?', n: 1 },
      idempotencyKey: 'key/with+plus=and%percent',
    });
    expect(submitted.created).toBe(true);
    const page = await operator.listTasks({ queue: 'work', status: 'queued', limit: 5 });
    expect(page.tasks.map((t) => t.taskId)).toContain(submitted.task.taskId);
    expect(await operator.getTask(submitted.task.taskId)).toMatchObject({
      idempotencyKey: 'key/with+plus=and%percent',
      payloadBytes: submitted.task.payloadBytes,
    });
    const paused = await operator.pauseQueue('other');
    expect(paused).toMatchObject({ name: 'other', paused: true });
    // A path parameter that must be percent-encoded is signed as sent: the answer is the route's, not a 403.
    await expect(operator.getTask('t_no such/tâsk')).rejects.toMatchObject({ status: 404 });
    await operator.cancelTask(submitted.task.taskId);
    expectSignedOnly();
    expect(received.map((r) => r.url)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('?'),
        expect.stringContaining('/v1/tasks/t_no%20such%2Ft%C3%A2sk'),
      ]),
    );
  });

  it('refuses a wrong key, another region, a bearer token and no signature, changing nothing', async () => {
    const before = (await client().listTasks({ queue: 'work' })).tasks.length;
    await expect(
      client({ ...KEY, secretAccessKey: 'not-the-secret' }).submitTask({ queue: 'work', payload: {} }),
    ).rejects.toMatchObject({ status: 403, message: 'the signature does not match the request' });
    await expect(client(KEY, 'us-east-1').submitTask({ queue: 'work', payload: {} })).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      client({ ...KEY, accessKeyId: 'AKIDUNKNOWN' }).submitTask({ queue: 'work', payload: {} }),
    ).rejects.toMatchObject({ status: 403, message: 'the access key is not known' });
    await expect(
      new AgentSchedulerClient({
        endpoint: server.url,
        token: OPERATOR,
        retries: { maxAttempts: 1 },
      }).submitTask({
        queue: 'work',
        payload: {},
      }),
    ).rejects.toMatchObject({ status: 403 });
    const unsigned = await fetch(`${server.url}/v1/tasks`);
    expect(unsigned.status).toBe(401);
    expect((await client().listTasks({ queue: 'work' })).tasks.length).toBe(before);
  });

  it('refuses a signed request whose body, path or time was changed after signing', async () => {
    const tampered = async (change: (request: Request) => Request) => {
      const sign = signerFor(KEY);
      const signed = await sign(
        new Request(`${server.url}/v1/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ queue: 'work', payload: { amount: 1 } }),
        }),
      );
      const response = await fetch(change(signed));
      return { status: response.status, body: (await response.json()) as { error: { message: string } } };
    };
    const withBody = (body: string) => (r: Request) =>
      new Request(r.url, { method: 'POST', headers: r.headers, body });
    expect(
      await tampered(withBody(JSON.stringify({ queue: 'work', payload: { amount: 1000 } }))),
    ).toMatchObject({
      status: 403,
      body: { error: { message: 'the body is not the one signed' } },
    });
    const headers = (r: Request) => {
      const copy = new Headers(r.headers);
      copy.delete('x-amz-content-sha256');
      return copy;
    };
    expect(
      (
        await tampered(
          (r) =>
            new Request(r.url, {
              method: 'POST',
              headers: headers(r),
              body: JSON.stringify({ queue: 'work', payload: { amount: 1000 } }),
            }),
        )
      ).status,
    ).toBe(403);
    expect(
      (
        await tampered(
          (r) => new Request(`${r.url}/batch`, { method: 'POST', headers: r.headers, body: '{}' }),
        )
      ).status,
    ).toBe(403);
    const stale = (r: Request) => {
      const copy = new Headers(r.headers);
      copy.set('x-amz-date', '20200101T000000Z');
      return new Request(r.url, {
        method: 'POST',
        headers: copy,
        body: JSON.stringify({ queue: 'work', payload: { amount: 1 } }),
      });
    };
    expect((await tampered(stale)).status).toBe(403);
  });

  it('the CLI signs with credentials from the standard chain, sends no token, and --auth iam is needed off execute-api', async () => {
    const cli = (...args: string[]) =>
      run(
        process.execPath,
        [join(ROOT, 'bin/agent-scheduler.mjs'), ...args, '--endpoint', server.url, '--json'],
        {
          cwd: ROOT,
          env: CLI_ENV,
        },
      );
    const { stdout } = await cli('submit', '--auth', 'iam', '--queue', 'work', '--payload', '{"from":"cli"}');
    const submitted = JSON.parse(stdout) as { task: { taskId: string } };
    const listed = JSON.parse(
      (await cli('list', '--auth', 'iam', '--queue', 'work', '--limit', '100')).stdout,
    ) as {
      tasks: { taskId: string }[];
    };
    expect(listed.tasks.map((t) => t.taskId)).toContain(submitted.task.taskId);
    expectSignedOnly();
    // A local endpoint defaults to the operator token, which this server refuses.
    await expect(cli('list', '--token', OPERATOR)).rejects.toMatchObject({ code: 1 });
  }, 60_000);

  it('`agent-scheduler console` signs every request it forwards, and does not start on credentials the API refuses', async () => {
    const args = [
      join(ROOT, 'bin/agent-scheduler.mjs'),
      'console',
      '--endpoint',
      server.url,
      '--auth',
      'iam',
    ];
    const child = spawn(process.execPath, [...args, '--port', '0'], { cwd: ROOT, env: CLI_ENV });
    try {
      let stdout = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      const started = Date.now();
      while (!/login code: \S+/.test(stdout)) {
        if (Date.now() - started > 30_000 || child.exitCode !== null)
          throw new Error(`no console: ${stdout}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const consoleUrl = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)?.[1] ?? '';
      const code = /login code: (\S+)/.exec(stdout)?.[1] ?? '';
      const origin = { origin: consoleUrl };
      const signedIn = await fetch(`${consoleUrl}/console/login`, {
        method: 'POST',
        headers: { ...origin, 'content-type': 'application/json' },
        body: JSON.stringify({ code }),
      });
      expect(signedIn.status).toBe(200);
      const { key } = (await signedIn.json()) as { key: string };
      const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
      const session = { cookie, 'x-console-key': key };
      received = [];
      const submitted = await fetch(`${consoleUrl}/console/api/v1/tasks`, {
        method: 'POST',
        headers: { ...origin, ...session, 'content-type': 'application/json' },
        body: JSON.stringify({ queue: 'work', payload: { from: 'console' } }),
      });
      expect(submitted.status).toBe(201);
      const { task } = (await submitted.json()) as { task: { taskId: string } };
      const listed = await fetch(`${consoleUrl}/console/api/v1/tasks?queue=work&limit=100`, {
        headers: session,
      });
      expect(((await listed.json()) as { tasks: { taskId: string }[] }).tasks.map((t) => t.taskId)).toContain(
        task.taskId,
      );
      const cancelled = await fetch(
        `${consoleUrl}/console/api/v1/tasks/${encodeURIComponent(task.taskId)}/cancel`,
        {
          method: 'POST',
          headers: { ...origin, ...session },
        },
      );
      expect(cancelled.status).toBe(200);
      expect(received.map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual([
        'POST /v1/tasks',
        'GET /v1/tasks',
        `POST /v1/tasks/${encodeURIComponent(task.taskId)}/cancel`,
      ]);
      expectSignedOnly();
    } finally {
      child.kill('SIGTERM');
    }
    // A key the API refuses: the console says so and does not start.
    const refused = await run(process.execPath, [...args, '--port', '0'], {
      cwd: ROOT,
      env: { ...CLI_ENV, AWS_SECRET_ACCESS_KEY: 'not-the-secret' },
    }).catch((error: { code: number; stderr: string }) => error);
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/403/) });
  }, 60_000);
});
