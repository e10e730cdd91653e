/** The fake task store the core's unit tests use keeps the same promises as the DynamoDB adapter. */

import { FakeTaskStore } from '#test/fake-task-store';
import { taskStoreContract } from '#test/task-store-contract';

const store = new FakeTaskStore();
let clock = Date.UTC(2026, 10, 25);
taskStoreContract('in memory', () => ({ store, now: () => clock++ }));
