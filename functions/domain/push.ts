/**
 * The push channel's protocol: small, versioned JSON frames over one WebSocket per client. Pushes are hints,
 * like SQS messages: a wake says work may be waiting, a role frame says a grant committed, a cancel frame says a
 * task its agent holds was cancelled, a progress frame carries a watched task's last report, a task frame says a
 * task ended. Nothing depends on their delivery; the HTTP API stays the truth, and a client whose socket is down
 * polls as it would without one.
 *
 * A caller gets a ticket over HTTP (as itself: agent token or operator credentials), then presents it once, in the
 * connect URL, within `TICKET_TTL_SECONDS`. Only a hash of the ticket is stored.
 */
import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type {
  CancelFrame,
  PushErrorFrame as ErrorFrame,
  ProgressFrame,
  RoleFrame,
  PushFrame as SdkPushFrame,
  WakeFrame as SdkWakeFrame,
  SubscribedFrame,
  TaskFrame,
  WakeReason,
} from '#sdk/push-channel';
import { TASK_ID_PATTERN } from './ids';

export const PUSH_VERSION = 1;

/** A ticket is good for this long, and once. */
export const TICKET_TTL_SECONDS = 60;

/**
 * API Gateway closes a WebSocket idle for 10 minutes and any after 2 hours. Clients send a keep-alive frame this
 * often (it reaches no function; each is a billed message, so as seldom as the idle limit allows with a minute to
 * spare), and reconnect this long after connecting, before the server would cut them off.
 */
export const KEEP_ALIVE_SECONDS = 9 * 60;
export const RECONNECT_AFTER_SECONDS = 110 * 60;
/** How long connection records live unless renewed: a little past the 2-hour limit. */
export const CONNECTION_TTL_SECONDS = 2 * 60 * 60 + 5 * 60;

/** Who holds a connection: an agent (hears wakes for its own queues, its role grants and cancels) or an operator. */
export type PushPrincipal =
  | { readonly kind: 'agent'; readonly agentId: string }
  | { readonly kind: 'operator' };

/** Work may be waiting in `queue`: claim over HTTP. The server sends only the reasons it knows. */
export interface WakeFrame extends SdkWakeFrame {
  readonly reason: WakeReason;
}

/** A frame the server sends: the SDK declares each shape, as its clients read them; wakes name only known reasons. */
export type PushFrame = Exclude<SdkPushFrame, SdkWakeFrame> | WakeFrame;
export type { CancelFrame, ErrorFrame, ProgressFrame, RoleFrame, SubscribedFrame, TaskFrame, WakeReason };

/**
 * The answer to a `ping`, sent by API Gateway's mock route (no function runs) and by the local server alike: a client
 * whose ping goes unanswered knows its socket is dead even when no close ever reached it.
 */
export const PONG_FRAME = { type: 'pong', version: PUSH_VERSION } as const;

/** Frames a client sends. `ping` keeps the socket open and is answered with `PONG_FRAME`, by no function. */
export const clientFrameSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ping') }),
  z.strictObject({
    type: z.literal('subscribe'),
    version: z.literal(PUSH_VERSION),
    id: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'an id of 1 to 64 letters, digits, "-" or "_"'),
    taskIds: z.array(z.string().regex(TASK_ID_PATTERN, 'a task id')).min(1).max(25),
  }),
]);
export type ClientFrame = z.infer<typeof clientFrameSchema>;

/** The largest frame API Gateway delivers is 128 KB; pushes stay far below, results beyond this are fetched. */
export const MAX_PUSHED_RESULT_BYTES = 24 * 1024;
/** The largest frame a client may send. */
export const MAX_CLIENT_FRAME_BYTES = 8 * 1024;

/** A new ticket, and the hash under which it is stored. */
export function newTicket(): { ticket: string; hash: string } {
  const ticket = `pt_${randomBytes(24).toString('base64url')}`;
  return { ticket, hash: ticketHash(ticket) };
}

export const TICKET_PATTERN = /^pt_[A-Za-z0-9_-]{32}$/;

export const ticketHash = (ticket: string): string => createHash('sha256').update(ticket).digest('base64url');

export const frame = <T extends PushFrame>(body: Omit<T, 'version'>): T =>
  ({ ...body, version: PUSH_VERSION }) as T;
