/**
 * `npm run bench -- [--scenario throughput|idle|…] [--tasks N] [--agents M] [--batch K] [--payload BYTES] [--warmup N]
 * [--seed S] [--rate R] [--json] [--record] [--separate-claims]`
 *
 * `throughput` (the default) runs the local stack under load and reports throughput, latency, the AWS requests and
 * capacity one task costs, and dollars per million tasks at the list prices of `bench/prices.ts`. Figures, not a
 * pass or fail. Its agents claim as a full Worker does: each completion carries the next claim (`claimNext`);
 * `--separate-claims` makes each claim a call of its own. `--record` appends the run's figures to `bench/history.csv` (see `history.ts`).
 *
 * By default 1,000 tasks run first and are not measured: in its first seconds DynamoDB Local (a JVM) is still
 * compiling its hot paths, so a cold run measures the emulator's start as much as the scheduler. `--warmup 0`
 * measures from cold. Requests and capacity per task are the same either way; speed, latency and the measured
 * function durations (so Lambda's share of the dollars) are not.
 *
 * `idle` (`bench/run-idle.ts`; `--agents` default 50, `--tasks` default 50, `--seed` default 1) has idle Workers on
 * the push channel picked up by wakes, tasks submitted one at a time 0.2 to 2 s apart: pickup latency, wakes and
 * claims per task, and what an idle agent costs a month in AWS, with the push channel and polling as today.
 *
 * `scale` (`bench/scale-model.ts`; `--batch` default 1, `--agents` listeners per queue, default 50) prints each
 * partition tasks share, its units per task and the tasks a second DynamoDB's per-partition limits allow, then the
 * quotas that bind first. A model of today's layout, not a run.
 *
 * `workflow` (`bench/run-workflow.ts`; `--tasks` joins, default 50, `--agents` dependencies per join, default 4)
 * prices a dependency edge and an agent's follow-up submit on top of plain tasks.
 *
 * `cascade` (`bench/run-cascade.ts`; `--tasks` default 5,000) cancels a tree of that many tasks with `cascade: true`
 * and reports what the call walked, and how long the supervisor's passes take to finish the walk.
 *
 * `rate-limit` (`bench/run-rate-limit.ts`; `--agents` default 20, `--tasks` default 1,200, `--seconds` default 60)
 * runs one named rate limit of 10 a second (burst 10) shared by three queues under parallel claimers: the most
 * grants any one second saw against `limit + burst`, and the share of the allowed grants used while work waited.
 *
 * `labels` (`bench/run-labels.ts`; `--agents` default 20, `--tasks` default 3,000, `--rate` tasks a second, default
 * 20, `--warmup` default 300) streams tasks at one priority, half unlabelled, half requiring labels that some of a
 * mixed fleet meet: each class's wait from claimable to claimed (p50, p90, p99), the difference of the p90s against
 * the issue's 100 ms, and the AWS requests per task.
 *
 * `on-time` (`bench/run-on-time.ts`; `--agents` default 8, `--tasks` delayed tasks, default 20, `--fires` default 5)
 * times held-back starts on an idle listening fleet in AWS's settings: a Scheduler that delivers anywhere in the
 * minute, early fires, the wake timer, no supervisor pass. Takes `--fires` + 2 minutes or so.
 *
 * `fleet` (`bench/run-fleet.ts`, `npm run bench:fleet`; `--agents` processes of each language, default 4,
 * `--concurrency` default 4, `--tasks` per fleet and round, default 2,000, `--warmup` default 500, `--rounds`
 * default 2) runs agent processes in Python and in TypeScript, the same number of each, one fleet after the other on
 * the same stack, with handlers that return at once: each fleet's tasks/s and the ratio Python/TypeScript, with the
 * CPU each fleet and the server spent and the API calls per task.
 */
