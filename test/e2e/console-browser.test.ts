/**
 * The web console in headless Chromium against the local stack on the emulators, as an operator uses it: sign in
 * with the printed code, see a task submitted through the API appear and open it, read a task's attempts on a time
 * axis and follow its flow drawn as a graph to its child, list the tasks needing attention and clear one's mark,
 * cancel another, pause and resume a queue and the whole scheduler, read each queue's last hour (from the event
 * feed, and from a fake CloudWatch for a deployed stack), redrive a dead task, see how long an open waitpoint has
 * waited, approve and reject a suspended task's waitpoint, watch a role change hands, read a rate limit's use (drawn
 * too) and its keys' and set new terms for it. Every action is checked on the stack itself, not only on the page.
 * Screenshots at a laptop's and a phone's width go to `test-results/console/`; every view is scanned by axe-core for
 * serious and critical violations. `npm run console:screenshots` runs it with `CONSOLE_SCREENSHOTS` set: the
 * pictures the docs show are then saved to `docs/console/`, cropped to what they show.
 */
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalEventFeed } from '#adapters/event-publishers';
import { loadConsoleAssets } from '#console/assets';
import { monitoringSigner } from '#console/aws-signer';
import { consoleGateway } from '#console/gateway';
import { startConsoleServer } from '#console/server';
import { bearerUpstream, signedUpstream } from '#console/upstream';
import type { LocalServer } from '#local/server';
import { AgentSchedulerClient } from '#sdk/client';
import { docScreenshots, launchChromium, screenshot, seriousViolations } from '#test/browser';
import { claimUntil, createTestStack, serveStack, startAgent, type TestStack } from '#test/stack';

const OPERATOR = 'op_console-browser';
const LAPTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

