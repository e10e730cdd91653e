import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  type DynamoDBDocumentClient,
  GetCommand,
  ScanCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type {
  ClaimRecord,
  OpenOutcome,
  SessionNotice,
  SessionStore,
  SessionWriteResult,
  SlotReservation,
  TaskNotice,
} from '#core/ports/session-store';
import type { AgentSession } from '#domain/task';
import { agentScopeOf, labelsOfItem } from './agent-table';
import { type ConditionalClauses, conditionalUpdate, Expression } from './expression';

type Item = Record<string, unknown>;

export const sessionLeaseId = (agentId: string) => `session#${agentId}`;

const numberMap = (value: unknown): Record<string, number> => {
  if (typeof value !== 'object' || value === null) return {};
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Number(v)]));
};

export function sessionFromItem(item: Item): AgentSession {
  return {
    ...agentScopeOf(item),
    ...labelsOfItem(item.labels),
    sessionId: String(item.sessionId),
    startedAt: Number(item.startedAt),
    heartbeatAt: Number(item.heartbeatAt),
    expiresAt: Number(item.expiresAt),
    held: numberMap(item.held),
    cancelled: numberMap(item.cancelled),
    lost: numberMap(item.lost),
    roles: numberMap(item.roles),
    rolesPicked: numberMap(item.rolesPicked),
    rolesLost: numberMap(item.rolesLost),
    ...(typeof item.claims === 'object' && item.claims !== null ? { claims: numberMap(item.claims) } : {}),
    ...(typeof item.claimSeq === 'number' ? { claimSeq: item.claimSeq } : {}),
    ...(typeof item.revokedAt === 'number' ? { revokedAt: item.revokedAt } : {}),
    ...(typeof item.endedAt === 'number' ? { endedAt: item.endedAt } : {}),
    ...(typeof item.openId === 'string' ? { openId: item.openId } : {}),
    ...(typeof item.openSeq === 'number' ? { openSeq: item.openSeq } : {}),
    ...(typeof item.opens === 'object' && item.opens !== null ? { opens: numberMap(item.opens) } : {}),
  };
}

