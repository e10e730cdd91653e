#!/usr/bin/env node
// Installed from npm, the CLI is prebuilt in dist/; in its own repository it runs from the TypeScript sources.
import { existsSync } from 'node:fs';

const source = new URL('../cli/main.ts', import.meta.url);
let run;
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  ({ run } = await import(source.href));
} else {
  ({ run } = await import('../dist/cli.js'));
}
process.exitCode = await run(process.argv.slice(2));
