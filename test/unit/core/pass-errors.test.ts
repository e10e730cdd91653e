/**
 * What a pass keeps of an error: its name and a short first line of its message, with ARNs and account ids taken
 * out; at most a few a pass, the count going on.
 */
import { describe, expect, it } from 'vitest';
import { noteError, PASS_ERRORS_KEPT, type PassError, passError } from '#core/pass-errors';

describe('pass errors', () => {
  it('keeps a name and a short first line, without ARNs, account ids or a stack', () => {
    const error = new Error(
      `User: arn:aws:sts::123456789012:assumed-role/Supervisor/fn is not authorized to perform: dynamodb:UpdateItem on resource: arn:aws:dynamodb:eu-west-1:123456789012:table/leases because ${'x'.repeat(300)}\n    at send (client.js:1:1)`,
    );
    error.name = 'AccessDeniedException';

    const kept = passError('reconcile', error);

    expect(kept.step).toBe('reconcile');
    expect(kept.name).toBe('AccessDeniedException');
    expect(kept.message).toMatch(
      /^User: arn:… is not authorized to perform: dynamodb:UpdateItem on resource: arn:… /,
    );
    expect(kept.message).not.toMatch(/123456789012|\n| at send/);
    expect(kept.message.length).toBeLessThanOrEqual(160);
    expect(passError('wake', 'plain')).toEqual({ step: 'wake', name: 'string', message: 'plain' });
  });

  it('counts every error and keeps the first few', () => {
    const tally = { errors: 0, failures: [] as PassError[] };
    for (let i = 0; i < PASS_ERRORS_KEPT + 3; i++) noteError(tally, 'reclaim', new Error(`n${i}`));
    expect(tally.errors).toBe(PASS_ERRORS_KEPT + 3);
    expect(tally.failures.map((f) => f.message)).toEqual(
      Array.from({ length: PASS_ERRORS_KEPT }, (_, i) => `n${i}`),
    );
  });
});
