/**
 * Building elements from data without markup: every text goes in as a text node, every attribute through
 * `setAttribute`, so nothing the server sends is ever parsed as HTML.
 */

export type Attrs = Record<string, string | number | boolean | undefined>;
export type Child = Node | string | number | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** A button that runs `action` when pressed. */
export function button(label: string, action: (pressed: HTMLButtonElement) => void, attrs: Attrs = {}) {
  const element = el('button', { type: 'button', ...attrs }, label);
  element.addEventListener('click', () => action(element));
  return element;
}

/** A link inside the app. */
export const link = (href: string, text: string, attrs: Attrs = {}) => el('a', { href, ...attrs }, text);

let ids = 0;
/** A fresh id for `for`, `aria-labelledby` and `aria-describedby`. */
export const uniqueId = (prefix: string) => `${prefix}-${++ids}`;

/** The element focus goes back to when the one that had it is gone: the page's main region. */
export const mainRegion = () => document.getElementById('main');

/**
 * Replaces the children of `parent`. If focus was inside it, focus moves to the new element with the same
 * `data-key`, or to the main region when there is none, so a refresh never leaves focus on a removed node.
 */
export function replaceKeepingFocus(parent: Element, children: readonly Child[]): void {
  const active = document.activeElement;
  const inside = active instanceof HTMLElement && parent.contains(active);
  const key = inside ? active.dataset.key : undefined;
  parent.replaceChildren();
  append(parent, children);
  if (!inside) return;
  const same =
    key === undefined ? null : parent.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`);
  (same ?? mainRegion())?.focus({ preventScroll: true });
}

/** Focuses the element with `data-key` = `key` if there is one, else `fallback` if still in the page. */
export function focusByKey(key: string | undefined, fallback: HTMLElement | null): void {
  const found =
    key === undefined ? null : document.querySelector<HTMLElement>(`[data-key="${CSS.escape(key)}"]`);
  const target = found ?? (fallback?.isConnected ? fallback : mainRegion());
  target?.focus({ preventScroll: true });
}
