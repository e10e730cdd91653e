import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { componentSchemas, openApiDocument } from '../../../functions/http/openapi';
import { DEPLOYED_ROUTES, ROUTES } from '../../../functions/http/routes';

type Json = Record<string, unknown>;
type Operation = {
  operationId: string;
  summary?: string;
  security: unknown[];
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, Json>;
};

const operations = (doc: ReturnType<typeof openApiDocument>) =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods as Record<string, Operation>).map(([method, op]) => ({ path, method, op })),
  );

/** Every `$ref` in `value`, with where it is. */
function refsIn(value: unknown, at = '#'): { at: string; ref: string }[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => refsIn(item, `${at}/${i}`));
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    key === '$ref' && typeof inner === 'string' ? [{ at, ref: inner }] : refsIn(inner, `${at}/${key}`),
  );
}

/** What a local `#/…` pointer points at in `doc`, or undefined. */
function resolve(doc: unknown, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  return ref
    .slice(2)
    .split('/')
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce<unknown>(
      (node, segment) =>
        typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[segment] : undefined,
      doc,
    );
}

describe('OpenAPI document', () => {
  const doc = openApiDocument();

  it('is OpenAPI 3.1 and lists every route served in AWS once, and nothing else', () => {
    expect(doc.openapi).toBe('3.1.0');
    const listed = operations(doc).map(
      ({ path, method, op }) => `${method.toUpperCase()} ${path} ${op.operationId}`,
    );
    expect(listed.sort()).toEqual(DEPLOYED_ROUTES.map((r) => `${r.method} ${r.path} ${r.operation}`).sort());
    // The local-only route has no handler, here or in the local server: it is not listed.
    expect(ROUTES.filter((r) => r.localOnly).map((r) => r.operation)).toEqual(['listEvents']);
    expect(doc.paths).not.toHaveProperty(['/v1/events']);
  });

  it('is valid: swagger-parser finds no error and every reference resolves', async () => {
    // validate() dereferences the document in place: it gets a copy.
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
    const unresolved = refsIn(doc).filter(({ ref }) => resolve(doc, ref) === undefined);
    expect(unresolved).toEqual([]);
    expect(JSON.stringify(doc)).not.toContain('$defs');
  });

  it('gives every operation a summary and a schema for each success status', () => {
    for (const { op } of operations(doc)) {
      expect(op.summary, op.operationId).toMatch(/^[A-Z].{5,60}$/);
      const successes = Object.keys(op.responses).filter((status) => status.startsWith('2'));
      expect(successes.length, op.operationId).toBeGreaterThan(0);
      for (const status of successes) {
        const content = op.responses[status]?.content as Record<string, { schema?: Json }> | undefined;
        const ref = content?.['application/json']?.schema?.$ref;
        expect(ref, `${op.operationId} ${status}`).toEqual(
          expect.stringMatching(/^#\/components\/schemas\//),
        );
        expect(resolve(doc, String(ref)), `${op.operationId} ${status}`).toMatchObject({ type: 'object' });
      }
    }
  });

  it('answers new tasks with 201 and a task found again by its key with 200', () => {
    const submit = (doc.paths['/v1/tasks'] as Record<string, Operation>).post;
    expect(Object.keys(submit?.responses ?? {})).toEqual(expect.arrayContaining(['200', '201']));
  });

  it('describes responses from the views, open to fields added later', () => {
    const schemas = doc.components.schemas;
    expect(schemas.Task).toMatchObject({
      type: 'object',
      required: expect.arrayContaining(['taskId', 'status', 'createdAt']),
      properties: expect.objectContaining({
        createdAt: expect.objectContaining({ type: 'string', format: 'date-time' }),
        status: expect.objectContaining({
          enum: ['waiting', 'queued', 'leased', 'suspended', 'succeeded', 'dead', 'cancelled', 'expired'],
        }),
      }),
    });
    expect(schemas.Task?.additionalProperties).not.toBe(false);
    expect(schemas.Task?.required).not.toContain('leaseDeadline');
    expect(schemas.TaskSummary?.properties).not.toHaveProperty('result');
    expect(schemas.Role?.properties).toHaveProperty('holder', {
      anyOf: [expect.objectContaining({ type: 'string' }), { type: 'null' }],
    });
    expect(schemas.TaskPage).toMatchObject({
      properties: { tasks: { items: { $ref: '#/components/schemas/TaskSummary' } } },
      required: ['tasks'],
    });
  });

  it('describes request bodies from the validating schemas', () => {
    const submit = (doc.paths['/v1/tasks'] as Record<string, Operation>).post;
    const ref = submit?.requestBody?.content['application/json']?.schema.$ref;
    expect(resolve(doc, String(ref))).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: expect.arrayContaining(['queue', 'payload']),
      properties: expect.objectContaining({
        priority: expect.objectContaining({ enum: ['critical', 'high', 'normal', 'low'] }),
      }),
    });
  });

  it('refers every error to the shared Error schema', () => {
    for (const { op } of operations(doc)) {
      const errors = Object.entries(op.responses).filter(([status]) => !status.startsWith('2'));
      expect(errors.length, op.operationId).toBeGreaterThan(0);
      for (const [, response] of errors) {
        expect(JSON.stringify(resolve(doc, String(response.$ref)))).toContain('#/components/schemas/Error');
      }
    }
  });

  it('secures agent and operator routes, not health', () => {
    const security = (path: string, method: string) =>
      (doc.paths[path] as Record<string, { security: unknown[] }>)[method]?.security;
    expect(security('/v1/health', 'get')).toEqual([]);
    expect(security('/v1/agent/claim', 'post')).toEqual([{ agentToken: [] }]);
    expect(security('/v1/tasks', 'post')).toEqual([{ awsSigV4: [] }, { operatorToken: [] }]);
    expect(doc.components.securitySchemes.awsSigV4).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
      'x-amazon-apigateway-authtype': 'awsSigv4',
    });
    expect(doc.components.securitySchemes.agentToken).toMatchObject({ type: 'http', scheme: 'bearer' });
  });

  it('names the server it is served from, or the one it is given', () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: '/' })]);
    expect(openApiDocument({ serverUrl: 'https://api.example.com' }).servers).toEqual([
      expect.objectContaining({ url: 'https://api.example.com' }),
    ]);
  });
});

describe('componentSchemas', () => {
  it('hoists what zod pulls out on its own into components of their own, and the references follow', async () => {
    // A cycle through a schema that is not published: zod can only describe it by reference.
    interface Node {
      readonly value: number;
      readonly next?: Node;
    }
    const node: z.ZodType<Node> = z.object({ value: z.number(), next: z.lazy(() => node).optional() });
    const registry = z.registry<{ readonly id: string }>();
    z.object({ head: node }).register(registry, { id: 'List' });
    const schemas = componentSchemas(registry, 'output', new Set(['SharedOutputSchema0']));
    expect(Object.keys(schemas)).toEqual(['List', expect.stringMatching(/^SharedOutput/)]);
    expect(Object.keys(schemas)).not.toContain('SharedOutputSchema0');
    const document = {
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      paths: {},
      components: { schemas: { ...schemas, SharedOutputSchema0: { type: 'string' } } },
    };
    for (const { ref } of refsIn(document)) expect(resolve(document, ref), ref).toBeDefined();
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
  });

  it('refuses two components of one name', () => {
    const registry = z.registry<{ readonly id: string }>();
    z.string().register(registry, { id: 'Task' });
    expect(() => componentSchemas(registry, 'input', new Set(['Task']))).toThrow(/Task/);
  });
});
