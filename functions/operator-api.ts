/** Lambda entry: the operator routes (tasks, queues, agents, schedules) and health. */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware';
import middy from '@middy/core';
import { schedulerFromEnvironment } from '#wiring/runtime';
import { operationSpansHook, spanExporterFromEnvironment } from '#wiring/tracing';
import { createHttpApi, type HttpApiEvent, type HttpApiResult } from './http/http-api';
import { operatorOperations } from './http/operator-operations';
import { routesServedBy } from './http/routes';

const logger = new Logger();
const metrics = new Metrics();
const api = createHttpApi(
  routesServedBy('operator'),
  operatorOperations(schedulerFromEnvironment(logger, process.env, { schedules: true })),
  logger,
  { around: operationSpansHook(spanExporterFromEnvironment(logger)) },
);

export const handler = middy<HttpApiEvent, HttpApiResult>()
  .use(injectLambdaContext(logger))
  .use(logMetrics(metrics, { captureColdStartMetric: true }))
  .handler(api);
