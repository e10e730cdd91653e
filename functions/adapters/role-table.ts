import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  ScanCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { RoleStore, Transfer, TransferOutcome } from '#core/ports/role-store';
import type { Role, SessionRef } from '#domain/role';
import type { AgentSession } from '#domain/task';
import { Expression, updateExpression, updateIf } from './expression';
import { endClauses, liveClause, scanKind, sessionFromItem, sessionLeaseId } from './session-table';

type Item = Record<string, unknown>;

export const roleLeaseId = (role: string) => `role#${role}`;

export function roleFromItem(item: Item): Role {
  const volunteers = Object.entries((item.volunteers ?? {}) as Record<string, Item>)
    .map(([agentId, entry]) => ({ agentId, sessionId: String(entry.sessionId), at: Number(entry.at) }))
    .sort((a, b) => a.at - b.at || a.agentId.localeCompare(b.agentId));
  const registered = Object.fromEntries(
    Object.entries((item.registered ?? {}) as Record<string, unknown>).map(([k, v]) => [k, Number(v)]),
  );
  return {
    role: String(item.role),
    epoch: Number(item.epoch ?? 0),
    ...(typeof item.holder === 'string'
      ? {
          holder: {
            agentId: item.holder,
            sessionId: String(item.holderSession),
            since: Number(item.since),
          },
        }
      : {}),
    volunteers,
    registered,
    createdAt: Number(item.createdAt),
    updatedAt: Number(item.updatedAt),
  };
}

/**
 * Roles in the leases table, beside the sessions whose heartbeats keep them: `role#<name>` items. Ownership moves
 * only in transactions that check the role's epoch and holder as read and the next holder's session, so two
 * sweeps or a sweep and a release cannot both grant a role.
 */
export class RoleTable implements RoleStore {
  constructor(
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    /** The agents table, whose items count the roles each agent registered. */
    readonly agentsTableName: string,
  ) {}

