/**
 * `tsx scripts/side-by-side.ts lint typecheck`: runs the named npm scripts at once, each on a core of its own,
 * and fails if any of them fails. Each one's output is printed whole when it ends, never interleaved.
 *
 * `npm test` runs its checks this way: one after the other, the lint (6 s) and the type-checks (23 s, one core)
 * kept the second core idle for the whole of the first.
 */
import { spawn } from 'node:child_process';

function runScript(name: string): Promise<number> {
  const started = performance.now();
  const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
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

const names = process.argv.slice(2);
if (names.length === 0) {
  process.stderr.write('usage: tsx scripts/side-by-side.ts <npm script> [<npm script> ...]\n');
  process.exit(2);
}
const statuses = await Promise.all(names.map(runScript));
process.exitCode = statuses.find((status) => status !== 0) ?? 0;
