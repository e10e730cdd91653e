/**
 * Hash routes, so the server serves one page: `#/queues`, `#/tasks/<taskId>`, `#/schedules/<name>`,
 * `#/rate-limits/<name>`…
 */

export type Section =
  | 'queues'
  | 'rate-limits'
  | 'tasks'
  | 'waitpoints'
  | 'agents'
  | 'roles'
  | 'schedules'
  | 'dead'
  | 'events';

/** The sections whose items have a page of their own. */
type DetailSection = 'tasks' | 'schedules' | 'rate-limits';
const DETAIL_SECTIONS: readonly Section[] = ['tasks', 'schedules', 'rate-limits'];

export type Route =
  | { readonly section: Section; readonly id?: undefined }
  | { readonly section: DetailSection; readonly id: string };

const SECTIONS: readonly Section[] = [
  'queues',
  'rate-limits',
  'tasks',
  'waitpoints',
  'agents',
  'roles',
  'schedules',
  'dead',
  'events',
];
export const DEFAULT_ROUTE: Route = { section: 'queues' };

const isSection = (value: string | undefined): value is Section =>
  value !== undefined && (SECTIONS as readonly string[]).includes(value);
const isDetailSection = (section: Section): section is DetailSection => DETAIL_SECTIONS.includes(section);

function decoded(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** The route a hash names, or `undefined` when it names none (`#main`, `#/nowhere`). */
export function parseRoute(hash: string): Route | undefined {
  if (hash === '' || hash === '#' || hash === '#/') return DEFAULT_ROUTE;
  if (!hash.startsWith('#/')) return undefined;
  const [section, id, ...rest] = hash.slice(2).split('/');
  if (!isSection(section) || rest.length > 0) return undefined;
  if (id === undefined || id === '') return { section };
  if (!isDetailSection(section)) return undefined;
  const name = decoded(id);
  return name === undefined || name === '' ? undefined : { section, id: name };
}

export const sectionHref = (section: Section) => `#/${section}`;
export const taskHref = (taskId: string) => `#/tasks/${encodeURIComponent(taskId)}`;
export const scheduleHref = (name: string) => `#/schedules/${encodeURIComponent(name)}`;
export const rateLimitHref = (name: string) => `#/rate-limits/${encodeURIComponent(name)}`;
