/**
 * The response schemas and the SDK's types describe the same answers: what a schema allows is what the SDK
 * declares it reads, field for field. Checked by the compiler (`tsc` type-checks the tests).
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type * as sdk from '#sdk/types';
import type * as schemas from '../../../functions/http/response-schemas';

/** The fields a type names, without the index signature of an open object. */
type Fields<T> = keyof {
  [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K];
};
type Out<S extends z.ZodType> = z.output<S>;

describe('response schemas and SDK types', () => {
  it('describe the records with the same fields, each readable as the SDK declares it', () => {
    expectTypeOf<Out<typeof schemas.taskSchema>>().toExtend<sdk.Task>();
    expectTypeOf<Fields<Out<typeof schemas.taskSchema>>>().toEqualTypeOf<keyof sdk.Task>();
    expectTypeOf<Out<typeof schemas.claimedTaskSchema>>().toExtend<sdk.ClaimedTask>();
    expectTypeOf<Fields<Out<typeof schemas.claimedTaskSchema>>>().toEqualTypeOf<keyof sdk.ClaimedTask>();
    expectTypeOf<Out<typeof schemas.agentSchema>>().toExtend<sdk.Agent>();
    expectTypeOf<Fields<Out<typeof schemas.agentSchema>>>().toEqualTypeOf<keyof sdk.Agent>();
    expectTypeOf<Out<typeof schemas.scheduleSchema>>().toExtend<sdk.Schedule>();
    expectTypeOf<Fields<Out<typeof schemas.scheduleSchema>>>().toEqualTypeOf<keyof sdk.Schedule>();
    expectTypeOf<Out<typeof schemas.queueControlSchema>>().toExtend<sdk.QueueControl>();
    expectTypeOf<Fields<Out<typeof schemas.queueControlSchema>>>().toEqualTypeOf<keyof sdk.QueueControl>();
    expectTypeOf<Out<typeof schemas.queueStatsSchema>>().toExtend<sdk.QueueStats>();
    expectTypeOf<Fields<Out<typeof schemas.queueStatsSchema>>>().toEqualTypeOf<keyof sdk.QueueStats>();
    expectTypeOf<Out<typeof schemas.occurrenceSchema>>().toExtend<sdk.Occurrence>();
    expectTypeOf<Fields<Out<typeof schemas.occurrenceSchema>>>().toEqualTypeOf<keyof sdk.Occurrence>();
    expectTypeOf<Out<typeof schemas.roleSchema>>().toExtend<sdk.Role>();
    expectTypeOf<Fields<Out<typeof schemas.roleSchema>>>().toEqualTypeOf<keyof sdk.Role>();
    expectTypeOf<Out<typeof schemas.roleLeaseSchema>>().toExtend<sdk.RoleLease>();
    expectTypeOf<Out<typeof schemas.sessionHoldingsSchema>>().toExtend<sdk.SessionHoldings>();
    expectTypeOf<Fields<Out<typeof schemas.sessionHoldingsSchema>>>().toEqualTypeOf<
      keyof sdk.SessionHoldings
    >();
    expectTypeOf<Out<typeof schemas.batchItemResultSchema>>().toExtend<sdk.BatchItemResult>();
  });

  it('describe the answers with the same fields', () => {
    expectTypeOf<Out<typeof schemas.sessionSchema>>().toExtend<sdk.Session>();
    expectTypeOf<Fields<Out<typeof schemas.sessionSchema>>>().toEqualTypeOf<keyof sdk.Session>();
    expectTypeOf<Out<typeof schemas.heartbeatResultSchema>>().toExtend<sdk.HeartbeatResult>();
    expectTypeOf<Fields<Out<typeof schemas.heartbeatResultSchema>>>().toEqualTypeOf<
      keyof sdk.HeartbeatResult
    >();
    expectTypeOf<Out<typeof schemas.claimResultSchema>>().toExtend<sdk.ClaimResult>();
    expectTypeOf<Fields<Out<typeof schemas.claimResultSchema>>>().toEqualTypeOf<keyof sdk.ClaimResult>();
    expectTypeOf<Out<typeof schemas.taskPageSchema>>().toExtend<sdk.TaskPage>();
    expectTypeOf<Fields<Out<typeof schemas.taskPageSchema>>>().toEqualTypeOf<keyof sdk.TaskPage>();
    expectTypeOf<Out<typeof schemas.createdAgentSchema>>().toExtend<sdk.CreatedAgent>();
    expectTypeOf<Out<typeof schemas.volunteerResultSchema>>().toExtend<sdk.VolunteerResult>();
    expectTypeOf<Fields<Out<typeof schemas.volunteerResultSchema>>>().toEqualTypeOf<
      keyof sdk.VolunteerResult
    >();
    expectTypeOf<Out<typeof schemas.releaseRoleResultSchema>>().toExtend<sdk.ReleaseRoleResult>();
    expectTypeOf<Out<typeof schemas.withdrawRoleResultSchema>>().toExtend<sdk.WithdrawRoleResult>();
    expectTypeOf<Fields<Out<typeof schemas.withdrawRoleResultSchema>>>().toEqualTypeOf<
      keyof sdk.WithdrawRoleResult
    >();
    expectTypeOf<Out<typeof schemas.healthSchema>>().toExtend<sdk.Health>();
  });
});
