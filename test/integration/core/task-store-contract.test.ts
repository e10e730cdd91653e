/** The DynamoDB adapters of the tasks table keep their stores' promises, on DynamoDB Local. */
import { afterAll, beforeAll } from 'vitest';
import { dependencyStoreContract } from '#test/dependency-store-contract';
import { laneStoreContract } from '#test/lane-store-contract';
import { payloadStoreContract } from '#test/payload-store-contract';
import { createTestStack, type TestStack } from '#test/stack';
import { taskStoreContract } from '#test/task-store-contract';

let stack: TestStack;
beforeAll(async () => {
  stack = await createTestStack({ queues: ['contract'] });
});
afterAll(async () => {
  await stack.destroy();
});

taskStoreContract('DynamoDB', () => ({ store: stack.ctx.tasks, now: () => stack.clock.now() }));
laneStoreContract('DynamoDB', () => ({
  lanes: stack.ctx.lanes,
  tasks: stack.ctx.tasks,
  now: () => stack.clock.now(),
}));
payloadStoreContract('DynamoDB', () => ({
  payloads: stack.ctx.payloads,
  tasks: stack.ctx.tasks,
  now: () => stack.clock.now(),
}));
dependencyStoreContract('DynamoDB', () => ({
  dependencies: stack.ctx.dependencies,
  tasks: stack.ctx.tasks,
  now: () => stack.clock.now(),
}));
