/**
 * `npm run size [-- --json]`: each function's bundle size and its cold-import time in a fresh Node process.
 */
import { measureBundles } from './bundles';

const IMPORT_RUNS = 5;
const rows = await measureBundles(IMPORT_RUNS);
if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
else {
  console.log(
    `Bundles (esbuild, ESM, minified, node22) and median import time in a fresh Node ${process.version} process over ${IMPORT_RUNS} runs:`,
  );
  console.table(
    rows.map((r) => ({
      function: r.function,
      'size (KB)': Math.round(r.bytes / 1024),
      'gzip (KB)': Math.round(r.gzipBytes / 1024),
      'cold import (ms)': r.coldImportMs,
      largest: r.largest,
    })),
  );
}
