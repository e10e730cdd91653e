/** The fake stores of the tasks table the core's unit tests use keep the same promises as the DynamoDB adapters. */

import { dependencyStoreContract } from '#test/dependency-store-contract';
import { FakeDependencyStore } from '#test/fake-dependency-store';
import { FakeLaneStore } from '#test/fake-lane-store';
import { FakePayloadStore } from '#test/fake-payload-store';
import { FakeTaskStore } from '#test/fake-task-store';
import { laneStoreContract } from '#test/lane-store-contract';
import { payloadStoreContract } from '#test/payload-store-contract';
import { taskStoreContract } from '#test/task-store-contract';

const store = new FakeTaskStore();
const lanes = new FakeLaneStore(store);
const payloads = new FakePayloadStore(store);
const dependencies = new FakeDependencyStore(store);
let clock = Date.UTC(2026, 10, 25);
taskStoreContract('in memory', () => ({ store, now: () => clock++ }));
laneStoreContract('in memory', () => ({ lanes, tasks: store, now: () => clock++ }));
payloadStoreContract('in memory', () => ({ payloads, tasks: store, now: () => clock++ }));
dependencyStoreContract('in memory', () => ({ dependencies, tasks: store, now: () => clock++ }));
