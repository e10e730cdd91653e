/**
 * Values from the command line: numbers checked as they are parsed, and JSON given inline, as `@file` or as `-`
 * (standard input), with a message that names the flag and the file when it cannot be read.
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { UsageError } from './errors';

export function wholeNumber(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) {
    throw new InvalidArgumentError('Expected a whole number.');
  }
  return n;
}

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new InvalidArgumentError('Expected a number above 0.');
  }
  return n;
}

/** `NAME=VALUE` split at its first `=`; `NAME` alone has no value. */
function pairOf(flag: string, text: string): [string, string | undefined] {
  const at = text.indexOf('=');
  const name = at < 0 ? text : text.slice(0, at);
  if (name === '') throw new UsageError(`${flag} ${text}: give NAME=VALUE`);
  return [name, at < 0 ? undefined : text.slice(at + 1)];
}

/** Labels from `--label NAME=VALUE` flags: a name given again adds a value. */
export function labelsOf(pairs: readonly string[] | undefined): Record<string, string[]> | undefined {
  if (!pairs?.length) return undefined;
  const labels: Record<string, string[]> = {};
  for (const text of pairs) {
    const [name, value] = pairOf('--label', text);
    if (value === undefined || value === '') throw new UsageError(`--label ${text}: give NAME=VALUE`);
    labels[name] = [...(labels[name] ?? []), value];
  }
  return labels;
}

/** Requirements from `--require NAME=VALUE` flags; `NAME` alone (or `NAME=*`) takes any value of the label. */
export function requirementsOf(pairs: readonly string[] | undefined): Record<string, string> | undefined {
  if (!pairs?.length) return undefined;
  const require: Record<string, string> = {};
  for (const text of pairs) {
    const [name, value] = pairOf('--require', text);
    if (name in require) throw new UsageError(`--require ${name}: give each label once`);
    require[name] = value === undefined || value === '' ? '*' : value;
  }
  return require;
}

/** Collects a flag given several times (`--queue a --queue b`). */
export const collect = (value: string, previous: string[] | undefined): string[] => [
  ...(previous ?? []),
  value,
];

const FILE_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  ENAMETOOLONG: 'the name is too long',
};

function fileReason(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? (FILE_ERRORS[code] ?? code) : String(error);
}

/**
 * The JSON value of a flag: the text itself, `@file` for a file's content, `-` for standard input. The error
 * names the flag, and the file if there is one; it never carries a stack.
 */
export function jsonArgument(flag: string, value: string, readStdin: () => string): unknown {
  let text: string;
  let what: string;
  if (value === '-') {
    what = `--${flag} from standard input`;
    text = readStdin();
  } else if (value.startsWith('@')) {
    const file = value.slice(1);
    if (file === '') throw new UsageError(`--${flag} @ needs a file name: @payload.json`);
    what = `--${flag} file ${file}`;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new UsageError(`cannot read ${what}: ${fileReason(error)}`);
    }
  } else {
    what = `--${flag}`;
    text = value;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    const detail = error instanceof SyntaxError ? `: ${error.message}` : '';
    throw new UsageError(`${what} is not JSON${detail} (give JSON, @file or - for standard input)`);
  }
}
