/**
 * Tracing in the functions that serve and move tasks (the two APIs, the supervisor, the schedule fire): where their
 * spans go (`TRACING_ENV`), and, with the ADOT collector layer, the layer itself and the X-Ray writes its default
 * configuration makes. Off, none of this is added: no environment variable, no layer, no permission.
 */
import { Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { LayerVersion } from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';
import { TRACING_ENV, TRACING_EXPORT_TIMEOUT } from '../functions/domain/settings';
import type { SchedulerFunctions } from './scheduler-functions';
import { ADOT_COLLECTOR_ENDPOINT, type SchedulerTracing } from './scheduler-props';

/** The functions that record spans: every one that serves a task's step. */
export const TRACED_FUNCTIONS = ['agentApi', 'operatorApi', 'supervisor', 'scheduleFire'] as const;

export function addTracing(scope: Construct, functions: SchedulerFunctions, tracing: SchedulerTracing): void {
  const endpoint = tracing.otlpEndpoint ?? ADOT_COLLECTOR_ENDPOINT;
  const timeoutMs = tracing.exportTimeout?.toMilliseconds() ?? TRACING_EXPORT_TIMEOUT.default;
  const layer =
    tracing.collectorLayerArn === undefined
      ? undefined
      : LayerVersion.fromLayerVersionArn(scope, 'TracingCollectorLayer', tracing.collectorLayerArn);
  for (const name of TRACED_FUNCTIONS) {
    const fn = functions[name];
    fn.addEnvironment(TRACING_ENV.otlpEndpoint, endpoint);
    fn.addEnvironment(TRACING_ENV.exportTimeoutMs, String(timeoutMs));
    if (tracing.otlpHeaders && Object.keys(tracing.otlpHeaders).length > 0)
      fn.addEnvironment(TRACING_ENV.otlpHeaders, JSON.stringify(tracing.otlpHeaders));
    if (!layer) continue;
    fn.addLayers(layer);
    // The collector's default configuration sends the spans to X-Ray, whose writes name no resource.
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['xray:PutTraceSegments', 'xray:PutTelemetryRecords'],
        resources: ['*'],
      }),
    );
    Validations.of(fn.role ?? fn).acknowledge({
      id: 'AwsSolutions::AwsSolutions-IAM5[Resource::*]',
      reason:
        'X-Ray’s PutTraceSegments and PutTelemetryRecords take no resource; granted only with the collector layer, whose default configuration sends the spans to X-Ray.',
    });
  }
}
