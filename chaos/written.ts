import type { Expression } from '#adapters/expression';

/** The value a `SET name = :v` clause writes, if the clause set writes `name`. */
export function written(e: Expression, set: readonly string[] | undefined, name: string): unknown {
  for (const clause of set ?? []) {
    const [left, right] = clause.split(' = ');
    if (left && right && e.names[left] === name && right in e.values) return e.values[right];
  }
  return undefined;
}
