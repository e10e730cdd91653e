/**
 * The page's two message regions: a polite status for outcomes ("Queue emails paused.") and an alert for
 * errors. An error raised by a refresh is cleared by the next refresh that works; one raised by an action stays
 * until the next action or view.
 */
import { ApiError, SessionEndedError } from './http';

type Source = 'action' | 'refresh';

let alertSource: Source | undefined;

const region = (id: string) => document.getElementById(id);

export function announce(message: string): void {
  const status = region('status');
  if (status) status.textContent = message;
  clearAlert('action');
}

export function alertError(message: string, source: Source = 'action'): void {
  const alert = region('alert');
  if (!alert) return;
  // The same text again is not news: leave the region alone rather than have it read out every 2 s.
  if (alert.textContent !== message) alert.textContent = message;
  alertSource = source;
}

/** Clears the alert if it came from `source`, or whatever its source when none is given. */
export function clearAlert(source?: Source): void {
  const alert = region('alert');
  if (!alert || alert.textContent === '') return;
  if (source !== undefined && alertSource !== source) return;
  alert.textContent = '';
  alertSource = undefined;
}

export function clearMessages(): void {
  const status = region('status');
  if (status) status.textContent = '';
  clearAlert();
}

/**
 * An error's message for people: the server's own, or the console's about its session. Anything else is the
 * page's own failure, whose text means nothing to its reader: it goes to the browser's console instead.
 */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError || error instanceof SessionEndedError) return error.message;
  console.error(error);
  return 'Something went wrong in the console page (the browser’s developer console has the details).';
}
