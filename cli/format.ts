/**
 * Output for people (aligned columns) or for scripts (`--json`).
 */
export type Row = Record<string, unknown>;

const cell = (value: unknown): string => {
  if (value === undefined || value === null) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
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
