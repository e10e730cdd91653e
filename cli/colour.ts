/**
 * A little colour, only where a person reads it: on a terminal, never with `--json`, never when `NO_COLOR` is set
 * (https://no-color.org: present and not empty). `FORCE_COLOR` asks for it where there is no terminal.
 */
export interface Colours {
  readonly enabled: boolean;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  dim(text: string): string;
}

export function colourWanted(options: {
  readonly isTTY: boolean | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly json?: boolean;
}): boolean {
  const { env } = options;
  if (options.json) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '' && force !== '0' && force !== 'false') return true;
  return options.isTTY === true && env.TERM !== 'dumb';
}

const sgr = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;

export function colours(enabled: boolean): Colours {
  const plain = (text: string) => text;
  return {
    enabled,
    red: enabled ? sgr(31, 39) : plain,
    green: enabled ? sgr(32, 39) : plain,
    yellow: enabled ? sgr(33, 39) : plain,
    cyan: enabled ? sgr(36, 39) : plain,
    dim: enabled ? sgr(2, 22) : plain,
  };
}

/** A task status as a person scans for it: finished well in green, dead in red, running in cyan. */
export function paintStatus(c: Colours, status: string, text: string = status): string {
  switch (status.trim()) {
    case 'succeeded':
      return c.green(text);
    case 'dead':
      return c.red(text);
    case 'leased':
      return c.cyan(text);
    case 'cancelled':
    case 'expired':
      return c.yellow(text);
    default:
      return text;
  }
}
