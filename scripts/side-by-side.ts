/**
 * `tsx scripts/side-by-side.ts lint typecheck --live test:all`: runs the named npm scripts at once and fails if
 * any of them fails. The script after `--live` prints as it goes; every other one's output is printed whole when it
 * ends, never interleaved with another's.
 *
 * `npm test` runs its checks this way. One after the other, the lint (6 s) and the type-checks (23 s, one core)
 * kept the second core idle for the whole of the first; beside each other, the type-check's last 14 s still ran on
 * one core, which the test run's start (its emulators, its first files) now takes.
 */
import { spawn } from 'node:child_process';

function runScript(name: string, live: boolean): Promise<number> {
  const started = performance.now();
  const child = spawn('npm', ['run', '--silent', name], {
    stdio: ['ignore', live ? 'inherit' : 'pipe', live ? 'inherit' : 'pipe'],
  });
  const output: Buffer[] = [];
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr?.on('data', (chunk: Buffer) => output.push(chunk));
  return new Promise((resolve) => {
    child.once('error', (error) => {
      process.stderr.write(`${name}: ${error.message}\n`);
      resolve(1);
    });
    child.once('close', (code, signal) => {
      const status = code ?? (signal ? 1 : 0);
      const seconds = ((performance.now() - started) / 1_000).toFixed(1);
      process.stdout.write(
        `> ${name}: ${status === 0 ? 'passed' : `failed (exit ${status})`} in ${seconds} s\n`,
      );
      process.stdout.write(Buffer.concat(output));
      resolve(status);
    });
  });
}

const args = process.argv.slice(2);
const liveAt = args.indexOf('--live');
const live = liveAt === -1 ? undefined : args[liveAt + 1];
const names = args.filter((_, i) => liveAt === -1 || (i !== liveAt && i !== liveAt + 1));
if (names.length + (live ? 1 : 0) === 0 || (liveAt !== -1 && !live)) {
  process.stderr.write('usage: tsx scripts/side-by-side.ts <npm script> ... [--live <npm script>]\n');
  process.exit(2);
}
const statuses = await Promise.all([
  ...names.map((name) => runScript(name, false)),
  ...(live ? [runScript(live, true)] : []),
]);
process.exitCode = statuses.find((status) => status !== 0) ?? 0;
