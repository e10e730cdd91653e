import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';

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

/** The clauses of one conditional update, written with placeholders from the `Expression` it is given. */
export interface ConditionalClauses {
  readonly set?: string[];
  readonly remove?: string[];
  /** `ADD` actions: a number added to, or elements added to a set (made if absent). */
  readonly add?: string[];
  readonly condition: string;
}

export type ConditionalOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly current?: T };

/**
 * One conditional `UpdateItem` that returns the item as it is now either way: the new item on success, and the
 * current one on a failed condition (`ReturnValuesOnConditionCheckFailure`, at no extra read), so callers can
 * tell why a write was refused.
 */
export async function conditionalUpdate<T>(
  doc: DynamoDBDocumentClient,
  target: { readonly TableName: string; readonly Key: Record<string, unknown> },
  build: (e: Expression) => ConditionalClauses,
  decode: (item: Record<string, unknown>) => T,
): Promise<ConditionalOutcome<T>> {
  const e = new Expression();
  const { set, remove, add, condition } = build(e);
  try {
    const output = await doc.send(
      new UpdateCommand({
        ...target,
        UpdateExpression: updateExpression({ set, remove, add }),
        ConditionExpression: condition,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ...e.attributes(),
      }),
    );
    if (!output.Attributes) throw new Error(`update of ${target.TableName} returned no attributes`);
    return { ok: true, value: decode(output.Attributes) };
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      return error.Item ? { ok: false, current: decode(unmarshall(error.Item)) } : { ok: false };
    }
    throw error;
  }
}

/** One conditional `UpdateItem`: true if it was written, false if its condition did not hold. */
export async function updateIf(doc: DynamoDBDocumentClient, input: UpdateCommandInput): Promise<boolean> {
  try {
    await doc.send(new UpdateCommand(input));
    return true;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return false;
    throw error;
  }
}

/** One update of a transaction, built as `conditionalUpdate` builds its own. */
export function transactUpdate(
  target: { readonly TableName: string; readonly Key: Record<string, unknown> },
  build: (e: Expression) => ConditionalClauses,
): NonNullable<TransactWriteCommandInput['TransactItems']>[number] {
  const e = new Expression();
  const { set, remove, add, condition } = build(e);
  return {
    Update: {
      ...target,
      UpdateExpression: updateExpression({ set, remove, add }),
      ...(condition ? { ConditionExpression: condition } : {}),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      ...e.attributes(),
    },
  };
}

/** Why a transaction was cancelled, item by item: `None` for an item that was not the cause. */
export type CancellationReason = { readonly code: string; readonly item?: Record<string, unknown> };

/**
 * A transaction of conditional writes, sent with `token` (`ClientRequestToken`): the same writes sent again with
 * it within ten minutes, after an answer was lost, succeed without being made twice. Cancelled, the reasons by item,
 * each failed condition with the item as it was.
 */
export async function conditionalTransaction(
  doc: DynamoDBDocumentClient,
  items: NonNullable<TransactWriteCommandInput['TransactItems']>,
  token: string,
): Promise<{ readonly ok: true } | { readonly ok: false; readonly reasons: CancellationReason[] }> {
  try {
    await doc.send(new TransactWriteCommand({ TransactItems: items, ClientRequestToken: token }));
    return { ok: true };
  } catch (error) {
    if (!(error instanceof TransactionCanceledException)) throw error;
    return {
      ok: false,
      reasons: (error.CancellationReasons ?? []).map((reason) => ({
        code: reason.Code ?? 'None',
        ...(reason.Item ? { item: unmarshall(reason.Item) } : {}),
      })),
    };
  }
}
