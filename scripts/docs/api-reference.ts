/**
 * The route reference of `docs/api.md`, rendered from the OpenAPI document the server serves (`openApiDocument()`),
 * which is itself generated from the route table and the schemas that validate requests: each route, its method,
 * summary, who may call it, its parameters, its body's fields and its answers.
 */
import { openApiDocument } from '../../functions/http/openapi';

type Schema = Record<string, unknown>;

interface Parameter {
  readonly name: string;
  readonly in: string;
  readonly required?: boolean;
  readonly description?: string;
  readonly schema?: Schema;
}

interface Operation {
  readonly summary?: string;
  readonly security?: readonly Record<string, unknown>[];
  readonly parameters?: readonly Parameter[];
  readonly requestBody?: { readonly content?: Record<string, { readonly schema?: Schema }> };
  readonly responses?: Record<
    string,
    {
      readonly description?: string;
      readonly $ref?: string;
      readonly content?: Record<string, { readonly schema?: Schema }>;
    }
  >;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

function cell(text: string): string {
  return text.replace(/\s+/g, ' ').trim().replaceAll('|', '\\|');
}

/** The name a `$ref` points at: `#/components/schemas/TaskSpec` → `TaskSpec`. */
function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

/** A schema's type in a few words: `string`, `integer`, `TaskSpec`, `string[]`, `"a" \| "b"`. */
function typeOf(schema: Schema | undefined): string {
  if (!schema) return 'any';
  if (typeof schema.$ref === 'string') return refName(schema.$ref);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  if ('const' in schema) return JSON.stringify(schema.const);
  const union = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(union)) return union.map(typeOf).join(' | ');
  if (schema.type === 'array') return `${typeOf(schema.items as Schema | undefined)}[]`;
  if (Array.isArray(schema.type)) return schema.type.join(' | ');
  return typeof schema.type === 'string' ? schema.type : 'object';
}

/** A schema's bounds in a few words, where it has any: "1 to 100", "up to 128 characters", "up to 8 items". */
function boundsOf(schema: Schema): string {
  const parts: string[] = [];
  if (schema.minimum !== undefined || schema.maximum !== undefined)
    parts.push(`${String(schema.minimum ?? '…')} to ${String(schema.maximum ?? '…')}`);
  if (schema.maxLength !== undefined) parts.push(`up to ${String(schema.maxLength)} characters`);
  if (schema.maxItems !== undefined) parts.push(`up to ${String(schema.maxItems)} items`);
  return parts.join(', ');
}

/** Who may call an operation, from its `security`. */
function authOf(security: Operation['security']): string {
  if (!security || security.length === 0) return 'none (open)';
  const schemes = security.flatMap((s) => Object.keys(s));
  if (schemes.includes('agentToken')) return 'an agent token (`Authorization: Bearer <agent token>`)';
  if (schemes.includes('awsSigV4')) return 'operator: IAM (SigV4) in AWS, the operator token locally';
  return schemes.join(', ');
}

/** The fields of a request body, its `$ref` followed to the components. */
function bodyFields(schema: Schema | undefined, components: Record<string, Schema>): string[] {
  if (!schema) return [];
  const resolved = typeof schema.$ref === 'string' ? components[refName(schema.$ref)] : schema;
  const name = typeof schema.$ref === 'string' ? `\`${refName(schema.$ref)}\`` : 'JSON';
  const properties = resolved?.properties as Record<string, Schema> | undefined;
  if (!properties) return [`Body: ${name} (${typeOf(resolved)}).`, ''];
  const required = new Set((resolved?.required as string[] | undefined) ?? []);
  return [
    `Body: ${name}`,
    '',
    '| field | type | required | description |',
    '|-------|------|----------|-------------|',
    ...Object.entries(properties).map(
      ([field, s]) =>
        `| \`${field}\` | \`${cell(typeOf(s))}\` | ${required.has(field) ? 'yes' : 'no'} | ${cell([boundsOf(s), String(s.description ?? '')].filter(Boolean).join('; '))} |`,
    ),
    '',
  ];
}

