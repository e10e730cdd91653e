/**
 * No example in the README or the docs drifts from the code: every fenced block is checked by its language, or
 * marked, just above it, with why it is not. `ts` blocks are written out as modules (`npm run docs`, into
 * `test/unit/docs/blocks/`) that `npm run typecheck` checks against the sources with the rest of the repository, so
 * they cost it no second parse of aws-cdk-lib: here they are held to the pages. `json` blocks are parsed, `bash`
 * blocks parsed by `bash -n` with every `npm run` script and `agent-scheduler` command they name checked to exist,
 * and `python` blocks parsed by one Python process. The markers: `<!-- not-run: <reason> -->`, `<!-- output -->` (a
 * sample of what a command prints) and `<!-- tested-by: <file> -->` (a test runs it; the file must name the page).
 * Links between the pages are checked too: each relative target exists, and so does a `#anchor` into a page.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { Cli } from '../../../cli/context';
import { buildProgram } from '../../../cli/main';
import {
  allBlocks,
  BLOCKS_DIR,
  type Block,
  blocksIn,
  isMarked,
  notRunReason,
  pages,
  TYPESCRIPT,
  testedBy,
  typeScriptModules,
} from '../../../scripts/docs/code-blocks';

const ROOT = join(import.meta.dirname, '../../..');

const BLOCKS = allBlocks();
const where = (b: Block) => `${b.page}:${b.line}`;
const notRun = notRunReason;
const marked = isMarked;
const checked = (languages: string[]) => BLOCKS.filter((b) => !marked(b) && languages.includes(b.language));

const TS = TYPESCRIPT;
const BASH = ['bash', 'sh', 'shell'];
const CHECKED_LANGUAGES = [...TS, ...BASH, 'json', 'python'];

/** The `agent-scheduler` commands, each with its subcommands, as the CLI declares them. */
function cliCommands(): Map<string, Set<string>> {
  const io = {
    write: () => {},
    writeErr: () => {},
    env: {},
    cwd: ROOT,
    stdoutIsTTY: false,
    stderrIsTTY: false,
    readStdin: () => '',
  };
  const program: Command = buildProgram(new Cli(io));
  return new Map(program.commands.map((c) => [c.name(), new Set(c.commands.map((sub) => sub.name()))]));
}

