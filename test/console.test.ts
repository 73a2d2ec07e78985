/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The functions given to page.evaluate run in the browser, with its globals.
import { randomBytes } from 'node:crypto';
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { create, toBinary } from '@bufbuild/protobuf';
import { createClient, type DocketClient } from '@docket/client';
import { WatchJobsRequestSchema } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { AdmissionService, ScheduleState } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { JobStatus } from '@docket/proto/docket/common/v1/job_status_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { demoHandler, serveConsole, type ConsoleServer, type ConsoleServices } from '@docket/cli';
import { createWorker, type Worker } from '@docket/worker-sdk';
import { REPO_ROOT } from './support/cluster.js';
import type { DocketServices } from './support/docket-services.js';
import { startInProcessCluster, stopInProcessClusters } from './support/in-process-cluster.js';
import { createMigratedTestDatabase } from './support/database.js';
import { openSql } from './support/sql.js';
import { clientFor } from './support/clients.js';
import { newOperationId } from './support/raw-worker.js';

/*
 * The web console (packages/console, built by `npm run build`) in a real
 * headless Chromium (Debian's `chromium`, driven by playwright-core),
 * served the way `docket dev` serves it, talking gRPC-Web straight to a
 * real admission and events service (CORS allowing the console's origin)
 * on a real PostgreSQL, with a real worker (the demo handler `docket
 * worker` runs) serving its queue. Nothing is reloaded while a job is
 * followed: every change arrives over the streams. Screenshots (list, job
 * page, submit form, queues, a queue's charts, workers, a waiting job) go to
 * test-output/console/ (gitignored) for a reviewer.
 */

const CHROMIUM = '/usr/bin/chromium';
const QUEUE = 'console-work';
const IDLE_QUEUE = 'console-idle';
const OUTPUT = join(REPO_ROOT, 'test-output', 'console');
const OWNER = 'console-owner';

let cluster: DocketServices;
let consoleServer: ConsoleServer;
let services: ConsoleServices | undefined;
let browser: Browser;
let worker: Worker;
let owner: DocketClient;
let ownerToken: string;

/** Browser console errors and uncaught page errors of the current test. */
const pageErrors: string[] = [];
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  await access(join(REPO_ROOT, 'packages', 'console', 'dist', 'index.html')).catch(() => {
    throw new Error('the console is not built: run npm run build');
  });
  await access(CHROMIUM).catch(() => {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does it)`);
  });
  await mkdir(OUTPUT, { recursive: true });
  consoleServer = await serveConsole({ root: join(REPO_ROOT, 'packages', 'console', 'dist'), host: '127.0.0.1', port: 0, services: () => services });
  const cors = { DOCKET_CORS_ORIGINS: consoleServer.url };
  cluster = await startInProcessCluster({
    databaseUrl: await createMigratedTestDatabase('web console'),
    env: { admission: cors, events: cors, state: { DOCKET_LEASE_MS: '3000' } },
  });
  services = { admissionUrl: cluster.admission.url, eventsUrl: cluster.events.url };
  ownerToken = await cluster.tokenFor(OWNER, 'user');
  owner = createClient({ admissionUrl: cluster.admission.url, eventsUrl: cluster.events.url, token: ownerToken });
  worker = createWorker({
    url: cluster.execution.url,
    token: await cluster.tokenFor('console-worker', 'worker', [QUEUE]),
    name: 'console-worker',
    queues: [QUEUE],
    concurrency: 2,
    claimWaitMs: 2_000,
    handler: demoHandler({ say: () => {}, checkpointEvery: 1 }),
  });
  await worker.start();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
});

afterEach(async () => {
  await Promise.all(contexts.splice(0).map((context) => context.close()));
  const errors = pageErrors.splice(0);
  expect(errors, 'browser console errors').toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  owner?.close();
  await consoleServer?.close();
  await stopInProcessClusters();
});

/** One gRPC-Web message frame: flags 0, the length as 4 bytes big-endian, the message. */
function grpcWebFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** A fresh browser tab (its own sessionStorage) with its console errors recorded. */
async function newPage(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
  contexts.push(context);
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return page;
}

/** Signs in by pasting `token`, as a person would; resolves on the job list. */
async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(`${consoleServer.url}/#/sign-in`);
  await page.getByLabel('Bearer token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Jobs' }).waitFor();
  // Set once per document: still there at the end means nothing reloaded.
  await page.evaluate(() => ((window as unknown as { docketNoReload: boolean }).docketNoReload = true));
}

