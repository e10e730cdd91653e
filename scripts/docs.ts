/**
 * `npm run docs`: writes the generated sections of the docs (the construct's props, the HTTP API's routes) from
 * the declarations they describe, and the TypeScript blocks of the README and the docs as modules the type check
 * reads. `test/unit/docs/generated.test.ts` and `test/unit/docs/code-blocks.test.ts` fail when either is stale.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BLOCKS_DIR, ROOT as BLOCKS_ROOT, typeScriptModules } from './docs/code-blocks';
import { generatedPages, ROOT } from './docs/generated-sections';

for (const { page, committed, written } of generatedPages()) {
  if (written === committed) continue;
  writeFileSync(new URL(page, ROOT), written);
  console.log(`wrote ${page}`);
}

const dir = join(BLOCKS_ROOT, BLOCKS_DIR);
mkdirSync(dir, { recursive: true });
const modules = typeScriptModules();
for (const file of readdirSync(dir)) {
  if (file.endsWith('.ts') && !modules.has(file)) {
    rmSync(join(dir, file));
    console.log(`removed ${BLOCKS_DIR}/${file}`);
  }
}
for (const [file, text] of modules) {
  const path = join(dir, file);
  let committed: string | undefined;
  try {
    committed = readFileSync(path, 'utf8');
  } catch {
    committed = undefined;
  }
  if (committed === text) continue;
  writeFileSync(path, text);
  console.log(`wrote ${BLOCKS_DIR}/${file}`);
}
