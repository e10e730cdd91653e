/**
 * Registered agents: who they are, which queues they serve and how many tasks they may hold at once.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { AgentStore } from '#core/ports/agent-store';
import type { Agent } from '#domain/agent';
import type { Labels } from '#domain/labels';
import { Expression, updateIf } from './expression';

/** Which agent, the queues it serves and how many tasks it may hold: on its record, and copied to each session. */
export function agentScopeOf(
  item: Record<string, unknown>,
): Pick<Agent, 'agentId' | 'queues' | 'maxConcurrency'> {
  return {
    agentId: String(item.agentId),
    queues: Array.isArray(item.queues) ? item.queues.map(String) : [],
    maxConcurrency: Number(item.maxConcurrency),
  };
}

function agentFromItem(item: Record<string, unknown>): Agent {
  return {
    ...agentScopeOf(item),
    name: String(item.name),
    interactive: Boolean(item.interactive),
    createdAt: Number(item.createdAt),
    ...labelsOfItem(item.labels),
    ...(typeof item.revokedAt === 'number' ? { revokedAt: item.revokedAt } : {}),
    ...(typeof item.tokenHash === 'string' ? { tokenHash: item.tokenHash } : {}),
  };
}

/** An agent's labels as stored (name → list of values), read only if well formed; none when it has none. */
export function labelsOfItem(value: unknown): { labels?: Labels } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const entries = Object.entries(value).flatMap(([name, values]): [string, string[]][] =>
    Array.isArray(values) ? [[name, values.filter((v): v is string => typeof v === 'string')]] : [],
  );
  return entries.length === 0 ? {} : { labels: Object.fromEntries(entries) };
}

export class AgentTable implements AgentStore {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {}

  /**
   * Stores a new agent. Its id is fresh, so an item already there with the same creation time and token is this
   * very write, committed by an attempt whose answer was lost and retried by the SDK: that is success.
   */
  async create(agent: Agent): Promise<void> {
    const e = new Expression();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { ...agent, queues: [...agent.queues] },
          ConditionExpression: `attribute_not_exists(${e.n('agentId')})`,
          ...e.attributes(),
        }),
      );
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const stored = await this.get(agent.agentId);
      if (stored?.createdAt !== agent.createdAt || stored.tokenHash !== agent.tokenHash) throw error;
    }
  }

  async get(agentId: string): Promise<Agent | undefined> {
    const output = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { agentId }, ConsistentRead: true }),
    );
    return output.Item ? agentFromItem(output.Item) : undefined;
  }

  /** Marks the agent revoked; returns false if it does not exist. */
  async revoke(agentId: string, now: number): Promise<boolean> {
    const e = new Expression();
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: { agentId },
      UpdateExpression: `SET ${e.n('revokedAt')} = if_not_exists(${e.n('revokedAt')}, ${e.v(now)})`,
      ConditionExpression: `attribute_exists(${e.n('agentId')})`,
      ...e.attributes(),
    });
  }

  /** One page of agents from `startAfter` (an agent id) on, and the id to start the next page after. */
  async page(limit: number, startAfter?: string): Promise<{ agents: Agent[]; lastAgentId?: string }> {
    const output = await this.doc.send(
      new ScanCommand({
        TableName: this.tableName,
        Limit: limit,
        ...(startAfter === undefined ? {} : { ExclusiveStartKey: { agentId: startAfter } }),
      }),
    );
    const last = output.LastEvaluatedKey?.agentId;
    return {
      agents: (output.Items ?? []).map(agentFromItem),
      ...(typeof last === 'string' ? { lastAgentId: last } : {}),
    };
  }

  async list(limit: number): Promise<Agent[]> {
    const output = await this.doc.send(new ScanCommand({ TableName: this.tableName, Limit: limit }));
    return (output.Items ?? []).map(agentFromItem);
  }
}
