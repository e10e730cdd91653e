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

function sumCapacity(consumed: ConsumedCapacity | ConsumedCapacity[] | undefined) {
  const list = consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed];
  let readUnits = 0;
  let writeUnits = 0;
  let indexWriteUnits = 0;
  for (const c of list) {
    readUnits += c.ReadCapacityUnits ?? 0;
    writeUnits += c.WriteCapacityUnits ?? 0;
    for (const index of Object.values(c.GlobalSecondaryIndexes ?? {})) indexWriteUnits += index.WriteCapacityUnits ?? 0;
  }
  return { readUnits, writeUnits, indexWriteUnits };
}

export class AwsMeter {
  readonly requests: MeteredRequest[] = [];

  /** Starts counting the requests of `client` (any SDK v3 client). */
  attach(client: MiddlewareClient, service: string): void {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const operation = context.commandName ?? 'unknown';
        const metersCapacity = service === 'dynamodb' && CAPACITY_OPERATIONS.has(operation);
        if (metersCapacity) (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
        try {
          const result = await next(args);
          const consumed = (result.output as { ConsumedCapacity?: ConsumedCapacity | ConsumedCapacity[] })
            .ConsumedCapacity;
          this.requests.push({ service, operation, ok: true, ...sumCapacity(consumed) });
          return result;
        } catch (error) {
          this.requests.push({ service, operation, ok: false, readUnits: 0, writeUnits: 0, indexWriteUnits: 0 });
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
    for (const r of this.requests) counts[`${r.service}:${r.operation}`] = (counts[`${r.service}:${r.operation}`] ?? 0) + 1;
    return counts;
  }
}
