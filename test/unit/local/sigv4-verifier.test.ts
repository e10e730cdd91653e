import { describe, expect, it } from 'vitest';
import { verifySigV4 } from '#local/sigv4-verifier';

/** The "get-vanilla" case of AWS's Signature Version 4 test suite. */
const VANILLA = {
  method: 'GET',
  url: '/',
  headers: {
    host: 'example.amazonaws.com',
    'x-amz-date': '20150830T123600Z',
    authorization:
      'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  },
  body: '',
};
const OPTIONS = {
  region: 'us-east-1',
  service: 'service',
  credentials: [{ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' }],
};
const AT = Date.UTC(2015, 7, 30, 12, 36);

describe('verifySigV4', () => {
  it('accepts the signature of AWS’s published test case', () => {
    expect(verifySigV4(VANILLA, OPTIONS, AT)).toEqual({ ok: true, accessKeyId: 'AKIDEXAMPLE' });
  });

  it.each([
    ['another path', { url: '/x' }, 'the signature does not match the request'],
    ['another query', { url: '/?a=1' }, 'the signature does not match the request'],
    ['another method', { method: 'POST' }, 'the signature does not match the request'],
    ['a body', { body: 'x' }, 'the signature does not match the request'],
    [
      'another host',
      { headers: { ...VANILLA.headers, host: 'example.org' } },
      'the signature does not match the request',
    ],
  ])('refuses the same signature on %s', (_, change, reason) => {
    expect(verifySigV4({ ...VANILLA, ...change }, OPTIONS, AT)).toEqual({ ok: false, reason });
  });

  it('refuses a signature six minutes old, or made for another scope', () => {
    expect(verifySigV4(VANILLA, OPTIONS, AT + 6 * 60_000)).toMatchObject({ ok: false, reason: /too old/ });
    expect(verifySigV4(VANILLA, { ...OPTIONS, region: 'eu-west-1' }, AT)).toMatchObject({ ok: false });
    expect(verifySigV4(VANILLA, { ...OPTIONS, service: 'execute-api' }, AT)).toMatchObject({ ok: false });
  });

  it('refuses headers that are not a signature', () => {
    for (const authorization of [
      undefined,
      'Bearer x',
      'AWS4-HMAC-SHA256 Credential=a/b',
      'AWS4-HMAC-SHA256 x=y',
    ]) {
      expect(
        verifySigV4({ ...VANILLA, headers: { ...VANILLA.headers, authorization } }, OPTIONS, AT),
      ).toMatchObject({
        ok: false,
      });
    }
  });
});
