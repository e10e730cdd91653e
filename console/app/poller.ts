/**
 * A view's refresh loop: once now, then every few seconds while the tab is visible, never two at once. `now()` asks for
 * a refresh at once (after an action); if one is under way, another follows it.
 */

/** When the server names no interval. */
export const REFRESH_MS = 2_000;

export interface Poller {
  /** Refreshes now, or right after the refresh under way. */
  now(): Promise<void>;
  stop(): void;
}

export function startPolling(refresh: () => Promise<void>, everyMs = REFRESH_MS): Poller {
  let stopped = false;
  let running: Promise<void> | undefined;
  let again = false;

  const run = async (): Promise<void> => {
    if (stopped) return;
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await refresh();
        } while (again && !stopped);
      } finally {
        running = undefined;
      }
    })();
    return running;
  };

  const tick = () => {
    if (document.visibilityState === 'visible' && !running) void run();
  };
  const onVisibility = () => tick();
  const timer = setInterval(tick, everyMs);
  document.addEventListener('visibilitychange', onVisibility);
  void run();

  return {
    now: run,
    stop: () => {
      stopped = true;
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    },
  };
}
