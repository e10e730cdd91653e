/**
 * The console page: reads the session, shows the sign-in form or the view the hash names, and keeps the header
 * (mode, sign out, the current section) in step.
 */
import { api, type Session } from './api';
import { closeDialogs } from './dialog';
import { button, el } from './dom';
import { forgetEventFeed } from './event-feed';
import { onSessionEnded } from './http';
import { DEFAULT_ROUTE, parseRoute, type Route, sectionHref } from './router';
import { alertError, announce, clearMessages, messageOf } from './status';
import { type View, viewContext } from './view';
import { agentsView } from './views/agents';
import { deadLettersView } from './views/dead-letters';
import { eventsView } from './views/events';
import { queuesView } from './views/queues';
import { rateLimitView } from './views/rate-limit';
import { rateLimitsView } from './views/rate-limits';
import { rolesView } from './views/roles';
import { scheduleView } from './views/schedule';
import { schedulesView } from './views/schedules';
import { signInView } from './views/sign-in';
import { taskView } from './views/task';
import { tasksView } from './views/tasks';
import { waitpointsView } from './views/waitpoints';

const PRODUCT = 'agent-scheduler console';

function required<T extends HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (!element) throw new Error(`the page has no #${id}`);
  return element as T;
}

const main = required<HTMLElement>('main');
const viewRoot = required<HTMLElement>('view');
const nav = required<HTMLElement>('nav');
const mode = required<HTMLElement>('mode');
const signOut = required<HTMLButtonElement>('sign-out');

let session: Session | undefined;
let leaveView: (() => void) | undefined;
/** The hash of the view shown, to go back to when the hash names no view. */
let shownHash = '';

function viewFor(route: Route): View {
  switch (route.section) {
    case 'queues':
      return queuesView;
    case 'rate-limits':
      return route.id === undefined ? rateLimitsView : rateLimitView(route.id);
    case 'tasks':
      return route.id === undefined ? tasksView : taskView(route.id);
    case 'waitpoints':
      return waitpointsView;
    case 'agents':
      return agentsView;
    case 'roles':
      return rolesView;
    case 'schedules':
      return route.id === undefined ? schedulesView : scheduleView(route.id);
    case 'dead':
      return deadLettersView;
    case 'events':
      return eventsView;
  }
}

function leave(): void {
  leaveView?.();
  leaveView = undefined;
  closeDialogs();
}

function markCurrent(route: Route): void {
  const href = sectionHref(route.section);
  for (const item of nav.querySelectorAll('a')) {
    if (item.getAttribute('href') === href) item.setAttribute('aria-current', 'page');
    else item.removeAttribute('aria-current');
  }
}

/** Shows the view the hash names; `focus` moves focus to the main region (a navigation). */
function show(focus: boolean): void {
  if (!session?.authenticated) return;
  let route = parseRoute(location.hash);
  if (!route) {
    if (leaveView) {
      // Not a view (`#main` typed by hand): stay on the one shown.
      history.replaceState(null, '', shownHash);
      main.focus();
      return;
    }
    route = DEFAULT_ROUTE;
    history.replaceState(null, '', sectionHref(route.section));
  }
  leave();
  // What was said on the last view was about it: a new view starts with nothing said.
  clearMessages();
  shownHash = location.hash;
  markCurrent(route);
  const { context, leave: stop } = viewContext(session);
  leaveView = stop;
  viewRoot.replaceChildren();
  viewFor(route)(viewRoot, context);
  document.title = `${viewRoot.querySelector('h1')?.textContent ?? 'Console'} · ${PRODUCT}`;
  if (focus) main.focus();
}

function showSignIn(): void {
  leave();
  forgetEventFeed();
  nav.hidden = true;
  signOut.hidden = true;
  document.title = `Sign in · ${PRODUCT}`;
  signInView(viewRoot, async () => {
    await loadSession();
    if (session?.authenticated) {
      announce('Signed in.');
      main.focus();
    } else if (session) {
      alertError(
        'Signed in, but this browser did not keep the session: allow cookies and site data for this address, then sign in with the new code printed in the terminal.',
      );
    }
  });
  // Whatever had focus is gone with the view it was in.
  viewRoot.querySelector<HTMLInputElement>('input')?.focus();
}

function showUnreachable(error: unknown): void {
  leave();
  document.title = PRODUCT;
  viewRoot.replaceChildren(
    el('h1', {}, 'The console server cannot be reached'),
    el('p', {}, messageOf(error)),
    button('Try again', () => void loadSession(), { class: 'primary' }),
  );
}

async function loadSession(): Promise<void> {
  try {
    session = await api.session();
  } catch (error) {
    showUnreachable(error);
    return;
  }
  mode.textContent = `${session.mode === 'local' ? 'Local' : 'Deployed'} · ${session.endpoint}`;
  if (!session.authenticated) {
    showSignIn();
    return;
  }
  nav.hidden = false;
  signOut.hidden = false;
  show(false);
}

onSessionEnded(() => {
  if (!session?.authenticated) return;
  session = { ...session, authenticated: false };
  clearMessages();
  showSignIn();
  announce('Your session ended. Sign in again.');
});

signOut.addEventListener('click', async () => {
  try {
    await api.logout();
  } catch {
    // Signed out on this page whatever the server answered: its session expires anyway.
  }
  if (session) session = { ...session, authenticated: false };
  clearMessages();
  showSignIn();
  announce('Signed out.');
  main.focus();
});

// The skip link moves focus without changing the hash, which names the view.
document.querySelector<HTMLAnchorElement>('.skip-link')?.addEventListener('click', (event) => {
  event.preventDefault();
  main.focus();
});

window.addEventListener('hashchange', () => show(true));
void loadSession();
