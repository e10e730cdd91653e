import { describe, expect, it } from 'vitest';
import { awsSigV4, type SignableRequest } from '#sdk/sigv4';

describe('awsSigV4', () => {
  it('hands the signer the request as AWS signers take it, without a bearer token, and sends what it signed', async () => {
    let seen: SignableRequest | undefined;
    const sign = awsSigV4({
      sign: async (request) => {
        seen = structuredClone(request);
        return {
          headers: { ...request.headers, authorization: 'AWS4-HMAC-SHA256 signed', 'x-amz-date': 'now' },
        };
      },
    });
    const signed = await sign(
      new Request('https://abc.execute-api.eu-west-1.amazonaws.com:8443/v1/tasks/t%2Fx?a=1&b=x%20y&a=2', {
        method: 'POST',
        headers: { authorization: 'Bearer op_secret', 'content-type': 'application/json' },
        body: '{"n":1}',
      }),
    );
    expect(seen).toEqual({
      method: 'POST',
      protocol: 'https:',
      hostname: 'abc.execute-api.eu-west-1.amazonaws.com',
      port: 8443,
      path: '/v1/tasks/t%2Fx',
      query: { a: ['1', '2'], b: 'x y' },
      headers: { host: 'abc.execute-api.eu-west-1.amazonaws.com:8443', 'content-type': 'application/json' },
      body: '{"n":1}',
    });
    expect(signed.headers.get('authorization')).toBe('AWS4-HMAC-SHA256 signed');
    expect(signed.headers.get('x-amz-date')).toBe('now');
    expect(signed.url).toBe(
      'https://abc.execute-api.eu-west-1.amazonaws.com:8443/v1/tasks/t%2Fx?a=1&b=x%20y&a=2',
    );
    expect(await signed.text()).toBe('{"n":1}');
  });

  it('signs a request without a body as one', async () => {
    let seen: SignableRequest | undefined;
    const sign = awsSigV4({
      sign: async (request) => {
        seen = request;
        return { headers: request.headers };
      },
    });
    const signed = await sign(new Request('http://127.0.0.1:3000/v1/tasks'));
    expect(seen).not.toHaveProperty('body');
    expect(seen?.port).toBe(3000);
    expect(signed.method).toBe('GET');
  });
});