/** `count` jobs of the owner's in `queue` that ended FAILED: a worker of the test claims them and reports a permanent failure. */
async function failedJobs(queue: string, count: number): Promise<string[]> {
  const ids = [];
  for (let index = 0; index < count; index += 1) ids.push((await owner.submit({ queue, input: { n: index } })).job.id);
  const execution = clientFor(ExecutionService, cluster.execution.url, await cluster.tokenFor('console-failer', 'worker', [queue]));
  const { workerIncarnation } = await execution.registerWorker({ workerName: 'console-failer', queues: [queue], maxConcurrency: count });
  const { assignments } = await execution.claimJobs({ workerIncarnation, queues: [queue], maxJobs: count, operationId: newOperationId() });
  expect(assignments).toHaveLength(count);
  for (const assignment of assignments) {
    await execution.reportOutcome({
      attempt: { attemptId: assignment.authority!.attemptId, fence: assignment.authority!.fence, workerIncarnation },
      operationId: newOperationId(),
      outcome: { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'the input was bad' } },
    });
  }
  return ids;
}

/** Form controls on the page that no label names (each must have a <label>, or an aria-label). */
async function unlabelledControls(page: Page): Promise<string[]> {
  return page.locator('input, select, textarea').evaluateAll((controls) =>
    controls
      .filter((control) => ((control as HTMLInputElement).labels?.length ?? 0) === 0 && !control.getAttribute('aria-label'))
      .map((control) => control.outerHTML),
  );
}

async function notReloaded(page: Page): Promise<boolean> {
  return page.evaluate(() => (window as unknown as { docketNoReload?: boolean }).docketNoReload === true);
}

async function jobStatus(page: Page): Promise<string | null> {
  return page.locator('#job-summary').getAttribute('data-status');
}

async function waitForStatus(page: Page, status: string, timeout = 30_000): Promise<void> {
  await page.locator(`#job-summary[data-status="${status}"]`).waitFor({ timeout });
}

/**
 * Records every value an attribute of the job page takes, as it changes
 * (observed in the page, so no change between two polls is missed): the
 * attribute of the first element matching `selector` inside the element
 * `containerId`, or of the container itself.
 */
async function recordAttribute(page: Page, containerId: string, selector: string | null, attribute: string): Promise<() => Promise<string[]>> {
  const slot = `docketSeen-${containerId}`;
  await page.evaluate(
    ([slotName, id, query, name]) => {
      const seen: string[] = [];
      (window as unknown as Record<string, string[]>)[slotName!] = seen;
      const container = document.getElementById(id!)!;
      const note = (): void => {
        const value = (query ? container.querySelector(query) : container)?.getAttribute(name!);
        if (value !== null && value !== undefined && seen.at(-1) !== value) seen.push(value);
      };
      note();
      new MutationObserver(note).observe(container, { subtree: true, childList: true, attributes: true });
    },
    [slot, containerId, selector, attribute] as const,
  );
  return () => page.evaluate((slotName) => [...(window as unknown as Record<string, string[]>)[slotName]!], slot);
}

/** Every status the job page shows, in order. */
function recordStatuses(page: Page): Promise<() => Promise<string[]>> {
  return recordAttribute(page, 'job-summary', null, 'data-status');
}

/** Every progress value (completed units) the job page's bar shows, in order. */
async function recordProgress(page: Page): Promise<() => Promise<number[]>> {
  const values = await recordAttribute(page, 'job-progress', 'progress', 'data-completed');
  return async () => (await values()).map(Number);
}