/** A table of parameters, a row each, and the blank line after it. */
function parameterTable(parameters: readonly Parameter[]): string[] {
  return [
    '| parameter | in | type | required | description |',
    '|-----------|----|------|----------|-------------|',
    ...parameters.map(
      (p) =>
        `| \`${p.name}\` | ${p.in} | \`${cell(typeOf(p.schema))}\` | ${p.required ? 'yes' : 'no'} | ${cell(p.description ?? '')} |`,
    ),
    '',
  ];
}

/** One operation's section. */
function operationSection(
  path: string,
  method: string,
  op: Operation,
  components: Record<string, Schema>,
  shared: ReadonlySet<string>,
): string[] {
  const lines = [
    `### ${method.toUpperCase()} ${path}`,
    '',
    `${op.summary ?? ''}. Auth: ${authOf(op.security)}.`,
    '',
  ];
  const parameters = (op.parameters ?? []).filter((p) => !shared.has(JSON.stringify(p)));
  if (parameters.length > 0) {
    lines.push(...parameterTable(parameters));
  }
  lines.push(...bodyFields(op.requestBody?.content?.['application/json']?.schema, components));
  const answers: string[] = [];
  // The refusals by the shared response they name: `Error` (the handlers'), `Refused` (theirs or API Gateway's).
  const refusals = new Map<string, string[]>();
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (response.$ref) {
      const name = refName(response.$ref);
      refusals.set(name, [...(refusals.get(name) ?? []), status]);
    } else {
      const schema = response.content?.['application/json']?.schema;
      answers.push(
        `\`${status}\` ${cell(response.description ?? '')}${schema ? ` (\`${typeOf(schema)}\`)` : ''}`,
      );
    }
  }
  const refused = [...refusals].map(
    ([name, statuses]) =>
      `${statuses.join(', ')} (${name === 'Refused' ? '`Error`, or API Gateway’s `{ message }`' : `\`${name}\``})`,
  );
  lines.push(`Answers: ${answers.join('; ')}. Refusals: ${refused.join('; ')}.`, '');
  return lines;
}

/** The section between `<!-- generated:api -->` markers of `docs/api.md`. */
export function apiSection(): string {
  const document = openApiDocument();
  const components = document.components.schemas as Record<string, Schema>;
  const lines = [
    'Written by `npm run docs` from the OpenAPI document (`GET /v1/openapi.json`, `functions/http/openapi.ts`); a',
    'test fails when this page differs from what it writes. Schemas named in backticks are the document’s',
    'components. A refusal answers `{ "error": { "code", "message" } }`; in AWS, API Gateway answers its own',
    'refusals (IAM, the authorizer, throttling) with `{ "message" }`.',
    '',
  ];
  const operations = Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(
    ([path, item]) => METHODS.flatMap((method) => (item[method] ? [{ path, method, op: item[method] }] : [])),
  );
  // Parameters most operations take alike (the trace context headers) are described once, here.
  const uses = new Map<string, { parameter: Parameter; count: number }>();
  for (const { op } of operations) {
    for (const parameter of op.parameters ?? []) {
      const key = JSON.stringify(parameter);
      uses.set(key, { parameter, count: (uses.get(key)?.count ?? 0) + 1 });
    }
  }
  const shared = new Map([...uses].filter(([, use]) => use.count > operations.length / 2));
  if (shared.size > 0) {
    lines.push(
      'Every route below takes these too, unless it lists headers of the same names:',
      '',
      ...parameterTable([...shared.values()].map((use) => use.parameter)),
    );
  }
  const sharedKeys = new Set(shared.keys());
  for (const { path, method, op } of operations) {
    lines.push(...operationSection(path, method, op, components, sharedKeys));
  }
  return lines.join('\n').trimEnd();
}
