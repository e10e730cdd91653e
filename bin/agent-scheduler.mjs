#!/usr/bin/env node
// The CLI is TypeScript; tsx loads it without a build step.
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../cli/main.ts');
process.exitCode = await run(process.argv.slice(2));
