/**
 * What the package tests share: a consumer project's TypeScript, checked as a user's would be under
 * `moduleResolution: nodenext`, with this repository's compiler.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/**
 * Writes `source` as `consumer.ts` in `project` and type-checks it, with `others` (paths in `project`) in the same
 * program: 'ok', or what tsc said.
 */
export async function typeCheckConsumer(
  project: string,
  source: string,
  others: readonly string[] = [],
): Promise<string> {
  writeFileSync(join(project, 'consumer.ts'), source);
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules/@types')],
      },
      files: ['consumer.ts', ...others],
    }),
  );
  return run(join(ROOT, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], { cwd: project }).then(
    () => 'ok',
    (error: { stdout?: string }) => error.stdout ?? String(error),
  );
}
