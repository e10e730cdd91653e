import { describe, expect, it } from 'vitest';
import { bearerToken, issueAgentToken, parseAgentToken, tokenMatches } from '#domain/agent-token';
import { newAgentId } from '#domain/ids';

describe('agent tokens', () => {
  it('a minted token names its agent and matches its stored hash only', () => {
    const agentId = newAgentId();
    const { token, tokenHash } = issueAgentToken(agentId);
    const parsed = parseAgentToken(token);

    expect(parsed?.agentId).toBe(agentId);
    expect(tokenHash).not.toContain(parsed?.secret ?? '');
    expect(tokenMatches(parsed?.secret ?? '', tokenHash)).toBe(true);
    const secret = parsed?.secret ?? '';
    const flipped = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    expect(tokenMatches(flipped, tokenHash)).toBe(false);
    expect(tokenMatches(parsed?.secret ?? '', issueAgentToken(agentId).tokenHash)).toBe(false);
  });

  it.each([
    '',
    'abc',
    'a_short.secret',
    `${newAgentId()}.`,
    `${newAgentId()}.${'x'.repeat(42)}`,
    `t_${'a'.repeat(26)}.${'x'.repeat(43)}`,
  ])('refuses the malformed token %j', (token) => {
    expect(parseAgentToken(token)).toBeUndefined();
  });

  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['  Bearer   abc  ', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    [undefined, undefined],
  ])('reads %j as %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it('a stored hash of another length never matches', () => {
    expect(tokenMatches('x'.repeat(43), 'short')).toBe(false);
  });
});
