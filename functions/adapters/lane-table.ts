/**
 * Lanes and their turns in the tasks table: a lane is the sparse `lanes` index of the queued state items of one
 * fairness key (`laneId`, `readyAt`), and its turn slot is an item of its own (`lane#<laneId>`, part `turn`).
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { LaneEntry, LaneStore, TurnSlot } from '#core/ports/lane-store';
import { Expression, updateIf } from './expression';
import { LANE_INDEX, laneTurnKey } from './tables';
import { definedOnly, type Item, optionalNumber, optionalString } from './task-items';

const turnSlotOf = (item: Item): TurnSlot =>
  definedOnly({
    token: optionalString(item.turnToken),
    visibleAt: optionalNumber(item.visibleAt),
    heldAt: optionalNumber(item.heldAt),
    lastOfferAt: optionalNumber(item.lastOfferAt),
  });

export class LaneTable implements LaneStore {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  async laneTasks(laneId: string, readyBy: number | undefined, limit: number): Promise<LaneEntry[]> {
    const e = new Expression();
    const key = [`${e.n('laneId')} = ${e.v(laneId)}`];
    if (readyBy !== undefined) key.push(`${e.n('readyAt')} <= ${e.v(readyBy)}`);
    const output = await this.doc.send(
      new QueryCommand({
        TableName: this.tableName,
        IndexName: LANE_INDEX,
        KeyConditionExpression: key.join(' AND '),
        Limit: limit,
        ...e.attributes(),
      }),
    );
    return (output.Items ?? []).map((item) => ({
      taskId: String(item.taskId),
      readyAt: Number(item.readyAt),
    }));
  }

  async turnSlot(laneId: string, { consistent = false } = {}): Promise<TurnSlot> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: laneTurnKey(laneId), ConsistentRead: consistent }),
    );
    return turnSlotOf(output.Item ?? {});
  }

  async noteOffer(
    laneId: string,
    now: number,
    ifEmpty?: { readonly token: string; readonly visibleAt: number },
  ): Promise<TurnSlot> {
    const e = new Expression();
    // A turn's three attributes are written and removed together: each is set here only where none is.
    const orTake = ifEmpty
      ? Object.entries({ turnToken: ifEmpty.token, visibleAt: ifEmpty.visibleAt, heldAt: now })
          .map(([name, value]) => `, ${e.n(name)} = if_not_exists(${e.n(name)}, ${e.v(value)})`)
          .join('')
      : '';
    const output = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: laneTurnKey(laneId),
        UpdateExpression: `SET ${e.n('lastOfferAt')} = ${e.v(now)}${orTake}`,
        ReturnValues: 'ALL_NEW',
        ...e.attributes(),
      }),
    );
    return turnSlotOf(output.Attributes ?? {});
  }

  takeTurnSlot(
    laneId: string,
    slot: { readonly token: string; readonly visibleAt: number; readonly now: number },
    replacing: string | undefined,
  ): Promise<boolean> {
    return this.writeTurnSlot(laneId, (e) => ({
      set: `SET ${e.n('turnToken')} = ${e.v(slot.token)}, ${e.n('visibleAt')} = ${e.v(slot.visibleAt)}, ${e.n('heldAt')} = ${e.v(slot.now)}`,
      condition:
        replacing === undefined
          ? `attribute_not_exists(${e.n('turnToken')})`
          : `${e.n('turnToken')} = ${e.v(replacing)}`,
    }));
  }

  holdTurnSlot(
    laneId: string,
    token: string,
    visibleAt: number,
    now: number,
    offeredSince?: number,
  ): Promise<boolean> {
    return this.writeTurnSlot(laneId, (e) => ({
      set: `SET ${e.n('visibleAt')} = ${e.v(visibleAt)}, ${e.n('heldAt')} = ${e.v(now)}`,
      condition:
        offeredSince === undefined
          ? `${e.n('turnToken')} = ${e.v(token)}`
          : `${e.n('turnToken')} = ${e.v(token)} AND ${e.n('lastOfferAt')} >= ${e.v(offeredSince)}`,
    }));
  }

  /** One conditional write of a lane's turn slot: true if its condition held. */
  private async writeTurnSlot(
    laneId: string,
    build: (e: Expression) => { set: string; condition: string },
  ): Promise<boolean> {
    const e = new Expression();
    const { set, condition } = build(e);
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: laneTurnKey(laneId),
      UpdateExpression: set,
      ConditionExpression: condition,
      ...e.attributes(),
    });
  }

  async freeTurnSlot(
    laneId: string,
    token: string,
    quietSince: number,
  ): Promise<'freed' | 'offered' | 'superseded'> {
    const e = new Expression();
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: laneTurnKey(laneId),
          UpdateExpression: `REMOVE ${e.n('turnToken')}, ${e.n('visibleAt')}, ${e.n('heldAt')}`,
          ConditionExpression: `${e.n('turnToken')} = ${e.v(token)} AND (attribute_not_exists(${e.n('lastOfferAt')}) OR ${e.n('lastOfferAt')} < ${e.v(quietSince)})`,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          ...e.attributes(),
        }),
      );
      return 'freed';
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const current = error.Item ? unmarshall(error.Item) : {};
      return current.turnToken === token ? 'offered' : 'superseded';
    }
  }
}
