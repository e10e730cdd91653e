/**
 * Checks an AWS Signature Version 4 on a request as it arrived, the way API Gateway checks IAM-authorized routes:
 * the signature is computed again from the raw method, path, query, signed headers and body, with the secret key
 * of the access key the request names. Locally this stands in for IAM, so the CLI's and SDK's signing can be
 * proven without AWS (it checks who signed, not what IAM policies allow).
 *
 * Written from the published algorithm
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html), not with a signing library: a
 * signer and a checker that share code would agree on the same mistake.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface SigV4Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface SigV4VerifierOptions {
  readonly region: string;
  /** @default 'execute-api' */
  readonly service?: string;
  /** The keys whose signatures are good. */
  readonly credentials: readonly SigV4Credentials[];
  /** How far the signing time may be from now, either way; AWS allows 5 minutes. @default 300000 */
  readonly maxSkewMs?: number;
}

export interface RawRequest {
  readonly method: string;
  /** Path and query as sent: `/v1/tasks?queue=q`. */
  readonly url: string;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
}

export type SigV4Verdict =
  | { readonly ok: true; readonly accessKeyId: string }
  | { readonly ok: false; readonly reason: string };

const ALGORITHM = 'AWS4-HMAC-SHA256';

/** RFC 3986 encoding: everything but unreserved characters, as AWS wants it. */
const uriEncode = (value: string) =>
  encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

const sha256Hex = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * The canonical URI of services other than S3: each segment of the path as received (already encoded once) is
 * encoded again.
 */
const canonicalUri = (path: string) => path.split('/').map(uriEncode).join('/') || '/';

function canonicalQuery(search: string): string {
  if (search === '') return '';
  return search
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const at = pair.indexOf('=');
      const [key, value] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
      const decode = (text: string) => decodeURIComponent(text.replace(/\+/g, ' '));
      return [uriEncode(decode(key)), uriEncode(decode(value))] as const;
    })
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([key, value]) => `${key}=${value}`)
    .join('&');
}

function parseAuthorization(header: string | undefined) {
  if (!header?.startsWith(`${ALGORITHM} `)) return undefined;
  const fields = Object.fromEntries(
    header
      .slice(ALGORITHM.length + 1)
      .split(',')
      .map((part) => part.trim().split('=', 2) as [string, string]),
  ) as Record<string, string | undefined>;
  const [accessKeyId, date, region, service, terminal, ...rest] = (fields.Credential ?? '').split('/');
  if (!accessKeyId || !date || !region || !service || terminal !== 'aws4_request' || rest.length > 0)
    return undefined;
  if (!fields.SignedHeaders || !fields.Signature) return undefined;
  return {
    accessKeyId,
    date,
    region,
    service,
    signedHeaders: fields.SignedHeaders.split(';'),
    signature: fields.Signature,
  };
}

/** `20261124T151045Z` as milliseconds, or NaN. */
const amzDateMs = (value: string) => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return Number.NaN;
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, ...number[]];
  return Date.UTC(year, (month ?? 1) - 1, day, hour, minute, second);
};

export function verifySigV4(
  request: RawRequest,
  options: SigV4VerifierOptions,
  now: number = Date.now(),
): SigV4Verdict {
  const auth = parseAuthorization(request.headers.authorization);
  if (!auth) return { ok: false, reason: 'no AWS Signature Version 4 in the Authorization header' };
  const service = options.service ?? 'execute-api';
  if (auth.region !== options.region || auth.service !== service)
    return { ok: false, reason: `the credential scope is not ${options.region}/${service}` };
  const key = options.credentials.find((c) => c.accessKeyId === auth.accessKeyId);
  if (!key) return { ok: false, reason: 'the access key is not known' };
  const amzDate = request.headers['x-amz-date'] ?? '';
  const signedAt = amzDateMs(amzDate);
  if (!auth.signedHeaders.includes('host') || !auth.signedHeaders.includes('x-amz-date'))
    return { ok: false, reason: 'host and x-amz-date must be signed' };
  if (!amzDate.startsWith(auth.date) || Number.isNaN(signedAt))
    return { ok: false, reason: 'x-amz-date does not match the credential scope' };
  if (Math.abs(now - signedAt) > (options.maxSkewMs ?? 300_000))
    return { ok: false, reason: 'the signature is too old or from the future' };

  const queryAt = request.url.indexOf('?');
  const path = queryAt < 0 ? request.url : request.url.slice(0, queryAt);
  const search = queryAt < 0 ? '' : request.url.slice(queryAt + 1);
  const payloadHash = sha256Hex(request.body);
  const claimedHash = request.headers['x-amz-content-sha256'];
  if (claimedHash !== undefined && claimedHash !== payloadHash)
    return { ok: false, reason: 'the body is not the one signed' };
  const canonicalHeaders = auth.signedHeaders
    .map((name) => `${name}:${(request.headers[name] ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const canonicalRequest = [
    request.method.toUpperCase(),
    canonicalUri(path),
    canonicalQuery(search),
    canonicalHeaders,
    auth.signedHeaders.join(';'),
    payloadHash,
  ].join('\n');
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`;
  const stringToSign = [ALGORITHM, amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = hmac(
    hmac(hmac(hmac(`AWS4${key.secretAccessKey}`, auth.date), auth.region), auth.service),
    'aws4_request',
  );
  const expected = Buffer.from(hmac(signingKey, stringToSign).toString('hex'));
  const given = Buffer.from(auth.signature);
  return expected.length === given.length && timingSafeEqual(expected, given)
    ? { ok: true, accessKeyId: auth.accessKeyId }
    : { ok: false, reason: 'the signature does not match the request' };
}
