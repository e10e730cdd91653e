/**
 * Every route, fuzzed: 1,000 generated requests each, every one with at least one defect (no or a foreign token,
 * a wrong content type, malformed JSON, a body of the wrong type, an unknown or server-owned field such as
 * `__proto__` or `status`, an oversize body, an invalid path parameter), the rest random (unicode edge cases
 * included). Each answer must be a 4xx with the error shape and a short message without stack, path or ARN, and
 * nothing may change: the tables read the same afterwards and no SQS message is sent.
 *
 * 415 is allowed besides the 4xx codes one could expect: it is the status for a body that is not JSON.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAgentToken } from '#domain/agent-token';
import { type LocalRequest, localRequestHandler } from '#local/server';
import { createTestStack, type TestStack } from '#test/stack';
import { MAX_BODY_BYTES } from '../../functions/http/http-api';
import { ROUTES, type RouteDefinition } from '../../functions/http/routes';

const OPERATOR = 'op_fuzz-operator-token';
const RUNS = 1_000;
const ALLOWED = new Set([400, 401, 403, 404, 409, 413, 415, 422, 429]);
const LEAKS = /\bat \S+ \(|\.ts:\d|\.js:\d|\/work\/|node_modules|arn:aws/;

type Defect =
  | 'auth'
  | 'contentType'
  | 'malformedJson'
  | 'bodyType'
  | 'unknownField'
  | 'oversize'
  | 'badParam';

const takesBody = (route: RouteDefinition) => route.method !== 'GET';
const hasParams = (route: RouteDefinition) => route.path.includes('{');

function defectsOf(route: RouteDefinition): Defect[] {
  const defects: Defect[] = ['auth'];
  if (takesBody(route)) defects.push('contentType', 'malformedJson', 'bodyType', 'unknownField', 'oversize');
  if (hasParams(route)) defects.push('badParam');
  return defects;
}

/** A path parameter of the right shape that names nothing. */
const absent: Record<string, string> = {
  taskId: `t_${'q'.repeat(26)}`,
  agentId: `a_${'q'.repeat(26)}`,
  name: 'no-such-queue-or-schedule',
  role: 'no-such-role',
};

describe('fuzzing every route', () => {
  let stack: TestStack;
  let answer: (request: LocalRequest) => ReturnType<ReturnType<typeof localRequestHandler>>;
  let agentToken = '';
  const snapshot = async () => {
    const tables = [stack.ctx.tasks.tableName, stack.ctx.sessions.tableName, stack.ctx.agents.tableName];
    const items = await Promise.all(
      tables.map(async (TableName) => {
        const output = await stack.ctx.sessions.doc.send(
          new ScanCommand({ TableName, ConsistentRead: true }),
        );
        return (output.Items ?? []).map((item) => JSON.stringify(item)).sort();
      }),
    );
    return JSON.stringify(items);
  };

  beforeAll(async () => {
    stack = await createTestStack({ queues: ['work'] });
    const registered = await stack.scheduler.registerAgent(
      { name: 'fuzzed', queues: ['work'] },
      issueAgentToken,
    );
    agentToken = registered.token ?? '';
    await stack.scheduler.openSession(registered.agent.agentId);
    await stack.scheduler.submit({ queue: 'work', payload: { seed: true } });
    answer = localRequestHandler({
      scheduler: stack.scheduler,
      agents: stack.ctx.agents,
      operatorToken: OPERATOR,
      log: { info() {}, warn() {}, error() {} },
      authorizerCacheTtlMs: 60_000,
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const candidates = fc.record({
    text: fc.string({ unit: 'binary', maxLength: 40 }),
    json: fc.jsonValue({ maxDepth: 2 }),
    extraKey: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'status',
      'owner',
      'leaseEpoch',
      'agentId',
      '\u0000',
      '💥',
    ),
    token: fc.constantFrom('none', 'garbage', 'foreign', 'malformedAgent', 'emptyBearer'),
    contentType: fc.constantFrom('text/plain', 'application/xml', 'multipart/form-data', '', 'json'),
    wrongType: fc.constantFrom<unknown>([], 0, 'text', null, true, [{}]),
  });

  const fuzzed = ROUTES.filter((route) => route.operation !== 'health');

  it.each(fuzzed.map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s: 1,000 defective requests, each a clean 4xx that changes nothing',
    async (_, route) => {
      const before = await snapshot();
      stack.meter.reset();
      const defects = defectsOf(route);
      const validToken = route.access === 'agent' ? agentToken : OPERATOR;
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...defects), candidates, async (defect, c) => {
          const param = (name: string) =>
            defect === 'badParam' ? encodeURIComponent(`${c.text}/`) : (absent[name] ?? 'x');
          const path = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => param(name));
          const tokens: Record<string, string | undefined> = {
            none: undefined,
            garbage: `Bearer ${c.text}`,
            foreign: `Bearer ${route.access === 'agent' ? OPERATOR : agentToken}`,
            malformedAgent: `Bearer a_${'z'.repeat(26)}.${'A'.repeat(43)}`,
            emptyBearer: 'Bearer ',
          };
          const authorization = defect === 'auth' ? tokens[c.token] : `Bearer ${validToken}`;
          const body =
            defect === 'malformedJson'
              ? `{${c.text}`
              : defect === 'bodyType'
                ? JSON.stringify(c.wrongType)
                : defect === 'unknownField'
                  ? `{${JSON.stringify(c.extraKey)}:${JSON.stringify(c.json ?? null)}}`
                  : defect === 'oversize'
                    ? JSON.stringify({ payload: 'x'.repeat(MAX_BODY_BYTES) })
                    : takesBody(route)
                      ? JSON.stringify(c.json ?? {})
                      : '';
          const contentType =
            defect === 'contentType'
              ? c.contentType === 'json'
                ? 'text/json'
                : c.contentType
              : 'application/json';
          const result = await answer({
            method: route.method,
            url: path,
            headers: {
              ...(authorization === undefined ? {} : { authorization }),
              'content-type': contentType,
            },
            body,
          });
          if (!ALLOWED.has(result.statusCode)) {
            throw new Error(`${defect}: status ${result.statusCode} ${result.body.slice(0, 200)}`);
          }
          const parsed = JSON.parse(result.body) as { error?: { code?: unknown; message?: unknown } };
          const message = parsed.error?.message;
          if (typeof parsed.error?.code !== 'string' || typeof message !== 'string') {
            throw new Error(`${defect}: not the error shape: ${result.body.slice(0, 200)}`);
          }
          if (message.length > 300 || LEAKS.test(message))
            throw new Error(`${defect}: message leaks: ${message}`);
        }),
        { numRuns: RUNS, seed: 42 },
      );
      expect(await snapshot()).toBe(before);
      expect(
        stack.meter.totals((r) => r.service === 'sqs' && r.operation.startsWith('SendMessage')).requests,
      ).toBe(0);
    },
    120_000,
  );
});
