/**
 * The errors a supervisor pass met and went on from, kept as names and short messages rather than only counted, so
 * that an operator reading the scheduler's stats (`GET /v1/scheduler/stats`) sees what went wrong without searching
 * the logs. Each step still logs every error as before; what is kept is small and safe to show: the error's name and
 * the first line of its message, cut short, with ARNs and account ids taken out (an AWS error's message may name the
 * role or the table it was refused on). No stack, no cause.
 */

/** One error a step of a pass met: which step, the error's name, its message made short. */
export interface PassError {
  readonly step: string;
  readonly name: string;
  readonly message: string;
}

/** How many errors a pass keeps (the first it met); the count goes on (`errors`). */
export const PASS_ERRORS_KEPT = 5;

/** A message is cut to this many characters: enough for "ConditionalCheckFailed on …", too short for a dump. */
const MESSAGE_CHARS = 160;
const NAME_CHARS = 64;

const cut = (text: string, chars: number) => (text.length > chars ? `${text.slice(0, chars - 1)}…` : text);

/** The error as a pass keeps it. */
export function passError(step: string, error: unknown): PassError {
  const name = error instanceof Error ? error.name : typeof error;
  const raw = error instanceof Error ? error.message : String(error);
  const message = (raw.split('\n')[0] ?? '')
    .replace(/arn:aws[a-z-]*:[^\s"',;)]*/g, 'arn:…')
    .replace(/\b\d{12}\b/g, '…')
    .replace(/\s+/g, ' ')
    .trim();
  return { step, name: cut(name, NAME_CHARS), message: cut(message, MESSAGE_CHARS) };
}

/** What a step counts its errors into: how many, and the first few of them. */
export interface ErrorTally {
  errors: number;
  readonly failures: PassError[];
}

/** Counts an error into a step's tally, and keeps it while fewer than `PASS_ERRORS_KEPT` are kept. */
export function noteError(tally: ErrorTally, step: string, error: unknown): void {
  tally.errors++;
  if (tally.failures.length < PASS_ERRORS_KEPT) tally.failures.push(passError(step, error));
}

/** The errors of several steps, in the order the steps ran, at most `PASS_ERRORS_KEPT` of them. */
export function firstErrors(...lists: readonly (readonly PassError[])[]): PassError[] {
  return lists.flat().slice(0, PASS_ERRORS_KEPT);
}
