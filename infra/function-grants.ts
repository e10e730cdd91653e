/**
 * Least privilege: each function gets the actions it uses on the resources it uses, nothing else, every table
 * and index by its exact ARN. Each grant says which operation needs it; `AGENT_SCHEDULER_IAM_CHECK` and the
 * infrastructure tests hold the grants to the requests the functions make.
 */
import type { TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import type { EventBus } from 'aws-cdk-lib/aws-events';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { CHILDREN_INDEX, DUE_INDEX, LANE_INDEX, LISTED_INDEX } from '../functions/adapters/tables';
import type { PayloadBucket } from './payload-bucket';
import type { PriorityQueues } from './priority-queues';
import type { PushChannel } from './push-channel';
import type { SchedulerFunctions } from './scheduler-functions';
import type { SchedulerTables } from './scheduler-tables';
import type { WakeTimer } from './wake-timer';

/** What the functions are granted on. */
export interface GrantedResources {
  readonly tables: SchedulerTables;
  readonly queues: readonly PriorityQueues[];
  readonly functions: SchedulerFunctions;
  readonly push: PushChannel;
  readonly wakeTimer: WakeTimer;
  readonly eventBus: EventBus;
  readonly payloads: PayloadBucket;
}

export function grantLeastPrivilege(resources: GrantedResources): void {
  grantAgentApi(resources);
  grantOperatorApi(resources);
  grantSweepsAndFires(resources);
  grantPushChannel(resources);
  grantEventsAndPayloads(resources);
}

/** A DynamoDB action, named without its `dynamodb:` prefix. */
type TableAction =
  | 'GetItem'
  | 'BatchGetItem'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchWriteItem'
  | 'ConditionCheckItem'
  | 'Query'
  | 'Scan';

/**
 * On the tasks table, what a function that ends tasks needs: their state read and written (GetItem, UpdateItem,
 * BatchGetItem), the `onFailure` of a task that dies submitted (PutItem, BatchWriteItem), and the dependents of a
 * task that ends found and told (Query on the table's own key).
 */
const ENDS_TASKS: readonly TableAction[] = [
  'GetItem',
  'UpdateItem',
  'BatchGetItem',
  'PutItem',
  'BatchWriteItem',
  'Query',
];

/** Grants the DynamoDB `actions` on a table (or one of its indexes) by exact ARN, without the `index/*` wildcard. */
function grantOnTable(
  grantee: IGrantable,
  table: TableV2,
  actions: readonly TableAction[],
  indexName?: string,
): void {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: actions.map((action) => `dynamodb:${action}`),
      resources: [indexName ? `${table.tableArn}/index/${indexName}` : table.tableArn],
    }),
  );
}

function onQueues(queues: readonly PriorityQueues[], grantee: IGrantable, ...actions: string[]): void {
  for (const q of queues) q.grant(grantee, ...actions);
}

/** The agent API: sessions, roles, claims and the ends of tasks. */
function grantAgentApi({ tables, queues, functions }: GrantedResources): void {
  const { tasks, agents, leases } = tables;
  const { agentApi } = functions;
  // PutItem, BatchWriteItem: a task that dies under its agent has its `onFailure` submitted by that call.
  // Query (the table's own key): also its dependencies' outcomes at its claim.
  // ConditionCheckItem: a follow-up task is created in a transaction that checks the lease on its parent.
  grantOnTable(agentApi, tasks, [...ENDS_TASKS, 'ConditionCheckItem']);
  // A claim reads the oldest tasks of a key's lane when it receives the lane's turn.
  grantOnTable(agentApi, tasks, ['Query'], LANE_INDEX);
  // ConditionCheckItem: a role changes hands in a transaction that checks the old holder's session is over.
  // BatchGetItem: a claim that finds a concurrency limit's slots spread otherwise than the limit asks reads every
  // item of them, to move them in a transaction (UpdateItem).
  grantOnTable(agentApi, leases, ['GetItem', 'BatchGetItem', 'UpdateItem', 'PutItem', 'ConditionCheckItem']);
  // UpdateItem: registering a role counts it on the agent's item, in the transaction that records it.
  // ConditionCheckItem: a session is opened in a transaction that checks the agent is not revoked.
  grantOnTable(agentApi, agents, ['GetItem', 'UpdateItem', 'ConditionCheckItem']);
  onQueues(
    queues,
    agentApi,
    'sqs:ReceiveMessage',
    'sqs:DeleteMessage',
    'sqs:ChangeMessageVisibility',
    'sqs:SendMessage',
  );
}

