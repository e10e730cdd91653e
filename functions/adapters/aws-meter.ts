/**
 * Counts the AWS requests a piece of work makes and, for DynamoDB, the capacity units it consumes (tables and
 * indexes), by asking every request for `ReturnConsumedCapacity: INDEXES`. Attach it to SDK clients in tests
 * and benchmarks; production functions do not carry it.
 *
 * Units are what AWS bills, not only what DynamoDB Local reports. Local sizes single-item requests as AWS does
 * (the larger of the item before and after a write, every attribute of an item read whatever the projection:
 * `test/integration/billing.test.ts` holds it to those rules); a transaction's units are worked out from its
 * items (`transaction-units.ts`), Local's own figure for them following no rule. Local reports nothing for a
 * request that fails, while AWS bills:
 * - a write whose condition fails: the write units of the item as it stands (at least one). The meter asks such
 *   writes for `ReturnValuesOnConditionCheckFailure: ALL_OLD` (most of ours already do), which returns that item;
 * - a transaction cancelled by a condition: taken here as its prepare phase, each item once at its size (AWS
 *   states no figure);
 * - a query or scan that reads nothing: the minimum read, as for a `GetItem` that finds nothing (0 from Local).
 */
import {
  type AttributeValue,
  type ConsumedCapacity,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from '@aws-sdk/client-dynamodb';
import { itemSize, writeUnitsFor } from './item-size';
import { type TransactItem, TransactionUnits } from './transaction-units';

export interface MeteredRequest {
  readonly service: string;
  readonly operation: string;
  readonly ok: boolean;
  /** Read and write units, summed over tables and indexes, as DynamoDB reported them. */
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Of those, the units spent on global secondary indexes. */
  readonly indexWriteUnits: number;
  /** The write units a failed request was billed (a failed condition, a cancelled transaction). */
  readonly failedWriteUnits: number;
}

/** An SDK v3 middleware, as the meter and the test and bench recorders add them. */
export type Middleware = (
  next: (args: { input: object }) => Promise<{ output: object }>,
  context: { commandName?: string; clientName?: string },
) => (args: { input: object }) => Promise<{ output: object }>;

/** Any SDK v3 client: what a meter or recorder needs of it. */
export interface MiddlewareClient {
  readonly middlewareStack: {
    add(middleware: Middleware, options: { step: 'initialize'; name: string; override?: boolean }): void;
  };
  /** A DynamoDB client's resolved settings, from which the meter makes a client of its own to read items. */
  readonly config?: {
    readonly region?: unknown;
    readonly endpoint?: unknown;
    readonly credentials?: unknown;
  };
}

/** Operations that accept `ReturnConsumedCapacity`. */
const CAPACITY_OPERATIONS = new Set([
  'GetItemCommand',
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'QueryCommand',
  'ScanCommand',
  'BatchGetItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
  'TransactGetItemsCommand',
]);

const WRITE_OPERATIONS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

/**
 * Sums what DynamoDB reported. AWS reports `ReadCapacityUnits`/`WriteCapacityUnits` besides `CapacityUnits`;
 * DynamoDB Local reports only `CapacityUnits`, so the operation decides whether units are reads or writes.
 */
function sumCapacity(operation: string, consumed: ConsumedCapacity | ConsumedCapacity[] | undefined) {
  const list = consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed];
  const isWrite = WRITE_OPERATIONS.has(operation);
  let units = 0;
  let indexUnits = 0;
  for (const c of list) {
    units += (isWrite ? c.WriteCapacityUnits : c.ReadCapacityUnits) ?? c.CapacityUnits ?? 0;
    for (const index of Object.values(c.GlobalSecondaryIndexes ?? {})) {
      indexUnits +=
        (isWrite ? index.WriteCapacityUnits : index.ReadCapacityUnits) ?? index.CapacityUnits ?? 0;
    }
  }
  return isWrite
    ? { readUnits: 0, writeUnits: units, indexWriteUnits: indexUnits }
    : { readUnits: units, writeUnits: 0, indexWriteUnits: 0 };
}

const SINGLE_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

type Input = {
  ReturnConsumedCapacity?: string;
  ReturnValuesOnConditionCheckFailure?: string;
  ConsistentRead?: boolean;
  TransactItems?: (TransactItem &
    Record<string, { ReturnValuesOnConditionCheckFailure?: string } | undefined>)[];
};
type Failure = {
  name?: string;
  Item?: Record<string, AttributeValue>;
};

/** Asks a conditional write to return the item it found when its condition fails, unless it chose already. */
function askForFailedItems(operation: string, input: Input): void {
  if (SINGLE_WRITES.has(operation)) input.ReturnValuesOnConditionCheckFailure ??= 'ALL_OLD';
}