describe('the web console in a browser', () => {
  let stack: TestStack;
  let server: LocalServer;
  let operator: AgentSchedulerClient;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let code = '';
  let heldSubmits: Promise<void> = Promise.resolve();
  /** The waitpoint answers the console sent on to the API: `POST /v1/waitpoints/<id>/<answer>`. */
  const waitpointAnswers: string[] = [];
  const violations: { view: string; ids: string[] }[] = [];
  /** The local stack's event feed, which the page reads too. */
  let events: LocalEventFeed;

  beforeAll(async () => {
    events = new LocalEventFeed(join(mkdtempSync(join(tmpdir(), 'console-events-')), 'events.jsonl'));
    stack = await createTestStack({
      queues: ['work', 'other', 'waits', 'reporting', 'limited', 'starved', 'flows'],
      events,
      // The claims and completions the task's attempts and the queues' charts are drawn from; children for its flow.
      settings: { routineEvents: true, agentSubmitQueues: ['flows'] },
      scheduleBackend: { put: async () => undefined, remove: async () => undefined },
    });
    const assets = await loadConsoleAssets();
    server = await serveStack(stack, OPERATOR, {
      events,
      console: (url) =>
        consoleGateway({
          mode: 'local',
          endpoint: url,
          events: 'poll',
          assets,
          upstream: async (request) => {
            // A test may hold submits back, as a slow API would.
            const { pathname } = new URL(request.url);
            if (request.method === 'POST' && pathname === '/v1/tasks') await heldSubmits;
            if (request.method === 'POST' && pathname.startsWith('/v1/waitpoints/'))
              waitpointAnswers.push(pathname);
            return bearerUpstream(OPERATOR)(request);
          },
          onCode: (next) => {
            code = next;
          },
        }),
    });
    operator = new AgentSchedulerClient({ endpoint: server.url, token: OPERATOR });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: LAPTOP });
    page = await context.newPage();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await stack?.destroy();
  });

  /** Scans the page as it is now; the test's last step checks that nothing serious was found anywhere. */
  const scan = async (view: string) => {
    const found = await seriousViolations(page);
    if (found.length > 0) console.log(`[console] ${view}: ${JSON.stringify(found, null, 2)}`);
    violations.push({ view, ids: found.map((v) => `${v.id} (${v.impact})`) });
  };
  const open = async (hash: string, heading: string | RegExp) => {
    await page.goto(`${server.url}/${hash}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  };
  const confirm = async () => {
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog.waitFor({ state: 'hidden' });
  };

  /** A task of queue `waits`, claimed by an agent of its own and suspended on a waitpoint for an hour. */
  const suspendedTask = async (name: string) => {
    const { task } = await operator.submitTask({ queue: 'waits', payload: { ask: name } });
    const agent = await startAgent(stack.scheduler, { name, queues: ['waits'] });
    const [lease] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(lease?.taskId).toBe(task.taskId);
    await stack.scheduler.wait(
      { taskId: task.taskId, agentId: agent.agentId, leaseEpoch: lease?.leaseEpoch ?? 0 },
      { timeoutSeconds: 3_600 },
    );
    expect((await operator.getTask(task.taskId)).status).toBe('suspended');
    // As the API shows it, times in ISO.
    const { waitpoints } = await operator.listWaitpoints({ limit: 100 });
    const waitpoint = waitpoints.find((w) => w.taskId === task.taskId);
    if (!waitpoint) throw new Error(`no open waitpoint of task ${task.taskId}`);
    return { task, agent, waitpoint };
  };
  const openWaitpointIds = async () =>
    (await operator.listWaitpoints({ limit: 100 })).waitpoints.map((w) => w.waitpointId);

  it('lets a browser in only with the code printed on the terminal, for an HttpOnly cookie', async () => {
    await page.goto(`${server.url}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await scan('sign in');
    await page.getByLabel('Login code').fill('WRNG-CODE');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /not the login code/ })
      .waitFor();

    await page.getByLabel('Login code').fill(code);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Queues' }).waitFor();
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    // Nothing secret in the page or its address.
    expect(page.url()).not.toContain(cookies[0]?.value ?? '');
    expect(await page.content()).not.toContain(cookies[0]?.value ?? '');
    expect(await page.content()).not.toContain(OPERATOR);
    expect(
      await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie),
    ).toBe('');
  });

  it('shows a task submitted through the API, and opens it', async () => {
    const { task } = await operator.submitTask({ queue: 'work', payload: { topic: 'tides' } });
    await open('#/tasks', 'Tasks');
    const link = page.getByRole('link', { name: task.taskId, exact: true });
    await link.waitFor({ timeout: 10_000 });
    await scan('tasks');
    await screenshot(page, 'tasks-1280');
    await link.click();
    await page.getByRole('heading', { level: 1, name: new RegExp(task.taskId) }).waitFor();
    await expect
      .poll(() => page.locator('[data-field="status"]').first().textContent())
      .toMatch(/queued|ready/);
    await page.getByRole('button', { name: 'Show payload' }).click();
    await expect
      .poll(() => page.getByRole('region', { name: 'Payload' }).last().textContent())
      .toContain('"tides"');
    await scan('task');
    await screenshot(page, 'task-1280');
  });

  it('shows an agent’s labels and what a task requires', async () => {
    const { agent } = await operator.createAgent({
      name: 'console-gpu',
      queues: ['work'],
      labels: { gpu: ['a100', 'h100'], model: 'claude' },
    });
    await open('#/agents', 'Agents');
    const row = page.getByRole('row').filter({ hasText: agent.agentId });
    await expect.poll(() => row.first().textContent(), { timeout: 10_000 }).toContain('gpu=a100|h100');
    expect(await row.first().textContent()).toContain('model=claude');
    const { task } = await operator.submitTask({
      queue: 'work',
      payload: {},
      require: { gpu: 'h100', model: '*' },
      delaySeconds: 3_600,
    });
    await open(`#/tasks/${task.taskId}`, new RegExp(task.taskId));
    await expect.poll(() => page.locator('body').textContent()).toContain('gpu=h100, model=*');
    await operator.cancelTask(task.taskId);
    await operator.revokeAgent(agent.agentId);
  });

  it('submits a task from its dialog, which stays until the API answered, however it is asked to close', async () => {
    let answer = () => {};
    heldSubmits = new Promise<void>((resolve) => {
      answer = resolve;
    });
    await open('#/tasks', 'Tasks');
    await page.getByRole('button', { name: 'Submit task' }).click();
    const dialog = page.getByRole('dialog', { name: 'Submit a task?' });
    await dialog.waitFor();
    await dialog.getByLabel('Payload (JSON)').fill('{"from":"the console"}');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    // The API has not answered: Escape and "Keep as is" leave the dialog as it is.
    await page.keyboard.press('Escape');
    await dialog.getByRole('button', { name: 'Keep as is' }).click({ force: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await dialog.isVisible()).toBe(true);
    answer();
    heldSubmits = Promise.resolve();
    await dialog.waitFor({ state: 'hidden' });
    await page
      .getByRole('status')
      .filter({ hasText: /submitted to work/ })
      .waitFor();
    const listed = await operator.listTasks({ queue: 'work', limit: 100 });
    const mine = [];
    for (const task of listed.tasks) {
      const read = await operator.getTask(task.taskId, { includePayload: true });
      if (JSON.stringify(read.payload) === '{"from":"the console"}') mine.push(task.taskId);
    }
    expect(mine).toHaveLength(1);
  });

  it('filters tasks by concurrency key', async () => {
    const { task: keyed } = await operator.submitTask({
      queue: 'work',
      payload: {},
      concurrencyKey: 'tenant-7',
    });
    const { task: other } = await operator.submitTask({ queue: 'work', payload: {} });
    await open('#/tasks', 'Tasks');
    await page.getByRole('link', { name: other.taskId, exact: true }).waitFor();
    await page.getByLabel('Concurrency key').fill('tenant-7');
    await page.getByLabel('Concurrency key').press('Enter');
    await page.getByLabel('Concurrency key').blur();
    await page.getByRole('link', { name: other.taskId, exact: true }).waitFor({ state: 'detached' });
    await page.getByRole('link', { name: keyed.taskId, exact: true }).waitFor();
    await page.getByLabel('Concurrency key').fill('');
    await page.getByLabel('Concurrency key').blur();
  });

  it('filters the tasks needing attention, shows the mark on a task’s page, and clears it there', async () => {
    const { task: waited } = await operator.submitTask({ queue: 'starved', payload: { waited: true } });
    const { task: plain } = await operator.submitTask({ queue: 'starved', payload: {} });
    // The starvation ladder's last step, as a supervisor pass writes it.
    const read = await stack.ctx.tasks.get(waited.taskId);
    if (!read) throw new Error('the task was read back');
    await stack.ctx.tasks.climbLadder(read, { fromLevel: 0, toLevel: 3, needsAttention: true });
    await open('#/tasks', 'Tasks');
    await page.getByRole('link', { name: plain.taskId, exact: true }).waitFor();
    await page.getByLabel('Attention', { exact: true }).selectOption('true');
    await page.getByRole('link', { name: plain.taskId, exact: true }).waitFor({ state: 'detached' });
    const row = page.getByRole('row').filter({ hasText: waited.taskId });
    await expect.poll(() => row.getByRole('cell').nth(3).textContent()).toBe('queued needs attention');
    await scan('tasks needing attention');
    await page.getByRole('link', { name: waited.taskId, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: new RegExp(waited.taskId) }).waitFor();
    const mark = page.locator('[data-field="needs-attention"]');
    await expect.poll(() => mark.textContent()).toMatch(/^yes/);
    await page.getByRole('button', { name: 'Clear attention' }).click();
    await expect.poll(() => mark.textContent()).toBe('no');
    expect(await page.getByRole('button', { name: 'Clear attention' }).count()).toBe(0);
    expect((await operator.getTask(waited.taskId)).needsAttention).toBeUndefined();
    expect((await operator.listTasks({ queue: 'starved', attention: true })).tasks).toEqual([]);
  });

  it('shows a running task’s progress on its page as its holder reports it, without a reload', async () => {
    const { task } = await operator.submitTask({ queue: 'reporting', payload: {} });
    const agent = await startAgent(stack.scheduler, { name: 'reporter', queues: ['reporting'] });
    const [lease] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    const report = (percent: number, message: string) =>
      stack.scheduler.reportProgress(agent.agentId, {
        taskId: task.taskId,
        leaseEpoch: lease?.leaseEpoch ?? 0,
        percent,
        message,
        data: { percent },
      });
    await report(25, 'reading the sources');
    await open(`#/tasks/${encodeURIComponent(task.taskId)}`, new RegExp(task.taskId));
    const message = page.locator('[data-field="progress-message"]');
    await expect.poll(() => message.textContent()).toBe('reading the sources');
    expect(await page.locator('[data-key="progress-bar"]').getAttribute('value')).toBe('25');
    await scan('task page with progress');

    await report(80, 'writing the summary');

    await expect.poll(() => message.textContent(), { timeout: 5_000 }).toBe('writing the summary');
    expect(await page.locator('[data-key="progress-bar"]').getAttribute('value')).toBe('80');
    expect(await page.locator('[data-field="progress-percent"]').textContent()).toBe('80%');
  });

  it('draws a task’s flow, each node a link to its task, and its attempts on a time axis, each with a text alternative', async () => {
    const { task: root } = await operator.submitTask({ queue: 'flows', payload: {}, maxAttempts: 3 });
    const agent = await startAgent(stack.scheduler, { name: 'flow-runner', queues: ['flows'] });
    const claimNext = async () => {
      const [lease] = await claimUntil(stack.scheduler, agent, 1, 10_000);
      if (lease?.taskId !== root.taskId) throw new Error('the task was not claimed');
      return { taskId: root.taskId, agentId: agent.agentId, leaseEpoch: lease.leaseEpoch };
    };
    // Attempt 1 fails and is retried at once; attempt 2 runs, reports and submits two children.
    await stack.scheduler.fail(await claimNext(), { message: 'flaky' }, { retryAfterSeconds: 0 });
    const running = await claimNext();
    await stack.scheduler.reportProgress(agent.agentId, {
      taskId: root.taskId,
      leaseEpoch: running.leaseEpoch,
      percent: 40,
    });
    const children = await stack.scheduler.submitChildren({ ...running, parentTaskId: root.taskId }, [
      { key: 'a', queue: 'flows', payload: {}, delaySeconds: 3_600 },
      { key: 'b', queue: 'flows', payload: {}, delaySeconds: 3_600 },
    ]);
    const childIds = children.map((c) => (c.ok ? c.task.taskId : ''));
    const { task: after } = await operator.submitTask({
      queue: 'flows',
      payload: {},
      dependsOn: [root.taskId],
    });

    await open(`#/tasks/${root.taskId}`, new RegExp(root.taskId));
    const flow = page.getByRole('group', { name: `Flow of task ${root.taskId}: child: 2, dependent: 1` });
    await flow.waitFor({ timeout: 10_000 });
    // Children in the order the index gives them (one batch: the same creation time).
    expect(
      (
        await flow.getByRole('link').evaluateAll((links) => links.map((a) => a.getAttribute('aria-label')))
      ).sort(),
    ).toEqual([...childIds.map((id) => `child ${id} queued`), `dependent ${after.taskId} waiting`].sort());
    // The text alternative: each edge a sentence.
    await page.getByText('The flow as a list').click();
    expect((await page.locator('.picture-list li').allTextContents()).sort()).toEqual(
      [
        ...childIds.map((id) => `this task submitted child ${id} (queued)`),
        `this task must succeed before dependent ${after.taskId} (waiting)`,
      ].sort(),
    );

    const attempts = page.getByRole('table', { name: 'Attempts' });
    await expect
      .poll(
        () =>
          attempts
            .getByRole('row')
            .evaluateAll((rows) => rows.slice(1).map((r) => r.children[5]?.textContent)),
        { timeout: 10_000 },
      )
      .toEqual(['failed, retried', 'running']);
    const bars = page.getByRole('img', {
      name: 'Attempts of the task, 2 claims: 1 failed, retried, 1 running',
    });
    expect(await bars.locator('rect').count()).toBe(2);
    expect(await bars.locator('circle.progress-dot').count()).toBe(1);
    await scan('task flow and attempts');
    await docScreenshots(
      page,
      'task-flow',
      () => page.getByRole('region', { name: 'Flow graph' }),
      () => flow.waitFor(),
    );

    await docScreenshots(
      page,
      'task-attempts',
      () => page.locator('section', { has: attempts }),
      () => bars.waitFor(),
    );

    // A node is a link to its task's page.
    await flow.getByRole('link', { name: `child ${childIds[0]} queued` }).click();
    await page.getByRole('heading', { level: 1, name: new RegExp(childIds[0] ?? '') }).waitFor();
  });

  it('cancels another task from its page, after confirmation', async () => {
    const { task } = await operator.submitTask({ queue: 'work', payload: { n: 2 } });
    await open(`#/tasks/${encodeURIComponent(task.taskId)}`, new RegExp(task.taskId));
    await page.getByRole('button', { name: 'Cancel task' }).click();
    await scan('cancel dialog');
    await confirm();
    await expect.poll(() => page.locator('[data-field="status"]').first().textContent()).toBe('cancelled');
    expect((await operator.getTask(task.taskId)).status).toBe('cancelled');
  });

  it('cancels a task with its descendants from its page, and shows how far that came', async () => {
    const { task } = await operator.submitTask({ queue: 'work', payload: { n: 3 } });
    await open(`#/tasks/${encodeURIComponent(task.taskId)}`, new RegExp(task.taskId));
    await page.getByRole('button', { name: 'Cancel with descendants' }).click();
    await scan('cancel tree dialog');
    await confirm();
    await expect.poll(() => page.locator('[data-field="status"]').first().textContent()).toBe('cancelled');
    await expect.poll(() => page.locator('[data-field="cascade-state"]').textContent()).toBe('done');
    expect(await page.getByRole('button', { name: 'Cancel with descendants' }).count()).toBe(0);
    expect((await operator.getTask(task.taskId)).cascade).toMatchObject({ done: true, cancelled: 0 });
  });

  it('works by keyboard: a dialog opens on Enter, Escape keeps things as they were, focus comes back', async () => {
    await open('#/queues', 'Queues');
    const pause = page.getByRole('button', { name: 'Pause work' });
    await pause.focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Pause queue work?' });
    await dialog.waitFor();
    // The safe answer has focus.
    await expect
      .poll(() =>
        page.evaluate(
          () =>
            (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document
              .activeElement.textContent,
        ),
      )
      .toBe('Keep as is');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await expect
      .poll(() =>
        page.evaluate(() =>
          (
            globalThis as unknown as { document: { activeElement: { getAttribute(name: string): string } } }
          ).document.activeElement.getAttribute('aria-label'),
        ),
      )
      .toBe('Pause work');
    expect((await operator.listQueues()).find((q) => q.name === 'work')?.paused).toBe(false);
  });

  it('pauses and resumes a queue, after confirmation', async () => {
    await open('#/queues', 'Queues');
    await page.getByRole('button', { name: 'Pause work' }).click();
    await confirm();
    await page.getByRole('button', { name: 'Resume work' }).waitFor();
    expect((await operator.listQueues()).find((q) => q.name === 'work')?.paused).toBe(true);
    await scan('queues');
    await screenshot(page, 'queues-1280');
    await page.getByRole('button', { name: 'Resume work' }).click();
    await confirm();
    await page.getByRole('button', { name: 'Pause work' }).waitFor();
    expect((await operator.listQueues()).find((q) => q.name === 'work')?.paused).toBe(false);
  });

  it('draws each queue’s last hour from the local events, queued and claims a minute, with the numbers in a table', async () => {
    await operator.submitTasks([0, 1, 2].map((i) => ({ queue: 'flows', payload: { i } })));
    const agent = await startAgent(stack.scheduler, {
      name: 'charted',
      queues: ['flows'],
      maxConcurrency: 2,
    });
    expect(await claimUntil(stack.scheduler, agent, 2, 10_000, 2)).toHaveLength(2);
    // What the page must find: the API's count of the queue's queued tasks now, and the claims of the queue the feed
    // holds (the tests before took less than the hour).
    const depth = (await operator.listQueues()).find((q) => q.name === 'flows')?.depth;
    const queued = Object.values(depth ?? {}).reduce((sum: number, n) => sum + (n ?? 0), 0);
    const claims = events
      .read(0, 10_000)
      .events.filter((event) => event.type === 'task.claimed' && event.queue === 'flows').length;
    expect(claims).toBeGreaterThanOrEqual(2);
    await open('#/queues', 'Queues');
    const card = page.getByRole('figure', { name: 'Queue flows, last hour' });
    await expect
      .poll(() => card.locator('.chart-label').allTextContents(), { timeout: 10_000 })
      .toEqual([
        expect.stringMatching(new RegExp(`^Queued: last ${queued}, at most \\d+$`)),
        expect.stringMatching(new RegExp(`^Claims a minute: ${claims} in all, at most \\d+$`)),
      ]);
    expect(await card.getByRole('img').count()).toBe(2);
    expect(await card.locator('.spark-bar').count()).toBeGreaterThanOrEqual(1);
    // The text alternative: every minute, newest first, the last one's queued count the API's now.
    await card.getByText('The numbers of flows').click();
    await card.getByRole('table').waitFor();
    const rows = card.getByRole('table').getByRole('row');
    expect(await rows.count()).toBe(1 + 60);
    expect((await rows.nth(1).getByRole('cell').allTextContents()).slice(1, 2)).toEqual([String(queued)]);
    expect(await page.locator('[data-field="charts-cost"]').textContent()).toMatch(/costs nothing/);
    await scan('queues, last hour');
    await docScreenshots(
      page,
      'queues-last-hour',
      () => page.locator('section', { has: card }),
      () => card.getByRole('img').first().waitFor(),
    );
  });

  it('pauses and resumes the whole scheduler, after confirmation: no grants in any queue meanwhile', async () => {
    const { task } = await operator.submitTask({ queue: 'other', payload: { whole: true } });
    const agent = await startAgent(stack.scheduler, { name: 'held-back', queues: ['other'] });
    await open('#/queues', 'Queues');
    const state = page.locator('[data-field="scheduler-state"]');
    await expect.poll(() => state.textContent()).toBe('running');
    await page.getByRole('button', { name: 'Pause scheduler' }).click();
    const dialog = page.getByRole('dialog', { name: 'Pause the whole scheduler?' });
    await dialog.waitFor();
    await scan('pause scheduler dialog');
    await confirm();
    await page.getByRole('button', { name: 'Resume scheduler' }).waitFor();
    await expect.poll(() => state.textContent()).toBe('paused');
    expect(await page.locator('[data-field="scheduler-note"]').textContent()).toMatch(/no queue gives tasks/);
    expect((await operator.getSchedulerControl()).paused).toBe(true);
    // Held back: the agent's claim gets nothing, from a queue that is not paused on its own.
    expect(await stack.scheduler.claim(agent)).toEqual([]);
    expect((await operator.listQueues()).find((q) => q.name === 'other')?.paused).toBe(false);
    await scan('queues, scheduler paused');
    await page.getByRole('button', { name: 'Resume scheduler' }).click();
    await page.getByRole('dialog', { name: 'Resume the whole scheduler?' }).waitFor();
    await confirm();
    await page.getByRole('button', { name: 'Pause scheduler' }).waitFor();
    await expect.poll(() => state.textContent()).toBe('running');
    expect((await operator.getSchedulerControl()).paused).toBe(false);
    const [claimed] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(claimed?.taskId).toBe(task.taskId);
    await stack.scheduler.complete({
      taskId: task.taskId,
      agentId: agent.agentId,
      leaseEpoch: claimed?.leaseEpoch ?? 0,
    });
  });

  it('shows the supervisor’s figures below the queues: the passes, the last pass’s figures and their totals', async () => {
    const pass = await stack.scheduler.supervise();
    const { cumulative } = await operator.getSchedulerStats();
    // Loaded anew: a page already at the queues (the test before left it there) would show the pass only at its next
    // poll.
    await open('#/queues', 'Queues');
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Queues' }).waitFor();
    const lead = page.locator('[data-field="supervisor-passes"]');
    await expect
      .poll(() => lead.textContent(), { timeout: 10_000 })
      .toMatch(new RegExp(`^${cumulative.passes} passes; the last at .+, in \\d+ ms\\.$`));
    const figures = page.getByRole('region', { name: 'Supervisor' });
    const row = figures.getByRole('row', { name: /^Queued tasks looked at/ });
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      'Queued tasks looked at',
      String(pass.pendingRuns),
      String(cumulative.pendingRuns),
      '',
    ]);
    expect(await figures.getByRole('row').count()).toBe(1 + 14);
  });

  it('redrives a dead task from the dead letters', async () => {
    const { task } = await operator.submitTask({
      queue: 'other',
      payload: {},
      maxAttempts: 1,
    });
    const agent = await startAgent(stack.scheduler, { name: 'failing', queues: ['other'] });
    const [claimed] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(claimed?.taskId).toBe(task.taskId);
    await stack.scheduler.fail(
      { taskId: task.taskId, agentId: agent.agentId, leaseEpoch: claimed?.leaseEpoch ?? 0 },
      { message: 'the model refused' },
    );
    expect((await operator.getTask(task.taskId)).status).toBe('dead');
    await open('#/dead', 'Dead letters');
    const redrive = page.getByRole('button', { name: `Redrive ${task.taskId}` });
    await redrive.waitFor({ timeout: 10_000 });
    await scan('dead letters');
    await redrive.click();
    await confirm();
    await expect.poll(async () => (await operator.getTask(task.taskId)).status).not.toBe('dead');
    await redrive.waitFor({ state: 'detached', timeout: 10_000 });
  });

  it('lists an open waitpoint, and approves it from its task’s page with JSON data', async () => {
    const { task, agent, waitpoint } = await suspendedTask('approver');
    await open('#/waitpoints', 'Waitpoints');
    const row = page.getByRole('row').filter({ hasText: waitpoint.waitpointId });
    await row.waitFor({ timeout: 10_000 });
    expect(await row.getByRole('cell').allTextContents()).toEqual([
      waitpoint.waitpointId,
      task.taskId,
      expect.any(String),
      expect.stringMatching(/^\d+ s$|^\d+ min/),
      expect.any(String),
      'resume',
    ]);
    expect(await row.locator('time').nth(1).getAttribute('datetime')).toBe(waitpoint.timeoutAt);
    // How long it has waited, and its share of the hour before its timeout.
    const share = row.locator('meter');
    expect(await share.getAttribute('max')).toBe('3600');
    expect(Number(await share.getAttribute('value'))).toBeLessThan(600);
    await scan('waitpoints');
    await screenshot(page, 'waitpoints-1280');
    await docScreenshots(
      page,
      'waitpoints',
      () => page.getByRole('region', { name: 'Open waitpoints' }),
      () => row.waitFor(),
    );

    await row.getByRole('link', { name: task.taskId, exact: true }).click();
    await page.getByRole('heading', { level: 1, name: new RegExp(task.taskId) }).waitFor();
    await expect.poll(() => page.locator('[data-field="status"]').first().textContent()).toBe('suspended');
    expect(await page.locator('[data-field="waitpoint"]').textContent()).toBe(waitpoint.waitpointId);
    await expect
      .poll(() => page.locator('[data-field="timeout-at"] time').getAttribute('datetime'))
      .toBe(waitpoint.timeoutAt);
    await scan('suspended task');
    await screenshot(page, 'suspended-task-1280');
    await page.getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog', { name: `Approve waitpoint ${waitpoint.waitpointId}?` });
    await dialog.waitFor();
    await dialog.getByLabel('Data (JSON)').fill('{"ok":true}');
    await scan('approve dialog');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page
      .getByRole('status')
      .filter({ hasText: `Waitpoint ${waitpoint.waitpointId} approved` })
      .waitFor();
    // The page shows the task's new state, without the answers it no longer takes.
    await expect.poll(() => page.locator('[data-field="status"]').first().textContent()).toBe('queued');
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);

    expect(waitpointAnswers).toEqual([`/v1/waitpoints/${waitpoint.waitpointId}/complete`]);
    expect((await operator.getTask(task.taskId)).status).toBe('queued');
    expect(await openWaitpointIds()).not.toContain(waitpoint.waitpointId);
    const [resumed] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(resumed).toMatchObject({
      taskId: task.taskId,
      waitpoint: { id: waitpoint.waitpointId, outcome: 'completed', data: { ok: true } },
    });
  });

  it('rejects a waitpoint with the reason typed, which it requires', async () => {
    const { task, agent, waitpoint } = await suspendedTask('rejecter');
    await open(`#/tasks/${encodeURIComponent(task.taskId)}`, new RegExp(task.taskId));
    await page.getByRole('button', { name: 'Reject' }).click();
    const dialog = page.getByRole('dialog', { name: `Reject waitpoint ${waitpoint.waitpointId}?` });
    await dialog.waitFor();
    const reason = dialog.getByLabel('Reason');
    expect(await reason.getAttribute('required')).not.toBeNull();
    // Blank is no reason: refused in the dialog, nothing sent.
    await reason.fill('   ');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog
      .getByRole('alert')
      .filter({ hasText: /Reason: say why/ })
      .waitFor();
    expect(waitpointAnswers).toHaveLength(1);
    await scan('reject dialog');
    await reason.fill('not this week');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await expect.poll(() => page.locator('[data-field="status"]').first().textContent()).toBe('queued');

    expect(waitpointAnswers.at(-1)).toBe(`/v1/waitpoints/${waitpoint.waitpointId}/reject`);
    const [resumed] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(resumed).toMatchObject({
      taskId: task.taskId,
      waitpoint: { id: waitpoint.waitpointId, outcome: 'rejected', reason: 'not this week' },
    });
  });

  it('refuses data that is not JSON without sending it, and says when the waitpoint was answered elsewhere', async () => {
    const { task, agent, waitpoint } = await suspendedTask('late approver');
    await open(`#/tasks/${encodeURIComponent(task.taskId)}`, new RegExp(task.taskId));
    await page.getByRole('button', { name: 'Approve' }).click();
    const dialog = page.getByRole('dialog', { name: `Approve waitpoint ${waitpoint.waitpointId}?` });
    await dialog.waitFor();
    const sentBefore = waitpointAnswers.length;
    await dialog.getByLabel('Data (JSON)').fill('{ok: true}');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog
      .getByRole('alert')
      .filter({ hasText: /Data \(JSON\) is not valid JSON/ })
      .waitFor();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await dialog.isVisible()).toBe(true);
    expect(waitpointAnswers).toHaveLength(sentBefore);
    expect((await operator.getTask(task.taskId)).status).toBe('suspended');
    expect(await openWaitpointIds()).toContain(waitpoint.waitpointId);

    // Answered through the API while the dialog is open: the console's answer is refused (409), and says so.
    await operator.rejectWaitpoint(waitpoint.waitpointId, { reason: 'answered elsewhere' });
    await dialog.getByLabel('Data (JSON)').fill('{"ok":true}');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog
      .getByRole('alert')
      .filter({ hasText: /has ended already \(rejected\)/ })
      .waitFor();
    expect(waitpointAnswers.slice(sentBefore)).toEqual([`/v1/waitpoints/${waitpoint.waitpointId}/complete`]);
    await dialog.getByRole('button', { name: 'Keep as is' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const [resumed] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(resumed).toMatchObject({
      taskId: task.taskId,
      waitpoint: { id: waitpoint.waitpointId, outcome: 'rejected', reason: 'answered elsewhere' },
    });
    expect(resumed?.waitpoint).not.toHaveProperty('data');
  });

  it('shows a role change hands without a reload', async () => {
    const role = 'console-leader';
    const first = await startAgent(stack.scheduler, { name: 'leader-one' });
    const second = await startAgent(stack.scheduler, { name: 'leader-two' });
    await stack.scheduler.volunteerForRole(first.agentId, first.sessionId, role);
    await stack.scheduler.volunteerForRole(second.agentId, second.sessionId, role);
    await open('#/roles', 'Roles');
    const row = page.getByRole('row').filter({ hasText: role });
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain(first.agentId);
    await scan('roles');
    await stack.scheduler.releaseRole(first.agentId, role, 1);
    await expect
      .poll(async () => (await row.getByRole('cell').nth(1).textContent()) ?? '', { timeout: 10_000 })
      .toContain(second.agentId);
    await screenshot(page, 'roles-1280');
  });

  it('shows each rate limit’s use now and a per-key limit’s keys, and sets new terms from its page', async () => {
    // A key is whatever a task names: shown as text, never as markup.
    const key = 'tenant <b>"acme"</b> & co';
    await operator.setRateLimit('console.tenants', { limit: 10, per: 'day', perKey: true });
    await operator.setRateLimit('console.calls', { limit: 5, per: 'hour' });
    const { task } = await operator.submitTask({
      queue: 'limited',
      payload: {},
      rateLimits: [
        { name: 'console.tenants', units: 3, key },
        { name: 'console.calls', units: 2 },
      ],
    });
    // Granted, the task takes its units from each limit's window open now.
    const agent = await startAgent(stack.scheduler, { name: 'limited', queues: ['limited'] });
    const [lease] = await claimUntil(stack.scheduler, agent, 1, 10_000);
    expect(lease?.taskId).toBe(task.taskId);

    await open('#/rate-limits', 'Rate limits');
    const rowOf = (name: string) =>
      page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    const calls = rowOf('console.calls');
    await calls.waitFor({ timeout: 10_000 });
    expect(await calls.getByRole('cell').allTextContents()).toEqual([
      'console.calls',
      '5 per hour',
      'none',
      'no',
      expect.stringContaining(' to '),
      '2 of 5',
      'set',
    ]);
    const bar = calls.locator('meter');
    expect([await bar.getAttribute('value'), await bar.getAttribute('max')]).toEqual(['2', '5']);
    // The window open now: the hour, as the API gives it.
    const [start, end] = await calls
      .locator('time')
      .evaluateAll((times) => times.map((t) => t.getAttribute('datetime') ?? ''));
    expect(start).toMatch(/:00:00\.000Z$/);
    expect(Date.parse(end ?? '') - Date.parse(start ?? '')).toBe(3_600_000);
    expect(await rowOf('console.tenants').getByRole('cell').allTextContents()).toEqual([
      'console.tenants',
      '10 per day',
      'none',
      'yes',
      expect.stringContaining(' to '),
      'by key, 10 each',
      'set',
    ]);
    // The same use drawn: a bar per limit, named in words; a per-key limit's keys are on its page.
    const drawn = page.getByRole('img', {
      name: /^console\.calls: 2 of 5 used \(40%\), \d+% of the window passed$/,
    });
    expect(await drawn.getAttribute('data-used')).toBe('40');
    expect(await page.locator('.use-row', { hasText: 'console.tenants' }).textContent()).toContain(
      'by key, 10 each',
    );
    await scan('rate limits');
    await screenshot(page, 'rate-limits-1280');
    await docScreenshots(
      page,
      'rate-limits-use',
      () => page.locator('[data-field="limits-use"]'),
      () => drawn.waitFor(),
    );

    await page.getByRole('link', { name: 'console.tenants', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Rate limit console.tenants' }).waitFor();
    const keys = page.getByRole('table', { name: 'Keys' });
    const keyRow = keys.getByRole('row').filter({ hasText: key });
    await keyRow.waitFor({ timeout: 10_000 });
    expect(await keyRow.getByRole('cell').allTextContents()).toEqual([key, '3 of 10']);
    expect([
      await keyRow.locator('meter').getAttribute('value'),
      await keyRow.locator('meter').getAttribute('max'),
    ]).toEqual(['3', '10']);
    expect(await page.locator('#view b').count()).toBe(0);
    expect(await page.locator('[data-field="terms"]').textContent()).toBe('10 per day');
    expect(await page.locator('[data-field="capacity"]').textContent()).toBe('10');
    await scan('rate limit');
    await screenshot(page, 'rate-limit-1280');

    // New terms: the form shows the terms in force, and the page the new ones once set.
    await page.getByRole('button', { name: 'Set terms' }).click();
    const dialog = page.getByRole('dialog', { name: 'Set new terms for rate limit console.tenants?' });
    await dialog.waitFor();
    expect(await dialog.getByLabel('Limit').inputValue()).toBe('10');
    expect(await dialog.getByLabel('Per', { exact: true }).inputValue()).toBe('day');
    expect(await dialog.getByLabel('Per key').isChecked()).toBe(true);
    await dialog.getByLabel('Limit').fill('20');
    await scan('rate limit terms dialog');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page
      .getByRole('status')
      .filter({ hasText: 'Rate limit console.tenants now takes 20 per day.' })
      .waitFor();
    await expect.poll(() => page.locator('[data-field="terms"]').textContent()).toBe('20 per day');
    await expect.poll(() => keyRow.getByRole('cell').allTextContents()).toEqual([key, '3 of 20']);
    expect(await operator.getRateLimit('console.tenants')).toMatchObject({
      limit: 20,
      per: 'day',
      perKey: true,
      source: 'set',
    });

    // Terms the server refuses (a rate's windows shorter than 100 ms): the dialog stays, and says why.
    await page.getByRole('button', { name: 'Set terms' }).click();
    await dialog.waitFor();
    await dialog.getByLabel('Limit').fill('100');
    await dialog.getByLabel('Per', { exact: true }).selectOption('second');
    await dialog.getByLabel('Burst').fill('5');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await dialog
      .getByRole('alert')
      .filter({ hasText: /burst: at least 10 for a limit of 100 a second/ })
      .waitFor();
    expect(await dialog.isVisible()).toBe(true);
    expect(await operator.getRateLimit('console.tenants')).toMatchObject({ limit: 20, per: 'day' });
    await dialog.getByRole('button', { name: 'Keep as is' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await page.locator('[data-field="terms"]').textContent()).toBe('20 per day');
  });

  it('on its own server, for a stack without an event feed, shows the changes among the newest tasks, and each queue’s last hour from CloudWatch', async () => {
    // CloudWatch, as a fake on this machine: it answers each query of GetMetricData with two points.
    const asked: { target: string | undefined; authorization: string | undefined; body: string }[] = [];
    const cloudWatch = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', () => {
        asked.push({
          target: request.headers['x-amz-target'] as string | undefined,
          authorization: request.headers.authorization,
          body,
        });
        const { MetricDataQueries, EndTime } = JSON.parse(body) as {
          MetricDataQueries: { Id: string }[];
          EndTime: number;
        };
        const results = MetricDataQueries.map(({ Id }) =>
          Id.startsWith('d')
            ? { Id, Timestamps: [EndTime - 180, EndTime - 120], Values: [5, 3], StatusCode: 'Complete' }
            : { Id, Timestamps: [EndTime - 120], Values: [4], StatusCode: 'Complete' },
        );
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end(JSON.stringify({ MetricDataResults: results, Messages: [] }));
      });
    });
    await new Promise<void>((resolve) => cloudWatch.listen(0, '127.0.0.1', resolve));
    const address = cloudWatch.address();
    const cloudWatchUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    let ownCode = '';
    const own = await startConsoleServer({
      metrics: {
        endpoint: cloudWatchUrl,
        namespace: 'AgentScheduler',
        send: signedUpstream(
          monitoringSigner('eu-west-1', { accessKeyId: 'AKIDCONSOLE', secretAccessKey: 'not-a-secret' }),
        ),
      },
      mode: 'deployed',
      endpoint: server.url,
      events: 'none',
      refreshSeconds: 1,
      assets: await loadConsoleAssets(),
      upstream: bearerUpstream(OPERATOR),
      port: 0,
      log: { info() {}, warn() {}, error() {} },
      onCode: (next) => {
        ownCode = next;
      },
    });
    const other = await browser.newContext({ viewport: LAPTOP });
    try {
      const tab = await other.newPage();
      await tab.goto(`${own.url}/#/events`);
      await tab.getByLabel('Login code').fill(ownCode);
      await tab.getByRole('button', { name: 'Sign in' }).click();
      await tab.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
      await tab.getByText(`Deployed · ${server.url}`).waitFor();
      // The first read takes note of what is there; what changes after it is shown.
      await tab.getByText('No changes yet.').waitFor();
      const { task } = await operator.submitTask({ queue: 'work', payload: { watched: true } });
      const row = tab.getByRole('row').filter({ hasText: task.taskId });
      await expect.poll(() => row.first().textContent(), { timeout: 10_000 }).toContain('new: queued');
      await operator.cancelTask(task.taskId);
      await expect
        .poll(() => tab.getByRole('row').filter({ hasText: 'queued → cancelled' }).count(), {
          timeout: 10_000,
        })
        .toBe(1);

      // The last hour of each queue, read from CloudWatch with the operator's signature, its cost said.
      await tab.goto(`${own.url}/#/queues`);
      const card = tab.getByRole('figure', { name: 'Queue work, last hour' });
      await expect
        .poll(() => card.locator('.chart-label').allTextContents(), { timeout: 10_000 })
        .toEqual(['Queued: last 3, at most 5', 'Claims a minute: 4 in all, at most 4']);
      expect(await tab.locator('[data-field="charts-cost"]').textContent()).toMatch(
        /^Read from CloudWatch once a minute while this view is shown: .* \$0\.0\d+ an hour for these \d+ queues\.$/,
      );
      expect(asked[0]?.target).toBe('GraniteServiceVersion20100801.GetMetricData');
      expect(asked[0]?.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDCONSOLE\/\d{8}\/eu-west-1\/monitoring\/aws4_request/,
      );
      expect(JSON.parse(asked[0]?.body ?? '{}').MetricDataQueries).toContainEqual(
        expect.objectContaining({
          Id: 'd0',
          MetricStat: expect.objectContaining({ Stat: 'Maximum', Period: 60 }),
        }),
      );
      await scan('queues of a deployed stack, last hour from CloudWatch');
    } finally {
      await other.close();
      await own.close();
      await new Promise((resolve) => cloudWatch.close(resolve));
    }
  });

  it('reads on a phone, and every view is free of serious accessibility violations', async () => {
    for (const [hash, heading] of [
      ['#/agents', 'Agents'],
      ['#/events', 'Events'],
      ['#/waitpoints', 'Waitpoints'],
    ] as const) {
      await open(hash, heading);
      await scan(heading.toLowerCase());
    }
    // Every waitpoint was answered: the list says there is none.
    await page.getByText('No open waitpoints: no task waits for an answer.').waitFor();
    // A schedule's next fires, in its own time zone.
    await operator.createSchedule({
      name: 'tokyo-noon',
      expression: 'cron(0 12 * * ? *)',
      timeZone: 'Asia/Tokyo',
      task: { queue: 'work', payload: {} },
    });
    await open('#/schedules', 'Schedules');
    await page.getByRole('link', { name: 'tokyo-noon' }).click();
    await page.getByRole('heading', { level: 1, name: /tokyo-noon/ }).waitFor();
    const fires = page.getByRole('list', { name: 'Next fires' }).getByRole('listitem');
    await expect.poll(() => fires.count()).toBe(5);
    expect(await fires.first().textContent()).toMatch(/12:00/);
    await scan('schedule');
    await page.setViewportSize(PHONE);
    for (const [hash, heading, name] of [
      ['#/queues', 'Queues', 'queues-390'],
      ['#/tasks', 'Tasks', 'tasks-390'],
      ['#/rate-limits', 'Rate limits', 'rate-limits-390'],
    ] as const) {
      await open(hash, heading);
      // Nothing wider than the phone's screen but the tables, which scroll in their own box.
      const overflow = await page.evaluate(() => {
        const doc = (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
          .document;
        return doc.documentElement.scrollWidth;
      });
      expect(overflow).toBeLessThanOrEqual(PHONE.width);
      await scan(`${heading.toLowerCase()} at 390 px`);
      await screenshot(page, name);
    }
    expect(violations.filter((v) => v.ids.length > 0)).toEqual([]);
    expect(violations.length).toBeGreaterThanOrEqual(29);
  });
});
