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
  'pushAuthorizer',
  'pushApi',
] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

const scope = new AsyncLocalStorage<FunctionName>();

/** Runs `work` as the function `name` would, unless it already runs as one. */
export function runAs<T>(name: FunctionName, work: () => T): T {
  return scope.getStore() === undefined ? scope.run(name, work) : work();
}

/**
 * Runs `work` as the function `name`, whatever function the surrounding work stands for: for work another function
 * does while this one is in the middle of its own (a test that interleaves a supervisor pass into a claim).
 */
export function runApart<T>(name: FunctionName, work: () => T): T {
  return scope.run(name, work);
}

/** The function the current work stands for, if any. */
export const currentFunction = (): FunctionName | undefined => scope.getStore();
