/**
 * What the chaos commands (`chaos.ts`, `kill-stack.ts`) share in reading their command line: the options, and the
 * numbers in them checked against their range. A value out of range ends the process with status 2, naming the
 * option.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';

/** The options' values, read once the AWS SDK is told not to warn about the Node version on every client. */
export function readOptions<const Options extends NonNullable<ParseArgsConfig['options']>>(options: Options) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return parseArgs({ options }).values;
}

export const integer = (name: string, value: string | undefined, min: number, max: number): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    console.error(`--${name} must be an integer from ${min} to ${max}`);
    process.exit(2);
  }
  return n;
};

export const share = (name: string, value: string | undefined, max: number): number => {
  const n = Number(value);
  if (!(n >= 0 && n <= max)) {
    console.error(`--${name} must be a number from 0 to ${max}`);
    process.exit(2);
  }
  return n;
};