async function timeline(page: Page): Promise<{ sequence: number; type: string }[]> {
  return page.locator('#timeline li').evaluateAll((items) =>
    items.map((item) => ({ sequence: Number((item as HTMLElement).dataset['sequence']), type: (item as HTMLElement).dataset['type'] ?? '' })),
  );
}

function expectInOrder(types: readonly string[], expected: readonly string[]): void {
  let from = 0;
  for (const type of expected) {
    const at = types.indexOf(type, from);
    expect(at, `${type} after position ${from} in ${types.join(', ')}`).toBeGreaterThanOrEqual(0);
    from = at + 1;
  }
}

describe('the web console', () => {
  it('submits a job from the form, follows a real worker live, pauses and resumes it, and cancels another', async () => {
    const page = await newPage();
    await signIn(page, ownerToken);

    await page.getByRole('link', { name: 'Submit' }).click();
    await page.getByLabel('Queue', { exact: true }).fill(QUEUE);
    const input = page.getByLabel('Input (JSON object)');
    await input.fill('{"count": 40, "delay_ms":');
    await expect.poll(() => page.locator('#input-error').textContent()).toMatch(/not valid JSON/);
    expect(await input.getAttribute('aria-invalid')).toBe('true');
    await input.fill('[1, 2]');
    await expect.poll(() => page.locator('#input-error').textContent()).toMatch(/must be a JSON object/);
    await input.fill('{"count": 40, "delay_ms": 150}');
    await expect.poll(() => input.getAttribute('aria-invalid')).toBe('false');
    await page.getByLabel('Label (optional)').fill('from the console');
    const key = await page.getByLabel('Idempotency key', { exact: true }).inputValue();
    expect(key).toMatch(/^[A-Za-z0-9._~-]{16,128}$/);
    await page.screenshot({ path: join(OUTPUT, 'submit-form.png'), fullPage: true });
    expect(await unlabelledControls(page)).toEqual([]);
    await page.getByRole('button', { name: 'Submit job' }).click();
    const submitted = page.locator('#submitted-job');
    await submitted.waitFor();
    const jobId = (await submitted.textContent()) ?? '';
    expect(jobId).toMatch(/^job_/);
    expect(await page.locator('#submitted').textContent()).toContain(`key ${key}`);

    // The key stays shown: submitting again with it replays the same job.
    await page.getByRole('button', { name: 'Submit job' }).click();
    await expect.poll(() => page.locator('#submitted').textContent()).toMatch(/^Replayed: this key already submitted job_/);
    expect(await submitted.textContent()).toBe(jobId);

    await submitted.click();
    await page.locator('#job-summary').waitFor();
    const statuses = await recordStatuses(page);
    const progress = await recordProgress(page);
    await waitForStatus(page, 'RUNNING');
    await expect.poll(async () => (await progress()).length, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);

    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await expect.poll(() => page.locator('#action-result').textContent()).toMatch(/^Pause: done, key /);
    await waitForStatus(page, 'PAUSED');
    const pausedAt = (await progress()).at(-1) ?? 0;
    expect(pausedAt).toBeLessThan(40);

    await page.getByRole('button', { name: 'Resume', exact: true }).click();
    await waitForStatus(page, 'SUCCEEDED', 40_000);

    const seenProgress = await progress();
    expect(seenProgress.length).toBeGreaterThanOrEqual(5);
    expect(seenProgress.at(-1)).toBe(40);
    expectInOrder(await statuses(), ['RUNNING', 'PAUSED', 'RUNNING', 'SUCCEEDED']);

    const events = await timeline(page);
    expect(events.map((event) => event.sequence)).toEqual(events.map((_, index) => index + 1));
    expectInOrder(
      events.map((event) => event.type),
      ['job.admitted', 'attempt.started', 'job.pause_requested', 'job.paused', 'job.resumed', 'attempt.started', 'job.succeeded'],
    );
    await page.locator('#chain-badge[data-state="verified"]').waitFor();
    await expect.poll(() => page.locator('#chain-badge').getAttribute('data-sequence')).toBe(String(events.length));
    expect(await page.locator('#chain-badge').textContent()).toBe(`Chain verified in this browser (SubtleCrypto) up to sequence ${events.length}`);

    const fences = await page.locator('#attempt-rows td[data-fence]').evaluateAll((cells) => cells.map((cell) => Number((cell as HTMLElement).dataset['fence'])));
    expect(fences).toHaveLength(2);
    expect(fences[1]!).toBeGreaterThan(fences[0]!);
    const result = JSON.parse((await page.locator('#job-result').textContent()) ?? '{}') as { counted?: number; resumed_from?: number };
    expect(result.counted).toBe(40);
    expect(result.resumed_from).toBeGreaterThan(0);
    await page.screenshot({ path: join(OUTPUT, 'job-page.png'), fullPage: true });
    expect(await unlabelledControls(page)).toEqual([]);

    // A finished job refuses another pause, in words.
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await expect.poll(() => page.locator('#action-result [role=alert]').textContent()).toMatch(
      /^Pause refused: ILLEGAL_TRANSITION - the job cannot make this change from the status it is in now/,
    );

    // Another job, cancelled from its page while it runs.
    const other = await owner.submit({ queue: QUEUE, input: { count: 1_000, delay_ms: 100 }, label: 'to cancel' });
    await page.evaluate((id) => (location.hash = `#/jobs/${id}`), other.job.id);
    await page.locator(`#job-id:text-is("${other.job.id}")`).waitFor();
    const otherStatuses = await recordStatuses(page);
    await waitForStatus(page, 'RUNNING');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await waitForStatus(page, 'CANCELLED');
    expectInOrder(await otherStatuses(), ['RUNNING', 'CANCELLED']);
    expectInOrder(
      (await timeline(page)).map((event) => event.type),
      ['job.admitted', 'attempt.started', 'job.cancel_requested', 'job.cancelled'],
    );
    expect(await notReloaded(page)).toBe(true);
  });

  it('approves, signals, deletes, restores and retries from the job page, each with its own key', async () => {
    const page = await newPage();
    await signIn(page, ownerToken);
    const fact = (name: string) => page.locator(`#job-summary dd[data-fact="${name}"]`);
    const done = async (label: string): Promise<string> => {
      await expect.poll(() => page.locator('#action-result').textContent()).toMatch(new RegExp(`^${label}: done, key `));
      return (await page.locator('#action-result code').textContent()) ?? '';
    };

    const waiting = await owner.submit({ queue: QUEUE, input: { count: 6, delay_ms: 100, approve_at: 2 } });
    await page.evaluate((id) => (location.hash = `#/jobs/${id}`), waiting.job.id);
    await waitForStatus(page, 'PAUSED');
    await expect.poll(() => fact('Pending approval').textContent()).toMatch(/^apr_/);
    await page.getByLabel('Approval comment').fill('ship it');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    const approveKey = await done('Approve');
    await waitForStatus(page, 'SUCCEEDED');
    expectInOrder((await timeline(page)).map((event) => event.type), ['approval.requested', 'approval.decided', 'attempt.started', 'job.succeeded']);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    const deleteKey = await done('Delete');
    await expect.poll(() => fact('Visibility').textContent()).toBe('soft_deleted');
    await page.getByRole('button', { name: 'Restore', exact: true }).click();
    await done('Restore');
    await expect.poll(() => fact('Visibility').textContent()).toBe('active');
    expect(new Set([approveKey, deleteKey]).size).toBe(2);

    const running = await owner.submit({ queue: QUEUE, input: { count: 1_000, delay_ms: 100 } });
    await page.evaluate((id) => (location.hash = `#/jobs/${id}`), running.job.id);
    await waitForStatus(page, 'RUNNING');
    await page.getByLabel('Signal name').fill('add');
    await page.getByLabel('Signal payload (JSON object)').fill('[2]');
    await page.getByRole('button', { name: 'Send signal', exact: true }).click();
    await expect.poll(() => page.locator('#action-result').textContent()).toMatch(/^Signal payload: must be a JSON object/);
    await page.getByLabel('Signal payload (JSON object)').fill('{"n": 2}');
    await page.getByRole('button', { name: 'Send signal', exact: true }).click();
    await done('Send signal');
    await page.locator('#timeline li[data-type="signal.received"]').waitFor();
    await expect.poll(() => fact('Signals').textContent()).toMatch(/^1 received, 0 unknown/);
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await waitForStatus(page, 'CANCELLED');
    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await done('Retry');
    await waitForStatus(page, 'RUNNING');
    await page.getByRole('button', { name: 'Cancel', exact: true }).click();
    await waitForStatus(page, 'CANCELLED');
    expectInOrder((await timeline(page)).map((event) => event.type), ['signal.received', 'job.cancelled', 'job.retried', 'attempt.started', 'job.cancelled']);
    const fences = await page.locator('#attempt-rows td[data-fence]').evaluateAll((cells) => cells.map((cell) => Number((cell as HTMLElement).dataset['fence'])));
    expect(fences.length).toBeGreaterThanOrEqual(2);
    expect(fences.at(-1)!).toBeGreaterThan(fences[0]!);
    expect(await notReloaded(page)).toBe(true);
  });

  it('lists jobs by status and queue, pages by keyset, and changes rows in place as jobs change', async () => {
    const page = await newPage();
    const queue = `${IDLE_QUEUE}-list`;
    const ids: string[] = [];
    for (let i = 0; i < 7; i += 1) ids.push((await owner.submit({ queue, input: { n: i }, label: `list ${i}` })).job.id);
    await signIn(page, ownerToken);
    await page.getByLabel('Queue', { exact: true }).fill(queue);
    await page.getByLabel('Rows per page').selectOption('5');
    await page.getByRole('button', { name: 'Apply' }).click();
    const rowIds = (): Promise<string[]> =>
      page.locator('#job-rows tr[data-job-id]').evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset['jobId'] ?? ''));
    await expect.poll(rowIds).toEqual(ids.slice(2).reverse());
    await page.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(rowIds).toEqual(ids.slice(0, 2).reverse());
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await expect.poll(rowIds).toEqual(ids.slice(2).reverse());

    // Live: a change to a shown job changes its row; a new job appears on top.
    await owner.pause(ids[6]!);
    await page.locator(`#job-rows tr[data-job-id="${ids[6]}"][data-status="PAUSED"]`).waitFor();
    await owner.cancel(ids[5]!);
    await page.locator(`#job-rows tr[data-job-id="${ids[5]}"][data-status="CANCELLED"]`).waitFor();
    const added = (await owner.submit({ queue, input: {}, label: 'added later' })).job.id;
    await expect.poll(async () => (await rowIds())[0]).toBe(added);
    await page.screenshot({ path: join(OUTPUT, 'job-list.png'), fullPage: true });
    expect(await unlabelledControls(page)).toEqual([]);

    // The status filter.
    await page.getByLabel('CANCELLED', { exact: true }).check();
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(rowIds).toEqual([ids[5]]);
    expect(await notReloaded(page)).toBe(true);
  });

  it('re-reads the page when the change feed answers resync_required, and keeps following from the fresh cursor', async () => {
    const queue = `${IDLE_QUEUE}-resync`;
    const first = (await owner.submit({ queue, input: {} })).job.id;
    const page = await newPage();
    // Every WatchJobs the page opens is held until released, then sent with
    // a cursor the service cannot read: it answers resync_required with a
    // fresh cursor at the head, after anything that changed meanwhile.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const forged = create(WatchJobsRequestSchema, { cursor: 'not-a-cursor-at-all', filter: { queue } });
    await page.route('**/docket.events.v1.EventService/WatchJobs', async (route) => {
      await released;
      await route.continue({ postData: grpcWebFrame(toBinary(WatchJobsRequestSchema, forged)) }).catch(() => {
        // The page gave this stream up meanwhile (the filter changed).
      });
    });
    await signIn(page, ownerToken);
    await page.getByLabel('Queue', { exact: true }).fill(queue);
    await page.getByRole('button', { name: 'Apply' }).click();
    const row = page.locator(`#job-rows tr[data-job-id="${first}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-status')).toBe('QUEUED');

    // A change the feed will never deliver (it resumes after it): only the re-read can show it.
    await owner.pause(first);
    release();
    await expect.poll(() => page.locator('#list-live').textContent()).toMatch(/asked for a re-read; the page was read again/);
    await page.locator(`#job-rows tr[data-job-id="${first}"][data-status="PAUSED"]`).waitFor();
    // And the feed goes on from the fresh cursor.
    await owner.cancel(first);
    await page.locator(`#job-rows tr[data-job-id="${first}"][data-status="CANCELLED"]`).waitFor();
  });

  it('shows a broken chain, naming the sequence, when a journal row was changed in the database', async () => {
    const job = (await owner.submit({ queue: IDLE_QUEUE, input: { tamper: true } })).job;
    await owner.pause(job.id);
    await owner.resume(job.id);
    const page = await newPage();
    await signIn(page, ownerToken);
    await page.evaluate((id) => (location.hash = `#/jobs/${id}`), job.id);
    await page.locator('#chain-badge[data-state="verified"][data-sequence="3"]').waitFor();

    const sql = await openSql(cluster.databaseUrl);
    try {
      const changed = await sql.query(`update job_events set payload = payload || '{"forged": true}' where job_id = $1 and sequence = 2`, [job.id]);
      expect(changed.rowCount).toBe(1);
    } finally {
      await sql.end();
    }
    await page.reload();
    const badge = page.locator('#chain-badge[data-state="broken"]');
    await badge.waitFor();
    expect(await badge.textContent()).toMatch(/^Chain BROKEN at sequence 2: /);
    expect(await badge.getAttribute('data-sequence')).toBe('2');
    expect(await page.getByRole('alert').first().textContent()).toContain('JOURNAL_CORRUPT');
  });

  it("shows another user's job exactly as a missing one: not found", async () => {
    const stranger = createClient({ admissionUrl: cluster.admission.url, eventsUrl: cluster.events.url, token: await cluster.tokenFor('console-stranger', 'user') });
    const theirs = (await stranger.submit({ queue: IDLE_QUEUE, input: { secret: 'theirs' } })).job.id;
    stranger.close();
    const missing = `job_${randomBytes(16).toString('hex')}`;
    const page = await newPage();
    await signIn(page, ownerToken);
    const shown = async (id: string): Promise<string> => {
      await page.evaluate((target) => (location.hash = `#/jobs/${target}`), id);
      await page.locator('#not-found').waitFor();
      await page.locator(`#main code:text-is("${id}")`).waitFor();
      return ((await page.locator('#main').innerText()) ?? '').replace(id, '<id>');
    };
    const foreign = await shown(theirs);
    const absent = await shown(missing);
    expect(foreign).toContain('Job not found');
    expect(foreign).toBe(absent);
    expect(await page.content()).not.toContain('theirs');
  });

  it('lists the schedules with their next and last ticks, and pauses and resumes one with its own key', async () => {
    const admission = clientFor(AdmissionService, cluster.admission.url, ownerToken);
    const { schedule } = await admission.createSchedule({
      idempotencyKey: `console-schedule-${randomBytes(8).toString('hex')}`,
      schedule: { trigger: { case: 'interval', value: { seconds: 3_600n } }, jobTemplate: { queue: IDLE_QUEUE, label: 'hourly' } },
    });
    const id = schedule!.scheduleId;
    const page = await newPage();
    await signIn(page, ownerToken);
    await page.evaluate(() => (location.hash = '#/schedules'));
    const row = page.locator(`tr[data-schedule="${id}"]`);
    await row.waitFor();
    expect(await row.locator('[data-fact="state"]').innerText()).toBe('ACTIVE');
    expect(await row.innerText()).toContain('every 60 min');
    expect(await row.locator('[data-fact="next"]').innerText()).not.toBe('-');
    await page.screenshot({ path: join(OUTPUT, 'schedules.png'), fullPage: true });

    await row.locator('button[data-action="pause"]').click();
    await row.locator('[data-fact="state"]:text-is("PAUSED")').waitFor();
    expect((await admission.getSchedule({ scheduleId: id })).schedule?.state).toBe(ScheduleState.PAUSED);
    expect(await row.locator('[data-fact="next"]').innerText()).toBe('- (paused)');
    await row.locator('button[data-action="resume"]').click();
    await row.locator('[data-fact="state"]:text-is("ACTIVE")').waitFor();
    expect((await admission.getSchedule({ scheduleId: id })).schedule?.state).toBe(ScheduleState.ACTIVE);
    expect(await notReloaded(page)).toBe(true);
  });

  it('refuses a bad token at sign-in and keeps a good one out of the URL and storage other than the session', async () => {
    const page = await newPage();
    await page.goto(`${consoleServer.url}/`);
    // By keyboard alone: the token field has the focus, Tab reaches the button.
    await page.locator('#token:focus').waitFor();
    await page.keyboard.type('not-a-token');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('#sign-in-outcome').textContent()).toMatch(/^Sign-in refused: UNAUTHENTICATED - /);
    expect(await unlabelledControls(page)).toEqual([]);
    await signIn(page, ownerToken);
    expect(page.url()).not.toContain(ownerToken);
    // The skip link moves the focus to the content and stays on the page.
    await page.locator('a.skip').focus();
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');
    expect(new URL(page.url()).hash).toBe('#/jobs');
    const stored = await page.evaluate(() => ({ local: localStorage.length, cookies: document.cookie }));
    expect(stored).toEqual({ local: 0, cookies: '' });

    // Queue statistics are for admins: a user is told so, and nothing is counted in the browser.
    await page.getByRole('link', { name: 'Queues' }).click();
    await expect.poll(() => page.locator('main [role="alert"]').textContent()).toContain('PERMISSION_DENIED');
    expect(await page.locator('#queue-rows tr').count()).toBe(0);
  });
});

