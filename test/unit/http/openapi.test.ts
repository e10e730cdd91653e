import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../../functions/http/openapi';
import { ROUTES } from '../../../functions/http/routes';

describe('OpenAPI document', () => {
  const doc = openApiDocument();

  it('is OpenAPI 3.1 and lists every route once', () => {
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(
        ([method, op]) => `${method.toUpperCase()} ${path} ${(op as { operationId: string }).operationId}`,
      ),
    );
    expect(operations.sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path} ${r.operation}`).sort());
  });

  it('describes request bodies from the validating schemas', () => {
    const submit = (
      doc.paths['/v1/tasks'] as Record<
        string,
        { requestBody: { content: Record<string, { schema: Record<string, unknown> }> } }
      >
    ).post;
    const schema = submit?.requestBody.content['application/json']?.schema;
    expect(schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: expect.arrayContaining(['queue', 'payload']),
      properties: expect.objectContaining({
        priority: expect.objectContaining({ enum: ['critical', 'high', 'normal', 'low'] }),
      }),
    });
  });

  it('secures agent and operator routes, not health', () => {
    const security = (path: string, method: string) =>
      (doc.paths[path] as Record<string, { security: unknown[] }>)[method]?.security;
    expect(security('/v1/health', 'get')).toEqual([]);
    expect(security('/v1/agent/claim', 'post')).toEqual([{ agentToken: [] }]);
    expect(security('/v1/tasks', 'post')).toEqual([{ awsSigV4: [] }, { operatorToken: [] }]);
  });
});
