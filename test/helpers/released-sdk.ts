/**
 * The SDK as it was last released, for tests that drive the current server with it: a deployed fleet keeps running
 * the SDK it was built with while its stack is upgraded under it. Its sources are taken from the repository's
 * history at test time (`git archive`) and bundled with esbuild; no build output is kept in the repository.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';

/** The last release: move it to each new release's commit, so that every change of the wire is tested against it. */
export const RELEASED_SDK_COMMIT = 'a158bc3d1e574f6216c0b5e9ca9c9cb96b84a16f';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

/**
 * The released SDK's sources from the repository's history, bundled into `dir` and loaded. `Sdk` is the caller's
 * own declaration of what it uses: the repository's types describe the SDK as it is now.
 */
export async function loadReleasedSdk<Sdk>(dir: string): Promise<Sdk> {
  const known = await run('git', ['cat-file', '-e', `${RELEASED_SDK_COMMIT}^{commit}`], { cwd: ROOT }).then(
    () => true,
    () => false,
  );
  if (!known) {
    throw new Error(
      `commit ${RELEASED_SDK_COMMIT} (the last release, whose SDK this test runs) is not in this clone's history: ` +
        `fetch it (git fetch --unshallow, or git fetch origin ${RELEASED_SDK_COMMIT})`,
    );
  }
  const archive = join(dir, 'sdk.tar');
  await run('git', ['archive', '--format=tar', '-o', archive, RELEASED_SDK_COMMIT, 'sdk'], { cwd: ROOT });
  await run('tar', ['-xf', archive, '-C', dir]);
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