/** What AWS bills for a request that failed (see the module's note); 0 for failures it does not bill. */
function failedWriteUnits(operation: string, error: Failure): number {
  if (SINGLE_WRITES.has(operation) && error.name === 'ConditionalCheckFailedException')
    return writeUnitsFor(itemSize(error.Item));
  return 0;
}

/** A query or scan that read nothing is billed the minimum read; DynamoDB Local reports 0. */
function withMinimumRead(operation: string, input: Input, readUnits: number): number {
  if ((operation === 'QueryCommand' || operation === 'ScanCommand') && readUnits === 0)
    return input.ConsistentRead ? 1 : 0.5;
  return readUnits;
}

export class AwsMeter {
  readonly requests: MeteredRequest[] = [];

  /**
   * Starts counting the requests of `client` (any SDK v3 client). It asks for capacity as a request starts, and
   * meters it once built, after a document client has marshalled it, so it sees items as DynamoDB does.
   */
  attach(client: MiddlewareClient, service: string): void {
    let transactions: TransactionUnits | undefined;
    const transactionUnits = () => {
      const { region, endpoint, credentials } = client.config ?? {};
      transactions ??= new TransactionUnits(
        new DynamoDBClient({ region, endpoint, credentials, maxAttempts: 3 } as DynamoDBClientConfig),
      );
      return transactions;
    };
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const operation = context.commandName ?? 'unknown';
        if (service === 'dynamodb' && CAPACITY_OPERATIONS.has(operation)) {
          (args.input as Input).ReturnConsumedCapacity = 'INDEXES';
          askForFailedItems(operation, args.input as Input);
        }
        return next(args);
      },
      { step: 'initialize', name: 'agentSchedulerAwsMeterAsk', override: true },
    );
    // Every SDK client takes build-step middleware too; the type above names the initialize step only, which is
    // what lets clients of every service be passed.
    const addAtBuild = client.middlewareStack.add as unknown as (
      middleware: Middleware,
      options: { step: 'build'; name: string; override?: boolean },
    ) => void;
    addAtBuild.call(
      client.middlewareStack,
      (next, context) => async (args) => {
        const operation = context.commandName ?? 'unknown';
        const metersCapacity = service === 'dynamodb' && CAPACITY_OPERATIONS.has(operation);
        const input = args.input as Input;
        if (metersCapacity && operation === 'TransactWriteItemsCommand') {
          const billed = await transactionUnits().around(input.TransactItems ?? [], () => next(args));
          this.requests.push({
            service,
            operation,
            ok: billed.error === undefined,
            readUnits: 0,
            writeUnits: billed.writeUnits,
            indexWriteUnits: billed.indexWriteUnits,
            failedWriteUnits: billed.error === undefined ? 0 : billed.writeUnits,
          });
          if (billed.error !== undefined) throw billed.error;
          return billed.result as { output: object };
        }
        try {
          const result = await next(args);
          const consumed = (result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] })
            .ConsumedCapacity;
          const units = sumCapacity(operation, consumed);
          this.requests.push({
            service,
            operation,
            ok: true,
            ...units,
            readUnits: metersCapacity ? withMinimumRead(operation, input, units.readUnits) : units.readUnits,
            failedWriteUnits: 0,
          });
          return result;
        } catch (error) {
          const failed = metersCapacity ? failedWriteUnits(operation, error as Failure) : 0;
          this.requests.push({
            service,
            operation,
            ok: false,
            readUnits: 0,
            writeUnits: failed,
            indexWriteUnits: 0,
            failedWriteUnits: failed,
          });
          throw error;
        }
      },
      { step: 'build', name: 'agentSchedulerAwsMeter', override: true },
    );
  }

  reset(): void {
    this.requests.length = 0;
  }

  /** Requests, read units and write units of everything recorded since the last reset. */
  totals(filter: (r: MeteredRequest) => boolean = () => true) {
    const selected = this.requests.filter(filter);
    return {
      requests: selected.length,
      readUnits: selected.reduce((sum, r) => sum + r.readUnits, 0),
      writeUnits: selected.reduce((sum, r) => sum + r.writeUnits, 0),
      indexWriteUnits: selected.reduce((sum, r) => sum + r.indexWriteUnits, 0),
      failedWriteUnits: selected.reduce((sum, r) => sum + r.failedWriteUnits, 0),
    };
  }

  /** Request counts keyed `service:operation`. */
  byOperation(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const r of this.requests)
      counts[`${r.service}:${r.operation}`] = (counts[`${r.service}:${r.operation}`] ?? 0) + 1;
    return counts;
  }
}
