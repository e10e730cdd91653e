/**
 * Which deployed function a piece of local work stands for. In AWS each route, the supervisor and schedule fires
 * run in functions of their own, each with its own IAM role; locally they share one process, so the local server and
 * runner say whose work is running, and the suites can check that every AWS action a function performs is one its
 * role grants.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export const FUNCTION_NAMES = [
  'agentApi',
  'operatorApi',
  'authorizer',
  'supervisor',
  'scheduleFire',
] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

const scope = new AsyncLocalStorage<FunctionName>();

/** Runs `work` as the function `name` would, unless it already runs as one. */
export function runAs<T>(name: FunctionName, work: () => T): T {
  return scope.getStore() === undefined ? scope.run(name, work) : work();
}

/** The function the current work stands for, if any. */
export const currentFunction = (): FunctionName | undefined => scope.getStore();