import { parseArgs } from 'node:util';
import { SETTINGS } from '#domain/settings';
import { recordHistory } from './history';
import type { AgentMonth } from './idle-month';
import { runBench } from './run-bench';
import { runCascade } from './run-cascade';
import { type FleetFigures, runFleetBench } from './run-fleet';
import { runIdle } from './run-idle';
import { runLabels, type Waits } from './run-labels';
import { runOnTime } from './run-on-time';
import { runRateLimit } from './run-rate-limit';
import { type Cost, runWorkflow } from './run-workflow';
import { ceilings, lowestCeiling, quotas } from './scale-model';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const { values } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'throughput' },
    tasks: { type: 'string' },
    agents: { type: 'string' },
    batch: { type: 'string', default: '1' },
    payload: { type: 'string', default: '1024' },
    // Each scenario's own default: 1,000 for throughput, 300 for labels.
    warmup: { type: 'string' },
    seed: { type: 'string', default: '1' },
    json: { type: 'boolean', default: false },
    record: { type: 'boolean', default: false },
    fires: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '60' },
    rate: { type: 'string', default: '20' },
    'separate-claims': { type: 'boolean', default: false },
    concurrency: { type: 'string', default: '4' },
    rounds: { type: 'string', default: '2' },
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

if (values.scenario === 'idle') await idleScenario();
else if (values.scenario === 'throughput') await throughputScenario();
else if (values.scenario === 'workflow') await workflowScenario();
else if (values.scenario === 'scale') scaleScenario();
else if (values.scenario === 'on-time') await onTimeScenario();
else if (values.scenario === 'cascade') await cascadeScenario();
else if (values.scenario === 'rate-limit') await rateLimitScenario();
else if (values.scenario === 'labels') await labelsScenario();
else if (values.scenario === 'fleet') await fleetScenario();
else {
  console.error(
    '--scenario must be throughput, idle, workflow, scale, on-time, cascade, rate-limit, labels or fleet',
  );
  process.exit(2);
}

async function throughputScenario(): Promise<void> {
  const report = await runBench({
    tasks: positive('tasks', values.tasks ?? '2000', 1_000_000),
    agents: positive('agents', values.agents ?? '10', 1_000),
    batch: positive('batch', values.batch, 10),
    payloadBytes: positive('payload', values.payload, 250_000),
    warmupTasks: values.warmup === '0' ? 0 : positive('warmup', values.warmup ?? '1000', 1_000_000),
    separateClaims: values['separate-claims'],
  });

  if (values.record) console.error(`recorded in bench/history.csv: ${recordHistory(report)}`);
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
        `per task        ${t.dynamodbWriteUnits} WCU (${t.dynamodbIndexWriteUnits} on indexes, ${t.dynamodbFailedWriteUnits} refused writes), ${t.dynamodbReadUnits} RCU, ${t.sqsRequests} SQS requests, ${t.apiCalls} API calls, ${t.lambdaInvocations} invocations, ${t.events} events`,
        `Lambda per task ${t.lambdaMs} ms billed as modelled for AWS (${t.localLambdaMs} ms of handler time here; round trips assumed ${JSON.stringify(report.awsRoundTripMs)})`,
        `one lifecycle   ${(['submit', 'claim', 'complete'] as const)
          .map((name) => `${name} ${report.steps[name].writeUnits} WCU / ${report.steps[name].readUnits} RCU`)
          .join(
            ', ',
          )}: ${report.steps.lifecycle.writeUnits} WCU / ${report.steps.lifecycle.readUnits} RCU a task, measured alone`,
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
}

