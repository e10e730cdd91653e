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
  'wakeTimer',
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

/** An AWS request made during an invocation: which service, and when it was sent and answered. */
export interface AwsCall {
  readonly service: string;
  readonly operation: string;
  readonly startedMs: number;
  readonly endedMs: number;
}

/** What one invocation of a local handler did, as a Lambda's billed duration would count it. */
export interface InvocationTrace {
  readonly awsCalls: AwsCall[];
}

const invocation = new AsyncLocalStorage<InvocationTrace>();

/** Runs `work` as one invocation, recording the AWS requests it makes in `trace` (see `noteAwsCall`). */
export function withTrace<T>(trace: InvocationTrace, work: () => T): T {
  return invocation.run(trace, work);
}

/** Runs `work` as one invocation, and answers with what it returned and the AWS requests it made. */
export function traceInvocation<T>(work: () => Promise<T>): Promise<{ result: T; trace: InvocationTrace }> {
  const trace: InvocationTrace = { awsCalls: [] };
  return withTrace(trace, async () => ({ result: await work(), trace }));
}

/** Adds a request to the trace of the invocation that made it, if one is being traced. */
export function noteAwsCall(call: AwsCall): void {
  invocation.getStore()?.awsCalls.push(call);
}
