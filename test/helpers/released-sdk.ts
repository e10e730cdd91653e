/**
 * The code as it was last released, for tests that run it beside the current code: a deployed fleet keeps running
 * the SDK it was built with while its stack is upgraded under it, and during a deploy (or after a rollback) the
 * released functions run on records the new ones wrote. Its sources are taken from the repository's history at
 * test time (`git archive`) and bundled with esbuild; no build output is kept in the repository.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';

/** The last release: move it to each new release's commit, so that every change of the wire is tested against it. */
export const RELEASED_SDK_COMMIT = 'a158bc3d1e574f6216c0b5e9ca9c9cb96b84a16f';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

async function extractReleased(dir: string, paths: readonly string[]): Promise<void> {
  const known = await run('git', ['cat-file', '-e', `${RELEASED_SDK_COMMIT}^{commit}`], { cwd: ROOT }).then(
    () => true,
    () => false,
  );
  if (!known) {
    throw new Error(
      `commit ${RELEASED_SDK_COMMIT} (the last release, which this test runs) is not in this clone's history: ` +
        `fetch it (git fetch --unshallow, or git fetch origin ${RELEASED_SDK_COMMIT})`,
    );
  }
  const archive = join(dir, 'released.tar');
  await run('git', ['archive', '--format=tar', '-o', archive, RELEASED_SDK_COMMIT, ...paths], { cwd: ROOT });
  await run('tar', ['-xf', archive, '-C', dir]);
}

/**
 * The released SDK's sources from the repository's history, bundled into `dir` and loaded. `Sdk` is the caller's
 * own declaration of what it uses: the repository's types describe the SDK as it is now.
 */
export async function loadReleasedSdk<Sdk>(dir: string): Promise<Sdk> {
  await extractReleased(dir, ['sdk']);
  const outfile = join(dir, 'released-sdk.mjs');
  await build({
    entryPoints: [join(dir, 'sdk/index.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    // Given to it by the caller rather than found: the bundle lives outside this repository's node_modules.
    external: ['ws'],
    logLevel: 'silent',
  });
  return (await import(/* @vite-ignore */ pathToFileURL(outfile).href)) as Sdk;
}

/** Leaves the dependencies (the AWS SDK and the rest) to be found in this repository's node_modules. */
const dependenciesOutside: Plugin = {
  name: 'dependencies-outside',
  setup(plugin) {
    plugin.onResolve({ filter: /^[^.#/]/ }, (args) => ({ path: args.path, external: true }));
  },
};

/** What the released functions' code offers a test: the composition root and the operations, as they were. */
export interface ReleasedFunctions<Context, Scheduler> {
  readonly createContext: (deps: unknown) => Context;
  readonly Scheduler: new (ctx: Context) => Scheduler;
}

/**
 * The released functions' code (`functions/`, the composition root and the operations), bundled from the
 * repository's history. The bundle is written under this repository's `node_modules/.cache`, so the AWS SDK it
 * imports is the one installed here; `dir` holds the extracted sources.
 */
export async function loadReleasedFunctions<Context = unknown, Scheduler = unknown>(
  dir: string,
): Promise<ReleasedFunctions<Context, Scheduler>> {
  await extractReleased(dir, ['functions', 'package.json']);
  const entry = join(dir, 'released-functions.ts');
  writeFileSync(
    entry,
    "export { createContext } from '#wiring/context';\nexport { Scheduler } from '#core/scheduler';\n",
  );
  const cache = join(ROOT, 'node_modules/.cache/released-functions');
  mkdirSync(cache, { recursive: true });
  const outfile = join(cache, `${RELEASED_SDK_COMMIT.slice(0, 12)}-${process.pid}-${Date.now()}.mjs`);
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    plugins: [dependenciesOutside],
    logLevel: 'silent',
  });
  try {
    return (await import(/* @vite-ignore */ pathToFileURL(outfile).href)) as ReleasedFunctions<
      Context,
      Scheduler
    >;
  } finally {
    // Loaded once imported: nothing of it stays in the checkout.
    rmSync(outfile, { force: true });
  }
}
