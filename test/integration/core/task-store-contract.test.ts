/** The DynamoDB adapter keeps the task store's promises, on DynamoDB Local. */
import { afterAll, beforeAll } from 'vitest';
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