/** The operator API: submissions, listings, cancels, agents and run-time schedules' records. */
function grantOperatorApi({ tables, queues, functions }: GrantedResources): void {
  const { tasks, agents, leases } = tables;
  const { operatorApi } = functions;
  // BatchWriteItem: payload items, written without a condition (their key names the specification).
  // Query (the table's own key): a cancelled task's dependents are told; a queue's list partitions are read (the
  // payload items of layout 2 tasks).
  // DeleteItem: a waitpoint answered (or its task cancelled) leaves the open list, in the transaction that ends it.
  grantOnTable(operatorApi, tasks, [
    'PutItem',
    'BatchWriteItem',
    'GetItem',
    'UpdateItem',
    'BatchGetItem',
    'Query',
    'DeleteItem',
  ]);
  // The due index: a queue's open tasks counted, and a rebuild's pages (`POST /v1/scheduler/rebuild`), which also
  // walk the list partitions (Query), put lanes' turns in line (UpdateItem) and send hints (SendMessage, below).
  grantOnTable(operatorApi, tasks, ['Query'], DUE_INDEX);
  // Listing tasks reads the `listed` index (layout 1 tasks), then the tasks of a page with BatchGetItem.
  grantOnTable(operatorApi, tasks, ['Query'], LISTED_INDEX);
  // A cancel with `cascade` finds the children of each task of the tree by their parent.
  grantOnTable(operatorApi, tasks, ['Query'], CHILDREN_INDEX);
  grantOnTable(operatorApi, agents, ['PutItem', 'GetItem', 'UpdateItem', 'Scan']);
  // DeleteItem: deleting a schedule removes its record (and a failed create takes its record back).
  // ConditionCheckItem: revoking an agent hands its roles over in transactions that check sessions.
  // BatchGetItem: a page of agents reads their sessions (online, last heartbeat, tasks held) in one request.
  grantOnTable(operatorApi, leases, [
    'GetItem',
    'BatchGetItem',
    'UpdateItem',
    'PutItem',
    'DeleteItem',
    'Scan',
    'ConditionCheckItem',
  ]);
  onQueues(queues, operatorApi, 'sqs:SendMessage');
}

/** The authorizer, the supervisor's sweeps and the schedules' fires. */
function grantSweepsAndFires({ tables, queues, functions }: GrantedResources): void {
  const { tasks, agents, leases } = tables;
  const { authorizer, supervisor, scheduleFire } = functions;
  grantOnTable(authorizer, agents, ['GetItem']);

  // It ends tasks that die or expire; and PutItem: a missed schedule occurrence that its policy runs is submitted.
  // Query (the table's own key) also reads the queues' list partitions for the list walk, which keeps where it
  // stands in an item of the leases table (GetItem, UpdateItem).
  // DeleteItem: a waitpoint that times out (or whose task expires) leaves the open list.
  grantOnTable(supervisor, tasks, [...ENDS_TASKS, 'DeleteItem']);
  grantOnTable(supervisor, tasks, ['Query'], DUE_INDEX);
  // It walks on the cancellations of descendants a cancel call did not finish.
  grantOnTable(supervisor, tasks, ['Query'], CHILDREN_INDEX);
  // Each pass also counts every queue's depth for its metric, as GET /v1/queues counts it: the queue controls (Scan),
  // the due index and the list partitions (Query), the open tasks (BatchGetItem), with the reads granted here.
  grantOnTable(supervisor, leases, ['Scan', 'GetItem', 'UpdateItem', 'ConditionCheckItem']);
  // Reconcile reads how many hints wait in a queue before sending a task's hint again.
  onQueues(queues, supervisor, 'sqs:SendMessage', 'sqs:GetQueueAttributes');

  // Submit, look at earlier occurrences' tasks, cancel them (cancelOther), and keep the occurrence ledger.
  // Query (the table's own key): a task cancelled by `cancelOther` has its dependents told.
  grantOnTable(scheduleFire, tasks, ['PutItem', 'BatchWriteItem', 'GetItem', 'UpdateItem', 'Query']);
  grantOnTable(scheduleFire, leases, ['GetItem', 'UpdateItem']);
  onQueues(queues, scheduleFire, 'sqs:SendMessage');
}

