/**
 * Agent bearer tokens: `<agentId>.<secret>`. The secret is 256 random bits, shown once at registration and
 * stored only as its SHA-256; checking compares digests in constant time. Carrying the agent id lets the
 * authorizer read one item instead of searching by hash.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const TOKEN_PATTERN = /^(a_[a-z2-7]{26})\.([A-Za-z0-9_-]{43})$/;

export interface IssuedToken {
  readonly token: string;
  readonly tokenHash: string;
}

const digest = (secret: string) => createHash('sha256').update(secret).digest();

export function issueAgentToken(agentId: string): IssuedToken {
  const secret = randomBytes(32).toString('base64url');
  return { token: `${agentId}.${secret}`, tokenHash: digest(secret).toString('base64url') };
}

export function parseAgentToken(token: string): { agentId: string; secret: string } | undefined {
  const match = TOKEN_PATTERN.exec(token);
  return match?.[1] && match[2] ? { agentId: match[1], secret: match[2] } : undefined;
}

/** Constant-time comparison of the presented secret's digest with the stored one. */
export function tokenMatches(secret: string, storedHash: string): boolean {
  const stored = Buffer.from(storedHash, 'base64url');
  const presented = digest(secret);
  return stored.length === presented.length && timingSafeEqual(stored, presented);
}

/** `Authorization: Bearer <token>` → the token, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header?.trim() ?? '');
  return match?.[1];
}
