/**
 * The operator routes: submit and inspect tasks, cancel them, register and revoke agents.
 */

import type { Scheduler } from '#core/scheduler';
import { issueAgentToken } from '#domain/agent-token';
import { TaskNotFoundError } from '#domain/errors';
import { TASK_ID_PATTERN } from '#domain/ids';
import type { ApiRequest, Operation } from './http-api';
import { agentView, taskView } from './views';

function taskIdParam(request: ApiRequest): string {
  const taskId = request.params.taskId ?? '';
  if (!TASK_ID_PATTERN.test(taskId)) throw new TaskNotFoundError(taskId.slice(0, 64));
  return taskId;
}

export function operatorOperations(scheduler: Scheduler): Record<string, Operation> {
  return {
    health: async () => ({ status: 200, body: { status: 'ok' } }),
    submitTask: async (request) => {
      const { task, created } = await scheduler.submit(request.body);
      return { status: created ? 201 : 200, body: { task: taskView(task) } };
    },
    getTask: async (request) => ({
      status: 200,
      body: { task: taskView(await scheduler.getTask(taskIdParam(request))) },
    }),
    cancelTask: async (request) => ({
      status: 200,
      body: { task: taskView(await scheduler.cancel(taskIdParam(request))) },
    }),
    registerAgent: async (request) => {
      // The token is minted for an id chosen up front, so the stored hash and the id always go together.
      const { agent, token } = await scheduler.registerAgent(request.body, issueAgentToken);
      return { status: 201, body: { agent: agentView(agent), token } };
    },
    listAgents: async () => ({
      status: 200,
      body: { agents: (await scheduler.listAgents()).map(agentView) },
    }),
    revokeAgent: async (request) => {
      await scheduler.revokeAgent(request.params.agentId ?? '');
      return { status: 200, body: { revoked: true } };
    },
  };
}
