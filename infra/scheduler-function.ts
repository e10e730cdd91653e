/**
 * The defaults every function of the scheduler shares: Node.js 22 on arm64, bundled by the local esbuild (no
 * Docker), minified with source maps, explicit memory and timeout, a log group with a retention period.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, LoggingFormat, Runtime } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The function entry points under `functions/`. */
export const FUNCTION_ENTRIES = [
  'agent-api',
  'operator-api',
  'authorizer',
  'supervisor',
  'schedule-fire',
] as const;
export type FunctionEntry = (typeof FUNCTION_ENTRIES)[number];

/** esbuild options of every bundle; the size report builds with the same ones. */
export const BUNDLE_OPTIONS = {
  minify: true,
  sourcemap: true,
  target: 'node22',
  format: 'esm',
  mainFields: ['module', 'main'],
  // ESM bundles of CommonJS dependencies still call require().
  banner: {
    js: "import { createRequire } from 'node:module';const require = createRequire(import.meta.url);",
  },
} as const;

export interface SchedulerFunctionProps {
  /** The entry file under `functions/`, without extension. */
  readonly entry: FunctionEntry;
  readonly memorySize: number;
  readonly timeout: Duration;
  readonly environment: Record<string, string>;
  readonly logRetention: RetentionDays;
  readonly serviceName: string;
  readonly metricsNamespace: string;
  /** Where failed asynchronous invocations go. @default - none (synchronous callers see the error) */
  readonly deadLetterQueue?: IQueue;
}

/**
 * A function with a role of its own that starts empty: no managed policy, only the right to write its own log
 * group; every other permission is granted by intent where the function is wired up.
 */
export class SchedulerFunction extends NodejsFunction {
  constructor(scope: Construct, id: string, props: SchedulerFunctionProps) {
    const logGroup = new LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const role = new Role(scope, `${id}Role`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    super(scope, id, {
      role,
      ...(props.deadLetterQueue ? { deadLetterQueue: props.deadLetterQueue } : {}),
      entry: join(REPO_ROOT, 'functions', `${props.entry}.ts`),
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      loggingFormat: LoggingFormat.JSON,
      logGroup,
      environment: {
        POWERTOOLS_SERVICE_NAME: props.serviceName,
        POWERTOOLS_METRICS_NAMESPACE: props.metricsNamespace,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
      bundling: {
        minify: BUNDLE_OPTIONS.minify,
        sourceMap: BUNDLE_OPTIONS.sourcemap,
        target: BUNDLE_OPTIONS.target,
        format: OutputFormat.ESM,
        mainFields: [...BUNDLE_OPTIONS.mainFields],
        banner: BUNDLE_OPTIONS.banner.js,
        forceDockerBundling: false,
        metafile: true,
      },
    });
  }
}