describe('parents and children', () => {
  it('shows what a waiting job waits for, links its parents, and lists a parent\'s children with their statuses', async () => {
    const parent = (await owner.submit({ queue: IDLE_QUEUE, input: { step: 'extract' } })).job.id;
    const child = (await owner.submit({ queue: IDLE_QUEUE, input: { step: 'load' }, dependsOn: [parent] })).job.id;
    const page = await newPage();
    await signIn(page, ownerToken);
    await page.goto(`${consoleServer.url}/#/jobs/${child}`);
    await page.locator(`#job-parents li[data-job="${parent}"]`).waitFor();
    expect(await page.locator('#job-parents-summary').textContent()).toBe('Waits for 1 parent, 1 not settled yet; a failed parent cancels it (DEPENDENCY_FAILED).');
    expect(await page.locator('#job-reasons li').first().getAttribute('data-code')).toBe('WAITING_FOR_PARENTS');
    expect(await page.locator('#job-summary [data-status]').first().textContent()).toBe('WAITING');
    await page.screenshot({ path: join(OUTPUT, 'job-parents.png'), fullPage: true });

    await page.locator(`#job-parents a[href="#/jobs/${parent}"]`).click();
    const row = page.locator(`#job-children li[data-job="${child}"]`);
    await row.waitFor();
    expect(await row.locator('[data-status]').textContent()).toBe('WAITING');
    expect(await page.locator('#job-children-summary').textContent()).toBe('1 job waits for it.');
    expect(await unlabelledControls(page)).toEqual([]);
    await page.screenshot({ path: join(OUTPUT, 'job-children.png'), fullPage: true });
  });
});

