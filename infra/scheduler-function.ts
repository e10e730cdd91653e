/**
 * The defaults every function of the scheduler shares: Node.js 22 on arm64, bundled by esbuild (no Docker),
 * minified (with source maps only when asked for), explicit memory and timeout, a log group with a retention period.
 *
 * Where its code comes from:
 * - installed from npm, the functions ship prebuilt next to the construct (`dist/functions/<entry>/index.mjs`,
 *   bundled when the package was packed), so a user's synth needs no esbuild, no Docker and no lock file;
 * - in this repository, they are bundled at synth from `functions/`, with the same options.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Annotations, AssetHashType, DockerImage, type Duration, RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import {
  Architecture,
  Code,
  Function as LambdaFunction,
  LoggingFormat,
  Runtime,
} from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { TEXT_SETTINGS } from '../functions/domain/settings';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Where the packed construct finds its prebuilt functions: beside itself. */
const PREBUILT_ROOT = join(dirname(fileURLToPath(import.meta.url)), 'functions');

/** The function entry points under `functions/`. */
export const FUNCTION_ENTRIES = [
  'agent-api',
  'operator-api',
  'authorizer',
  'supervisor',
  'schedule-fire',
  'push-authorizer',
  'push-api',
  'wake-timer',
] as const;
export type FunctionEntry = (typeof FUNCTION_ENTRIES)[number];

/** esbuild options of every bundle; the size report and the package build use the same ones. */
export const BUNDLE_OPTIONS = {
  minify: true,
  sourcemap: false,
  target: 'node22',
  format: 'esm',
  mainFields: ['module', 'main'],
  // ESM bundles of CommonJS dependencies still call require().
  banner: {
    js: "import { createRequire } from 'node:module';const require = createRequire(import.meta.url);",
  },
} as const;

/**
 * The whole esbuild build of one function: `functions/<entry>.ts` to `<outdir>/index.mjs`, and its source map
 * beside it when `sourceMaps`.
 */
export const bundleOptions = (entry: FunctionEntry, outdir: string, sourceMaps = false) => ({
  ...BUNDLE_OPTIONS,
  sourcemap: sourceMaps,
  mainFields: [...BUNDLE_OPTIONS.mainFields],
  banner: { ...BUNDLE_OPTIONS.banner },
  entryPoints: [join(REPO_ROOT, 'functions', `${entry}.ts`)],
  outfile: join(outdir, 'index.mjs'),
  absWorkingDir: REPO_ROOT,
  bundle: true,
  platform: 'node' as const,
  logLevel: 'warning' as const,
});

/**
 * The code of one function: prebuilt when installed from npm (its source map left out unless asked for), else
 * bundled here at synth.
 */
function functionCode(scope: Construct, entry: FunctionEntry, sourceMaps: boolean): Code {
  const prebuilt = join(PREBUILT_ROOT, entry);
  if (existsSync(join(prebuilt, 'index.mjs'))) {
    if (sourceMaps && !existsSync(join(prebuilt, 'index.mjs.map'))) {
      Annotations.of(scope).addWarningV2(
        'agent-scheduler:noSourceMaps',
        'sourceMaps: this copy of agent-scheduler was packed without the functions’ source maps ' +
          '(pack it with AGENT_SCHEDULER_SOURCE_MAPS=1 to have them); stack traces name the bundles',
      );
    }
    return Code.fromAsset(prebuilt, sourceMaps ? {} : { exclude: ['*.map'] });
  }
  return Code.fromAsset(join(REPO_ROOT, 'functions'), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Never pulled: local bundling always succeeds, or throws.
      image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:22-slim'),
      // CDK keys its bundling cache on these options, not on `tryBundle`: the entry must be among them, or every
      // function would get the first one's bundle.
      environment: { FUNCTION_ENTRY: entry, SOURCE_MAPS: String(sourceMaps) },
      local: {
        tryBundle(outputDir) {
          // Loaded only here: installed from npm, the construct has no esbuild and needs none.
          const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
          esbuild.buildSync(bundleOptions(entry, outputDir, sourceMaps));
          return true;
        },
      },
    },
  });
}

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
  /** Source maps in the code, and Node's `--enable-source-maps`. @default false */
  readonly sourceMaps?: boolean;
}

/**
 * A function with a role of its own that starts empty: no managed policy, only the right to write its own log
 * group; every other permission is granted by intent where the function is wired up.
 */
export class SchedulerFunction extends LambdaFunction {
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
      code: functionCode(scope, props.entry, props.sourceMaps ?? false),
      handler: 'index.handler',
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memorySize,
      timeout: props.timeout,
      loggingFormat: LoggingFormat.JSON,
      logGroup,
      environment: {
        POWERTOOLS_SERVICE_NAME: props.serviceName,
        [TEXT_SETTINGS.metricsNamespace.env]: props.metricsNamespace,
        POWERTOOLS_LOG_LEVEL: 'INFO',
        ...(props.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
        ...props.environment,
      },
    });
  }
}
