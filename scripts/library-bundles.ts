/**
 * The esbuild options of the package's bundled libraries (the construct, the CLI, the SDK): the package build uses
 * them, and so does the test that runs the CLI as the package ships it, so the two cannot drift apart.
 */
import { join } from 'node:path';
import type { BuildOptions } from 'esbuild';

/** Bundled CommonJS still calls `require()`: an ESM bundle defines it. */
const REQUIRE_BANNER = {
  js: "import { createRequire as __createRequire } from 'node:module';const require = __createRequire(import.meta.url);",
};

/** A library bundled from `entry` (relative to `root`) for Node 20 and later, as ESM. */
export const libraryOptions = (
  root: string,
  entry: string,
  extra: Partial<BuildOptions> = {},
): BuildOptions => ({
  entryPoints: [join(root, entry)],
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  banner: REQUIRE_BANNER,
  logLevel: 'warning',
  ...extra,
});

/**
 * The CLI, `<outdir>/cli.js`: split, so that `agent-scheduler dev` loads the local stack (most of the package) from a
 * chunk beside it only when asked; the console's files are built apart, so esbuild is left out.
 */
export const cliOptions = (root: string, outdir: string, external: readonly string[] = []): BuildOptions =>
  libraryOptions(root, 'cli/main.ts', {
    external: [...external, 'esbuild'],
    outdir,
    entryNames: 'cli',
    chunkNames: 'cli-[name]-[hash]',
    splitting: true,
  });
