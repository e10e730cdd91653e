/**
 * Cursor paging: "First page" and "Next page", the latter following the `nextCursor` of the page shown. Buttons
 * that cannot act are `aria-disabled` rather than disabled, so they keep focus.
 */
import { button, el } from './dom';
import { announce } from './status';

export class Pager {
  readonly element: HTMLElement;
  /** The cursor of the page shown; `undefined` for the first. */
  cursor: string | undefined;
  private next: string | undefined;
  private page = 1;
  private readonly first: HTMLButtonElement;
  private readonly forward: HTMLButtonElement;
  private readonly label: HTMLElement;

  constructor(
    what: string,
    private readonly changed: () => void,
  ) {
    this.first = button('First page', () => this.go(undefined, 1), {
      class: 'secondary',
      'data-key': 'first-page',
    });
    this.forward = button('Next page', () => this.next && this.go(this.next, this.page + 1), {
      class: 'secondary',
      'data-key': 'next-page',
    });
    this.label = el('span', { class: 'page-number' });
    this.element = el(
      'div',
      { class: 'pager', role: 'group', 'aria-label': `Pages of ${what}` },
      this.first,
      this.forward,
      this.label,
    );
    this.show();
  }

  /** Takes the `nextCursor` of the page just read. */
  update(nextCursor: string | undefined): void {
    this.next = nextCursor;
    this.show();
  }

  /** Back to the first page without a word (the filters changed). */
  reset(): void {
    this.cursor = undefined;
    this.next = undefined;
    this.page = 1;
    this.show();
  }

  private go(cursor: string | undefined, page: number): void {
    if (page === this.page && cursor === this.cursor) return;
    this.cursor = cursor;
    this.page = page;
    this.next = undefined;
    this.show();
    announce(`Page ${page}.`);
    this.changed();
  }

  private show(): void {
    this.first.setAttribute('aria-disabled', String(this.page === 1));
    this.forward.setAttribute('aria-disabled', String(this.next === undefined));
    this.label.textContent = `Page ${this.page}`;
  }
}
