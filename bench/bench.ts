/**
 * `npm run bench -- [--tasks N] [--agents M] [--batch K] [--payload BYTES] [--warmup N] [--json]`
 *
 * Runs the local stack under load and reports throughput, latency, the AWS requests and capacity one task costs,
 * and dollars per million tasks at the list prices of `bench/prices.ts`. Figures, not a pass or fail.
 *
 * By default 1,000 tasks run first and are not measured: in its first seconds DynamoDB Local (a JVM) is still
 * compiling its hot paths, so a cold run measures the emulator's start as much as the scheduler. `--warmup 0`
 * measures from cold. Requests and capacity per task are the same either way; speed, latency and the measured
 * function durations (so Lambda's share of the dollars) are not.
 */
import { parseArgs } from 'node:util';
import { runBench } from './run-bench';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '2000' },
    agents: { type: 'string', default: '10' },
    batch: { type: 'string', default: '1' },
    payload: { type: 'string', default: '1024' },
    warmup: { type: 'string', default: '1000' },
    json: { type: 'boolean', default: false },
  },
});

const positive = (name: string, value: string | undefined, max: number): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    console.error(`--${name} must be an integer from 1 to ${max}`);
    process.exit(2);
  }
  return n;
};

const report = await runBench({
  tasks: positive('tasks', values.tasks, 1_000_000),
  agents: positive('agents', values.agents, 1_000),
  batch: positive('batch', values.batch, 10),
  payloadBytes: positive('payload', values.payload, 250_000),
  warmupTasks: values.warmup === '0' ? 0 : positive('warmup', values.warmup, 1_000_000),
});

if (values.json) {
  console.log(JSON.stringify(report));
} else {
  const t = report.perTask;
  console.log(
    [
      `${report.tasks} tasks, ${report.agents} agents, batch ${report.batch}, payload ${report.payloadBytes} B, after ${report.warmupTasks} warm-up tasks`,
      `throughput      ${report.tasksPerSecond} tasks/s (${report.durationMs} ms)`,
      `dispatch        p50 ${report.dispatchLatencyMs.p50} ms, p99 ${report.dispatchLatencyMs.p99} ms (submit → claimed)`,
      `completion      p50 ${report.completionLatencyMs.p50} ms, p99 ${report.completionLatencyMs.p99} ms (submit → completed)`,
      `per task        ${t.dynamodbWriteUnits} WCU (${t.dynamodbIndexWriteUnits} on indexes), ${t.dynamodbReadUnits} RCU, ${t.sqsRequests} SQS requests, ${t.apiCalls} API calls, ${t.lambdaInvocations} invocations, ${t.lambdaMs} ms, ${t.events} events`,
      `requests        ${Object.entries(t.requests)
        .map(([operation, n]) => `${operation} ${n}`)
        .join(', ')}`,
      `$ per million   ${report.usdPerMillionTasks} (${Object.entries(report.usdPerMillionTasksByService)
        .map(([service, usd]) => `${service} ${usd}`)
        .join(', ')})`,
      `heartbeat       ${report.heartbeat.dynamodbWriteUnits} WCU, $${report.heartbeatUsdPerAgentHour} per agent-hour`,
      `idle agent      $${report.idleAgentUsdPerMonth} per month (${report.idleClaim.awsRequests} AWS requests per poll)`,
      `prices          ${report.prices}`,
    ].join('\n'),
  );
}
