/**
 * SVG elements built from data, as `dom.ts` builds HTML: every text a text node, every attribute through
 * `setAttribute`. Colours come from classes of the style sheet (the page's policy allows no inline styles).
 */
import { type Attrs, append, type Child } from './dom';

const NS = 'http://www.w3.org/2000/svg';

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(NS, tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

/** A number for an attribute: at most one decimal, no float noise. */
export const px = (n: number) => String(Math.round(n * 10) / 10);
