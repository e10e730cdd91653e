/**
 * Requests to the console server: same-origin, JSON in and out. An error answer becomes an `ApiError` carrying
 * the server's message; a 401 from the API means the session ended, and is told to whoever listens for it.
 */

const API_PREFIX = '/console/api';
/**
 * The session's key, sent with every request beside the cookie. A browser sends a host's cookies to all its
 * ports; this storage is this origin's (this port's) alone, so a program on another port that is sent the cookie
 * still cannot act.
 */
const KEY_STORAGE = 'agent-scheduler-console-key';
const KEY_HEADER = 'x-console-key';

/** Keeps the key a sign-in gave; `undefined` forgets it. */
export function keepSessionKey(key: string | undefined): void {
  memoryKey = key;
  try {
    if (key === undefined) localStorage.removeItem(KEY_STORAGE);
    else localStorage.setItem(KEY_STORAGE, key);
  } catch {
    // Storage refused (a private window's quota): the session lasts as long as the page. An older key kept
    // there must not stand in for this one.
    try {
      localStorage.removeItem(KEY_STORAGE);
    } catch {
      // no storage at all
    }
  }
}

/** The key of this page's sign-in, before any other: storage only holds it for pages opened later. */
let memoryKey: string | undefined;

function sessionKey(): string | undefined {
  if (memoryKey !== undefined) return memoryKey;
  try {
    return localStorage.getItem(KEY_STORAGE) ?? undefined;
  } catch {
    return undefined;
  }
}
/** The longest server message shown. */
const MESSAGE_CHARS = 300;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The console session ended (expired, or signed out elsewhere): the request was not made. */
export class SessionEndedError extends Error {
  constructor() {
    super('Your session ended. Sign in again.');
    this.name = 'SessionEndedError';
  }
}

let sessionEnded: () => void = () => undefined;

/** Sets what happens when an API call finds the session ended. */
export function onSessionEnded(listener: () => void): void {
  sessionEnded = listener;
}

/** The server's error message, without anything that is not text: no stack, no JSON dump. */
async function errorOf(response: Response): Promise<ApiError> {
  let code = 'HttpError';
  let message = `The server answered ${response.status} ${response.statusText}`.trim();
  try {
    const body = (await response.json()) as {
      error?: { code?: unknown; message?: unknown };
      message?: unknown;
    };
    const given = body.error?.message ?? body.message;
    if (typeof given === 'string' && given !== '') message = given;
    if (typeof body.error?.code === 'string') code = body.error.code;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, code, message.slice(0, MESSAGE_CHARS));
}

export interface RequestOptions {
  readonly body?: unknown;
  readonly signal?: AbortSignal | undefined;
}

/** A request to `path` on the console server; resolves to the JSON answer, or `undefined` for no content. */
export async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const key = sessionKey();
  if (key !== undefined) headers[KEY_HEADER] = key;
  const init: RequestInit = { method, credentials: 'same-origin', headers };
  if (options.body !== undefined) {
    init.body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  if (options.signal) init.signal = options.signal;
  let response: Response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(0, 'Unreachable', 'The console server cannot be reached. Is it still running?');
  }
  if (response.status === 401 && path.startsWith(`${API_PREFIX}/`)) {
    sessionEnded();
    throw new SessionEndedError();
  }
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** A call of the HTTP API through the console: `path` is the API's own, `/v1/...`. */
export const apiRequest = <T>(method: string, path: string, options?: RequestOptions) =>
  request<T>(method, `${API_PREFIX}${path}`, options);

/** A query string of the values given, in order; `undefined` and empty ones left out. */
export function query(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** True for the errors a view should not report: the request was abandoned on purpose. */
export const isAbort = (error: unknown) =>
  error instanceof SessionEndedError || (error instanceof Error && error.name === 'AbortError');
