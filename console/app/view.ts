/**
 * What a view is given: the session, a signal aborted when the view is left, and its refresh loop, which stops
 * then too. A refresh's error goes to the alert region until a refresh works again.
 */
import type { Session } from './api';
import { confirmAction, type DialogSpec } from './dialog';
import { isAbort } from './http';
import { type Poller, REFRESH_MS, startPolling } from './poller';
import { alertError, announce, clearAlert, messageOf } from './status';

export interface ViewContext {
  readonly session: Session;
  /** Aborted when the view is left: pass it to every read. */
  readonly signal: AbortSignal;
  /** Runs `refresh` now and then every `refreshSeconds` of the session while the view is shown and the tab visible. */
  poll(refresh: () => Promise<void>): Poller;
  /** Runs an action: its outcome announced, its error alerted; then refreshes the view at once. */
  act(work: () => Promise<string>): Promise<void>;
  /** Asks first, in a confirmation dialog; on "Confirm", runs the action as `act` does. */
  confirmThenAct(spec: DialogSpec, work: () => Promise<string>): Promise<void>;
}

/** Builds the view in `root`; everything it starts stops with the context's signal. */
export type View = (root: HTMLElement, context: ViewContext) => void;

export function viewContext(session: Session): { context: ViewContext; leave(): void } {
  const controller = new AbortController();
  const { signal } = controller;
  const pollers: Poller[] = [];

  const context: ViewContext = {
    session,
    signal,
    poll(refresh) {
      const everyMs = Math.max(1, session.refreshSeconds ?? REFRESH_MS / 1_000) * 1_000;
      const poller = startPolling(async () => {
        try {
          await refresh();
          if (!signal.aborted) clearAlert('refresh');
        } catch (error) {
          if (!signal.aborted && !isAbort(error)) alertError(messageOf(error), 'refresh');
        }
      }, everyMs);
      pollers.push(poller);
      return poller;
    },
    async act(work) {
      try {
        announce(await work());
      } catch (error) {
        if (!isAbort(error)) alertError(messageOf(error));
      }
      if (!signal.aborted) await Promise.all(pollers.map((poller) => poller.now()));
    },
    async confirmThenAct(spec, work) {
      if (await confirmAction(spec)) await context.act(work);
    },
  };

  return {
    context,
    leave() {
      controller.abort();
      for (const poller of pollers) poller.stop();
    },
  };
}
