/**
 * Every route, fuzzed: 1,000 generated requests each, every one with at least one defect, the rest random
 * (unicode edge cases included). The defects:
 *
 * - the request: no or a foreign token, a wrong content type, malformed JSON, a body past the size limit;
 * - the body's shape: a body of the wrong type, `null`, empty where fields are required, an unknown or
 *   server-owned field, a field of the wrong type, a key repeated in one object, `__proto__` as a key (at the
 *   top or in a nested object the route reads), nesting far past the bound (up to 3,000 levels);
 * - the values: control and format characters in names and ids, over-long strings, path parameters and keys;
 * - the query of the list routes: forged cursors (empty, over-long or foreign key parts), bad limits and filters
 *   (a status or an `attention` that is not one);
 * - a path parameter that cannot name anything.
 *
 * Each answer must be a 4xx with the error shape and a short message without stack, path or ARN, and nothing may
 * change: a dump of every table reads the same byte for byte afterwards, and no SQS message is sent. Bodies are
 * built around a valid body of the route and the route's parameters name real things where the route reads its
 * body (the queue of `limits`), so a defect is what is refused, not a missing resource.
 *
 * 415 is allowed besides the 4xx codes one could expect: it is the status for a body that is not JSON.
 */
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAgentToken } from '#domain/agent-token';
import { type LocalRequest, localRequestHandler } from '#local/server';
import { claimUntil, createTestStack, type TestStack } from '#test/stack';
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
  | 'nullBody'
  | 'emptyBody'
  | 'unknownField'
  | 'wrongType'
  | 'duplicateKey'
  | 'protoKey'
  | 'deepNesting'
  | 'controlChar'
  | 'overlong'
  | 'oversize'
  | 'badParam'
  | 'badQuery';

type Json = Record<string, unknown>;

const takesBody = (route: RouteDefinition) => route.method !== 'GET';
const paramsOf = (route: RouteDefinition) => [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? '');
/** The query parameters each list route reads. */
const QUERIES: Record<string, readonly string[]> = {
  listTasks: ['cursor', 'queue', 'status', 'attention'],
  listAgents: ['cursor'],
  listSchedules: ['cursor'],
};
/** Batch routes answer 200 with one outcome per item; every item must then be refused. */
const BATCHES = new Set(['submitTasks', 'completeTasks', 'submitChildTasks']);
/** Fields that take any JSON value: a wrong type there is no defect. */
const ANY_JSON = new Set(['payload', 'result', 'checkpoints']);

/** A path parameter of the right shape that names nothing. */
const absent: Record<string, string> = {
  taskId: `t_${'q'.repeat(26)}`,
  agentId: `a_${'q'.repeat(26)}`,
  name: 'no-such-queue-or-schedule',
  role: 'no-such-role',
};
/** Parameters that name something real, where the route reads its body: the body's defect must be what fails. */
const real: Record<string, Record<string, string>> = { setQueueLimits: { name: 'work' } };

/** A valid body for each route that reads one; the fuzzer breaks it. `parent` is a task the agent holds. */
function templateOf(operation: string, sessionId: string, parent: Json): Json {
  const templates: Record<string, Json> = {
    submitChildTask: { ...parent, key: 'fuzzed', queue: 'work', payload: { n: 1 } },
    submitChildTasks: { ...parent, tasks: [{ key: 'fuzzed', queue: 'work', payload: {} }] },
    submitTask: { queue: 'work', payload: { n: 1 }, require: { gpu: '*', model: 'claude' } },
    submitTasks: { tasks: [{ queue: 'work', payload: {} }] },
    setQueueLimits: { maxConcurrency: 2 },
    // Routes that take no body: `{}` is their one valid body, so each defect is what is sent instead or added to it
    // (a body left empty is no defect there: it would pause or resume the scheduler, or start a rebuild, and the dump
    // would differ). A rebuild's cursor and limit are forged by the rebuild suite and the hostile requests.
    pauseScheduler: {},
    resumeScheduler: {},
    rebuildScheduler: {},
    registerAgent: { name: 'fuzzed', queues: ['work'], labels: { gpu: ['a100', 'h100'], model: 'claude' } },
    createSchedule: { name: 'fuzzed', expression: 'rate(5 minutes)', task: { queue: 'work' } },
    heartbeat: { sessionId },
    claimTasks: { sessionId },
    completeTasks: { tasks: [{ taskId: absent.taskId, leaseEpoch: 1 }], claimNext: { sessionId } },
    completeTask: { leaseEpoch: 1, claimNext: { sessionId } },
    failTask: { leaseEpoch: 1, error: { message: 'x' } },
    releaseTask: { leaseEpoch: 1 },
    volunteerForRole: { sessionId },
    withdrawFromRole: { sessionId },
    releaseRole: { leaseEpoch: 1 },
    clearAttention: { needsAttention: false },
  };
  return templates[operation] ?? {};
}

