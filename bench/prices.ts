/**
 * AWS list prices the benchmark turns counts into dollars with: us-east-1, on-demand, past any free tier.
 * Checked on the date below against the pages linked; change the table (and its date) when AWS changes them.
 */
export const PRICES = {
  checkedOn: '2026-11-21',
  region: 'us-east-1',
  dynamodb: {
    /** On-demand, per write request unit (1 KB) and read request unit (4 KB, strongly consistent). */
    writeUnit: 0.625 / 1e6,
    readUnit: 0.125 / 1e6,
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
  },
  sqs: {
    /** Standard queues, per request; each 64 KB chunk of a payload is billed as one request. */
    request: 0.4 / 1e6,
    source: 'https://aws.amazon.com/sqs/pricing/',
  },
  s3: {
    /** S3 Standard, per PUT and per GET request (large payloads); storage is not counted, as for DynamoDB. */
    put: 0.005 / 1e3,
    get: 0.0004 / 1e3,
    source: 'https://aws.amazon.com/s3/pricing/',
  },
  apiGateway: {
    /** HTTP APIs, first 300 million requests a month, per request of up to 512 KB. */
    httpRequest: 1.0 / 1e6,
    /**
     * WebSocket APIs (the push channel), first billion a month: per connection minute, and per message sent or
     * received, metered in 32 KB units (a frame of 33 KB is two).
     */
    webSocketConnectionMinute: 0.25 / 1e6,
    webSocketMessage: 1.0 / 1e6,
    source: 'https://aws.amazon.com/api-gateway/pricing/',
  },
  lambda: {
    /** arm64: per request, and per GB-second of duration. */
    request: 0.2 / 1e6,
    gbSecond: 0.0000133334,
    source: 'https://aws.amazon.com/lambda/pricing/',
  },
  eventBridge: {
    /** Scheduler invocations, and custom events put on a bus (per 64 KB chunk). */
    schedulerInvocation: 1.0 / 1e6,
    customEvent: 1.0 / 1e6,
    source: 'https://aws.amazon.com/eventbridge/pricing/',
  },
} as const;

/** Memory of the API functions in the construct (`infra/agent-scheduler.ts`): duration is billed at this size. */
export const API_FUNCTION_MEMORY_GB = 512 / 1024;

/** Memory of each function an idle agent reaches, as the construct sizes them (`infra/agent-scheduler.ts`). */
export const FUNCTION_MEMORY_GB = {
  agentApi: 512 / 1024,
  operatorApi: 512 / 1024,
  /** The HTTP API's agent-token authorizer (its answer cached 60 s per token). */
  authorizer: 256 / 1024,
  /** The WebSocket API's `$connect` ticket authorizer. */
  pushAuthorizer: 256 / 1024,
  /** `$connect`, `$disconnect` and `$default` of the WebSocket API. */
  pushApi: 256 / 1024,
} as const;
