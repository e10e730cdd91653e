/**
 * The SDK declares the API's records itself, so it can be installed without the server. These assertions hold
 * those declarations to what the server's views return, field by field and type by type: `npm run typecheck`
 * (part of `npm test`) fails the moment one side drifts from the other. The runtime checks below only say which
 * pairs are compared.
 */
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import type { clientFrameSchema } from '#domain/push';
import type { queueLimitsSchema } from '#domain/queue-limits';
import type { scheduleSpecSchema } from '#domain/schedule';
import type { taskSpecSchema } from '#domain/task-spec';
import type { OnTheWire, Same } from '#domain/wire-match';
import type { ClientFrame } from '#sdk/push-channel';
import type * as Sdk from '#sdk/types';
import type {
  agentView,
  claimedTaskView,
  occurrenceView,
  pushTicketView,
  queueControlView,
  roleView,
  schedulerControlView,
  schedulerStatsView,
  scheduleView,
  sessionHoldingsView,
  taskWithPayloadView,
} from '../../../functions/http/views';

type Server<View extends (...args: never[]) => unknown> = OnTheWire<ReturnType<View>>;

const pairs = {
  // The task view with the fields `include=payload` adds: every field of `taskView`, and the payload's two.
  task: true satisfies Same<Server<typeof taskWithPayloadView>, Sdk.Task>,
  claimedTask: true satisfies Same<Server<typeof claimedTaskView>, Sdk.ClaimedTask>,
  agent: true satisfies Same<Server<typeof agentView>, Sdk.Agent>,
  queueControl: true satisfies Same<Server<typeof queueControlView>, Sdk.QueueControl>,
  schedulerControl: true satisfies Same<Server<typeof schedulerControlView>, Sdk.SchedulerControl>,
  schedulerStats: true satisfies Same<Server<typeof schedulerStatsView>, Sdk.SchedulerStats>,
  occurrence: true satisfies Same<Server<typeof occurrenceView>, Sdk.Occurrence>,
  role: true satisfies Same<Server<typeof roleView>, Sdk.Role>,
  sessionHoldings: true satisfies Same<Server<typeof sessionHoldingsView>, Sdk.SessionHoldings>,
  schedule: true satisfies Same<Server<typeof scheduleView>, Sdk.Schedule>,
  pushTicket: true satisfies Same<Server<typeof pushTicketView>, Sdk.PushTicket>,
  // What a client sends (and the construct's props declare): the server's schema, before its defaults.
  scheduleSpec: true satisfies Same<OnTheWire<z.input<typeof scheduleSpecSchema>>, Sdk.ScheduleSpec>,
  submitTask: true satisfies Same<OnTheWire<z.input<typeof taskSpecSchema>>, Sdk.SubmitTaskInput>,
  queueLimits: true satisfies Same<OnTheWire<z.input<typeof queueLimitsSchema>>, Sdk.QueueLimits>,
  // The frames a push client sends (the frames it receives are the SDK's own types, which the server uses).
  clientFrame: true satisfies Same<OnTheWire<z.input<typeof clientFrameSchema>>, ClientFrame>,
};

describe('the SDK’s records', () => {
  it('are compared with the server’s views at compile time', () => {
    expect(Object.keys(pairs)).toHaveLength(15);
  });
});
