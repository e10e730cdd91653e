/**
 * Output for people (aligned columns) or for scripts (`--json`).
 */
export type Row = Record<string, unknown>;

/**
 * Text safe to write to a terminal: control and format characters (ESC, BEL, C1 such as CSI, bidi overrides such
 * as RLO, line separators) are shown as `\u001b`-style escapes, so what a server returns cannot move the cursor,
 * recolour, retitle or reorder the screen. Newlines the CLI writes itself stay. JSON stays valid: such characters
 * only occur inside its strings, where the escape means the same character.
 */
export const printable = (text: string): string =>
  text.replace(
    /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu,
    (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`,
  );

const cell = (value: unknown): string => {
  if (value === undefined || value === null) return '';
  // Escaped before the columns are measured, so a hostile name cannot break the alignment either.
  if (typeof value === 'object') return printable(JSON.stringify(value));
  return printable(String(value));
};

/**
 * Colours a cell of a table: given the column and the cell's text (escaped already), returns it with colour
 * codes around it. Applied after the columns are measured, so colour never moves them.
 */
export type Paint = (column: string, text: string) => string;

/**
 * A plain table: a header, a rule, one line per row; long cells are cut to keep lines readable. Cells are
 * escaped (`printable`); what `paint` adds is the CLI's own.
 */
export function table(rows: readonly Row[], columns: readonly string[], paint?: Paint): string {
  if (rows.length === 0) return '(none)';
  const text = rows.map((row) =>
    columns.map((c) => {
      const value = cell(row[c]);
      return value.length > 60 ? `${value.slice(0, 57)}...` : value;
    }),
  );
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((line) => line[i]?.length ?? 0)));
  const line = (values: readonly string[], painted: boolean) =>
    values
      .map((v, i) => {
        const column = columns[i] ?? '';
        const padding = ' '.repeat(Math.max(0, (widths[i] ?? 0) - v.length));
        return `${painted && paint && v !== '' ? paint(column, v) : v}${padding}`;
      })
      .join('  ')
      .trimEnd();
  return [
    line(columns, false),
    line(
      widths.map((w) => '-'.repeat(w)),
      false,
    ),
    ...text.map((values) => line(values, true)),
  ].join('\n');
}

/** How long ago an ISO time was, for people: `12s ago`, `5m ago`, `3h ago`, `2d ago`. */
export function ago(iso: string | undefined, now: number = Date.now()): string {
  const at = iso === undefined ? Number.NaN : Date.parse(iso);
  if (Number.isNaN(at)) return '';
  const seconds = Math.max(0, Math.round((now - at) / 1_000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3_600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3_600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

/** A record as `key: value` lines. */
export function record(value: Row): string {
  const width = Math.max(...Object.keys(value).map((k) => k.length));
  return Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`)
    .join('\n');
}
