/**
 * A small builder for DynamoDB expressions: every attribute name and value gets a placeholder, so reserved
 * words (`status`, `owner`, `result`, …) and user-supplied map keys (task ids in a session's maps) are safe.
 */
export class Expression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private nameCount = 0;
  private valueCount = 0;
  private readonly nameByAttribute = new Map<string, string>();

  /** A placeholder for an attribute path; `path` segments are given separately (`n('held', taskId)`). */
  n(...path: string[]): string {
    return path
      .map((segment) => {
        let placeholder = this.nameByAttribute.get(segment);
        if (!placeholder) {
          placeholder = `#n${this.nameCount++}`;
          this.nameByAttribute.set(segment, placeholder);
          this.names[placeholder] = segment;
        }
        return placeholder;
      })
      .join('.');
  }

  /** A placeholder for a value. */
  v(value: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /** The `ExpressionAttributeNames` / `ExpressionAttributeValues` pair, omitting empty maps as DynamoDB requires. */
  attributes(): {
    ExpressionAttributeNames?: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    return {
      ...(this.nameCount > 0 ? { ExpressionAttributeNames: this.names } : {}),
      ...(this.valueCount > 0 ? { ExpressionAttributeValues: this.values } : {}),
    };
  }
}

/** Assembles `SET a, b REMOVE c ADD d` from clauses, skipping empty ones. */
export function updateExpression(clauses: { set?: string[]; remove?: string[]; add?: string[] }): string {
  const parts: string[] = [];
  if (clauses.set?.length) parts.push(`SET ${clauses.set.join(', ')}`);
  if (clauses.remove?.length) parts.push(`REMOVE ${clauses.remove.join(', ')}`);
  if (clauses.add?.length) parts.push(`ADD ${clauses.add.join(', ')}`);
  return parts.join(' ');
}
