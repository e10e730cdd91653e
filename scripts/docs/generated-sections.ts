/**
 * The generated sections of the docs: each lives between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`
 * in one page, and is written there by `npm run docs`. The rest of the page is written by hand and kept as it is.
 */
import { readFileSync } from 'node:fs';
import { apiSection } from './api-reference';
import { propsSection } from './props-tables';

/** Each page with generated sections, by its path from the repository's root, and what writes each section. */
export const GENERATED: Readonly<Record<string, Readonly<Record<string, () => string>>>> = {
  'docs/deploying.md': { props: propsSection },
  'docs/api.md': { api: apiSection },
};

export const ROOT = new URL('../../', import.meta.url);

/** `page` with each of its generated sections written anew; a missing marker is an error. */
export function withSections(page: string, text: string): string {
  let written = text;
  for (const [name, render] of Object.entries(GENERATED[page] ?? {})) {
    const open = `<!-- generated:${name} -->`;
    const close = `<!-- /generated:${name} -->`;
    const start = written.indexOf(open);
    const end = written.indexOf(close);
    if (start < 0 || end < start) throw new Error(`${page} has no ${open} … ${close} section`);
    written = `${written.slice(0, start + open.length)}\n${render()}\n${written.slice(end)}`;
  }
  return written;
}

/** Every page with generated sections: as committed, and as the generator writes it. */
export function generatedPages(): { page: string; committed: string; written: string }[] {
  return Object.keys(GENERATED).map((page) => {
    const committed = readFileSync(new URL(page, ROOT), 'utf8');
    return { page, committed, written: withSections(page, committed) };
  });
}
