/**
 * The scheduler's operations in one object, for handlers, the local runner and tests. Each method is a plain
 * function of `core/`; nothing here knows about HTTP or Lambda events. AWS throttling that outlasts the SDK's
 * retries reaches it already as `ServiceUnavailableError` (the wiring wraps every store and queue).
 */

import {
  AgentNotFoundError,
  PushUnavailableError,
  ScheduleNotFoundError,
  ServiceUnavailableError,
  TaskNotFoundError,
  ValidationError,
} from '#domain/errors';
import { AGENT_ID_PATTERN } from '#domain/ids';
import type { PushPrincipal } from '#domain/push';
import type { RateUsage } from '#domain/rate-limits';
import { SCHEDULE_NAME, type ScheduleBackend } from '#domain/schedule';
import type { Task } from '#domain/task';
import { type Completion, completeBatch, submitBatch } from './batches';
import { cancelIfOpen, cancelTask } from './cancel';
import { cascadeFrom } from './cascade';
import { type ParentLease, submitChild, submitChildren } from './children';
import { type ClaimRequest, claimTasks } from './claim';
import type { SchedulerContext } from './context';
import { readCycleStats } from './cycle-stats';
import { submitAny } from './debounce';
import { completeTask, failTask, type LeaseRef, ownerSession, releaseTask } from './finish';
import { listTasks, queueStats, readTaskPayload } from './inspect';
import { claimOrListen } from './listen';
import { readOccurrences } from './occurrences';
import type { PushChannel } from './ports/push-channel';
import { type ProgressReport, reportProgress, reportProgressBatch } from './progress';
import { answerFrame, closeConnection, issueTicket, openConnection, pushTo, redeemTicket } from './push';
import { setQueueLimits, setQueuePaused, setSchedulerPaused } from './queue-controls';
import { getRateLimit, listRateLimits, setRateLimit } from './rate-limits';
import { type RebuildInput, rebuild } from './rebuild';
import { reclaimExpiredLeases } from './reclaim';
import { reconcileDispatch } from './reconcile';
import { redriveTask } from './redrive';
import { revokeAgent } from './revoke';
import { listRoles, registerRole, releaseRole, volunteerForRole, withdrawFromRole } from './roles';
import { getSchedulerControl } from './scheduler-control';
import {
  createSchedule,
  deleteSchedule,
  findSchedule,
  listSchedulePage,
  listSchedules,
  parseScheduleSpec,
} from './schedules';
import type { SessionRead } from './session-reads';
import {
  agentPresence,
  heartbeat,
  type OpenSessionOptions,
  openSession,
  readSession,
  registerAgent,
} from './sessions';
import { clearAttention } from './starvation';
import { runSupervisorPass } from './supervisor';
import { taskLinks } from './task-links';
import { type Answer, answerCallback, resolveWaitpoint, suspendTask } from './waitpoints';

export class Scheduler {
  readonly ctx: SchedulerContext;

  constructor(ctx: SchedulerContext) {
    this.ctx = ctx;
  }

  /** A submission: debounced when it says so (`debounce.ts`). */
  submit(input: unknown, options?: { notBefore?: number }) {
    return submitAny(this.ctx, input, options);
  }

  /** Several submissions in one call, each with its own outcome. */
  /** An agent submits a follow-up task of the task it runs (its parent), fenced by its lease on the parent. */
  submitChild(lease: ParentLease, spec: unknown) {
    return submitChild(this.ctx, lease, spec);
  }

  submitChildren(lease: ParentLease, specs: unknown) {
    return submitChildren(this.ctx, lease, specs);
  }

  submitBatch(inputs: unknown) {
    return submitBatch(this.ctx, inputs);
  }

  async getTask(taskId: string): Promise<Task> {
    const task = await this.ctx.tasks.get(taskId);
    if (!task) throw new TaskNotFoundError(taskId);
    return task;
  }

  /** A task's payload, read from its item or its S3 object. */
  taskPayload(task: Task) {
    return readTaskPayload(this.ctx, task);
  }

  /** Registers an agent; with `mintToken`, also gives it a bearer token (returned once). */
  registerAgent(input: unknown, mintToken?: (agentId: string) => { token: string; tokenHash: string }) {
    return registerAgent(this.ctx, input, mintToken);
  }

  listAgents(limit = 100) {
    return this.ctx.agents.list(limit);
  }