/** The nested objects of a body that the route validates strictly (not free JSON). */
const nestedObjects = (body: Json): Json[] =>
  Object.entries(body).flatMap(([key, value]) => {
    if (ANY_JSON.has(key)) return [];
    if (Array.isArray(value)) return value.filter((v): v is Json => typeof v === 'object' && v !== null);
    return typeof value === 'object' && value !== null ? [value as Json] : [];
  });

/** `{ "__proto__": value, ...object }` as JSON.parse would give it: an own key, not a prototype. */
function withProtoKey(object: Json, value: unknown): Json {
  const copy: Json = {};
  Object.defineProperty(copy, '__proto__', { value, enumerable: true, writable: true, configurable: true });
  return Object.assign(copy, object);
}

const defectsOf = (route: RouteDefinition, template: Json): Defect[] => {
  const defects: Defect[] = ['auth'];
  const params = paramsOf(route);
  if (takesBody(route)) {
    defects.push(
      'contentType',
      'malformedJson',
      'bodyType',
      'nullBody',
      'unknownField',
      'wrongType',
      'duplicateKey',
      'protoKey',
      'deepNesting',
      'controlChar',
      'overlong',
      'oversize',
    );
    // An empty body is the empty object: a defect only where fields are required or the resource is absent.
    if (Object.keys(template).length > 0 || (params.length > 0 && route.access === 'operator')) {
      defects.push('emptyBody');
    }
  } else if (params.length > 0) defects.push('controlChar', 'overlong');
  if (params.length > 0) defects.push('badParam');
  if (QUERIES[route.operation]) defects.push('badQuery', 'overlong', 'controlChar');
  return defects;
};

