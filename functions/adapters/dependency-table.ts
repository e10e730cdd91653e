/**
 * Dependencies in the tasks table, each in the partition of the task it concerns: `dependent#<id>` records the
 * tasks waiting for it, `input#<id>` how each of its dependencies ended, `result` its result kept once for all its
 * dependents.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import type { DependencyStore, StoredInput } from '#core/ports/dependency-store';
import type { ListingCursor } from '#core/ports/task-store';
import type { DependencyOutcome, Task, TaskError } from '#domain/task';
import { Expression } from './expression';
import { dependentPart, inputPart, RESULT_PART } from './tables';
import { payloadAttributes, payloadJsonOf } from './task-items';
import { batchGet, inputItems } from './task-requests';
import type { TaskTable } from './task-table';

export class DependencyTable implements DependencyStore {
  /**
   * `states` writes the mark a link leaves on the task's state item (`addDependent`): that write is the state
   * item's, through the one conditional update every write of it goes through.
   */
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly states: Pick<TaskTable, 'update'>,
  ) {}

  async addDependent(taskId: string, dependentId: string, purgeAt: number): Promise<Task | undefined> {
    // The record is written once: a linking repeated (a retried submit) finds it and does not count it again.
    const p = new Expression();
    let added = true;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { taskId, part: dependentPart(dependentId), dependentId, purgeAt },
          ConditionExpression: `attribute_not_exists(${p.n('part')})`,
          ...p.attributes(),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      added = false;
    }
    const marked = await this.states.update(taskId, (e) => ({
      set: [
        `${e.n('hasDependents')} = ${e.v(true)}`,
        ...(added
          ? [`${e.n('dependentCount')} = if_not_exists(${e.n('dependentCount')}, ${e.v(0)}) + ${e.v(1)}`]
          : []),
      ],
      condition: `attribute_exists(${e.n('taskId')})`,
    }));
    return marked.ok ? marked.task : undefined;
  }

  async dependentsOf(
    taskId: string,
    startKey?: ListingCursor,
  ): Promise<{ ids: string[]; startKey?: ListingCursor }> {
    const e = new Expression();
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        KeyConditionExpression: `${e.n('taskId')} = ${e.v(taskId)} AND begins_with(${e.n('part')}, ${e.v(dependentPart(''))})`,
        ProjectionExpression: e.n('dependentId'),
        // A record written just before the dependency's end must be seen by the reading that end makes.
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
        Limit: 100,
        ...e.attributes(),
      }),
    );
    return {
      ids: (output.Items ?? []).map((item) => String(item.dependentId)),
      ...(output.LastEvaluatedKey ? { startKey: output.LastEvaluatedKey } : {}),
    };
  }

  async putInput(
    dependentId: string,
    dependencyId: string,
    outcome: StoredInput,
    purgeAt: number,
  ): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          taskId: dependentId,
          part: inputPart(dependencyId),
          dependencyId,
          status: outcome.status,
          ...(outcome.error ? { error: outcome.error } : {}),
          // The released functions read an input's result from `payload` and know nothing of `resultKept`: an
          // empty one makes them fail (the claim is retried, and answered by a current function) where they would
          // hand the outcome over without its result, during a deploy or after a rollback.
          ...(outcome.resultKept ? { resultKept: true, payload: '' } : {}),
          ...(outcome.result === undefined ? {} : payloadAttributes(JSON.stringify(outcome.result))),
          purgeAt,
        },
      }),
    );
  }

  async keepResult(
    task: Pick<Task, 'taskId' | 'result'>,
    neededUntil: number,
    purgeAt: number,
  ): Promise<void> {
    const key = { taskId: task.taskId, part: RESULT_PART };
    // A read of a record that is there bills its size in read units, a write of it its size in write units (4 to
    // 10 times the price): the record is read first, and written only when missing or kept too short.
    const e = new Expression();
    const kept = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: key,
        ProjectionExpression: e.n('purgeAt'),
        ConsistentRead: true,
        ...e.attributes(),
      }),
    );
    const keptUntil = kept.Item?.purgeAt;
    if (typeof keptUntil === 'number' && keptUntil >= neededUntil) return;
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { ...key, ...payloadAttributes(JSON.stringify(task.result ?? null)), purgeAt },
      }),
    );
  }

  async keptResults(taskIds: readonly string[]): Promise<Map<string, unknown>> {
    const found = new Map<string, unknown>();
    const items = await batchGet(
      this,
      [...new Set(taskIds)].map((taskId) => ({ taskId, part: RESULT_PART })),
      true,
    );
    for (const item of items) {
      const json = payloadJsonOf(item);
      if (json !== undefined) found.set(String(item.taskId), JSON.parse(json));
    }
    return found;
  }

  async inputsOf(taskId: string): Promise<Map<string, StoredInput>> {
    const inputs = new Map<string, StoredInput>();
    for await (const item of inputItems(this, taskId, { consistent: true })) {
      const resultJson = item.resultKept === true ? undefined : payloadJsonOf(item);
      const error = item.error as TaskError | undefined;
      inputs.set(String(item.dependencyId), {
        status: item.status as DependencyOutcome['status'],
        ...(item.resultKept === true ? { resultKept: true as const } : {}),
        ...(resultJson === undefined ? {} : { result: JSON.parse(resultJson) }),
        ...(error ? { error: { message: String(error.message), retryable: Boolean(error.retryable) } } : {}),
      });
    }
    return inputs;
  }
}
