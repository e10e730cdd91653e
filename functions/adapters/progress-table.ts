/**
 * Progress reports in the tasks table: `(<taskId>, "progress")`, beside the task's state item, holding the last
 * report (percentage, message, data as JSON, when, and the lease it came under). A put is one write of the item's own
 * size; its condition only keeps a report of an earlier lease from replacing a later one's (the lease itself is
 * checked on the task before it).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ProgressStore } from '#core/ports/progress-store';
import type { Progress } from '#domain/progress';

export const PROGRESS_PART = 'progress';

const progressKey = (taskId: string) => ({ taskId, part: PROGRESS_PART });

export class ProgressTable implements ProgressStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async put(taskId: string, progress: Progress, purgeAt: number): Promise<boolean> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...progressKey(taskId), ...progress, purgeAt },
          ConditionExpression: 'attribute_not_exists(leaseEpoch) OR leaseEpoch <= :epoch',
          ExpressionAttributeValues: { ':epoch': progress.leaseEpoch },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  async get(taskId: string): Promise<Progress | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: progressKey(taskId) }),
    );
    const item = output.Item;
    if (!item) return undefined;
    return {
      ...(typeof item.percent === 'number' ? { percent: item.percent } : {}),
      ...(typeof item.message === 'string' ? { message: item.message } : {}),
      ...(typeof item.dataJson === 'string' ? { dataJson: item.dataJson } : {}),
      at: Number(item.at),
      leaseEpoch: Number(item.leaseEpoch),
      attempt: Number(item.attempt),
    };
  }
}
