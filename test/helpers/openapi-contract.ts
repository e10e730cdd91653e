/**
 * Checks real answers of the API against its OpenAPI document: the body of each status an operation answers must
 * match the schema the document gives for that operation and status.
 *
 * The document leaves its objects open, so that clients keep working when a field is added. Here they are
 * closed: a field the server sends and the document does not describe fails the check too.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { matchRoute } from '../../functions/http/http-api';
import { ROUTES } from '../../functions/http/routes';

type Json = Record<string, unknown>;

export interface OpenApiDocument {
  readonly paths: Record<string, Record<string, { operationId: string; responses: Record<string, Json> }>>;
  readonly components: { schemas: Record<string, Json>; responses: Record<string, Json> };
}

export interface CheckedResponse {
  readonly operation: string;
  readonly status: number;
  /** What does not match; empty when the body matches. */
  readonly problems: string[];
}

const BASE = 'https://agent-scheduler.test/components.json';

/** Every object that lists its properties and lets any other through gets no others. */
function closed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(closed);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value).map(([key, inner]): [string, unknown] =>
    key === '$ref' && typeof inner === 'string'
      ? [key, inner.replace('#/components/schemas/', `${BASE}#/$defs/`)]
      : [key, closed(inner)],
  );
  const schema = Object.fromEntries(entries) as Json;
  const extra = schema.additionalProperties;
  if (
    schema.properties &&
    (extra === undefined || (typeof extra === 'object' && extra && Object.keys(extra).length === 0))
  ) {
    schema.additionalProperties = false;
  }
  return schema;
}

export function responseChecker(doc: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: BASE, $defs: closed(doc.components.schemas) as Json });
  const compiled = new Map<string, ValidateFunction>();

  /** The schema of one answer of one operation, or undefined when the document does not list that status. */
  const validatorFor = (path: string, method: string, status: number): ValidateFunction | undefined => {
    const key = `${method} ${path} ${status}`;
    const known = compiled.get(key);
    if (known) return known;
    let response = doc.paths[path]?.[method.toLowerCase()]?.responses[String(status)];
    const ref = response?.$ref;
    if (typeof ref === 'string') response = doc.components.responses[ref.split('/').pop() ?? ''];
    const schema = (response?.content as Record<string, { schema?: Json }> | undefined)?.['application/json']
      ?.schema;
    if (!schema) return undefined;
    const validate = ajv.compile(closed(schema) as Json);
    compiled.set(key, validate);
    return validate;
  };

  /** Checks one answer to `method` on `url` (path and query) against the document. */
  return (method: string, url: string, status: number, body: unknown): CheckedResponse => {
    const pathname = new URL(url, 'http://localhost').pathname;
    const matched = matchRoute(ROUTES, method, pathname);
    if (!matched || !('route' in matched)) {
      return { operation: 'unmatched', status, problems: [`no route ${method} ${pathname}`] };
    }
    const { route } = matched;
    if (!doc.paths[route.path]?.[method.toLowerCase()]) {
      return { operation: route.operation, status, problems: [`${route.operation} is not in the document`] };
    }
    const validate = validatorFor(route.path, method, status);
    if (!validate) {
      return { operation: route.operation, status, problems: [`status ${status} is not documented`] };
    }
    const problems = validate(body)
      ? []
      : (validate.errors ?? []).map(
          (e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
        );
    return { operation: route.operation, status, problems };
  };
}
