/**
 * The console's files: a page, a script and a style sheet, with nothing fetched from elsewhere.
 *
 * In the package they are built once, at pack time, into `dist/console/` (`npm run build`), and read from there. In
 * this repository they are built from `console/app/` on first use, in memory, with the same options.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ConsoleAsset {
  readonly contentType: string;
  readonly body: Buffer;
}

/** The files by the path they are served at. */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

/** Each file: where it is served, its name in `dist/console/`, its type. */
const FILES = [
  { path: '/', file: 'index.html', contentType: 'text/html; charset=utf-8' },
  { path: '/console/app.js', file: 'app.js', contentType: 'text/javascript; charset=utf-8' },
  { path: '/console/app.css', file: 'app.css', contentType: 'text/css; charset=utf-8' },
] as const;

/** Built by the package's build, beside the bundle that holds this module. */
const BUILT = new URL('./console/', import.meta.url);
/** The sources, beside this module in the repository. */
const SOURCE = new URL('./app/', import.meta.url);

/**
 * Builds the files from `console/app/`: the script bundled (one file, for browsers of the last few years), the
 * page and style sheet as they are. With `outdir`, written there; always returned.
 */
export async function buildConsoleAssets(outdir?: string): Promise<Map<string, Buffer>> {
  const { build } = await import('esbuild');
  const source = fileURLToPath(SOURCE);
  const bundled = await build({
    entryPoints: [join(source, 'main.ts')],
    bundle: true,
    format: 'iife',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    write: false,
    outfile: 'app.js',
    logLevel: 'warning',
  });
  const files = new Map<string, Buffer>([
    ['index.html', readFileSync(join(source, 'index.html'))],
    ['app.js', Buffer.from(bundled.outputFiles[0]?.contents ?? new Uint8Array())],
    ['app.css', readFileSync(join(source, 'style.css'))],
  ]);
  if (outdir) {
    mkdirSync(outdir, { recursive: true });
    for (const [name, body] of files) writeFileSync(join(outdir, name), body);
  }
  return files;
}

let loaded: Promise<ConsoleAssets> | undefined;

/** The files, read from the package's build, or built from the sources in this repository. */
export function loadConsoleAssets(): Promise<ConsoleAssets> {
  loaded ??= (async () => {
    const built = existsSync(new URL('index.html', BUILT));
    const files = built
      ? new Map(FILES.map(({ file }) => [file, readFileSync(new URL(file, BUILT))]))
      : await buildConsoleAssets();
    return new Map(
      FILES.map(({ path, file, contentType }) => [
        path,
        { contentType, body: files.get(file) ?? Buffer.alloc(0) },
      ]),
    );
  })();
  return loaded;
}