  async get(role: string): Promise<Role | undefined> {
    const output = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { leaseId: roleLeaseId(role) },
        ConsistentRead: true,
      }),
    );
    return output.Item ? roleFromItem(output.Item) : undefined;
  }

  /** Every role. A scan: roles are few, and the leases table holds one small item per agent besides. */
  async list(): Promise<Role[]> {
    return (await scanKind(this.doc, this.tableName, 'role')).map(roleFromItem);
  }

  /**
   * What a role sweep works on, in one scan of the leases table: sessions that are over (expired, or ended by a
   * revocation) and still hold roles, and roles with no holder and at least one candidate. At most `limit` of each.
   */
  async findToSweep(now: number, limit: number): Promise<{ sessions: AgentSession[]; freeRoles: Role[] }> {
    const sessions: AgentSession[] = [];
    const freeRoles: Role[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const e = new Expression();
      const over = `${e.n('kind')} = ${e.v('session')} AND (${e.n('expiresAt')} <= ${e.v(now)} OR attribute_exists(${e.n('endedAt')})) AND size(${e.n('roles')}) > ${e.v(0)}`;
      const free = `${e.n('kind')} = ${e.v('role')} AND attribute_not_exists(${e.n('holderSession')}) AND size(${e.n('volunteers')}) > ${e.v(0)}`;
      const output = await this.doc.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: `(${over}) OR (${free})`,
          ExclusiveStartKey: startKey,
          ...e.attributes(),
        }),
      );
      for (const item of output.Items ?? []) {
        if (item.kind === 'session') sessions.push(sessionFromItem(item));
        else freeRoles.push(roleFromItem(item));
      }
      startKey = output.LastEvaluatedKey;
    } while (startKey && (sessions.length < limit || freeRoles.length < limit));
    return { sessions: sessions.slice(0, limit), freeRoles: freeRoles.slice(0, limit) };
  }

  /** The role's item, created free if it does not exist yet. */
  async getOrCreate(role: string, now: number): Promise<Role> {
    const existing = await this.get(role);
    if (existing) return existing;
    const item = {
      leaseId: roleLeaseId(role),
      kind: 'role',
      role,
      epoch: 0,
      volunteers: {},
      registered: {},
      createdAt: now,
      updatedAt: now,
    };
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: item,
          ConditionExpression: 'attribute_not_exists(leaseId)',
        }),
      );
      return roleFromItem(item);
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      const raced = await this.get(role);
      if (!raced) throw error;
      return raced;
    }
  }

  /**
   * Records the agent's declaration and counts it on the agent's item, in one transaction: refused if the agent
   * is unknown or revoked, or has declared `maxRoles` roles already (`agentRefused`; exact under parallel
   * registrations: the count is checked in the write that raises it), or if the role's item does not exist or
   * the agent has declared this role already (`roleRefused`).
   */
  async register(
    role: string,
    agentId: string,
    maxRoles: number,
    now: number,
  ): Promise<'registered' | 'roleRefused' | 'agentRefused'> {
    const a = new Expression();
    const r = new Expression();
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.agentsTableName,
                Key: { agentId },
                UpdateExpression: `SET ${a.n('roleCount')} = if_not_exists(${a.n('roleCount')}, ${a.v(0)}) + ${a.v(1)}`,
                ConditionExpression: `attribute_exists(${a.n('agentId')}) AND attribute_not_exists(${a.n('revokedAt')}) AND (attribute_not_exists(${a.n('roleCount')}) OR ${a.n('roleCount')} < ${a.v(maxRoles)})`,
                ...a.attributes(),
              },
            },
            {
              Update: {
                TableName: this.tableName,
                Key: { leaseId: roleLeaseId(role) },
                UpdateExpression: `SET ${r.n('registered', agentId)} = ${r.v(now)}, ${r.n('updatedAt')} = ${r.v(now)}`,
                ConditionExpression: `attribute_exists(${r.n('leaseId')}) AND attribute_not_exists(${r.n('registered', agentId)})`,
                ...r.attributes(),
              },
            },
          ],
        }),
      );
      return 'registered';
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      if (reasons[0]?.Code === 'ConditionalCheckFailed') return 'agentRefused';
      if (reasons[1]?.Code === 'ConditionalCheckFailed') return 'roleRefused';
      throw error;
    }
  }

  /**
   * Removes the agent's candidacy if it is still the one made under `sessionId` and the role's holder is still the
   * one read: a withdrawal must not race past a grant to the withdrawing agent (it would hold a role it gave up).
   * False if either changed.
   */
  async removeVolunteer(role: Role, volunteer: SessionRef, now: number): Promise<boolean> {
    const e = new Expression();
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: { leaseId: roleLeaseId(role.role) },
      UpdateExpression: `SET ${e.n('updatedAt')} = ${e.v(now)} REMOVE ${e.n('volunteers', volunteer.agentId)}`,
      ConditionExpression: `${sameHolder(e, role)} AND ${e.n('volunteers', volunteer.agentId, 'sessionId')} = ${e.v(volunteer.sessionId)}`,
      ...e.attributes(),
    });
  }

  /** Adds a candidate while the role's holder stays as read; false if it changed. */
  async addVolunteer(role: Role, volunteer: SessionRef, now: number): Promise<boolean> {
    const e = new Expression();
    return updateIf(this.doc, {
      TableName: this.tableName,
      Key: { leaseId: roleLeaseId(role.role) },
      UpdateExpression: `SET ${e.n('volunteers', volunteer.agentId)} = ${e.v({ sessionId: volunteer.sessionId, at: now })}, ${e.n('updatedAt')} = ${e.v(now)}`,
      ConditionExpression: sameHolder(e, role),
      ...e.attributes(),
    });
  }

  /**
   * Moves the role in one transaction: the role item (conditional on the holder as read), the next holder's
   * session (which must be live, and records the role), and, for a take-over, the old holder's session: ended
   * if it expired, checked if it was replaced or is gone. A releasing holder's session is not written.
   */
  async transfer(transfer: Transfer): Promise<TransferOutcome> {
    const { role, to, now } = transfer;
    const epoch = to ? role.epoch + 1 : role.epoch;
    const e = new Expression();
    const set = [`${e.n('updatedAt')} = ${e.v(now)}`];
    const remove: string[] = [];
    if (to) {
      set.push(
        `${e.n('epoch')} = ${e.v(epoch)}`,
        `${e.n('holder')} = ${e.v(to.agentId)}`,
        `${e.n('holderSession')} = ${e.v(to.sessionId)}`,
        `${e.n('since')} = ${e.v(now)}`,
      );
    } else {
      remove.push(e.n('holder'), e.n('holderSession'), e.n('since'));
    }
    const added = transfer.addVolunteer;
    if (added) {
      set.push(`${e.n('volunteers', added.agentId)} = ${e.v({ sessionId: added.sessionId, at: now })}`);
    }
    for (const agentId of transfer.dropVolunteers ?? []) {
      if (agentId !== added?.agentId) remove.push(e.n('volunteers', agentId));
    }
    const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]['TransactItems']> = [
      {
        Update: {
          TableName: this.tableName,
          Key: { leaseId: roleLeaseId(role.role) },
          UpdateExpression: updateExpression({ set, remove }),
          ConditionExpression: sameHolder(e, role),
          ...e.attributes(),
        },
      },
    ];
    let candidateIndex = -1;
    if (to) {
      const s = new Expression();
      // The grant is recorded in the session, with a notice for its next heartbeat (even when the answer to a
      // volunteer call says so too: that answer may be lost).
      const notices = [
        `${s.n('roles', role.role)} = ${s.v(epoch)}`,
        `${s.n('rolesPicked', role.role)} = ${s.v(epoch)}`,
      ];
      candidateIndex = items.length;
      items.push({
        Update: {
          TableName: this.tableName,
          Key: { leaseId: sessionLeaseId(to.agentId) },
          UpdateExpression: updateExpression({ set: notices }),
          ConditionExpression: liveClause(s, to.sessionId, now),
          ...s.attributes(),
        },
      });
    }
    let holderIndex = -1;
    // The next holder's own session item already proves an earlier session of the same agent over.
    if (transfer.holderMustBeOver && role.holder && role.holder.agentId !== to?.agentId) {
      const h = new Expression();
      const Key = { leaseId: sessionLeaseId(role.holder.agentId) };
      holderIndex = items.length;
      const seen = transfer.holderSession;
      if (seen?.sessionId === role.holder.sessionId) {
        const ending = endClauses(h, seen, now);
        items.push({
          Update: {
            TableName: this.tableName,
            Key,
            UpdateExpression: updateExpression({ set: ending.set }),
            ConditionExpression: ending.condition,
            ...h.attributes(),
          },
        });
      } else {
        // Replaced or gone: a session id is never used again, so that session cannot come back.
        items.push({
          ConditionCheck: {
            TableName: this.tableName,
            Key,
            ConditionExpression: `attribute_not_exists(${h.n('leaseId')}) OR ${h.n('sessionId')} <> ${h.v(role.holder.sessionId)}`,
            ...h.attributes(),
          },
        });
      }
    }
    try {
      await this.doc.send(new TransactWriteCommand({ TransactItems: items }));
      return 'transferred';
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      const failed = (index: number) => index >= 0 && reasons[index]?.Code === 'ConditionalCheckFailed';
      if (failed(0)) return 'roleChanged';
      if (failed(holderIndex)) return 'holderAlive';
      if (failed(candidateIndex)) return 'candidateGone';
      // A conflict with a concurrent write: the caller reads again and decides again.
      return 'roleChanged';
    }
  }
}

/** The role's epoch and holder are still the ones read. */
function sameHolder(e: Expression, role: Role): string {
  const holder = role.holder
    ? `${e.n('holderSession')} = ${e.v(role.holder.sessionId)}`
    : `attribute_not_exists(${e.n('holderSession')})`;
  return `${e.n('epoch')} = ${e.v(role.epoch)} AND ${holder}`;
}
