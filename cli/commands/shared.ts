/**
 * Small helpers the commands share.
 */

/** The object without its undefined fields, so the SDK sends only what was given. */
export const defined = <T extends Record<string, unknown>>(value: T): T =>
  Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;

/** The "Examples:" block at the end of a command's help. */
export const examples = (lines: readonly string[]): string =>
  `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}`;
