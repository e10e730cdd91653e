/**
 * A data table whose rows are replaced on each refresh while the table and its scrolling wrapper stay: the
 * horizontal scroll position and the focus (by `data-key`) survive a refresh.
 */
import { type Child, el, replaceKeepingFocus } from './dom';

/** A cell: one child or several. */
export type Cell = Child | readonly Child[];

export class DataTable {
  /** The wrapper that scrolls on a narrow screen; focusable so the keyboard can scroll it. */
  readonly element: HTMLElement;
  private readonly body: HTMLTableSectionElement;
  private readonly head: HTMLTableRowElement;
  private columns: readonly string[] = [];

  constructor(label: string, columns: readonly string[]) {
    this.body = el('tbody');
    this.head = el('tr');
    this.element = el(
      'div',
      { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: 0 },
      // Named for table navigation too (screen readers list tables by caption), not only as a region.
      el(
        'table',
        {},
        el('caption', { class: 'visually-hidden' }, label),
        el('thead', {}, this.head),
        this.body,
      ),
    );
    this.setColumns(columns);
    this.message('Loading…');
  }

  /** Changes the column headings (a column the server may not send); give rows of as many cells after. */
  setColumns(columns: readonly string[]): void {
    if (columns.length === this.columns.length && columns.every((name, i) => name === this.columns[i]))
      return;
    this.columns = [...columns];
    this.head.replaceChildren(...columns.map((name) => el('th', { scope: 'col' }, name)));
  }

  /** Shows `rows`, or `empty` when there are none. */
  rows(rows: readonly (readonly Cell[])[], empty: string): void {
    if (rows.length === 0) {
      this.message(empty);
      return;
    }
    replaceKeepingFocus(
      this.body,
      rows.map((cells) =>
        el(
          'tr',
          {},
          ...cells.map((cell) =>
            el('td', {}, ...(Array.isArray(cell) ? (cell as readonly Child[]) : [cell as Child])),
          ),
        ),
      ),
    );
  }

  /** One row spanning the table, saying why there is nothing else. */
  message(text: string): void {
    replaceKeepingFocus(this.body, [
      el('tr', {}, el('td', { colspan: this.columns.length, class: 'empty' }, text)),
    ]);
  }
}
