/**
 * The fenced code blocks of the README and the docs, and the markers that say why one is not run. The TypeScript
 * blocks are written out as modules under `test/unit/docs/blocks/` by `npm run docs`, so that the repository's own
 * type check (`npm run typecheck`, which parses aws-cdk-lib once already) checks them against the sources at no
 * cost of its own; `test/unit/docs/code-blocks.test.ts` holds those files to the pages and checks the other
 * languages.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';

export const ROOT = join(import.meta.dirname, '../..');

/** Where the TypeScript blocks are written, from the repository's root. */
export const BLOCKS_DIR = 'test/unit/docs/blocks';

export interface Block {
  readonly page: string;
  /** The line of the opening fence, from 1. */
  readonly line: number;
  readonly language: string;
  readonly code: string;
  /** The HTML comment on the line just above the fence, if there is one. */
  readonly marker: string | undefined;
}

/** The pages whose blocks are checked: the README and every page under `docs/`, by their path from the root. */
export function pages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => posix.join('docs', file));
  return ['README.md', ...docs.sort()];
}

/** Every fenced block of a page's text, with its language and the marker above it. */
export function blocksIn(page: string, text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)/.exec(lines[i] ?? '');
    if (!open) continue;
    const indent = open[1] ?? '';
    const end = lines.findIndex((l, j) => j > i && l.trimStart().startsWith('```'));
    if (end < 0) throw new Error(`${page}:${i + 1}: a fence that is never closed`);
    const above = (lines[i - 1] ?? '').trim();
    blocks.push({
      page,
      line: i + 1,
      language: open[2] ?? '',
      code: lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join('\n'),
      marker: /^<!--.*-->$/.test(above) ? above : undefined,
    });
    i = end;
  }
  return blocks;
}

/** Every block of every page. */
export function allBlocks(): Block[] {
  return pages().flatMap((page) => blocksIn(page, readFileSync(join(ROOT, page), 'utf8')));
}

/** The reason of a `<!-- not-run: <reason> -->` marker ('' when it gives none), or undefined. */
export const notRunReason = (b: Block) => /^<!-- not-run:(.*)-->$/.exec(b.marker ?? '')?.[1]?.trim();
/** The test a `<!-- tested-by: <file> -->` marker names, or undefined. */
export const testedBy = (b: Block) => /^<!-- tested-by:(.*)-->$/.exec(b.marker ?? '')?.[1]?.trim();
/** A sample of what a command prints: `<!-- output -->`. */
export const isOutput = (b: Block) => b.marker === '<!-- output -->';
export const isMarked = (b: Block) =>
  notRunReason(b) !== undefined || testedBy(b) !== undefined || isOutput(b);

export const TYPESCRIPT = ['ts', 'typescript'];

/** The package names a reader imports, and the sources they are in this repository, from `BLOCKS_DIR`. */
const PACKAGES: Record<string, string> = {
  'agent-scheduler': '../../../../infra/index.ts',
  'agent-scheduler/sdk': '../../../../sdk/index.ts',
  '@agent-scheduler/sdk': '../../../../sdk/index.ts',
};

/** The TypeScript blocks as modules: file name in `BLOCKS_DIR` → its text, the packages pointed at the sources. */
export function typeScriptModules(blocks: readonly Block[] = allBlocks()): Map<string, string> {
  const modules = new Map<string, string>();
  const counts = new Map<string, number>();
  for (const block of blocks) {
    if (isMarked(block) || !TYPESCRIPT.includes(block.language)) continue;
    const stem = block.page.replace(/\.md$/, '').replaceAll('/', '-');
    const n = (counts.get(stem) ?? 0) + 1;
    counts.set(stem, n);
    const code = block.code.replace(
      /(from\s+)'(agent-scheduler|agent-scheduler\/sdk|@agent-scheduler\/sdk)'/g,
      (_, from: string, name: string) => `${from}'${PACKAGES[name]}'`,
    );
    const header = `// ${block.page}, block ${n}: written by \`npm run docs\` from the page; edit the page, not this file.\n`;
    modules.set(`${stem}-${n}.ts`, `${header}${code}\n`);
  }
  return modules;
}
