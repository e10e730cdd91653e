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

/** A plain table: a header, a rule, one line per row; long cells are cut to keep lines readable. */
export function table(rows: readonly Row[], columns: readonly string[]): string {
  if (rows.length === 0) return '(none)';
  const text = rows.map((row) =>
    columns.map((c) => {
      const value = cell(row[c]);
      return value.length > 60 ? `${value.slice(0, 57)}...` : value;
    }),
  );
  const widths = columns.map((c, i) => Math.max(c.length, ...text.map((line) => line[i]?.length ?? 0)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...text.map(line)].join('\n');
}

/** A record as `key: value` lines. */
export function record(value: Row): string {
  const width = Math.max(...Object.keys(value).map((k) => k.length));
  return Object.entries(value)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`)
    .join('\n');
}
