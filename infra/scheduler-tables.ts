/**
 * The tasks, agents, leases and connections tables, built from the definitions the functions and the local runner
 * share. Every one is encrypted, recoverable to any point of the last 35 days, protected from deletion and
 * retained by default; those whose items expire have DynamoDB's TTL on.
 */
import { RemovalPolicy } from 'aws-cdk-lib';
import { AttributeType, Billing, ProjectionType, TableEncryptionV2, TableV2 } from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import {
  AGENTS_TABLE,
  CONNECTIONS_TABLE,
  type KeyDefinition,
  LEASES_TABLE,
  TASKS_TABLE,
  type TableDefinition,
} from '../functions/adapters/tables';

export interface SchedulerTablesProps {
  /** @default RemovalPolicy.RETAIN - tables (and the tasks in them) outlive the stack */
  readonly removalPolicy?: RemovalPolicy;
}

const attribute = (key: KeyDefinition) => ({
  name: key.name,
  type: key.type === 'S' ? AttributeType.STRING : AttributeType.NUMBER,
});

export class SchedulerTables extends Construct {
  readonly tasks: TableV2;
  readonly agents: TableV2;
  readonly leases: TableV2;
  /** The push channel's connect tickets, connections and listeners, all short-lived. */
  readonly connections: TableV2;

  constructor(scope: Construct, id: string, props: SchedulerTablesProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.tasks = this.table(TASKS_TABLE, removalPolicy);
    this.agents = this.table(AGENTS_TABLE, removalPolicy);
    this.leases = this.table(LEASES_TABLE, removalPolicy);
    this.connections = this.table(CONNECTIONS_TABLE, removalPolicy);
  }

  private table(definition: TableDefinition, removalPolicy: RemovalPolicy): TableV2 {
    return new TableV2(this, definition.id, {
      partitionKey: attribute(definition.partitionKey),
      ...(definition.sortKey ? { sortKey: attribute(definition.sortKey) } : {}),
      billing: Billing.onDemand(),
      encryption: TableEncryptionV2.awsManagedKey(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: true,
      removalPolicy,
      ...(definition.timeToLiveAttribute ? { timeToLiveAttribute: definition.timeToLiveAttribute } : {}),
      globalSecondaryIndexes: definition.globalSecondaryIndexes.map((index) => ({
        indexName: index.indexName,
        partitionKey: attribute(index.partitionKey),
        ...(index.sortKey ? { sortKey: attribute(index.sortKey) } : {}),
        projectionType: index.projection === 'KEYS_ONLY' ? ProjectionType.KEYS_ONLY : ProjectionType.ALL,
      })),
    });
  }
}