describe('operator pages (admin)', () => {
  it('lists the queues live workers serve with their counts, charts one queue, and lists the workers', async () => {
    const queued = (await owner.submit({ queue: IDLE_QUEUE, input: { operator: true } })).job.id;
    const page = await newPage();
    await signIn(page, await cluster.tokenFor('console-admin', 'admin'));
    await page.getByRole('link', { name: 'Queues' }).click();
    const row = page.locator(`#queue-rows tr[data-queue="${QUEUE}"]`);
    await row.waitFor();
    // The console worker's queue: its jobs ran, so some succeeded in the last hour.
    await expect.poll(async () => Number(await row.locator('td[data-status="SUCCEEDED"]').textContent())).toBeGreaterThanOrEqual(1);
    expect(Number(await row.locator('td[data-fact="claimed"]').textContent())).toBeGreaterThanOrEqual(1);
    expect(await unlabelledControls(page)).toEqual([]);
    await page.screenshot({ path: join(OUTPUT, 'queues.png'), fullPage: true });

    // A queue no worker serves, opened by name: its counts and three charts.
    await page.getByLabel('Queue name').fill(IDLE_QUEUE);
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('heading', { name: `Queue ${IDLE_QUEUE}` }).waitFor();
    await expect.poll(async () => Number(await page.locator('#queue-counts dd[data-fact="QUEUED"]').textContent())).toBeGreaterThanOrEqual(1);
    for (const chart of ['#chart-depth', '#chart-throughput', '#chart-pickup']) await page.locator(`${chart} canvas`).waitFor();
    expect(await page.locator('#bucket-rows tr').count()).toBe(60);
    expect(new URL(page.url()).hash).toBe(`#/queues/${IDLE_QUEUE}`);
    await page.screenshot({ path: join(OUTPUT, 'queue.png'), fullPage: true });

    // A queue with failed jobs: retry them all as one bulk operation and watch it complete.
    const failing = `${IDLE_QUEUE}-failing`;
    const failedIds = await failedJobs(failing, 2);
    await page.goto(`${consoleServer.url}/#/queues/${failing}`);
    await expect.poll(() => page.locator('#failed-rows tr[data-job]').count()).toBe(2);
    await page.getByRole('button', { name: 'Retry all failed' }).click();
    await expect.poll(() => page.locator('#bulk-progress').getAttribute('data-state'), { timeout: 20_000 }).toBe('COMPLETED');
    expect(await page.locator('#bulk-progress').textContent()).toContain('2 of 2 done (changed 2, skipped 0, failed 0)');
    for (const jobId of failedIds) expect((await owner.get(jobId)).status).toBe(JobStatus.QUEUED);
    await expect.poll(() => page.locator('#failed-rows').textContent(), { timeout: 15_000 }).toBe('No failed jobs.');
    await page.screenshot({ path: join(OUTPUT, 'queue-bulk-retry.png'), fullPage: true });

    await page.getByRole('link', { name: 'Workers' }).click();
    const live = page.locator('#worker-rows tr[data-state="LIVE"]', { hasText: 'console-worker' });
    await live.waitFor();
    // Its capacity is the SDK's pipeline: the handlers and the jobs it prefetches.
    expect(await live.locator('td[data-fact="running"]').textContent()).toMatch(/^\d+ of \d+$/);
    await page.screenshot({ path: join(OUTPUT, 'workers.png'), fullPage: true });

    // The job page says why a job waits: nothing holds it, but no live worker serves its queue.
    await page.goto(`${consoleServer.url}/#/jobs/${queued}`);
    const reasons = page.locator('#job-reasons li');
    await reasons.first().waitFor();
    expect(await reasons.evaluateAll((items) => items.map((item) => item.getAttribute('data-code')))).toEqual(
      expect.arrayContaining(['CLAIMABLE_NOW', 'NO_LIVE_WORKER']),
    );
    await page.screenshot({ path: join(OUTPUT, 'job-waiting.png'), fullPage: true });
  });
});
