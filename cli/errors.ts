/**
 * What goes wrong in the CLI, said so a person can act on it.
 */

/** The command line itself is wrong (a flag, a value, a file it names): exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
