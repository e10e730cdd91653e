/**
 * Fault injection for SDK clients: a middleware that makes chosen requests fail, before they are sent or after
 * they committed (the caller then sees an error for a write that happened, as when a response is lost), or that
 * loses the answer of a committed request and sends it again, as the SDK's own retry does after a timeout (the
 * caller then sees the answer of the second attempt, made on what the first one wrote).
 */
type Handler = (args: { input: object }) => Promise<{ output: object }>;
interface MiddlewareClient {
  middlewareStack: {
    add(
      middleware: (next: Handler, context: { commandName?: string }) => Handler,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

export type FaultKind = 'before' | 'after' | 'retried';

export interface FaultPlan {
  /**
   * Fail the next `count` requests of `operation` (e.g. 'SendMessageCommand') that `matches` (every one if not
   * given).
   */
  failNext(
    operation: string,
    count: number,
    when: FaultKind,
    matches?: (input: Record<string, unknown>) => boolean,
  ): void;
  /** Requests of each operation that were failed so far. */
  readonly injected: Record<string, number>;
}

export function injectFaults(client: MiddlewareClient): FaultPlan {
  const pending = new Map<
    string,
    { count: number; when: FaultKind; matches: (input: Record<string, unknown>) => boolean }
  >();
  const injected: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = context.commandName ?? '';
      const plan = pending.get(operation);
      if (!plan || plan.count <= 0 || !plan.matches(args.input as Record<string, unknown>)) return next(args);
      plan.count--;
      injected[operation] = (injected[operation] ?? 0) + 1;
      const fault = Object.assign(new Error(`injected fault in ${operation}`), { name: 'TimeoutError' });
      if (plan.when === 'before') throw fault;
      await next(args);
      if (plan.when === 'retried') return next(args);
      throw fault;
    },
    { step: 'initialize', name: `faults${Math.random()}` },
  );
  return {
    failNext(operation, count, when, matches = () => true) {
      pending.set(operation, { count, when, matches });
    },
    injected,
  };
}