async function rateLimitScenario(): Promise<void> {
  const report = await runRateLimit({
    agents: positive('agents', values.agents ?? '20', 200),
    tasks: positive('tasks', values.tasks ?? '1200', 100_000),
    seconds: positive('seconds', values.seconds, 3_600),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  console.log(
    [
      `one named limit of ${report.limit.perSecond}/s (burst ${report.limit.burst}) shared by ${report.limit.queues} queues; ${report.agents} agents claiming in parallel; ${report.tasks} tasks for ${report.seconds} s`,
      `grants          ${report.grants} of ${report.allowed} the limit allowed (${report.usedPercent} %); ${report.stillQueued} tasks still waiting at the end`,
      `any one second  at most ${report.mostInOneSecond} grants (bound: limit + burst = ${report.bound})`,
    ].join('\n'),
  );
}

async function labelsScenario(): Promise<void> {
  const report = await runLabels({
    agents: positive('agents', values.agents ?? '20', 200),
    tasks: positive('tasks', values.tasks ?? '3000', 100_000),
    rate: positive('rate', values.rate, 1_000),
    warmup: values.warmup === '0' ? 0 : positive('warmup', values.warmup ?? '300', 100_000),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  const waits = (w: Waits) =>
    `p50 ${w.p50} ms, p90 ${w.p90} ms, p99 ${w.p99} ms, max ${w.max} ms (${w.tasks} tasks)`;
  console.log(
    [
      `labels: ${report.agents} agents with mixed labels, ${report.tasks} tasks at ${report.rate}/s on one queue and priority, half requiring labels; each worked ${report.workMs} ms; ${report.durationMs} ms; the first ${report.warmup} not measured`,
      `unlabelled      ${waits(report.unlabelled)}`,
      `labelled        ${waits(report.labelled)}`,
      ...Object.entries(report.bySet).map(
        ([set, w]) => `  ${set.padEnd(13)} met by ${w.agents} agents: ${waits(w)}`,
      ),
      `p90 difference  ${report.p90DifferenceMs} ms (bound ${report.boundMs} ms: ${report.p90DifferenceMs <= report.boundMs ? 'within' : 'OVER'}); ${report.unclaimed} tasks unclaimed at the end`,
      `AWS requests    ${report.requestsPerTask} a task (${Object.entries(report.requestsByOperation)
        .map(([operation, n]) => `${operation} ${n}`)
        .join(', ')}); hand-backs ${report.handBacksPerLabelledTask} a labelled task`,
    ].join('\n'),
  );
}

async function fleetScenario(): Promise<void> {
  const report = await runFleetBench({
    agents: positive('agents', values.agents ?? '4', 100),
    concurrency: positive('concurrency', values.concurrency, 100),
    tasks: positive('tasks', values.tasks ?? '2000', 1_000_000),
    warmupTasks: values.warmup === '0' ? 0 : positive('warmup', values.warmup ?? '500', 1_000_000),
    rounds: positive('rounds', values.rounds, 20),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  const line = (name: string, f: FleetFigures) =>
    `${name.padEnd(11)} ${f.tasksPerSecond} tasks/s (${f.tasks} tasks in ${f.durationMs} ms); CPU per task: agents ${f.agentCpuMsPerTask} ms, server ${f.serverCpuMsPerTask} ms; calls per task: ${Object.entries(
      f.callsPerTask,
    )
      .map(([operation, n]) => `${operation} ${n}`)
      .join(', ')}`;
  console.log(
    [
      `fleet: ${report.agents} Python and ${report.agents} TypeScript agent processes of concurrency ${report.concurrency}, one fleet after the other, ${report.rounds} rounds, after ${report.warmupTasks} warm-up tasks each`,
      line('Python', report.python),
      line('TypeScript', report.typescript),
      `ratio       ${report.ratio} (Python / TypeScript)`,
    ].join('\n'),
  );
}

async function cascadeScenario(): Promise<void> {
  const report = await runCascade({ tasks: positive('tasks', values.tasks ?? '5000', 100_000) });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  console.log(
    [
      `a tree of ${report.tasks} tasks (built in ${report.builtMs} ms), cancelled with cascade`,
      `the call        ${report.call.ms} ms: ${report.call.cancelled} descendants cancelled, ${report.call.pending} still to walk`,
      `supervisor      ${report.passes} passes back to back, ${report.passesMs} ms`,
      `in AWS          done within ${report.finishedWithinMs} ms of the call (a 60 s period before each pass, plus the last pass)`,
      `in all          ${report.cancelled} descendants cancelled, ${report.leftOpen} tasks left open`,
    ].join('\n'),
  );
}

async function workflowScenario(): Promise<void> {
  const report = await runWorkflow({
    groups: positive('tasks', values.tasks ?? '50', 10_000),
    fanIn: positive('agents', values.agents ?? '4', 100),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  const line = (name: string, c: Cost) =>
    `${name.padEnd(18)} ${c.requests} requests (${c.sqsRequests} SQS), ${c.writeUnits} WCU, ${c.readUnits} RCU, $${c.usdPerMillion} per million`;
  console.log(
    [
      `${report.groups} joins of ${report.fanIn} dependencies; ${report.groups} parents with one child each`,
      line('plain task', report.plainTask),
      line('dependency edge', report.dependencyEdge),
      line('follow-up submit', report.followUpSubmit),
    ].join('\n'),
  );
}

async function idleScenario(): Promise<void> {
  const report = await runIdle({
    agents: positive('agents', values.agents ?? '50', 1_000),
    tasks: positive('tasks', values.tasks ?? '50', 100_000),
    seed: positive('seed', values.seed, 2 ** 31),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  const s = (ms: number) => `${(ms / 1_000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const m = report.measured;
  const step = (usage: {
    requests: Readonly<Record<string, number>>;
    dynamodbReadUnits: number;
    dynamodbWriteUnits: number;
    lambdaMs: number;
  }) =>
    `${
      Object.entries(usage.requests)
        .map(([operation, n]) => `${operation} ${n}`)
        .join(', ') || 'no requests'
    }; ${usage.dynamodbWriteUnits} WCU, ${usage.dynamodbReadUnits} RCU; ${usage.lambdaMs} ms`;
  const usd = (value: number) => `$${value.toFixed(5)}`;
  const itemized = (agentMonth: AgentMonth) => [
    ...agentMonth.items.map(
      (i) =>
        `  ${i.item.padEnd(62)} ${String(i.perMonth).padStart(9)} × ${i.usdEach.toExponential(3)} = ${usd(i.usd)}`,
    ),
    `  ${'by service'.padEnd(62)} ${Object.entries(agentMonth.byService)
      .filter(([, v]) => v > 0)
      .map(([service, v]) => `${service} ${usd(v)}`)
      .join(', ')}`,
  ];
  const p = report.pollingPickupMs;
  console.log(
    [
      `idle: ${report.agents} idle Workers (push on, one queue), ${report.tasks} tasks one at a time ${report.spacingMs.min}–${report.spacingMs.max} ms apart (seed ${report.seed}); server defaults: safety poll ${s(report.settings.pushSafetyPollMs)}, ${report.settings.wakesPerTask} wake per task, cooldown ${report.settings.wakeCooldownMs} ms`,
      `load average    ${report.loadAverage.start} at start, ${report.loadAverage.end} at end; ${s(report.durationMs)} in all`,
      `idle fleet      all idle ${report.idle.readyMs} ms after start; ${report.idle.claimsInQuietWindow} claims in a ${report.idle.quietWindowMs} ms quiet window`,
      `pickup (push)   p50 ${report.pickupMs.p50} ms, p99 ${report.pickupMs.p99} ms, max ${report.pickupMs.max} ms, mean ${report.pickupMs.mean} ms (submit sent → handler start); ${report.pickupMs.missed} not picked up in 30 s`,
      `pickup (poll)   computed for push: false at the ${s(report.settings.idleClaimRetryMaxMs)} idle wait, not run: in step (one agent, or Workers started together) p50 ${s(p.inStep.p50)}, p99 ${s(p.inStep.p99)}, max ${s(p.inStep.max)}; ${report.agents} at random phases p50 ${s(p.independentPhases.p50)}, p99 ${s(p.independentPhases.p99)}, max ${s(p.independentPhases.max)}`,
      `per task        ${report.perTask.wakes} wakes, ${report.perTask.claims} claims; frames ${Object.entries(
        report.perTask.frames,
      )
        .map(([type, n]) => `${type} ${n}`)
        .join(
          ', ',
        )}; ${report.agentsWoken} agents woken (at most ${report.mostWakesOneAgent} wakes each), ${report.wokenTwiceWithinCooldown} woken twice within the cooldown`,
      'measured steps  (requests; DynamoDB units as AWS bills them; Lambda ms modelled for AWS)',
      `  first listening claim    ${step(m.listeningFirstClaim)} (marks idle, looks twice)`,
      `  safety poll, idle        ${step(m.listeningEmptyClaim)}; retryAfterMs ${m.listeningEmptyClaim.retryAfterMs}`,
      `  polling empty claim      ${step(m.pollingEmptyClaim)}; retryAfterMs ${m.pollingEmptyClaim.retryAfterMs}`,
      `  HTTP authorizer, cold    ${step(m.httpAuthorizer)}`,
      `  push ticket              ${step(m.ticket)}`,
      `  $connect authorizer      ${step(m.connectAuthorizer)}`,
      `  $connect (push-api)      ${step(m.connect)}`,
      `  $disconnect, replaced    ${step(m.disconnectReplaced)}`,
      `  keep-alive ping          ${m.keepAliveRequests} AWS requests`,
      `idle agent-month, push channel: ${usd(report.idleAgentMonth.push.usd)}`,
      ...itemized(report.idleAgentMonth.push),
      `idle agent-month, polling (today): ${usd(report.idleAgentMonth.polling.usd)} (${usd(report.idleAgentMonth.pollingWithoutAuthorizerUsd)} without the authorizer, as the throughput report prices it)`,
      ...itemized(report.idleAgentMonth.polling),
      `prices          ${report.prices}`,
    ].join('\n'),
  );
}

function scaleScenario(): void {
  const batch = positive('batch', values.batch, 10);
  const listeners = positive('agents', values.agents ?? '50', 100_000);
  const listenerShards = SETTINGS.listenerShards.default;
  const rows = (leasesHeld: number) => ceilings({ batch, leasesHeld, listeners, listenerShards });
  const modelled = rows(25);
  if (values.json) {
    console.log(JSON.stringify({ batch, listeners, partitions: modelled, quotas: quotas(batch) }));
    return;
  }
  const lines = [
    `batch ${batch}, ${listeners} listeners a queue over ${listenerShards} partitions; DynamoDB: 1,000 write / 3,000 read units a partition a second`,
  ];
  for (const c of modelled)
    lines.push(
      `${c.scope.padEnd(16)} ${String(c.tasksPerSecond).padStart(7)} tasks/s  ${c.key} (${c.writeUnitsPerTask} W, ${c.readUnitsPerTask} R a task; ${c.when})`,
    );
  const unlimited = lowestCeiling(modelled, 'queue', (c) => c.when === 'every task');
  lines.push(
    `a queue without limits or push: ${unlimited} tasks/s; with push wakes: ${lowestCeiling(modelled, 'queue', (c) => !c.when.startsWith('a queue with'))}`,
    `a concurrency key: ${lowestCeiling(modelled, 'concurrency key', (c) => c.when === 'a task with a concurrencyKey')} tasks/s`,
    `a queue with maxConcurrency: ${[25, 250, 1_000, 5_000].map((held) => `${lowestCeiling(rows(held), 'queue', (c) => c.when === 'a queue with maxConcurrency')} tasks/s at a limit of ${held}`).join(', ')}`,
    `a queue with ratePerSecond: ${lowestCeiling(modelled, 'queue', (c) => c.when === 'a queue with ratePerSecond')} tasks/s (the bucket, one item)`,
    'quotas that bind first:',
  );
  for (const q of quotas(batch))
    lines.push(
      `  ${q.quota}: ${q.limit}${q.tasksPerSecond ? ` = ${q.tasksPerSecond} tasks/s` : ''} (${q.note})`,
    );
  console.log(lines.join('\n'));
}

async function onTimeScenario(): Promise<void> {
  const report = await runOnTime({
    agents: positive('agents', values.agents ?? '8', 200),
    tasks: positive('tasks', values.tasks ?? '20', 1_000),
    fires: positive('fires', values.fires, 60),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    return;
  }
  const ms = (values: readonly number[]) => values.map((v) => Math.round(v)).join(', ');
  console.log(
    [
      `on time: ${report.agents} idle listening agents, no supervisor pass, Scheduler deliveries anywhere in the minute`,
      `  delayed tasks (${report.delayedMs.length}), ms after their time: ${ms(report.delayedMs)}`,
      `  schedule occurrences by early fire (${report.firesMs.length}): ${ms(report.firesMs)}`,
      `  first occurrence (no early fire yet): ${report.firstFireMs === undefined ? '-' : Math.round(report.firstFireMs)} ms`,
      `  together: p50 ${Math.round(report.p50)} ms, p90 ${Math.round(report.p90)} ms, max ${Math.round(report.max)} ms`,
    ].join('\n'),
  );
}