  /**
   * A page of agents, as `GET /v1/tasks` pages tasks: `limit` 1-100 (50), `cursor` from the previous page; each
   * with its presence (online, last heartbeat, tasks held), read from the page's session items in one request.
   */
  async listAgentPage(filter: { limit?: number; cursor?: string } = {}) {
    const limit = filter.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new ValidationError('limit: an integer from 1 to 100');
    }
    let startAfter: string | undefined;
    if (filter.cursor !== undefined) {
      startAfter = Buffer.from(filter.cursor, 'base64url').toString('utf8');
      if (
        !AGENT_ID_PATTERN.test(startAfter) ||
        Buffer.from(startAfter).toString('base64url') !== filter.cursor
      )
        throw new ValidationError('cursor: not a cursor this API returned');
    }
    const page = await this.ctx.agents.page(limit, startAfter);
    const presence = await agentPresence(this.ctx, page.agents);
    return {
      agents: page.agents.map((agent) => ({
        ...agent,
        presence: presence.get(agent.agentId) ?? { online: false, state: 'offline', tasksHeld: 0 },
      })),
      ...(page.lastAgentId ? { nextCursor: Buffer.from(page.lastAgentId).toString('base64url') } : {}),
    };
  }

  /** Revokes the agent: its session ends now, its tasks are taken back and its roles handed over. */
  async revokeAgent(agentId: string) {
    // An id that cannot exist is not looked up: DynamoDB refuses keys over 2 KB with an error, not a miss.
    if (!AGENT_ID_PATTERN.test(agentId)) throw new AgentNotFoundError(agentId.slice(0, 64));
    return revokeAgent(this.ctx, agentId);
  }

  openSession(agentId: string, options?: OpenSessionOptions) {
    return openSession(this.ctx, agentId, options);
  }

  heartbeat(agentId: string, sessionId: string, checkpoints?: unknown, extensions?: unknown) {
    return heartbeat(this.ctx, agentId, sessionId, checkpoints, extensions);
  }

  /** What the agent's live session holds: tasks with their epochs, and roles. */
  readSession(agentId: string) {
    return readSession(this.ctx, agentId);
  }

  claim(request: ClaimRequest) {
    return claimTasks(this.ctx, request);
  }

  /**
   * A claim by an agent listening on the push channel: when it finds nothing, the agent is left idle, to be woken,
   * and told how long it may wait (`retryAfterMs`). Without a channel, or with the agent not connected, a claim.
   */
  claimOrListen(request: ClaimRequest) {
    return claimOrListen(this.ctx, request);
  }

  /** A single-use ticket to open a push connection as `principal`, and the URL to open. */
  pushTicket(principal: PushPrincipal) {
    return issueTicket(this.ctx, this.push(), principal);
  }

  /** Who a connect ticket was issued to (using it up); undefined for any ticket not good now. */
  redeemPushTicket(ticket: string | undefined) {
    return redeemTicket(this.ctx, this.push(), ticket);
  }

  openPushConnection(connectionId: string, principal: PushPrincipal) {
    return openConnection(this.ctx, this.push(), connectionId, principal);
  }

  closePushConnection(connectionId: string) {
    return closeConnection(this.push(), connectionId);
  }

  /** Answers a frame a client sent on its connection, on that connection, if it gets an answer. */
  async answerPushFrame(connectionId: string, raw: string): Promise<void> {
    const push = this.push();
    const answer = await answerFrame(this.ctx, connectionId, raw);
    if (answer) await pushTo(this.ctx, push, connectionId, answer);
  }

  private push(): PushChannel {
    if (!this.ctx.push) throw new PushUnavailableError();
    return this.ctx.push;
  }

  /** Declares a role without volunteering for it. */
  registerRole(agentId: string, role: string) {
    return registerRole(this.ctx, agentId, role);
  }

  /** Joins a role's candidates; granted at once if the role is free. */
  volunteerForRole(agentId: string, sessionId: string, role: string) {
    return volunteerForRole(this.ctx, agentId, sessionId, role);
  }

  /** The holder gives a role up; the next live volunteer gets it now. */
  releaseRole(agentId: string, role: string, leaseEpoch: number) {
    return releaseRole(this.ctx, agentId, role, leaseEpoch);
  }

  /** Leaves a role's candidates; a holder gives the role to the next live volunteer in the same move. */
  withdrawFromRole(agentId: string, sessionId: string, role: string, leaseEpoch?: number) {
    return withdrawFromRole(this.ctx, agentId, sessionId, role, leaseEpoch);
  }

  listRoles() {
    return listRoles(this.ctx);
  }

  /**
   * `sessionRead`: the owner's session as the caller read it (`ownerSession`), to hand the same read to the claim the
   * call carries.
   */
  complete(lease: LeaseRef, result?: unknown, sessionRead?: Promise<SessionRead>, usage?: RateUsage) {
    return completeTask(this.ctx, lease, result, {
      ...(sessionRead ? { sessionRead } : {}),
      ...(usage ? { usage } : {}),
    });
  }

  /** Several completions by one agent in one call, each fenced by its own lease and with its own outcome. */
  completeBatch(agentId: string, completions: readonly Completion[], sessionRead?: Promise<SessionRead>) {
    return completeBatch(this.ctx, agentId, completions, sessionRead);
  }

  /** The agent's session as its completions read it: one read for a completion and the claim it carries. */
  ownerSession(agentId: string) {
    return ownerSession(this.ctx, agentId);
  }

  fail(lease: LeaseRef, error: unknown, options?: Parameters<typeof failTask>[3]) {
    return failTask(this.ctx, lease, error, options);
  }

  release(lease: LeaseRef, options?: Parameters<typeof releaseTask>[2]) {
    return releaseTask(this.ctx, lease, options);
  }

  /** Suspends the task on a waitpoint (`input`: timeoutSeconds, onTimeout, checkpoint). */
  wait(lease: LeaseRef, input: unknown) {
    return suspendTask(this.ctx, lease, input);
  }

  /** Ends an open waitpoint with an answer, and resumes its task. */
  answerWaitpoint(waitpointId: string, answer: Answer) {
    return resolveWaitpoint(this.ctx, waitpointId, answer);
  }

  /** A callback's answer: the token is its credential, its body the data. */
  answerCallback(token: string, data: unknown) {
    return answerCallback(this.ctx, token, data);
  }

  /** A progress report of a task the agent holds. */
  reportProgress(agentId: string, report: ProgressReport) {
    return reportProgress(this.ctx, agentId, report);
  }

  reportProgressBatch(agentId: string, reports: readonly ProgressReport[]) {
    return reportProgressBatch(this.ctx, agentId, reports);
  }

  /** The task's last progress report, if any. */
  progressOf(taskId: string) {
    return this.ctx.progress.get(taskId);
  }

  getWaitpoint(waitpointId: string) {
    return this.ctx.waitpoints.get(waitpointId);
  }

  /** Open waitpoints, oldest first. */
  listOpenWaitpoints(limit: number, after?: string) {
    return this.ctx.waitpoints.listOpen(limit, after);
  }

  cancel(taskId: string) {
    return cancelTask(this.ctx, taskId);
  }

  /**
   * Cancels the task if it is open, and every open descendant: as many as `budgetMs` allows now, the rest by the
   * supervisor. Answers the task and how far the walk has come.
   */
  async cancelTree(taskId: string, budgetMs?: number) {
    // An ended task is read again: the cancel found it so, and did not keep it.
    const task = (await cancelIfOpen(this.ctx, taskId)).task ?? (await this.getTask(taskId));
    return { task, cascade: await cascadeFrom(this.ctx, taskId, budgetMs) };
  }

  /** The tasks linked to a task (parent, root, children, dependencies, dependents, failure hook), each found or not. */
  taskLinks(taskId: string) {
    return taskLinks(this.ctx, taskId);
  }

  /** How far the cancellation of the task's descendants has come, if one began. */
  cascadeOf(taskId: string) {
    return this.ctx.cascades.progress(taskId);
  }

  redrive(taskId: string) {
    return redriveTask(this.ctx, taskId);
  }

  /** Clears the starvation ladder's mark on a task (`needsAttention`); a task not marked is answered as it is. */
  clearAttention(taskId: string) {
    return clearAttention(this.ctx, taskId);
  }

  listTasks(filter: Parameters<typeof listTasks>[1] = {}) {
    return listTasks(this.ctx, filter);
  }

  queueStats() {
    return queueStats(this.ctx);
  }

  pauseQueue(queue: string) {
    return setQueuePaused(this.ctx, queue, true);
  }

  /** Sets a queue's concurrency and rate limits; an empty object removes them. */
  setQueueLimits(queue: string, limits: unknown) {
    return setQueueLimits(this.ctx, queue, limits);
  }

  /** The named rate limits in force, each with its use in the window open now. */
  listRateLimits() {
    return listRateLimits(this.ctx);
  }

  /** One named rate limit with its use now (a per-key limit's keys listed); undefined when none has the name. */
  getRateLimit(name: string) {
    return getRateLimit(this.ctx, name);
  }

  /** Sets a named rate limit's terms (a new one, or new terms for one in force). */
  setRateLimit(name: string, terms: unknown) {
    return setRateLimit(this.ctx, name, terms);
  }

  resumeQueue(queue: string) {
    return setQueuePaused(this.ctx, queue, false);
  }

  /**
   * Pauses the whole scheduler: no claim is granted anything and no agent is woken, in any queue, from at most 2 s
   * after the answer; sweeps, take-backs and schedule fires go on, and their tasks queue up.
   */
  pauseScheduler() {
    return setSchedulerPaused(this.ctx, true);
  }

  /** Resumes the whole scheduler, and wakes the idle agents of every queue not paused on its own. */
  resumeScheduler() {
    return setSchedulerPaused(this.ctx, false);
  }

  /**
   * Sends every queued task's hint again (its lane's turn for a keyed one), from the task records, after the queues
   * were purged or the tables restored: one call's share, with a `cursor` while more is left (`rebuild.ts`).
   */
  rebuild(input: RebuildInput = {}) {
    return rebuild(this.ctx, input);
  }

  /** Whether the whole scheduler is paused, read as it is now (one consistent read). */
  getSchedulerControl() {
    return getSchedulerControl(this.ctx, true);
  }

  listSchedules() {
    return listSchedules(this.ctx);
  }

  /** Schedules a page at a time, by name; `nextCursor` while more follow. */
  async listSchedulePage(filter: { limit?: number; cursor?: string } = {}) {
    const limit = filter.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new ValidationError('limit: an integer from 1 to 100');
    }
    // The cursor is the last name of the page, marked so that a word that merely decodes to a name is refused.
    const cursorOf = (name: string) => Buffer.from(`schedules-after:${name}`).toString('base64url');
    let startAfter: string | undefined;
    if (filter.cursor !== undefined) {
      const text = Buffer.from(filter.cursor, 'base64url').toString('utf8');
      startAfter = text.startsWith('schedules-after:') ? text.slice('schedules-after:'.length) : '';
      if (!SCHEDULE_NAME.test(startAfter) || cursorOf(startAfter) !== filter.cursor)
        throw new ValidationError('cursor: not a cursor this API returned');
    }
    const page = await listSchedulePage(this.ctx, limit, startAfter);
    return {
      schedules: page.schedules,
      ...(page.lastName ? { nextCursor: cursorOf(page.lastName) } : {}),
    };
  }

  /** One schedule, declared or created through the API, with its whole task template. */
  getSchedule(name: string) {
    return findSchedule(this.ctx, name);
  }

  /** Recent occurrences of a schedule, newest first: fired (with the task) or skipped (with why). */
  async listOccurrences(name: string) {
    await this.getSchedule(name);
    return readOccurrences(this.ctx, name);
  }

  async createSchedule(input: unknown) {
    // What the caller got wrong is said first, whatever this deployment offers.
    if (!this.ctx.scheduleBackend) parseScheduleSpec(this.ctx, input);
    return createSchedule(this.ctx, this.scheduleBackend(), input);
  }

  async deleteSchedule(name: string) {
    if (!this.ctx.scheduleBackend && !(await this.listSchedules()).some((s) => s.name === name)) {
      throw new ScheduleNotFoundError(`schedule ${name.slice(0, 64)} does not exist`);
    }
    return deleteSchedule(this.ctx, this.scheduleBackend(), name);
  }

  private scheduleBackend(): ScheduleBackend {
    if (!this.ctx.scheduleBackend) {
      throw new ServiceUnavailableError('run-time schedules are not configured for this deployment');
    }
    return this.ctx.scheduleBackend;
  }

  /** One supervisor pass: reclaim, reconcile, starvation ladder. */
  supervise() {
    return runSupervisorPass(this.ctx);
  }

  /** The supervisor's figures: added up over every pass, the last pass's, and the last errors a pass met. */
  getSchedulerStats() {
    return readCycleStats(this.ctx);
  }

  reclaim() {
    return reclaimExpiredLeases(this.ctx);
  }

  /** With `everything`, every queued task is sent again now (after SQS lost its messages, e.g. locally). */
  reconcile(options: { everything?: boolean } = {}) {
    return reconcileDispatch(this.ctx, options);
  }
}
