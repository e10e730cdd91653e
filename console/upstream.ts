/**
 * How the console's requests reach the API as the operator's: with the operator token (the local stack), or
 * signed with AWS Signature Version 4 (a deployed stack's IAM-authorized routes), as the CLI sends them.
 */

/** Sends each request with the operator token as its bearer. */
export const bearerUpstream =
  (token: string) =>
  (request: Request): Promise<Response> => {
    const withToken = new Request(request);
    withToken.headers.set('authorization', `Bearer ${token}`);
    return fetch(withToken);
  };

/** Sends each request signed by `sign` (the SDK's `awsSigV4` around AWS's own signer). */
export const signedUpstream =
  (sign: (request: Request) => Promise<Request>) =>
  async (request: Request): Promise<Response> =>
    fetch(await sign(request));
