/**
 * `npm run docs`: writes the generated sections of the docs (the construct's props, the HTTP API's routes) from
 * the declarations they describe. `test/unit/docs/generated.test.ts` fails when a committed page differs.
 */
import { writeFileSync } from 'node:fs';
import { generatedPages, ROOT } from './docs/generated-sections';

for (const { page, committed, written } of generatedPages()) {
  if (written === committed) continue;
  writeFileSync(new URL(page, ROOT), written);
  console.log(`wrote ${page}`);
}
