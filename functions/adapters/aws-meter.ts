/**
 * Counts the AWS requests a piece of work makes and, for DynamoDB, the capacity units it consumes (tables and
 * indexes), by asking every request for `ReturnConsumedCapacity: INDEXES`. Attach it to SDK clients in tests
 * and benchmarks; production functions do not carry it.
 */
import type { ConsumedCapacity } from '@aws-sdk/client-dynamodb';

export interface MeteredRequest {
  readonly service: string;
  readonly operation: string;
  readonly ok: boolean;
  /** Read and write units, summed over tables and indexes, as DynamoDB reported them. */
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Of those, the units spent on global secondary indexes. */
  readonly indexWriteUnits: number;
}

interface MiddlewareClient {
  readonly middlewareStack: {
    add(
      middleware: (
        next: (args: { input: object }) => Promise<{ output: object }>,
        context: { commandName?: string; clientName?: string },
      ) => (args: { input: object }) => Promise<{ output: object }>,
      options: { step: 'initialize'; name: string; override?: boolean },
    ): void;
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

export class AwsMeter {
  readonly requests: MeteredRequest[] = [];

  /** Starts counting the requests of `client` (any SDK v3 client). */
  attach(client: MiddlewareClient, service: string): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const operation = context.commandName ?? 'unknown';
        const metersCapacity = service === 'dynamodb' && CAPACITY_OPERATIONS.has(operation);
        if (metersCapacity)
          (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
        try {
          const result = await next(args);
          const consumed = (result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] })
            .ConsumedCapacity;
          this.requests.push({ service, operation, ok: true, ...sumCapacity(operation, consumed) });
          return result;
        } catch (error) {
          this.requests.push({
            service,
            operation,
            ok: false,
            readUnits: 0,
            writeUnits: 0,
            indexWriteUnits: 0,
          });
          throw error;
        }
      },
      { step: 'initialize', name: 'agentSchedulerAwsMeter', override: true },
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