/** The push channel's tables and frames, for the functions that wake, tell and connect. */
function grantPushChannel({ tables, functions, push, wakeTimer: timer }: GrantedResources): void {
  const { tasks, agents, leases, connections } = tables;
  const { agentApi, operatorApi, supervisor, scheduleFire, pushAuthorizer, pushApi, wakeTimer } = functions;
  // The push channel (`connection-table.ts`). Whoever makes a task claimable wakes idle listeners of its queue
  // (Query a queue's listeners, UpdateItem to take one and mark it busy in its other queues); whoever ends a task
  // tells the connections watching it (Query); whoever hands a role over, or cancels a held task, looks up the
  // holder's connection (GetItem); and a frame that finds its connection gone forgets it (GetItem, then DeleteItem).
  grantOnTable(agentApi, connections, [
    // PutItem: connect tickets. UpdateItem: also an empty claim marks its agent idle.
    'PutItem',
    'UpdateItem',
    'Query',
    'GetItem',
    'DeleteItem',
  ]);
  grantOnTable(operatorApi, connections, ['PutItem', 'UpdateItem', 'Query', 'GetItem', 'DeleteItem']);
  for (const fn of [supervisor, scheduleFire, wakeTimer])
    grantOnTable(fn, connections, ['UpdateItem', 'Query', 'GetItem', 'DeleteItem']);
  // A task held back arms a timed wake (the timer's function arms again one longer than an SQS delay); the timer's
  // event source mapping reads its queue with the function's role (granted by the mapping itself).
  for (const fn of [agentApi, operatorApi, supervisor, scheduleFire, wakeTimer]) timer.grantArm(fn);
  // No wake goes out while the whole scheduler is paused: a wake that finds idle agents reads the scheduler's control
  // (GetItem of the leases table), which the other functions that wake may read already.
  grantOnTable(wakeTimer, leases, ['GetItem']);
  // The connect ticket is used up with a conditional DeleteItem; a ticket of an agent revoked since is refused.
  grantOnTable(pushAuthorizer, connections, ['DeleteItem']);
  grantOnTable(pushAuthorizer, agents, ['GetItem']);
  // $connect: the agent's queues, then its connection and listener records in a BatchWriteItem. $disconnect:
  // read the connection, delete its records. $default: an operator's watch (PutItem) marks the task watched
  // and reads its status in one UpdateItem.
  grantOnTable(pushApi, connections, ['BatchWriteItem', 'PutItem', 'GetItem', 'DeleteItem']);
  grantOnTable(pushApi, agents, ['GetItem']);
  grantOnTable(pushApi, tasks, ['UpdateItem']);
  // Every function that sends frames; the authorizer sends none.
  for (const fn of [agentApi, operatorApi, supervisor, scheduleFire, pushApi, wakeTimer]) push.grantSend(fn);
}

/** Events, payload objects and the dead letters of tasks that die. */
function grantEventsAndPayloads({ queues, functions, eventBus, payloads }: GrantedResources): void {
  const { agentApi, operatorApi, supervisor, scheduleFire } = functions;
  for (const fn of [agentApi, operatorApi, supervisor, scheduleFire]) eventBus.grantPutEventsTo(fn);
  // Whoever submits writes large payloads (the supervisor submits missed schedule occurrences); claims read them.
  for (const fn of [agentApi, operatorApi, supervisor, scheduleFire]) payloads.grantWrite(fn);
  // Claims read payloads; so does an operator's `GET /v1/tasks/{taskId}?include=payload`.
  payloads.grantRead(agentApi);
  payloads.grantRead(operatorApi);
  // Keeping a payload object for a task that lives long is a copy of it onto itself: a read and a write.
  payloads.grantRead(supervisor);
  payloads.grantDelete(agentApi);
  // A task that dies leaves a record in its queue's dead-letter queue (revoking an agent can end a task's last
  // attempt, as a sweep can).
  for (const fn of [agentApi, operatorApi, supervisor])
    for (const q of queues) q.deadLetterQueue.grant(fn, 'sqs:SendMessage');
}