describe('the code blocks of the README and the docs', () => {
  it('are each checked by their language, or marked with a reason', () => {
    const unchecked = BLOCKS.filter((b) => !marked(b) && !CHECKED_LANGUAGES.includes(b.language)).map(
      (b) => `${where(b)} (${b.language || 'no language'})`,
    );
    expect(
      unchecked,
      'mark them <!-- not-run: why --> or <!-- output -->, or give them a checked language',
    ).toEqual([]);
    const emptyReasons = BLOCKS.filter((b) => notRun(b) === '').map(where);
    expect(emptyReasons, 'a not-run marker says why').toEqual([]);
    // The list the merge note repeats: what is not run, and why.
    const list = BLOCKS.filter(marked).map((b) => `  ${where(b)}: ${b.marker}`);
    console.log(
      `${BLOCKS.length} code blocks; ${BLOCKS.length - list.length} checked; ${list.length} marked:\n${list.join('\n')}`,
    );
  });

  it('name, when marked tested-by, a test that exists and reads the page', () => {
    for (const block of BLOCKS.filter((b) => testedBy(b) !== undefined)) {
      const file = join(ROOT, testedBy(block) ?? '');
      expect(existsSync(file), `${where(block)}: ${testedBy(block)} exists`).toBe(true);
      const name = block.page === 'README.md' ? '"README.md"' : block.page;
      expect(readFileSync(file, 'utf8'), `${where(block)}: ${testedBy(block)} names ${block.page}`).toContain(
        name,
      );
    }
  });

  it('are, the TypeScript ones, the modules the type check reads (run `npm run docs`)', () => {
    const modules = typeScriptModules(BLOCKS);
    expect(modules.size).toBe(checked(TS).length);
    expect(modules.size).toBeGreaterThan(0);
    const dir = join(ROOT, BLOCKS_DIR);
    const committed = new Map(
      readdirSync(dir)
        .filter((file) => file.endsWith('.ts'))
        .map((file) => [file, readFileSync(join(dir, file), 'utf8')]),
    );
    expect(committed).toEqual(modules);
    // The type check reads them: they are under a folder `tsconfig.json` includes.
    const tsconfig = JSON.parse(readFileSync(join(ROOT, 'tsconfig.json'), 'utf8'));
    expect(tsconfig.include).toContain(BLOCKS_DIR.split('/')[0]);
  });

  it('parse, the JSON ones', () => {
    for (const block of checked(['json'])) expect(() => JSON.parse(block.code), where(block)).not.toThrow();
  });

  it('parse, the shell ones, and name only scripts and commands that exist', () => {
    const scripts = Object.keys(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts);
    const commands = cliCommands();
    const blocks = checked(BASH);
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      const parsed = spawnSync('bash', ['-n'], { input: block.code, encoding: 'utf8' });
      expect(parsed.stderr, `${where(block)}: bash -n`).toBe('');
      for (const [, script] of block.code.matchAll(/\bnpm run ([\w:-]+)/g))
        expect(scripts, `${where(block)}: npm run ${script}`).toContain(script);
      for (const [, command, sub] of block.code.matchAll(
        /\bagent-scheduler ([a-z][\w-]*)(?: ([a-z][\w-]*))?/g,
      )) {
        const subcommands = commands.get(command ?? '');
        expect(subcommands, `${where(block)}: agent-scheduler ${command}`).toBeDefined();
        if (subcommands && subcommands.size > 0)
          expect([...subcommands], `${where(block)}: agent-scheduler ${command} ${sub}`).toContain(sub);
      }
    }
  });

  it('compile, the Python ones', () => {
    // Those a Python test runs are parsed here too: a syntax error is then named with its page and line.
    const blocks = BLOCKS.filter((b) => b.language === 'python' && notRun(b) === undefined);
    expect(blocks.length).toBeGreaterThan(0);
    const sources = JSON.stringify(blocks.map((b) => [where(b), b.code]));
    const check = [
      'import ast, json, sys',
      'for name, code in json.load(sys.stdin):',
      '    try: ast.parse(code, name)',
      '    except SyntaxError as e: print(f"{name}: {e}")',
    ].join('\n');
    const python = spawnSync('python3', ['-c', check], { input: sources, encoding: 'utf8' });
    expect(python.status, python.stderr).toBe(0);
    expect(python.stdout).toBe('');
  });

  it('notice what they are meant to catch', () => {
    // A fence with no language and no marker, and a not-run marker with no reason, are found.
    const text =
      'Text.\n\n```\nplain\n```\n\n<!-- not-run: -->\n```ts\nlet x = 1;\n```\n\n```ts\nlet y = 2;\n```\n';
    const found = blocksIn('sample.md', text);
    expect(found.map((b) => [b.language, marked(b), notRun(b)])).toEqual([
      ['', false, undefined],
      ['ts', true, ''],
      ['ts', false, undefined],
    ]);
    // Only the unmarked TypeScript block becomes a module, its package pointed at the sources.
    const modules = typeScriptModules(
      blocksIn('sample.md', "```ts\nimport { Worker } from '@agent-scheduler/sdk';\n```\n"),
    );
    expect([...modules.values()][0]).toContain("from '../../../../sdk/index.ts'");
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor a page's headings make, repeats numbered as GitHub numbers them. */
function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trimStart().startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const anchor = anchorOf(heading[1] ?? '');
    const n = seen.get(anchor) ?? 0;
    seen.set(anchor, n + 1);
    anchors.add(n === 0 ? anchor : `${anchor}-${n}`);
  }
  return anchors;
}

describe('the links between the pages', () => {
  // The pages, and the READMEs that link into them.
  const linking = [...pages(), 'sdk/README.md', 'python/README.md', 'examples/python-agent/README.md'];

  it.each(linking)('%s: every relative link reaches a file, and its anchor a heading', (page) => {
    const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (!target || /^[a-z]+:/.test(target)) continue;
      const [path = '', anchor] = target.split('#');
      const file = path === '' ? join(ROOT, page) : join(ROOT, dirname(page), path);
      // Examples other changes are adding may not be here yet; their links are checked once they are.
      if (!existsSync(file)) {
        if (!relative(ROOT, file).startsWith('examples/')) broken.push(`${target}: no such file`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !anchorsOf(file).has(anchor))
        broken.push(`${target}: no such heading`);
    }
    expect(broken).toEqual([]);
  });
});
