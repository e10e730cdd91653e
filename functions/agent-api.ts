/** Lambda entry: the agent routes (session, heartbeat, claim, complete, fail, release); claims counted by queue. */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { agentRateLimitFromEnv } from '#adapters/environment';
import { claimCounters } from '#wiring/queue-metrics';
import { schedulerFromEnvironment } from '#wiring/runtime';
import { operationSpansHook, spanExporterFromEnvironment } from '#wiring/tracing';
import { agentOperations } from './http/agent-operations';
import { createHttpApi, type HttpApiEvent, type HttpApiResult } from './http/http-api';
import { routesServedBy } from './http/routes';

const logger = new Logger();
const metrics = new Metrics();
const api = createHttpApi(
  routesServedBy('agent'),
  agentOperations(schedulerFromEnvironment(logger, process.env, { counters: claimCounters(metrics) })),
  logger,
  {
    agentRateLimit: agentRateLimitFromEnv(),
    around: operationSpansHook(spanExporterFromEnvironment(logger)),
  },
);

export const handler = middy<HttpApiEvent, HttpApiResult>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics, { captureColdStartMetric: true }))
  .handler(api);
