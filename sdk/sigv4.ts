/**
 * Signing operator requests with AWS Signature Version 4, for a deployed stack whose operator routes use IAM.
 *
 * The SDK has no dependencies, so it does not sign by itself: it hands each request to a signer you give it, in
 * the shape AWS's own `SignatureV4` (`@smithy/signature-v4`) signs. With the standard credential chain:
 *
 * ```ts
 * import { Sha256 } from '@aws-crypto/sha256-js';
 * import { fromNodeProviderChain } from '@aws-sdk/credential-providers';
 * import { SignatureV4 } from '@smithy/signature-v4';
 * import { AgentSchedulerClient, awsSigV4 } from '@agent-scheduler/sdk';
 *
 * const client = new AgentSchedulerClient({
 *   endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com',
 *   signer: awsSigV4(
 *     new SignatureV4({ service: 'execute-api', region: 'eu-west-1', credentials: fromNodeProviderChain(), sha256: Sha256 }),
 *   ),
 * });
 * ```
 */

/** A request as AWS's signers take it: the path still percent-encoded, query values decoded. */
export interface SignableRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body?: string;
}

/** What `awsSigV4` needs of a signer: `SignatureV4` from `@smithy/signature-v4` has it. */
export interface RequestSigner {
  sign(request: SignableRequest): Promise<{ headers: Record<string, string> }>;
}

/** Turns a SigV4 signer into the client's `signer` option: each attempt is signed anew, with its own time. */
export function awsSigV4(signer: RequestSigner): (request: Request) => Promise<Request> {
  return async (request) => {
    const url = new URL(request.url);
    const body = request.body === null ? undefined : await request.text();
    const query: Record<string, string | string[]> = {};
    for (const [key, value] of url.searchParams) {
      const seen = query[key];
      query[key] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
    }
    const headers: Record<string, string> = { host: url.host };
    // A bearer token has no place beside a signature: IAM would refuse the request for it.
    request.headers.forEach((value, name) => {
      if (name !== 'authorization') headers[name] = value;
    });
    const signed = await signer.sign({
      method: request.method,
      protocol: url.protocol,
      hostname: url.hostname,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: url.pathname,
      query,
      headers,
      ...(body === undefined ? {} : { body }),
    });
    // `host` is the URL's; fetch sets it and refuses it as a header.
    const { host: _host, ...sent } = signed.headers;
    return new Request(url, {
      method: request.method,
      headers: sent,
      ...(body === undefined ? {} : { body }),
      signal: request.signal,
    });
  };
}
