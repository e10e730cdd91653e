/**
 * The scheduler-wide pause: one control for the whole scheduler, kept beside the queue controls. While it is paused,
 * claims grant nothing in any queue (their hints stay where they are) and no agent is woken; everything else goes
 * on: submissions, schedule fires and missed runs (their tasks queue up), the lease sweeps and the take-backs, the
 * resending of lost hints, heartbeats, completions, and roles. Pausing and resuming are in `queue-controls.ts`.
 *
 * Claims and wakes read the control as claims read the queue controls, kept per process (per context), but only
 * while it says the scheduler runs:
 * - a copy that says it runs is kept for 2 s, counted from when its read was sent. A claim looks at it at its start
 *   and again once it has taken its grants' time, so no grant is dated 2 s or more after a pause's answer; a read is
 *   consistent, so that holds in AWS too;
 * - a copy that says it is paused is not kept: the next claim or wake reads again, so a resume is seen at once, and
 *   agents woken by it do not find the scheduler still paused in a copy of their claim's process.
 * What the check costs: while the scheduler runs, one consistent `GetItem` of a small item (1 read unit) per
 * process at most every 2 s, shared by all its claims and wakes (in Lambda, an instance serves one claim at a time:
 * a busy instance pays it once every 2 s, not once a claim); nothing a lifecycle counts, since a lifecycle's claim
 * finds the copy its last poll read. While it is paused, 1 read unit for each claim, and for each wake that finds an
 * idle agent.
 */
import type { SchedulerContext } from './context';
import type { StoredSchedulerControl } from './ports/queue-control-store';

export interface SchedulerControl {
  readonly paused: boolean;
  readonly updatedAt?: number;
}

/** How long a copy that says the scheduler runs is kept, from when its read was sent. */
export const SCHEDULER_CONTROL_CACHE_MS = 2_000;

interface Copy {
  readonly read: Promise<SchedulerControl>;
  readonly sentAt: number;
}

const copies = new WeakMap<SchedulerContext, Copy>();

const controlOf = (stored: StoredSchedulerControl | undefined): SchedulerControl => ({
  paused: stored?.paused === true,
  ...(stored?.updatedAt === undefined ? {} : { updatedAt: stored.updatedAt }),
});

/**
 * The scheduler's control: the process's copy while it is young enough and says the scheduler runs, else read
 * (claims and wakes at once share one read in flight). `fresh` always reads.
 */
export function getSchedulerControl(ctx: SchedulerContext, fresh = false): Promise<SchedulerControl> {
  const copy = copies.get(ctx);
  if (!fresh && copy && ctx.now() - copy.sentAt < SCHEDULER_CONTROL_CACHE_MS) return copy.read;
  const sentAt = ctx.now();
  const read = ctx.queueControls.getScheduler({ consistent: true }).then(controlOf);
  const entry = { read, sentAt };
  copies.set(ctx, entry);
  // A paused copy, or a failed read, is not kept.
  read.then(
    (control) => {
      if (control.paused && copies.get(ctx) === entry) copies.delete(ctx);
    },
    () => {
      if (copies.get(ctx) === entry) copies.delete(ctx);
    },
  );
  return read;
}

/** Whether the whole scheduler is paused now, as claims and wakes see it (see above). */
export async function isSchedulerPaused(ctx: SchedulerContext): Promise<boolean> {
  return (await getSchedulerControl(ctx)).paused;
}

/** Writes the scheduler's pause; the process keeps what it wrote (a resume as a copy read now). */
export async function writeSchedulerPaused(
  ctx: SchedulerContext,
  paused: boolean,
): Promise<SchedulerControl> {
  const control = controlOf(await ctx.queueControls.setSchedulerPaused(paused, ctx.now()));
  if (control.paused) copies.delete(ctx);
  else copies.set(ctx, { read: Promise.resolve(control), sentAt: ctx.now() });
  return control;
}
