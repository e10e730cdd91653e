/**
 * A schedule refused at creation names the field that is wrong: an unknown time zone is not blamed on an
 * expression that is fine.
 */
import { describe, expect, it } from 'vitest';
import { parseScheduleSpec } from '#core/schedules';
import { ValidationError } from '#domain/errors';
import { mockContext } from '#test/mock-context';

const spec = (overrides: Record<string, unknown>) => ({
  name: 'nightly',
  expression: 'cron(0 2 * * ? *)',
  task: { queue: 'work' },
  ...overrides,
});

describe('schedule specification', () => {
  const ctx = mockContext();

  it('says an unknown time zone is unknown, and does not blame the expression', () => {
    // Act
    const act = () => parseScheduleSpec(ctx, spec({ timeZone: 'Mars/Olympus' }));

    // Assess
    expect(act).toThrow(ValidationError);
    expect(act).toThrow(
      'timeZone: unknown time zone "Mars/Olympus" (expected an IANA name such as Europe/Paris)',
    );
    expect(act).not.toThrow(/expression/);
  });

  it('still names the expression when the expression is wrong', () => {
    const act = () => parseScheduleSpec(ctx, spec({ expression: 'cron(0 2 * * * *)', timeZone: 'UTC' }));
    expect(act).toThrow(/^schedule nightly: invalid schedule expression "cron\(0 2 \* \* \* \*\)"/);
  });

  it('takes the overlap and missed-run policies it knows, and names the field of one it does not', () => {
    expect(parseScheduleSpec(ctx, spec({ overlap: 'bufferOne', missedRuns: 'runAll' }))).toMatchObject({
      overlap: 'bufferOne',
      missedRuns: 'runAll',
      timeZone: 'UTC',
    });
    expect(() => parseScheduleSpec(ctx, spec({ overlap: 'sometimes' }))).toThrow(/^overlap: /);
  });
});
