/**
 * `npm run build` (and `npm pack`, through `prepack`): the `agent-scheduler` package as users install it.
 *
 *   dist/index.js, index.d.ts     the AgentScheduler construct and its types (aws-cdk-lib and constructs are peers)
 *   dist/functions/<entry>/       each Lambda function, prebuilt: a user's synth bundles nothing (with its source
 *                                 map when AGENT_SCHEDULER_SOURCE_MAPS=1, for the construct's `sourceMaps`)
 *   dist/cli.js                   the CLI behind bin `agent-scheduler`; `agent-scheduler dev` loads the local stack
 *                                 (emulators and their clients, most of the package) from a chunk beside it
 *   dist/console/                 the web console's page, script and style sheet, built here so users build nothing
 *   dist/sdk.js, sdk.d.ts         the SDK, at `agent-scheduler/sdk` (also published alone as @agent-scheduler/sdk)
 *
 * Everything is bundled by esbuild from this repository's sources and dependencies, so the package has no
 * dependency of its own: only the peers stay imports. The same sources give the same bytes: no timestamps, paths
 * relative to the repository.
 */
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateDtsBundle } from 'dts-bundle-generator';
import { type BuildOptions, build } from 'esbuild';
import { buildConsoleAssets } from '../console/assets';
import { bundleOptions, FUNCTION_ENTRIES, REPO_ROOT } from '../infra/scheduler-function';
import { cliOptions, libraryOptions } from './library-bundles';

const DIST = join(REPO_ROOT, 'dist');
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
  peerDependencies?: Record<string, string>;
  dependencies?: Record<string, string>;
};
/** Imports left to the user's install: the peers, with their subpaths, and the package's own dependencies. */
const external = [
  ...Object.keys(manifest.peerDependencies ?? {}),
  ...Object.keys(manifest.dependencies ?? {}),
].flatMap((name) => [name, `${name}/*`]);

const library = (entry: string, outfile: string, extra: Partial<BuildOptions> = {}) =>
  build(libraryOptions(REPO_ROOT, entry, { outfile: join(DIST, outfile), external, ...extra }));

const started = performance.now();
const step = (what: string) => console.log(`${what}: ${Math.round(performance.now() - started)} ms`);
rmSync(DIST, { recursive: true, force: true });
await Promise.all([
  ...FUNCTION_ENTRIES.map((entry) =>
    build(
      bundleOptions(entry, join(DIST, 'functions', entry), process.env.AGENT_SCHEDULER_SOURCE_MAPS === '1'),
    ),
  ),
  // The construct reaches for esbuild only when it bundles from source, which a packed copy never does.
  library('infra/index.ts', 'index.js', { external: [...external, 'esbuild'] }),
  // The console's files are built below; the CLI builds them itself only from the sources, never here.
  build(cliOptions(REPO_ROOT, DIST, external)),
  library('sdk/index.ts', 'sdk.js', { banner: {} }),
  buildConsoleAssets(join(DIST, 'console')),
]);

// One declaration file per entry, the peers' types imported. Each from a program of its entry alone: the whole
// project, tests included, would take minutes.
const typesOf = (entry: string, tsconfig: string) =>
  generateDtsBundle([{ filePath: join(REPO_ROOT, entry), output: { noBanner: true } }], {
    preferredConfigPath: join(REPO_ROOT, tsconfig),
  })[0];
const sdkTypes = typesOf('sdk/index.ts', 'sdk/tsconfig.build.json');
step('sdk types');
const constructTypes = typesOf('infra/index.ts', 'tsconfig.types.json');
step('construct types');
writeFileSync(join(DIST, 'index.d.ts'), constructTypes ?? '');
// Beside the chunk that starts DynamoDB Local, which runs it to bind the emulator to 127.0.0.1 only.
copyFileSync(
  join(REPO_ROOT, 'local/emulators/LoopbackDynamoDbLocal.java'),
  join(DIST, 'LoopbackDynamoDbLocal.java'),
);
writeFileSync(join(DIST, 'sdk.d.ts'), sdkTypes ?? '');
console.log(`built dist/ in ${Math.round(performance.now() - started)} ms`);
