/**
 * Runs a command for each task, as a ready-made agent: the payload goes to the command's standard input as JSON,
 * its standard output becomes the result (JSON when it parses, `{ "output": text }` otherwise). Exit code 0 is
 * success; any other is a failure that may be retried, except 64 (EX_USAGE: the input itself is wrong), which is
 * not, and 75 (EX_TEMPFAIL: try again later), which snoozes the task for the seconds its output names (a provider's
 * Retry-After), 60 when it names none. A lost or cancelled lease stops the command with SIGTERM. A line the command
 * writes to its standard error as `progress 40 reading the sources` (a percentage, then a message) or
 * `progress {"percent":40,"message":"…","data":{…}}` reports the task's progress, as a handler's `ctx.progress` does.
 */
import { spawn } from 'node:child_process';
import type { ClaimedTask, ProgressInput } from '#sdk/types';

/** Exit code meaning "do not retry": the task itself is wrong (sysexits' EX_USAGE). */
export const NOT_RETRYABLE_EXIT_CODE = 64;
/** Exit code meaning "try again later": the task is snoozed, no attempt used (sysexits' EX_TEMPFAIL). */
export const SNOOZE_EXIT_CODE = 75;
/** A snooze's delay when the command's output names none. */
const DEFAULT_SNOOZE_SECONDS = 60;
const OUTPUT_LIMIT = 256 * 1024;

export class CommandFailed extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    /** The command asked to be run again after this long (exit code 75): the Worker snoozes the task. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'CommandFailed';
  }
}

/** The delay a snoozing command's output names: a number of seconds, or `{ "retryAfterSeconds": n }`. */
function snoozeSeconds(stdout: string): number {
  const text = stdout.trim();
  let named: unknown = Number(text);
  if (text !== '' && Number.isNaN(named)) {
    try {
      named = (JSON.parse(text) as { retryAfterSeconds?: unknown }).retryAfterSeconds;
    } catch {
      named = undefined;
    }
  }
  return typeof named === 'number' && Number.isFinite(named) && named > 0 ? named : DEFAULT_SNOOZE_SECONDS;
}

/** What a `progress …` line of the command's standard error reports; undefined for any other line. */
export function progressOfLine(line: string): ProgressInput | undefined {
  const match = /^progress\s+(.*)$/.exec(line.trim());
  const rest = match?.[1]?.trim();
  if (!rest) return undefined;
  if (rest.startsWith('{')) {
    try {
      const { percent, message, data } = JSON.parse(rest) as ProgressInput;
      return {
        ...(percent === undefined ? {} : { percent }),
        ...(message === undefined ? {} : { message }),
        ...(data === undefined ? {} : { data }),
      };
    } catch {
      return undefined;
    }
  }
  const [, percent, message] = /^(\d+(?:\.\d+)?)%?(?:\s+(.*))?$/.exec(rest) ?? [];
  if (percent !== undefined) return { percent: Number(percent), ...(message ? { message } : {}) };
  return { message: rest };
}

export function commandHandler(command: readonly string[]) {
  const [file, ...args] = command;
  if (!file) throw new Error('give the command to run after --');
  return (
    task: ClaimedTask,
    context: { signal: AbortSignal; progress?: (update: ProgressInput) => void },
  ): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const child = spawn(file, args, {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: {
          ...process.env,
          AGENT_SCHEDULER_TASK_ID: task.taskId,
          AGENT_SCHEDULER_QUEUE: task.queue,
          AGENT_SCHEDULER_ATTEMPT: String(task.attempt),
        },
      });
      let stdout = '';
      let stderr = '';
      /** The part of standard error after its last line break: progress lines are read whole. */
      let partial = '';
      child.stdout.on('data', (chunk: Buffer) => {
        if (stdout.length < OUTPUT_LIMIT) stdout += chunk.toString('utf8');
      });
      child.stderr.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        stderr = (stderr + text).slice(-2_000);
        const lines = (partial + text).split('\n');
        partial = (lines.pop() ?? '').slice(-4_096);
        for (const line of lines) {
          const update = progressOfLine(line);
          try {
            if (update) context.progress?.(update);
          } catch {
            // A report the server would refuse (out of bounds) is not sent; the command goes on.
          }
        }
      });
      const abort = () => child.kill('SIGTERM');
      context.signal.addEventListener('abort', abort, { once: true });
      child.on('error', (error) =>
        reject(new CommandFailed(`could not run ${file}: ${error.message}`, false)),
      );
      child.on('close', (code, signal) => {
        context.signal.removeEventListener('abort', abort);
        if (code === 0) {
          const text = stdout.trim();
          try {
            resolve(text === '' ? null : JSON.parse(text));
          } catch {
            resolve({ output: text });
          }
          return;
        }
        if (code === SNOOZE_EXIT_CODE) {
          const seconds = snoozeSeconds(stdout);
          reject(new CommandFailed(`${file} asked to be run again in ${seconds} s`, true, seconds));
          return;
        }
        const why = signal ? `stopped by ${signal}` : `exited with code ${code}`;
        reject(
          new CommandFailed(
            `${file} ${why}${stderr ? `: ${stderr.trim()}` : ''}`,
            code !== NOT_RETRYABLE_EXIT_CODE,
          ),
        );
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(JSON.stringify(task.payload ?? null));
    });
}