describe('fuzzing every route', () => {
  let stack: TestStack;
  let answer: (request: LocalRequest) => ReturnType<ReturnType<typeof localRequestHandler>>;
  let agentToken = '';
  let sessionId = '';
  /** The fence of a task the agent holds, so that the child routes reach their specifications. */
  let parent: Json = {};
  /** Every item of every table, as text, sorted: equal dumps mean nothing changed. */
  const dump = async () => {
    const tables = [stack.ctx.tasks.tableName, stack.ctx.sessions.tableName, stack.ctx.agents.tableName];
    const items = await Promise.all(
      tables.map(async (TableName) => {
        const lines: string[] = [];
        let ExclusiveStartKey: Record<string, unknown> | undefined;
        do {
          const output = await stack.ctx.sessions.doc.send(
            new ScanCommand({ TableName, ConsistentRead: true, ExclusiveStartKey }),
          );
          for (const item of output.Items ?? []) lines.push(JSON.stringify(item));
          ExclusiveStartKey = output.LastEvaluatedKey;
        } while (ExclusiveStartKey);
        return lines.sort();
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
    sessionId = (await stack.scheduler.openSession(registered.agent.agentId)).sessionId;
    await stack.scheduler.submit({ queue: 'work', payload: { seed: true } });
    const [held] = await claimUntil(stack.scheduler, { agentId: registered.agent.agentId, sessionId }, 1);
    parent = { parentTaskId: held?.taskId, leaseEpoch: held?.leaseEpoch };
    answer = localRequestHandler({
      scheduler: stack.scheduler,
      agents: stack.ctx.agents,
      operatorToken: OPERATOR,
      log: { info() {}, warn() {}, error() {} },
      authorizerCacheTtlMs: 60_000,
      agentRateLimit: false,
    });
  });
  afterAll(async () => {
    await stack.destroy();
  });

  const control = fc.constantFrom(
    '\u0000',
    '\u0007',
    '\u001b[2J',
    '\u001b]0;x\u0007',
    '\r\n',
    '\u007f',
    '\u009b',
    '\u200b',
    '\u202e',
    '\u2028',
    '\ufeff',
  );
  const candidates = fc.record({
    text: fc.string({ unit: 'binary', maxLength: 40 }),
    json: fc.jsonValue({ maxDepth: 2 }),
    pick: fc.nat(),
    control,
    position: fc.nat(),
    longLength: fc.integer({ min: 2_049, max: 12_000 }),
    depth: fc.integer({ min: 65, max: 3_000 }),
    arrays: fc.boolean(),
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
    wrongType: fc.constantFrom<unknown>([], 0, -1, 1.5, 'text', null, true, [{}], {}, '1', 1e308),
    cursorKey: fc.oneof(
      fc.constantFrom<unknown>(
        { taskId: '', part: 'state' },
        { taskId: 't_x', part: '' },
        { taskId: '', part: '' },
        { taskId: `t_${'q'.repeat(26)}`, part: 'payload#x' },
        { taskId: `t_${'q'.repeat(26)}` },
        { createdAt: -1, taskId: `t_${'q'.repeat(26)}` },
        { createdAt: 1.5, taskId: `t_${'q'.repeat(26)}` },
        { createdAt: 1e300, taskId: `t_${'q'.repeat(26)}` },
        { createdAt: '1', taskId: `t_${'q'.repeat(26)}` },
        { createdAt: 1, taskId: `t_${'q'.repeat(26)}`, part: 'state' },
        [],
        null,
        '',
      ),
      fc.record({ taskId: fc.string({ maxLength: 3_000 }), part: fc.string({ maxLength: 20 }) }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    badLimit: fc.constantFrom('0', '-1', '101', '1.5', 'abc', '', '1e3', 'NaN', 'Infinity', ' 5', '0x10'),
  });

  // The health check reads no input and no table: whatever is sent, it answers 200 and changes nothing.
  const fuzzed = ROUTES.filter((route) => route.operation !== 'health');

  it.each(fuzzed.map((route) => [`${route.method} ${route.path}`, route] as const))(
    '%s: 1,000 defective requests, each a clean 4xx that changes nothing',
    async (_, route) => {
      const before = await dump();
      stack.meter.reset();
      const template = templateOf(route.operation, sessionId, parent);
      const defects = defectsOf(route, template);
      const params = paramsOf(route);
      const validToken = route.access === 'agent' ? agentToken : OPERATOR;
      const strings = Object.keys(template).filter((k) => typeof template[k] === 'string');
      const typed = Object.keys(template).filter((k) => !ANY_JSON.has(k));
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...defects), candidates, async (defect, c) => {
          const choose = <T>(values: readonly T[]): T | undefined => values[c.pick % values.length];
          const spoil = (value: string) => {
            const at = c.position % (value.length + 1);
            return `${value.slice(0, at)}${c.control}${value.slice(at)}`;
          };
          const long = (value: string) => value + 'q'.repeat(c.longLength);

          // Which part the value defects land in: a string field of the body, a path parameter, the query.
          const targets = [
            ...(takesBody(route) ? strings.map((k) => `body:${k}`) : []),
            ...params.map((p) => `param:${p}`),
            ...(QUERIES[route.operation] ?? []).filter((q) => q !== 'status').map((q) => `query:${q}`),
          ];
          const target =
            defect === 'controlChar' || defect === 'overlong' ? (choose(targets) ?? 'body:key') : undefined;

          const param = (name: string) => {
            const base = real[route.operation]?.[name] ?? absent[name] ?? 'x';
            if (defect === 'badParam') return encodeURIComponent(`${c.text}/`);
            if (target === `param:${name}`) {
              return encodeURIComponent(defect === 'controlChar' ? spoil(base) : long(base));
            }
            return base;
          };
          const path = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => param(name));

          let query = '';
          if (defect === 'badQuery') {
            const which = c.pick % (route.operation === 'listTasks' ? 5 : 3);
            const cursor = Buffer.from(JSON.stringify(c.cursorKey) ?? '').toString('base64url');
            query =
              which === 0
                ? `cursor=${cursor}`
                : which === 1
                  ? `limit=${encodeURIComponent(c.badLimit)}`
                  : which === 2
                    ? `cursor=${encodeURIComponent(c.text || '!')}`
                    : which === 3
                      ? `status=${encodeURIComponent(c.text || 'running')}`
                      : // `true` is the one value it takes.
                        `attention=${encodeURIComponent(c.text === 'true' ? 'TRUE' : c.text || 'false')}`;
          } else if (target === 'query:cursor') {
            const forged = Buffer.from(JSON.stringify({ taskId: `t_${'q'.repeat(26)}`, part: 'state' }));
            query = `cursor=${defect === 'controlChar' ? encodeURIComponent(spoil(forged.toString('base64url'))) : long(forged.toString('base64url'))}`;
          } else if (target === 'query:queue') {
            query = `queue=${encodeURIComponent(defect === 'controlChar' ? spoil('work') : long('work'))}`;
          } else if (target === 'query:attention') {
            query = `attention=${encodeURIComponent(defect === 'controlChar' ? spoil('true') : long('true'))}`;
          }

          const tokens: Record<string, string | undefined> = {
            none: undefined,
            garbage: `Bearer ${c.text}`,
            foreign: `Bearer ${route.access === 'agent' ? OPERATOR : agentToken}`,
            malformedAgent: `Bearer a_${'z'.repeat(26)}.${'A'.repeat(43)}`,
            emptyBearer: 'Bearer ',
          };
          const authorization = defect === 'auth' ? tokens[c.token] : `Bearer ${validToken}`;

          const bodyOf = (): string => {
            if (!takesBody(route)) return '';
            const rest = (key: string) => {
              const { [key]: _dropped, ...others } = template;
              return JSON.stringify(others).slice(1, -1);
            };
            const join = (head: string, tail: string) => `{${head}${tail ? `,${tail}` : ''}}`;
            switch (defect) {
              case 'malformedJson':
                return `{${c.text}`;
              case 'bodyType': {
                // `{}` is an object: the right type for a body.
                const plain =
                  typeof c.wrongType === 'object' && c.wrongType !== null && !Array.isArray(c.wrongType);
                return JSON.stringify(plain ? [] : c.wrongType);
              }
              case 'nullBody':
                return 'null';
              case 'emptyBody':
                return '';
              case 'unknownField':
                return JSON.stringify({ ...template, [c.extraKey]: c.json ?? null });
              case 'wrongType': {
                const key = choose(typed) ?? 'leaseEpoch';
                // A string for a string field is the right type: use a number there instead.
                const wrong =
                  typeof c.wrongType === typeof template[key] && typeof c.wrongType === 'string'
                    ? 0
                    : c.wrongType;
                return JSON.stringify({ ...template, [key]: wrong });
              }
              case 'duplicateKey': {
                const key = choose(Object.keys(template)) ?? 'x';
                const value = JSON.stringify(template[key] ?? c.json ?? null);
                const text = JSON.stringify({ ...template, [key]: template[key] ?? c.json ?? null });
                return `{${JSON.stringify(key)}:${value},${text.slice(1)}`;
              }
              case 'protoKey': {
                const inside = choose([undefined, ...nestedObjects(template)]);
                const value = c.json ?? {};
                if (inside === undefined) return JSON.stringify(withProtoKey(template, value));
                const mark = (v: unknown): unknown =>
                  v === inside ? withProtoKey(inside, value) : Array.isArray(v) ? v.map(mark) : v;
                return JSON.stringify(
                  Object.fromEntries(Object.entries(template).map(([k, v]) => [k, mark(v)])),
                );
              }
              case 'deepNesting': {
                const key =
                  choose([...Object.keys(template), 'payload', 'result', 'checkpoints']) ?? 'payload';
                const deep = c.arrays
                  ? `${'['.repeat(c.depth)}${']'.repeat(c.depth)}`
                  : `${'{"a":'.repeat(c.depth)}1${'}'.repeat(c.depth)}`;
                return join(`${JSON.stringify(key)}:${deep}`, rest(key));
              }
              case 'controlChar':
              case 'overlong': {
                if (target?.startsWith('body:') && target !== 'body:key') {
                  const key = target.slice(5);
                  const value = String(template[key]);
                  return JSON.stringify({
                    ...template,
                    [key]: defect === 'controlChar' ? spoil(value) : long(value),
                  });
                }
                if (target === 'body:key') {
                  const key = defect === 'controlChar' ? spoil('name') : long('k');
                  return JSON.stringify({ ...template, [key]: 1 });
                }
                return JSON.stringify(template);
              }
              case 'oversize':
                return JSON.stringify({ ...template, payload: 'x'.repeat(MAX_BODY_BYTES) });
              default:
                return JSON.stringify(template);
            }
          };
          const body = bodyOf();
          const contentType =
            defect === 'contentType'
              ? c.contentType === 'json'
                ? 'text/json'
                : c.contentType
              : 'application/json';
          const result = await answer({
            method: route.method,
            url: query ? `${path}?${query}` : path,
            headers: {
              ...(authorization === undefined ? {} : { authorization }),
              'content-type': contentType,
            },
            body,
          });
          const refusedItems =
            BATCHES.has(route.operation) &&
            result.statusCode === 200 &&
            (JSON.parse(result.body) as { results: { ok: boolean; status: number }[] }).results.every(
              (item) => !item.ok && ALLOWED.has(item.status),
            );
          if (refusedItems) return;
          if (!ALLOWED.has(result.statusCode)) {
            throw new Error(
              `${defect} ${target ?? ''}: status ${result.statusCode} ${result.body.slice(0, 200)} for ${body.slice(0, 200)}`,
            );
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
      expect(await dump()).toBe(before);
      expect(
        stack.meter.totals((r) => r.service === 'sqs' && r.operation.startsWith('SendMessage')).requests,
      ).toBe(0);
    },
    120_000,
  );
});
