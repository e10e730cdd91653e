import { describe, expect, it } from 'vitest';
import { LeaseLostError } from '#domain/errors';
import { recordingLog } from '#test/mock-context';
import {
  createHttpApi,
  type HttpApiEvent,
  MAX_BODY_BYTES,
  matchRoute,
} from '../../../functions/http/http-api';
import { ROUTES } from '../../../functions/http/routes';

const event = (
  method: string,
  path: string,
  body?: string,
  extra: Partial<HttpApiEvent> = {},
): HttpApiEvent => ({
  rawPath: path,
  headers: { 'content-type': 'application/json' },
  ...(body === undefined ? {} : { body }),
  requestContext: { requestId: 'req-1', http: { method } },
  ...extra,
});

describe('matchRoute', () => {
  it.each([
    ['GET', '/v1/health', 'health', {}],
    ['GET', '/v1/tasks/t_abc', 'getTask', { taskId: 't_abc' }],
    ['POST', '/v1/tasks/t%5Fabc/cancel', 'cancelTask', { taskId: 't_abc' }],
    ['POST', '/v1/agent/tasks/t_1/complete', 'completeTask', { taskId: 't_1' }],
  ])('%s %s → %s', (method, path, operation, params) => {
    const matched = matchRoute(ROUTES, method, path);
    expect(matched && 'route' in matched ? matched.route.operation : undefined).toBe(operation);
    expect(matched && 'params' in matched ? matched.params : undefined).toEqual(params);
  });

  it.each([
    ['GET', '/v1/nope'],
    ['GET', '/v1/tasks/'],
    ['GET', '/v1/tasks/%E0%A4%A'],
    ['GET', '/v1/tasks/a/b/c/d'],
  ])('%s %s matches nothing', (method, path) => {
    const matched = matchRoute(ROUTES, method, path);
    expect(matched === undefined || 'allowed' in matched).toBe(true);
  });

  it('tells which methods a path allows', () => {
    expect(matchRoute(ROUTES, 'PUT', '/v1/tasks')).toEqual({ allowed: ['POST', 'GET'] });
  });
});

describe('createHttpApi', () => {
  const { log, entries } = recordingLog();
  const api = createHttpApi(
    ROUTES,
    {
      health: async () => ({ status: 200, body: { status: 'ok' } }),
      submitTask: async (request) => ({ status: 201, body: { echo: request.body } }),
      getTask: async () => {
        throw new LeaseLostError('lease on task t_x at epoch 1 is lost');
      },
      cancelTask: async () => {
        throw new Error(
          'arn:aws:dynamodb:eu-west-1:123456789012:table/secret exploded at /var/task/index.mjs',
        );
      },
      heartbeat: async (request) => ({ status: 200, body: { agent: request.agentId } }),
    },
    log,
  );

  it('a request through API Gateway’s catch-all route runs nothing, even on a path a route has', async () => {
    const viaDefault = (method: string, path: string, body?: string) =>
      api(event(method, path, body, { routeKey: '$default' }));

    const matching = await viaDefault('POST', '/v1/tasks', '{"a":1}');
    const wrongMethod = await viaDefault('PUT', '/v1/tasks');
    const unknown = await viaDefault('GET', '/v1/unknown');

    expect([matching.statusCode, JSON.parse(matching.body).error.code]).toEqual([404, 'RouteNotFound']);
    expect(matching.body).not.toContain('echo');
    expect([wrongMethod.statusCode, JSON.parse(wrongMethod.body).error.code]).toEqual([
      405,
      'MethodNotAllowed',
    ]);
    expect([unknown.statusCode, JSON.parse(unknown.body).error.code]).toEqual([404, 'RouteNotFound']);
  });

  it('routes and answers JSON', async () => {
    const result = await api(event('POST', '/v1/tasks', '{"a":1}'));
    expect(result).toEqual({
      statusCode: 201,
      headers: { 'content-type': 'application/json' },
      body: '{"echo":{"a":1}}',
    });
  });

  it.each([
    ['malformed JSON', event('POST', '/v1/tasks', '{"a":'), 400, 'MalformedJson'],
    [
      'a non-JSON content type',
      event('POST', '/v1/tasks', '{}', { headers: { 'content-type': 'text/plain' } }),
      415,
      'UnsupportedMediaType',
    ],
    [
      'an oversize body',
      event('POST', '/v1/tasks', `"${'x'.repeat(MAX_BODY_BYTES)}"`),
      413,
      'PayloadTooLarge',
    ],
    ['an unknown route', event('GET', '/v1/unknown'), 404, 'RouteNotFound'],
    ['a wrong method', event('DELETE', '/v1/tasks'), 405, 'MethodNotAllowed'],
    [
      'an agent route without an authorizer context',
      event('POST', '/v1/agent/heartbeat', '{}'),
      401,
      'Unauthorized',
    ],
    ['a domain error', event('GET', '/v1/tasks/t_x'), 409, 'LeaseLost'],
  ])('%s → %i %s', async (_, request, status, code) => {
    const result = await api(request);
    expect(result.statusCode).toBe(status);
    expect(JSON.parse(result.body)).toEqual({
      error: { code, message: expect.any(String) },
      requestId: 'req-1',
    });
  });

  it('an unexpected error is a bare 500 with no internals, and is logged', async () => {
    const result = await api(event('POST', '/v1/tasks/t_x/cancel'));
    expect(result.statusCode).toBe(500);
    expect(result.body).not.toMatch(/arn:|\/var\/task|exploded/);
    expect(entries.some((e) => e.level === 'error')).toBe(true);
  });

  it('takes the agent from the authorizer context only', async () => {
    const result = await api(
      event('POST', '/v1/agent/heartbeat', '{"agentId":"a_spoofed"}', {
        requestContext: {
          requestId: 'r',
          http: { method: 'POST' },
          authorizer: { lambda: { agentId: 'a_real' } },
        },
      }),
    );
    expect(JSON.parse(result.body)).toEqual({ agent: 'a_real' });
  });

  it('decodes base64 bodies', async () => {
    const result = await api(
      event('POST', '/v1/tasks', Buffer.from('{"b":2}').toString('base64'), { isBase64Encoded: true }),
    );
    expect(JSON.parse(result.body)).toEqual({ echo: { b: 2 } });
  });
});