/** Every item of one kind in the leases table, page by page. */
export async function scanKind(
  doc: DynamoDBDocumentClient,
  tableName: string,
  kind: string,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const e = new Expression();
    const output = await doc.send(
      new ScanCommand({
        TableName: tableName,
        FilterExpression: `${e.n('kind')} = ${e.v(kind)}`,
        ExclusiveStartKey: startKey,
        ...e.attributes(),
      }),
    );
    items.push(...(output.Items ?? []));
    startKey = output.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/**
 * The write that ends a session seen expired (`SessionTable.end`; role take-overs make it inside their
 * transaction): refused unless the session is still the version seen, or already ended.
 */
export function endClauses(
  e: Expression,
  seen: Pick<AgentSession, 'sessionId' | 'expiresAt'>,
  now: number,
): { set: string[]; condition: string } {
  return {
    set: [`${e.n('endedAt')} = if_not_exists(${e.n('endedAt')}, ${e.v(now)})`],
    condition: [
      `${e.n('sessionId')} = ${e.v(seen.sessionId)}`,
      `(attribute_exists(${e.n('endedAt')}) OR (${e.n('expiresAt')} = ${e.v(seen.expiresAt)} AND ${e.n('expiresAt')} <= ${e.v(now)}))`,
    ].join(' AND '),
  };
}

/** The condition of a write only a live session may make: this session, not expired, not ended. */
export function liveClause(e: Expression, sessionId: string, now: number): string {
  return `${e.n('sessionId')} = ${e.v(sessionId)} AND ${e.n('expiresAt')} > ${e.v(now)} AND attribute_not_exists(${e.n('endedAt')})`;
}

/** True when `session`, refused an extension to `expiresAt`, is alive and already runs at least that long. */
function extendedLater(session: AgentSession, sessionId: string, expiresAt: number): boolean {
  return session.sessionId === sessionId && session.endedAt === undefined && session.expiresAt > expiresAt;
}

/**
 * How many recent claim ids a session remembers. A Worker claims one call at a time and sends a claim again only
 * while it has no answer, so the last few cover every retry; more would make every heartbeat of the session
 * cost more (a write is billed on the size of the item).
 */
export const CLAIMS_REMEMBERED = 3;

/**
 * Records a claim id new to the session. The condition makes it new in the write, not only in the read: a retry
 * that overtook its first attempt still in flight has recorded it first, and the first attempt must then answer
 * with what the retry granted instead of reserving more.
 */
function claimClauses(
  e: Expression,
  claim: ClaimRecord,
  now: number,
): { set: string[]; remove: string[]; condition: string[] } {
  const numbered =
    claim.seq === undefined
      ? { set: [], condition: [] }
      : {
          set: [`${e.n('claimSeq')} = ${e.v(claim.seq)}`],
          condition: [`(attribute_not_exists(${e.n('claimSeq')}) OR ${e.n('claimSeq')} < ${e.v(claim.seq)})`],
        };
  if (claim.seen === undefined)
    return {
      set: [`${e.n('claims')} = ${e.v({ [claim.id]: now })}`, ...numbered.set],
      remove: [],
      condition: [`attribute_not_exists(${e.n('claims')})`, ...numbered.condition],
    };
  const older = Object.entries(claim.seen)
    .filter(([id]) => id !== claim.id)
    .sort(([, a], [, b]) => b - a)
    .slice(CLAIMS_REMEMBERED - 1)
    .map(([id]) => e.n('claims', id));
  return {
    set: [`${e.n('claims', claim.id)} = ${e.v(now)}`, ...numbered.set],
    remove: older,
    condition: [`attribute_not_exists(${e.n('claims', claim.id)})`, ...numbered.condition],
  };
}

export class SessionTable implements SessionStore {
  constructor(
    /** The client of the leases table; the other record kinds there have adapters of their own. */
    readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    /** How long an ended or expired session item is kept before DynamoDB may purge it. */
    private readonly purgeAfterSeconds: number,
    /** The agents table: a session is opened only while its agent is not revoked. */
    private readonly agentsTableName: string,
  ) {}

  /**
   * Writes a new session over the agent's item as read (`replacing`; none read: no item), in one transaction with
   * a check that the agent is not revoked, so an open decided before a revocation cannot land after it and leave a
   * revoked agent with a live session. The item must still be the session read, holding no task or role: a
   * claim or a hand-over to it that landed since is taken back by the caller's next look, not erased. If the
   * answer to a committed write is lost and the SDK sends it again, the second attempt finds the new session in
   * place and answers `opened` too.
   */
  async open(session: AgentSession, replacing: AgentSession | undefined): Promise<OpenOutcome> {
    const s = new Expression();
    const a = new Expression();
    const condition = replacing
      ? `${s.n('sessionId')} = ${s.v(replacing.sessionId)} AND size(${s.n('held')}) = ${s.v(0)} AND size(${s.n('roles')}) = ${s.v(0)}`
      : `attribute_not_exists(${s.n('leaseId')})`;
    try {
      await this.doc.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName: this.tableName,
                Item: {
                  leaseId: sessionLeaseId(session.agentId),
                  kind: 'session',
                  ...session,
                  claims: { ...session.claims },
                  queues: [...session.queues],
                  purgeAt: Math.ceil(session.expiresAt / 1_000) + this.purgeAfterSeconds,
                },
                ConditionExpression: condition,
                ...s.attributes(),
              },
            },
            {
              ConditionCheck: {
                TableName: this.agentsTableName,
                Key: { agentId: session.agentId },
                ConditionExpression: `attribute_exists(${a.n('agentId')}) AND attribute_not_exists(${a.n('revokedAt')})`,
                ...a.attributes(),
              },
            },
          ],
        }),
      );
      return 'opened';
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      if (reasons[1]?.Code === 'ConditionalCheckFailed') return 'revoked';
      // The item changed since it was read, or a conflicting write: this very write, if an earlier attempt of it
      // committed and its answer was lost; otherwise the caller reads again.
      const current = await this.get(session.agentId);
      return current?.sessionId === session.sessionId ? 'opened' : 'changed';
    }
  }

  async get(
    agentId: string,
    options: { readonly consistent?: boolean } = {},
  ): Promise<AgentSession | undefined> {
    const output = await this.doc.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { leaseId: sessionLeaseId(agentId) },
        ConsistentRead: options.consistent ?? true,
      }),
    );
    return output.Item ? sessionFromItem(output.Item) : undefined;
  }

  /**
   * The session items of up to 100 agents in one `BatchGetItem`, eventually consistent (what an operator looks at,
   * half the read units); unprocessed keys are asked for again. Agents without a session item are absent.
   */
  async getMany(agentIds: readonly string[]): Promise<Map<string, AgentSession>> {
    const sessions = new Map<string, AgentSession>();
    if (agentIds.length > 100) throw new RangeError('at most 100 sessions in one read');
    let keys: Record<string, unknown>[] | undefined = [...new Set(agentIds)].map((agentId) => ({
      leaseId: sessionLeaseId(agentId),
    }));
    for (let round = 0; keys && keys.length > 0; round++) {
      if (round >= 10) throw new Error('BatchGetItem left sessions unread after retries');
      if (round > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** round)));
      const output: BatchGetCommandOutput = await this.doc.send(
        new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys } } }),
      );
      for (const item of output.Responses?.[this.tableName] ?? []) {
        const session = sessionFromItem(item);
        sessions.set(session.agentId, session);
      }
      keys = output.UnprocessedKeys?.[this.tableName]?.Keys;
    }
    return sessions;
  }

  /** One conditional update of the agent's session item, returning the item as it is now either way. */
  async update(agentId: string, build: (e: Expression) => ConditionalClauses): Promise<SessionWriteResult> {
    const outcome = await conditionalUpdate(
      this.doc,
      { TableName: this.tableName, Key: { leaseId: sessionLeaseId(agentId) } },
      build,
      sessionFromItem,
    );
    return outcome.ok ? { ok: true, session: outcome.value } : outcome;
  }

  /** Every session live at `now`: a scan of the session items, which are few (one per agent). */
  async listLive(now: number): Promise<AgentSession[]> {
    const items = await scanKind(this.doc, this.tableName, 'session');
    return items.filter((item) => Number(item.expiresAt) > now).map(sessionFromItem);
  }

  /** A role given up no longer stands in its holder's session (best effort: the role item is the truth). */
  forgetRole(
    agentId: string,
    sessionId: string,
    role: string,
    leaseEpoch: number,
  ): Promise<SessionWriteResult> {
    return this.update(agentId, (e) => ({
      remove: [e.n('roles', role), e.n('rolesPicked', role)],
      condition: `${e.n('sessionId')} = ${e.v(sessionId)} AND ${e.n('roles', role)} = ${e.v(leaseEpoch)}`,
    }));
  }

  /**
   * Extends a live session. An expired session cannot be revived: the condition refuses it. Nor is an expiry ever
   * moved back: a heartbeat decided before another that landed first (a retry overtook a stalled attempt) writes
   * nothing and answers with the session as that one left it. Otherwise the session would end before the expiry
   * its agent was last told of, while the agent, reckoning from that answer, still runs its tasks.
   */
  async heartbeat(
    agentId: string,
    sessionId: string,
    now: number,
    ttlMs: number,
  ): Promise<SessionWriteResult> {
    const written = await this.update(agentId, (e) => ({
      set: [
        `${e.n('expiresAt')} = ${e.v(now + ttlMs)}`,
        `${e.n('heartbeatAt')} = ${e.v(now)}`,
        `${e.n('purgeAt')} = ${e.v(Math.ceil((now + ttlMs) / 1_000) + this.purgeAfterSeconds)}`,
      ],
      condition: `${liveClause(e, sessionId, now)} AND ${e.n('expiresAt')} <= ${e.v(now + ttlMs)}`,
    }));
    const current = written.ok ? undefined : written.current;
    return current && extendedLater(current, sessionId, now + ttlMs)
      ? { ok: true, session: current }
      : written;
  }

  /**
   * Ends a session found expired, before anything it held is taken back. The write is the point of decision
   * between the supervisor and the agent: it is refused if the session changed since it was read (a heartbeat or
   * claim extended it, even one the agent decided on before the expiry and that landed late), and once it is
   * made, no heartbeat or claim passes. Ending a session already ended succeeds again, so a sweep that stopped
   * half-way can be resumed.
   */
  end(session: AgentSession, now: number): Promise<SessionWriteResult> {
    return this.update(session.agentId, (e) => endClauses(e, session, now));
  }

  /**
   * Ends the session at once, whatever its expiry (the agent was revoked): no heartbeat, claim, finish or role
   * write of it passes afterwards. Refused only if the agent has opened another session since it was read.
   */
  endNow(
    session: Pick<AgentSession, 'agentId' | 'sessionId'>,
    now: number,
    options: { readonly revoked?: boolean } = {},
  ): Promise<SessionWriteResult> {
    return this.update(session.agentId, (e) => ({
      set: [
        `${e.n('endedAt')} = if_not_exists(${e.n('endedAt')}, ${e.v(now)})`,
        ...(options.revoked ? [`${e.n('revokedAt')} = if_not_exists(${e.n('revokedAt')}, ${e.v(now)})`] : []),
      ],
      condition: `${e.n('sessionId')} = ${e.v(session.sessionId)}`,
    }));
  }

  /**
   * Reserves slots in a live session and drops entries found stale, in one write. `add` maps each task id to
   * the stale entry it replaces, or undefined for a new entry. The session must then hold at most
   * `maxConcurrency` entries, a new entry must not exist yet, and every replaced or dropped entry must still
   * carry the reservation time observed. All or nothing. The session is extended to `expiresAt`: refused if it
   * already runs longer (see `heartbeat`), so the caller passes the later of its own reckoning and the expiry read.
   */
  reserve(agentId: string, sessionId: string, reservation: SlotReservation): Promise<SessionWriteResult> {
    const { add, drop, maxConcurrency, now, expiresAt, claim } = reservation;
    const fresh = [...add.values()].filter((previous) => previous === undefined).length;
    return this.update(agentId, (e) => {
      const recorded = claim ? claimClauses(e, claim, now) : undefined;
      return {
        // A claim is as good as a heartbeat: the session is extended in the write the claim makes anyway.
        set: [
          ...[...add.keys()].map((id) => `${e.n('held', id)} = ${e.v(now)}`),
          `${e.n('expiresAt')} = ${e.v(expiresAt)}`,
          `${e.n('heartbeatAt')} = ${e.v(now)}`,
          `${e.n('purgeAt')} = ${e.v(Math.ceil(expiresAt / 1_000) + this.purgeAfterSeconds)}`,
          ...(recorded?.set ?? []),
        ],
        remove: [...[...drop.keys()].map((id) => e.n('held', id)), ...(recorded?.remove ?? [])],
        condition: [
          `${e.n('sessionId')} = ${e.v(sessionId)}`,
          `attribute_not_exists(${e.n('endedAt')})`,
          // Live, or idle: expired holding nothing and owing no notices (see canClaimUnder).
          `(${e.n('expiresAt')} > ${e.v(now)} OR (size(${e.n('held')}) = ${e.v(0)} AND size(${e.n('roles')}) = ${e.v(0)} AND size(${e.n('lost')}) = ${e.v(0)}))`,
          `${e.n('expiresAt')} <= ${e.v(expiresAt)}`,
          `size(${e.n('held')}) <= ${e.v(maxConcurrency - fresh + drop.size)}`,
          ...[...add].map(([id, previous]) =>
            previous === undefined
              ? `attribute_not_exists(${e.n('held', id)})`
              : `${e.n('held', id)} = ${e.v(previous)}`,
          ),
          ...[...drop].map(([id, reservedAt]) => `${e.n('held', id)} = ${e.v(reservedAt)}`),
          ...(recorded?.condition ?? []),
        ].join(' AND '),
      };
    });
  }

  /**
   * Drops entries from `held`, each only if its reservation time is still the one observed, so an entry
   * made again by a later claim survives.
   */
  release(
    agentId: string,
    sessionId: string,
    entries: ReadonlyMap<string, number>,
  ): Promise<SessionWriteResult> {
    return this.update(agentId, (e) => ({
      remove: [...entries.keys()].map((id) => e.n('held', id)),
      condition: [
        `${e.n('sessionId')} = ${e.v(sessionId)}`,
        ...[...entries].map(([id, reservedAt]) => `${e.n('held', id)} = ${e.v(reservedAt)}`),
      ].join(' AND '),
    }));
  }

  /** Removes notices the agent has been given, each only if unchanged since it was read. */
  clearNotices(
    agentId: string,
    sessionId: string,
    notices: Partial<Record<SessionNotice, Readonly<Record<string, number>>>>,
  ): Promise<SessionWriteResult> {
    const entries = Object.entries(notices).flatMap(([kind, map]) =>
      Object.entries(map ?? {}).map(([id, v]) => [kind, id, v] as const),
    );
    return this.update(agentId, (e) => ({
      remove: entries.map(([kind, id]) => e.n(kind, id)),
      condition: [
        `${e.n('sessionId')} = ${e.v(sessionId)}`,
        ...entries.map(([kind, id, value]) => `${e.n(kind, id)} = ${e.v(value)}`),
      ].join(' AND '),
    }));
  }

  /**
   * Leaves a notice for the agent's next heartbeat: a task of its was cancelled, or taken back at `leaseEpoch`.
   * A taken-back task's slot is freed too, in the same write, if it is still the reservation of the lease taken
   * back (`reservedAt`): the session may have claimed the task again since, and that later reservation stays.
   */
  async notify(
    agentId: string,
    sessionId: string,
    { kind, taskId, leaseEpoch, reservedAt }: TaskNotice,
  ): Promise<SessionWriteResult> {
    if (kind === 'lost' && reservedAt !== undefined) {
      const freed = await this.update(agentId, (e) => ({
        set: [`${e.n(kind, taskId)} = ${e.v(leaseEpoch)}`],
        remove: [e.n('held', taskId)],
        condition: `${e.n('sessionId')} = ${e.v(sessionId)} AND (attribute_not_exists(${e.n('held', taskId)}) OR ${e.n('held', taskId)} = ${e.v(reservedAt)})`,
      }));
      // Refused for any reason but a later reservation of the task in this very session: nothing more to write.
      const later = !freed.ok && freed.current?.sessionId === sessionId && taskId in freed.current.held;
      if (!later) return freed;
    }
    return this.update(agentId, (e) => ({
      set: [`${e.n(kind, taskId)} = ${e.v(leaseEpoch)}`],
      condition: `${e.n('sessionId')} = ${e.v(sessionId)}`,
    }));
  }

  /**
   * After its leases were taken back, turns an expired session's `held` entries into `lost` notices, so the
   * agent learns what it lost and later sweeps skip the session. Conditional on the session still being the
   * expired one observed.
   */
  retire(session: AgentSession, now: number): Promise<SessionWriteResult> {
    return this.update(session.agentId, (e) => ({
      set: Object.keys(session.held).map((id) => `${e.n('lost', id)} = ${e.v(now)}`),
      remove: Object.keys(session.held).map((id) => e.n('held', id)),
      condition: `${e.n('sessionId')} = ${e.v(session.sessionId)} AND ${e.n('expiresAt')} = ${e.v(session.expiresAt)}`,
    }));
  }

  /**
   * After its roles were handed over, turns an over session's `roles` entries into `rolesLost` notices, so later
   * sweeps skip the session. Each entry only if it still has the epoch handed over.
   */
  forgetRoles(session: AgentSession, roles: Readonly<Record<string, number>>): Promise<SessionWriteResult> {
    const entries = Object.entries(roles);
    return this.update(session.agentId, (e) => ({
      set: entries.map(([role, epoch]) => `${e.n('rolesLost', role)} = ${e.v(epoch)}`),
      remove: entries.map(([role]) => e.n('roles', role)),
      condition: [
        `${e.n('sessionId')} = ${e.v(session.sessionId)}`,
        ...entries.map(([role, epoch]) => `${e.n('roles', role)} = ${e.v(epoch)}`),
      ].join(' AND '),
    }));
  }

  /**
   * Sessions that are over (expired, or ended by a revocation that stopped half-way) while still holding tasks. A
   * scan: the table has one item per agent, and sessions are updated at every heartbeat, so an index on their
   * expiry would cost a second write per heartbeat.
   */
  async findExpiredHolding(now: number, limit: number): Promise<AgentSession[]> {
    const found: AgentSession[] = [];
    let startKey: Record<string, unknown> | undefined;
    do {
      const e = new Expression();
      const output = await this.doc.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: `${e.n('kind')} = ${e.v('session')} AND (${e.n('expiresAt')} <= ${e.v(now)} OR attribute_exists(${e.n('endedAt')})) AND size(${e.n('held')}) > ${e.v(0)}`,
          ExclusiveStartKey: startKey,
          ...e.attributes(),
        }),
      );
      for (const item of output.Items ?? []) found.push(sessionFromItem(item));
      startKey = output.LastEvaluatedKey;
    } while (startKey && found.length < limit);
    return found.slice(0, limit);
  }
}
