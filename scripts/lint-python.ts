/**
 * `npm run lint:python`: the Python SDK (`python/`) and the Python examples (`examples/`) linted by Ruff's
 * WebAssembly build and type-checked by pyright (strict on the package, its build backend and the examples:
 * `python/pyproject.toml`), both from npm, so no Python package index is needed. Ruff's settings are here, the one
 * place they are declared.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Diagnostic, PositionEncoding, Workspace } from '@astral-sh/ruff-wasm-nodejs';

const ROOT = 'python';
const FOLDERS = [ROOT, 'examples'];
const SELECT = ['E', 'F', 'W', 'I', 'B', 'UP', 'SIM', 'RUF', 'S', 'SLF', 'BLE', 'PL'];
/** Branch and argument counts, magic numbers and `assert` are the house's call; the rest is Ruff's default. */
const IGNORE = ['PLR0911', 'PLR0912', 'PLR0913', 'PLR0915', 'PLR2004', 'S101', 'PLW0603'];
/** Tests start processes they name themselves and read a client's token from inside it. */
const TEST_IGNORE = ['S603', 'SLF001'];

function pythonFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === '__pycache__' ? [] : pythonFiles(path);
    return entry.name.endsWith('.py') ? [path] : [];
  });
}

const workspaceFor = (tests: boolean) =>
  new Workspace(
    {
      'line-length': 120,
      'target-version': 'py310',
      lint: { select: SELECT, ignore: tests ? [...IGNORE, ...TEST_IGNORE] : IGNORE },
    },
    PositionEncoding.Utf16,
  );
const workspaces = { source: workspaceFor(false), tests: workspaceFor(true) };

let findings = 0;
for (const file of FOLDERS.flatMap(pythonFiles)) {
  const tests = relative(ROOT, file).startsWith('tests');
  const diagnostics = (tests ? workspaces.tests : workspaces.source).check(
    readFileSync(file, 'utf8'),
  ) as Diagnostic[];
  for (const d of diagnostics) {
    findings++;
    process.stdout.write(
      `${file}:${d.start_location.row}:${d.start_location.column}: ${d.code} ${d.message}\n`,
    );
  }
}
process.stdout.write(`ruff: ${findings} finding(s)\n`);

const pyright = spawnSync('npx', ['--no-install', 'pyright', '-p', ROOT], { stdio: 'inherit' });
process.exitCode = findings > 0 || pyright.status !== 0 ? 1 : 0;
