/**
 * The generated sections of the docs (the construct's props, the HTTP API's routes) are what `npm run docs` writes
 * from the declarations today: a prop, a default, a bound or a route changed without running it fails here.
 */
import { describe, expect, it } from 'vitest';
import { GENERATED, generatedPages, withSections } from '../../../scripts/docs/generated-sections';

const PAGES = generatedPages();

describe('the generated docs', () => {
  it.each(PAGES)('$page is up to date (run `npm run docs`)', ({ committed, written }) => {
    expect(committed).toBe(written);
  });

  it('notices a section that drifted', () => {
    // Prepare: the props page with a row of its generated table edited by hand.
    const [page] = Object.keys(GENERATED);
    const committed = PAGES.find((p) => p.page === page)?.committed ?? '';
    const edited = committed.replace('| `leaseTtl` |', '| `leaseTTL` |');
    // Act, Assess: the generator writes the declaration's row back.
    expect(edited).not.toBe(committed);
    expect(withSections(page ?? '', edited)).toBe(committed);
  });
});
